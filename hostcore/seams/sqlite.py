"""One SQLite file kept beside the wiki: the recipe every derived store (and the shared state) uses.

:class:`DerivedDB` gives each thread its own connection (WAL, so threads and processes share the
file), opened at first use, so a host starts for reading on a full disk (the file then opens as a
read-only snapshot: :func:`~hostcore.seams.derived.connect`). It reopens when the file was replaced
(set aside by another process, deleted, salvaged), and never uses or closes a connection a forked
child inherited from its parent (closing it there could checkpoint or delete the parent's
write-ahead log). With a ``version``, a file of another layout is emptied and made anew (derived
data: storage fills it again). Damage (:func:`~hostcore.seams.derived.damaged`) found at start-up
(:meth:`DerivedDB.check`) or at run time (:meth:`DerivedDB.guard`, :meth:`DerivedDB.recover`)
sets the file aside, never deletes it; with ``rebuild``, the store is then marked as being rebuilt
(:class:`~hostcore.seams.derived.Rebuild`). A ``meta`` table holds the storage version the store
reflects and its generation, a mark every writing transaction renews, so what a process keeps in
memory from the file is known stale when another process wrote.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path

from hostcore.errors import Unavailable
from hostcore.seams.derived import Rebuild, connect, damaged, file_id, generation, new_generation, recover_sqlite, wal

log = logging.getLogger("hostcore.derived")

META = "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)"
SHRINK_PAGES = 256  # free pages (1 MiB at SQLite's 4 KiB) from which a file made anew is vacuumed
STORAGE_VERSION = "storage_version"  # the meta key of the storage version a store reflects
_INHERITED: list[sqlite3.Connection] = []  # connections a forked child must neither use nor close
IN_BATCH = 500  # keys bound in one statement by rows_in (SQLite built before 3.32 allows 999)


def rows_in(db: sqlite3.Connection, select: str, keys: Sequence[object], tail: str = "") -> Iterator[tuple]:
    """The rows of ``select`` (a statement ending ``IN``, then ``tail``) for ``keys``, bound
    IN_BATCH at a time: one look-up for many keys, however many."""
    for first in range(0, len(keys), IN_BATCH):
        batch = list(keys[first : first + IN_BATCH])
        yield from db.execute(f"{select} ({','.join('?' * len(batch))}){tail}", batch)


def statements(script: str) -> list[str]:
    """The statements of ``script`` one by one (a trigger's body stays whole), so they can run
    inside one transaction: ``executescript`` commits first."""
    out: list[str] = []
    current = ""
    for line in script.splitlines(keepends=True):
        current += line
        if sqlite3.complete_statement(current):
            out.append(current.strip())
            current = ""
    if current.strip():
        out.append(current.strip())
    return out


class _Opened:
    """One thread's connection: the process it belongs to, the file it opened (None: a read-only
    snapshot on a full disk, reopened at next use), its shared-memory file (``NAME-shm``: deleted
    or replaced under an open connection, as an operator's ``rm NAME*`` does, it leaves that
    connection reading and writing a log nobody else sees), and the DerivedDB's epoch then."""

    def __init__(self, db: sqlite3.Connection, opened: tuple[int, int] | None, shm: tuple[int, int] | None, epoch: int) -> None:
        self.db, self.opened, self.shm, self.epoch, self.pid = db, opened, shm, epoch, os.getpid()


class DerivedDB:
    """The SQLite file ``path`` (``what`` names it in logs and errors) with ``schema`` applied.

    ``version``: the layout's number (``PRAGMA user_version``); a file of another one is emptied
    and made anew. None: the schema's ``IF NOT EXISTS`` statements are all there is to it.
    ``rebuild``: the store is refilled from storage by the host after damage (:attr:`rebuild`
    marks it meanwhile: ``True`` makes one beside the file, or pass the store's own); otherwise
    damage only sets the file aside, and its next use starts a new one. ``pragmas`` run on every connection, ``setup(db)`` on every writable one after the schema
    (a column added to an older layout, a first row). ``meta``: keep the ``meta`` table (storage
    version, generation); the shared state, which is not derived, has none.
    """

    def __init__(
        self,
        path: Path,
        what: str,
        schema: str = "",
        version: int | None = None,
        *,
        rebuild: Rebuild | bool = False,
        timeout: float = 30.0,
        pragmas: Sequence[str] = ("synchronous=NORMAL",),
        setup: Callable[[sqlite3.Connection], None] | None = None,
        meta: bool = True,
    ) -> None:
        self.path = Path(path)
        self._shm = self.path.with_name(self.path.name + "-shm")
        self.what = what
        self.schema = f"{META};\n{schema}" if meta else schema
        self.version = version
        self.timeout = timeout
        self.pragmas = tuple(pragmas)
        self.setup = setup
        if isinstance(rebuild, Rebuild):
            self.rebuild: Rebuild | None = rebuild
        else:
            self.rebuild = Rebuild(self.path.with_name(self.path.name + ".rebuilding"), what) if rebuild else None
        self._local = threading.local()
        self._guard = threading.Lock()
        self._epoch = 0  # close() moves it on: every thread reopens at its next use
        self._pid = os.getpid()
        self._open: list[tuple[weakref.ref[threading.Thread], sqlite3.Connection]] = []

    # --- connections ------------------------------------------------------------------------

    def connection(self) -> sqlite3.Connection:
        """This thread's connection (autocommit: ``BEGIN`` starts a transaction), opened or
        reopened as needed (see the module's docstring)."""
        mine: _Opened | None = getattr(self._local, "mine", None)
        current = file_id(self.path)
        if mine is not None and mine.pid == os.getpid() and mine.epoch == self._epoch:
            if current is not None and current == mine.opened and file_id(self._shm) == mine.shm:
                return mine.db
            self._forget(mine.db)  # replaced meanwhile, or a snapshot taken on a full disk
        self._local.mine = None
        existed = current is not None
        db, opened = connect(self.path, timeout=self.timeout, isolation_level=None, check_same_thread=False)
        shm = None
        try:
            if opened is not None or not existed:  # a writable file (not a full disk's read-only snapshot)
                self._prepare(db)
                opened, shm = file_id(self.path), file_id(self._shm)
        except BaseException:
            db.close()
            raise
        self._local.mine = _Opened(db, opened, shm, self._epoch)
        with self._guard:
            self._adopt()
            self._open = [(t, c) for t, c in self._open if self._alive(t, c)]
            self._open.append((weakref.ref(threading.current_thread()), db))
        return db

    def _prepare(self, db: sqlite3.Connection) -> None:
        wal(db, self.timeout)
        for pragma in self.pragmas:
            db.execute(f"PRAGMA {pragma}")
        if self.version is not None and db.execute("PRAGMA user_version").fetchone()[0] != self.version:
            db.execute("BEGIN IMMEDIATE")
            try:
                if db.execute("PRAGMA user_version").fetchone()[0] != self.version:  # not made anew meanwhile
                    self._make_anew(db)
                db.execute("COMMIT")
            except BaseException:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise
            self._shrink(db)
        elif self.schema:
            db.executescript(self.schema)
        if self.setup is not None:
            self.setup(db)

    def _make_anew(self, db: sqlite3.Connection) -> None:
        """Drop every table of another layout (or none: a new file) and apply the schema (in a transaction)."""
        tables = db.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'").fetchall()
        virtual = [name for name, sql in tables if (sql or "").upper().startswith("CREATE VIRTUAL")]
        for name in virtual:  # their shadow tables go with them
            db.execute(f'DROP TABLE IF EXISTS "{name}"')
        for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'").fetchall():
            db.execute(f'DROP TABLE IF EXISTS "{name}"')
        for statement in statements(self.schema):
            db.execute(statement)
        db.execute(f"PRAGMA user_version = {int(self.version or 0)}")
        if self.schema.startswith(META):
            new_generation(db)

    def clear(self) -> None:
        """Empty the file: every table made anew, the storage version forgotten, a new generation."""
        with self.guard() as db:
            db.execute("BEGIN IMMEDIATE")
            self._make_anew(db)
            if self.setup is not None:
                self.setup(db)
            db.execute("COMMIT")
            self._shrink(db)

    def _shrink(self, db: sqlite3.Connection) -> None:
        """Give the pages the dropped tables held back to the disk (``VACUUM``) when they are many:
        a file of an older layout (a 600 MB passage index) would otherwise keep its size while it
        fills again. Skipped when another connection is busy with the file (it is a saving, not a
        need: the free pages are reused as the file fills)."""
        free, total = (db.execute(f"PRAGMA {p}").fetchone()[0] for p in ("freelist_count", "page_count"))
        if free < SHRINK_PAGES or free * 2 < total:
            return
        try:
            db.execute("VACUUM")
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        except sqlite3.OperationalError as error:
            log.info("%s: not shrunk after being made anew (%s)", self.what, error)

    def _adopt(self) -> None:
        """In a forked child: the parent's connections are kept, unused and unclosed (under ``_guard``)."""
        if self._pid != os.getpid():
            _INHERITED.extend(db for _thread, db in self._open)
            self._open, self._pid = [], os.getpid()

    @staticmethod
    def _alive(thread: weakref.ref[threading.Thread], db: sqlite3.Connection) -> bool:
        """Whether the connection's thread still runs; a finished thread's connection is closed here."""
        found = thread()
        if found is not None and found.is_alive():
            return True
        db.close()
        return False

    def _forget(self, db: sqlite3.Connection) -> None:
        with self._guard:
            self._open = [(t, c) for t, c in self._open if c is not db]
        db.close()

    def reset(self) -> None:
        """Close this thread's connection: its next use opens the file anew."""
        mine: _Opened | None = getattr(self._local, "mine", None)
        self._local.mine = None
        if mine is not None and mine.pid == os.getpid() and mine.epoch == self._epoch:
            self._forget(mine.db)

    def close(self) -> None:
        """Close every connection this process opened to the file, in any thread (each reopens
        at its next use)."""
        with self._guard:
            self._adopt()
            self._epoch += 1
            open_, self._open = self._open, []
        for _thread, db in open_:
            with suppress(sqlite3.Error):
                db.close()

    # --- damage ----------------------------------------------------------------------------

    def check(self) -> bool:
        """At start-up: set the file aside when ``PRAGMA quick_check`` finds it damaged, and mark
        the store for a rebuild (the host begins it as it starts); True when it was."""
        if not self.path.exists() or not recover_sqlite(self.path, self.what):
            return False
        if self.rebuild is not None:
            self.rebuild.mark()
        return True

    def recover(self, exc: BaseException) -> bool:
        """After ``exc``: when it says the file is damaged, close this thread's connection (the
        others reopen at their next use, the file being another), set the file aside unless another
        process did already (and mark the store for a rebuild), and return True; otherwise False."""
        if not damaged(exc):
            return False
        mine: _Opened | None = getattr(self._local, "mine", None)
        opened = mine.opened if mine is not None and mine.pid == os.getpid() else None
        self.reset()
        if recover_sqlite(self.path, self.what, error=exc, opened=opened) and self.rebuild is not None:
            self.rebuild.start()
        return True

    def unavailable(self) -> Unavailable:
        """What a call that met damage raises."""
        if self.rebuild is not None:
            return self.rebuild.error()
        return Unavailable(f"the {self.what} was damaged and is made anew; try again")

    @contextmanager
    def guard(self) -> Iterator[sqlite3.Connection]:
        """This thread's connection; a transaction left open by an error is rolled back, and damage
        met meanwhile (opening the file too) is recovered from (:meth:`recover`) and raised as
        :meth:`unavailable`."""
        try:
            db = self.connection()
        except sqlite3.DatabaseError as exc:
            if self.recover(exc):
                raise self.unavailable() from exc
            raise
        try:
            yield db
        except BaseException as exc:
            if db.in_transaction:
                with suppress(sqlite3.Error):
                    db.execute("ROLLBACK")
                if db.in_transaction:  # never used again in a state nobody knows
                    self.reset()
            if self.recover(exc):
                raise self.unavailable() from exc
            raise

    @contextmanager
    def transaction(self, mark: bool = True) -> Iterator[sqlite3.Connection]:
        """One writing transaction (``BEGIN IMMEDIATE``: writers of every process take turns), under
        :meth:`guard`; ``mark``: a new :meth:`generation` with it."""
        with self.guard() as db:
            db.execute("BEGIN IMMEDIATE")
            yield db
            if mark:
                new_generation(db)
            db.execute("COMMIT")

    # --- meta -------------------------------------------------------------------------------

    def generation(self) -> str | None:
        """The file's generation: changes with every marked transaction, whichever process wrote."""
        with self.guard() as db:
            return generation(db)

    def meta(self, key: str) -> str | None:
        with self.guard() as db:
            try:
                row = db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
            except sqlite3.OperationalError as exc:  # a read-only snapshot of a file made before the table
                if "no such table" not in str(exc):
                    raise
                return None
        return row[0] if row else None

    def set_meta(self, key: str, value: str | None) -> None:
        """Record ``value`` under ``key`` (None: forget it)."""
        with self.guard() as db:
            if value is None:
                db.execute("DELETE FROM meta WHERE key = ?", (key,))
            else:
                db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))

    def storage_version(self) -> str | None:
        """The storage version (:meth:`hostcore.Storage.version`) the store reflects; None when unknown."""
        return self.meta(STORAGE_VERSION)

    def identity(self) -> tuple[int, int, int] | None:
        """Which file is at the path now (one stat): another when it was deleted or replaced, even
        by one that took the old one's inode number (its ctime differs)."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return None
        return st.st_dev, st.st_ino, st.st_ctime_ns

    def set_storage_version(self, version: str | None) -> None:
        self.set_meta(STORAGE_VERSION, version)
