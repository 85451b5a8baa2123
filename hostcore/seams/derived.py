"""Derived files: the search index, the link graph, the history index. Storage is the truth; these
are rebuilt from it, so a damaged one is never a reason to stop the wiki.

The recipe, shared by the core and the plugins that keep such files:

- At start-up, :func:`recover_sqlite` runs ``PRAGMA quick_check`` on the file; at run time,
  :func:`damaged` tells a damaged file's error (``file is not a database``, ``database disk image
  is malformed``) from any other SQLite error (busy, full disk, ...).
- A damaged file is set aside (:func:`set_aside`: renamed to ``NAME.damaged-TIMESTAMP``, logged),
  never deleted, and the store starts again from an empty file.
- A :class:`Rebuild` marks the store as being rebuilt from storage, for every process: reads that
  need it answer :class:`~hostcore.errors.Unavailable` saying so, until the rebuild is done.

Other processes may still hold the set-aside file open: they compare inodes (:func:`file_id`)
before each use and reopen the new file. :func:`connect` keeps SQLite files readable on a full
disk.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import shutil
import sqlite3
import threading
import time
from collections.abc import Callable
from contextlib import closing, suppress
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import quote

from hostcore.errors import Unavailable
from hostcore.seams.locks import FileLock
from hostcore.seams.storage import disk_full

log = logging.getLogger("hostcore.derived")

_DAMAGED = {sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB}
OPEN_ATTEMPTS = 5  # opening a SQLite file that meets an I/O error (see connect)


def damaged(exc: BaseException) -> bool:
    """True when ``exc`` is SQLite saying the file itself is damaged (not busy, not a full disk)."""
    return isinstance(exc, sqlite3.DatabaseError) and (getattr(exc, "sqlite_errorcode", 0) & 0xFF) in _DAMAGED


def file_id(path: Path) -> tuple[int, int] | None:
    """(device, inode) of ``path``, None when it does not exist: tells a replaced file from the one opened."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return st.st_dev, st.st_ino


def set_aside(path: Path, what: str, problem: str, then: str = "rebuilding it from storage") -> Path:
    """Rename the damaged file or folder ``path`` (and a SQLite file's -wal and -shm) out of the way.

    Returns the new name, ``NAME.damaged-YYYYmmddTHHMMSS``; logs a warning naming both and
    ``then``, what happens next.
    """
    path = Path(path)
    target = path.with_name(f"{path.name}.damaged-{time.strftime('%Y%m%dT%H%M%S')}")
    n = 1
    while target.exists():
        n += 1
        target = target.with_name(f"{path.name}.damaged-{time.strftime('%Y%m%dT%H%M%S')}-{n}")
    for suffix in ("", "-wal", "-shm"):
        source = path.with_name(path.name + suffix)
        if suffix and path.is_dir():
            break
        if source.exists():
            os.replace(source, target.with_name(target.name + suffix))
    log.warning("%s: %s is damaged (%s); set aside as %s, %s", what, path, problem, target.name, then)
    return target


def drop_older_formats(root: Path, stem: str, current: int) -> list[Path]:
    """Remove what older formats of a derived index left in the folder ``root``: each file or
    folder named ``<stem><n>``, or starting so and going on with ``.`` or ``-`` (its version
    file, ``-wal``, ``-shm``), for every ``n`` below ``current``. Call it once the ``current``
    format reflects storage: derived data, so a wiki taken back to an older hostcore builds its
    format again from storage. Returns what it removed (and logs each)."""
    pattern = re.compile(rf"{re.escape(stem)}(\d+)(?:[.-].*)?")
    removed: list[Path] = []
    for path in sorted(Path(root).iterdir()):
        found = pattern.fullmatch(path.name)
        if found is None or int(found.group(1)) >= current:
            continue
        try:
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink()
        except OSError as exc:  # another process removed it first, or it cannot be: left for next time
            if path.exists():
                log.warning("%s: could not remove %s of an older format (%s)", stem, path, exc)
            continue
        log.info("%s: removed %s, left by an older format (this one is %d)", stem, path.name, current)
        removed.append(path)
    return removed


def connect(path: Path, **kwargs: Any) -> tuple[sqlite3.Connection, tuple[int, int] | None]:
    """Open the SQLite file at ``path`` (``kwargs`` go to :func:`sqlite3.connect`); returns the
    connection and the :func:`file_id` of the file it opened.

    On a disk too full for SQLite to size its shared-memory file (``NAME-shm``, which a WAL-mode
    file needs even to be read), and with no write-ahead log waiting, the file is opened as a
    read-only snapshot (``immutable``) instead, and the id returned is None: reads go on, writes
    fail (the host refuses them first, see :class:`~hostcore.errors.DiskFull`), and callers that
    reopen when the id differs get a normal connection once there is space again. A file made
    here is private to its user (mode 0600), whatever the process's umask.
    """
    for attempt in range(OPEN_ATTEMPTS):
        opened = file_id(path)
        if opened is None:
            _create(path)
        db = sqlite3.connect(path, **kwargs)
        try:
            db.execute("SELECT count(*) FROM sqlite_master").fetchone()
            return db, opened
        except sqlite3.OperationalError as exc:
            db.close()
            # a file deleted with its -wal and -shm one by one (an operator's rm) while this opens
            # it: for a moment a new file meets the old one's -shm, an I/O error; open it again
            if (getattr(exc, "sqlite_errorcode", 0) & 0xFF) == sqlite3.SQLITE_IOERR and attempt + 1 < OPEN_ATTEMPTS:
                time.sleep(0.01 * (attempt + 1))
                continue
            wal = path.with_name(path.name + "-wal")
            if opened is None or not disk_full(path.parent) or (wal.exists() and wal.stat().st_size):
                raise
            break
    log.warning("%s: the disk is full; reading it as a read-only snapshot until there is space again", path)
    return sqlite3.connect(f"file:{quote(str(path))}?immutable=1", uri=True, **kwargs), None


def _create(path: Path) -> None:
    """Make the SQLite file ``path`` here, not by SQLite (0644 less the umask): private to its
    user, its -wal and -shm take its mode. A -wal or -shm found beside the new file is what a file
    deleted since (an operator's ``rm``) left: removed first (under the lock :func:`recover_sqlite`
    takes), or SQLite would read the new file through the old one's log."""
    with suppress(OSError), FileLock(path.with_name(path.name + ".lock")):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        for suffix in ("-wal", "-shm"):
            path.with_name(path.name + suffix).unlink(missing_ok=True)


def quick_check(path: Path) -> str | None:
    """What ``PRAGMA quick_check`` finds wrong with the SQLite file at ``path``; None when it is sound."""
    try:
        db, _ = connect(path, timeout=30)
        with closing(db):
            rows = db.execute("PRAGMA quick_check").fetchall()
    except sqlite3.DatabaseError as exc:
        if not damaged(exc):
            raise
        return str(exc)
    return None if rows == [("ok",)] else "; ".join(str(r[0]) for r in rows[:3])


def _signature(path: Path) -> str:
    """Changes whenever the file (or its write-ahead log) does."""
    st = os.stat(path)
    wal = path.with_name(path.name + "-wal")
    return f"{st.st_ino} {st.st_size} {st.st_mtime_ns} {wal.stat().st_size if wal.exists() else 0}"


def recover_sqlite(
    path: Path, what: str, *, error: BaseException | None = None, opened: tuple[int, int] | None = None
) -> bool:
    """Set the SQLite file at ``path`` aside if it is damaged; True when it was.

    Without ``error`` (start-up) the file is checked with ``PRAGMA quick_check``, unless it has
    not changed since it last passed (``NAME.checked`` records when): the check reads the whole
    file (long for a big search index: ``bench/derived_check.py``), and every gunicorn worker starts
    the same way.
    With ``error`` (a run-time error :func:`damaged` recognised, which quick_check may not see,
    e.g. inside an FTS5 table) it is set aside as it is, unless ``path`` is no longer the file
    ``opened`` (its :func:`file_id`): then another process has set it aside already. This runs
    under a lock beside the file, so processes never set aside each other's fresh files.
    """
    path = Path(path)
    checked = path.with_name(path.name + ".checked")
    with FileLock(path.with_name(path.name + ".lock")):
        current = file_id(path)
        if current is None or (opened is not None and current != opened):
            return False
        if error is None:
            if checked.exists() and checked.read_text() == _signature(path):
                return False
            problem = quick_check(path)
        else:
            problem = str(error)
        if problem is None:
            with suppress(OSError):  # a full disk: check again next time
                checked.write_text(_signature(path))
            return False
        set_aside(path, what, problem)
        checked.unlink(missing_ok=True)
        return True


FIRST_WAIT = 2  # seconds a caller is told to wait before a rebuild has reported progress
MAX_WAIT = 300  # the longest wait a caller is told


class Rebuild:
    """One derived store's "being rebuilt from storage" state, shared by every process.

    ``marker`` (a file) exists from :meth:`start` until the rebuild is done, so a process killed
    halfway leaves the store marked and the next start-up (or the next read) finishes the job. It
    holds why (:attr:`DAMAGE`, :attr:`MISSING`) and how far the rebuild got
    (:meth:`progress`), so every process tells callers the same wait (:meth:`error`, :meth:`state`).
    ``work``, the function that rebuilds the store, is set by whoever knows how (the host, for
    every derived index); it runs in a background thread of one process at a time (a lock beside
    the marker, taken without waiting), so the wiki keeps serving meanwhile.
    """

    DAMAGE: ClassVar[str] = "after damage"  # why a store is rebuilt: the default
    MISSING: ClassVar[str] = "after its files went missing or unreadable"  # deleted, replaced or unreadable while the wiki ran

    def __init__(self, marker: Path, what: str) -> None:
        self.marker = Path(marker)
        self.what = what
        self.work: Callable[[], None] | None = None
        self.thread: threading.Thread | None = None
        self._claim = FileLock(self.marker.with_name(self.marker.name + ".lock"))

    @property
    def pending(self) -> bool:
        return self.marker.exists()

    def mark(self, reason: str = "") -> None:
        """Mark the store as being rebuilt, ``reason`` saying why (a store marked already keeps its reason)."""
        if not self.marker.exists():
            self._write({"reason": reason or self.DAMAGE, "started": time.time()})

    def start(self, reason: str = "") -> None:
        """Mark the store as needing a rebuild (it was just emptied, or found missing) and begin it
        if ``work`` is set."""
        self.mark(reason)
        self.resume()

    def done(self) -> None:
        self.marker.unlink(missing_ok=True)

    def progress(self, done: int, total: int, unit: str) -> None:
        """Record that ``done`` of ``total`` ``unit`` are rebuilt: what the wait callers are told follows from it."""
        found = self._read()
        if found is None:
            return
        if not isinstance(found.get("started"), (int, float)):  # a marker that said nothing: it started when made
            with suppress(OSError):
                found["started"] = self.marker.stat().st_mtime
        self._write({**found, "done": done, "total": total, "unit": unit, "at": time.time()})

    def state(self, progress: bool = True) -> dict[str, Any]:
        """What health shows while the store is rebuilt: which (``index``), why (``reason``),
        ``retry_after`` (the whole seconds until it should be done) and, with ``progress``, when
        known, ``done`` of ``total`` ``unit``."""
        found = self._read() or {}
        out: dict[str, Any] = {"index": self.what, "reason": str(found.get("reason", self.DAMAGE)), "retry_after": self._wait(found)}
        if progress and isinstance(found.get("total"), int) and isinstance(found.get("done"), int):
            out.update(done=found["done"], total=found["total"], unit=str(found.get("unit", "")))
        return out

    def error(self) -> Unavailable:
        """What a call that needs the store raises meanwhile: why, and when to try again (also as
        ``retry_after`` in its data; no progress counts: they are the whole wiki's, and any caller
        may meet this)."""
        state = self.state(progress=False)
        return Unavailable(
            f"the {self.what} is being rebuilt from storage {state['reason']}; try again in about {state['retry_after']} s",
            retry_after=state["retry_after"],
        )

    def _wait(self, found: dict[str, Any]) -> int:
        """Whole seconds until the rebuild should be done: from its pace so far, else a guess that
        grows with the time it has run."""
        now = time.time()
        started = found.get("started")
        if not isinstance(started, (int, float)):
            try:
                started = self.marker.stat().st_mtime
            except OSError:
                started = now
        done, total, at = found.get("done"), found.get("total"), found.get("at")
        if isinstance(done, int) and isinstance(total, int) and isinstance(at, (int, float)) and done > 0:
            pace = max(at - started, 1e-3) / done  # seconds a file
            left = (total - done) * pace - (now - at)
        else:
            left = max(FIRST_WAIT, now - started)
        return max(1, min(MAX_WAIT, math.ceil(left)))

    def _read(self) -> dict[str, Any] | None:
        """The marker's record; None when there is no marker, {} for one that says nothing (touched)."""
        try:
            data = self.marker.read_bytes()
        except FileNotFoundError:
            return None
        except OSError:
            return {}
        try:
            found = json.loads(data or b"{}")
        except ValueError:
            return {}
        return found if isinstance(found, dict) else {}

    def _write(self, state: dict[str, Any]) -> None:
        """Replace the marker at once: readers never see half of it."""
        partial = self.marker.with_name(f"{self.marker.name}.{os.getpid()}.{threading.get_ident()}")
        try:
            partial.write_text(json.dumps(state))
            os.replace(partial, self.marker)
        except OSError:  # a full disk: a marker that says nothing still marks the store
            partial.unlink(missing_ok=True)
            self.marker.touch()

    def check(self) -> None:
        """Raise :meth:`error` while the store is being rebuilt (and make sure someone is at it)."""
        if self.marker.exists():
            self.resume()
            raise self.error()

    def resume(self) -> None:
        """Rebuild in a background thread if the store is marked and no process is rebuilding it."""
        if self.work is None or not self.marker.exists() or not self._claim.acquire(blocking=False):
            return
        self.thread = threading.Thread(target=self._run, name=f"rebuild {self.what}", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            if self.marker.exists():  # another process may have finished it since we looked
                assert self.work is not None
                self.work()
                self.done()
        except Exception:
            log.exception("%s: rebuild failed; it is tried again at the next read or start-up", self.what)
        finally:
            self._claim.release()

    def wait(self) -> None:
        """Wait for a rebuild this process started."""
        if self.thread is not None:
            self.thread.join()


def new_generation(db: sqlite3.Connection) -> None:
    """Mark a change to a derived SQLite file, inside the writing transaction: what any process
    kept from it at an earlier :func:`generation` is stale. The file needs a ``meta(key, value)`` table."""
    db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('generation', lower(hex(randomblob(8))))")


def generation(db: sqlite3.Connection) -> str | None:
    """The file's generation (see :func:`new_generation`), None when none was recorded (or no ``meta`` table)."""
    try:
        row = db.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
    except sqlite3.OperationalError as exc:
        if "no such table" not in str(exc):
            raise
        return None
    return row[0] if row else None


def wal(db: sqlite3.Connection, timeout: float = 30.0) -> None:
    """Put ``db``'s file in WAL mode (a file keeps it). Processes that open a new file at once
    (gunicorn workers at start) race for the lock the switch needs, and SQLite answers "database
    is locked" at once, without waiting: so wait here, a little longer each time."""
    deadline, pause = time.monotonic() + timeout, 0.005
    while True:  # one switch, retried only when locked (a file that cannot switch, e.g. on a full disk, keeps its mode)
        try:
            db.execute("PRAGMA journal_mode=WAL").fetchone()
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(pause)
            pause = min(pause * 2, 0.2)
