"""One SQLite connection per thread to a file in the instance folder (WAL: shared by processes)."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

from hostcore.seams.derived import connect, wal


class ThreadLocalDB:
    """``db()`` is this thread's connection to ``path`` (autocommit, WAL), made on first use.

    Nothing is opened before the first use, and the schema is applied then, so a host starts
    (for reading) on a full disk: on such a disk the file opens as a read-only snapshot.
    """

    def __init__(self, path: Path, schema: str = "") -> None:
        self.path = Path(path)
        self.schema = schema
        self._local = threading.local()

    def db(self) -> sqlite3.Connection:
        db = getattr(self._local, "db", None)
        if db is None:
            existed = self.path.exists()
            db, opened = connect(self.path, timeout=30, isolation_level=None, check_same_thread=False)
            if opened is not None or not existed:  # a writable file (not a full disk's read-only snapshot)
                wal(db)
                if self.schema:
                    db.executescript(self.schema)
            self._local.db = db
        return db

    def close(self) -> None:
        """Close this thread's connection."""
        db = getattr(self._local, "db", None)
        if db is not None:
            db.close()
            self._local.db = None
