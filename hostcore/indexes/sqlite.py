"""One SQLite connection per thread to a file in the instance folder (WAL: shared by processes)."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path


class ThreadLocalDB:
    """``db()`` is this thread's connection to ``path`` (autocommit, WAL), made on first use."""

    def __init__(self, path: Path, schema: str = "") -> None:
        self.path = Path(path)
        self._local = threading.local()
        if schema:
            self.db().executescript(schema)

    def db(self) -> sqlite3.Connection:
        db = getattr(self._local, "db", None)
        if db is None:
            db = sqlite3.connect(self.path, timeout=30, isolation_level=None, check_same_thread=False)
            db.execute("PRAGMA journal_mode=WAL")
            self._local.db = db
        return db

    def close(self) -> None:
        """Close this thread's connection."""
        db = getattr(self._local, "db", None)
        if db is not None:
            db.close()
            self._local.db = None
