"""Copies of the shared state, and its repair: what ``hostcore backup``, ``restore`` and ``doctor`` do.

A backup is a SQLite file laid out as ``shared.sqlite`` is (its ``records`` table), whatever the
home of the records: with ``shared.sqlite``, a copy made with SQLite's backup API (consistent while
the wiki writes); with Redis, every live record with its expiry. Either restores into either home,
so a backup also moves the records from one home to the other.

A damaged ``shared.sqlite`` is repaired by reading what SQLite still can into a new file: rows in
key order from the start until the damage, then from the end backwards, skipping over the kind
whose rows could not be read. The damaged file is kept beside it, renamed.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import sqlite3
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from hostcore.errors import Unavailable, ValidationError
from hostcore.host.shared import SCHEMA, SqliteShared, live_rows
from hostcore.seams.derived import quick_check, set_aside
from hostcore.seams.shared import SharedState

INSERT = "INSERT OR REPLACE INTO records (kind, key, value, expires) VALUES (?, ?, ?, ?)"
SHM_DMS_BYTE = 128
"""The byte of a WAL file's ``-shm`` that every connection to it holds a read lock on (SQLite's
``UNIX_SHM_DMS``): a write lock on it is refused while another process has the file open."""


def kinds(db: sqlite3.Connection) -> Counter[str]:
    """How many records of each kind ``db`` (laid out as ``shared.sqlite``) holds."""
    return Counter(dict(db.execute("SELECT kind, count(*) FROM records GROUP BY kind")))


@contextmanager
def _private_new(path: Path) -> Iterator[sqlite3.Connection]:
    """A connection to a new, empty SQLite file at ``path``, made private to its user (it holds
    digests, password hashes and the session key) whatever the umask; closed at the end, rollback
    journal (no ``-wal`` left beside it)."""
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    with closing(sqlite3.connect(path, isolation_level=None)) as db:
        yield db
        db.execute("PRAGMA journal_mode=DELETE")


def _fill(db: sqlite3.Connection, rows: list[tuple[str, str, str, float | None]]) -> None:
    """Lay ``db`` out as ``shared.sqlite`` holding ``rows`` (their values as JSON text)."""
    db.executescript(SCHEMA)
    db.execute("BEGIN")
    db.executemany(INSERT, rows)
    db.execute("COMMIT")


def backup(shared: SharedState, target: Path) -> Counter[str]:
    """Write every record of ``shared`` to the new file ``target``; returns the records by kind.
    Raises ValidationError when ``target`` exists (it is never overwritten), Unavailable when the
    store is damaged or cannot be reached (nothing is written then)."""
    target = Path(target)
    if target.exists() or not target.parent.is_dir():
        raise ValidationError(f"{target} exists or its folder does not; name a new file in an existing folder", field="FILE")
    if isinstance(shared, SqliteShared) and shared.path.exists():
        problem = shared.check().problem
        if problem is not None:  # a copy of the damage helps nobody: repair first
            raise Unavailable(problem)
    part = target.with_name(f".{target.name}.{os.getpid()}.part")
    try:
        with _private_new(part) as db:
            if isinstance(shared, SqliteShared):
                shared.copy_to(db)
                db.execute("DELETE FROM records WHERE expires IS NOT NULL AND expires <= ?", (time.time(),))
            else:
                _fill(db, [(kind, key, json.dumps(value), expires) for kind, key, value, expires in shared.records()])
            counts = kinds(db)
        os.link(part, target)  # never over a file made meanwhile
    finally:
        part.unlink(missing_ok=True)
    return counts


def restore(shared: SharedState, source: Path) -> Counter[str]:
    """Write every live record of the backup ``source`` into ``shared`` in one step (each replaces
    the record of its kind and key; others are kept); returns the records written, by kind.
    Raises ValidationError when ``source`` is not such a backup (nothing is written then)."""
    source = Path(source)
    if not source.is_file():
        raise ValidationError(f"{source} is not a file; name a file `hostcore backup` made", field="FILE")
    try:
        with closing(sqlite3.connect(source)) as db:
            problem = quick_check(source)
            if problem is not None:
                raise sqlite3.DatabaseError(problem)
            rows = [(kind, key, json.loads(value), expires) for kind, key, value, expires in db.execute(
                "SELECT kind, key, value, expires FROM records")]  # fmt: skip
    except (sqlite3.Error, ValueError) as exc:
        raise ValidationError(
            f"{source} is not a backup of hostcore's shared state ({exc}); name a file `hostcore backup` made", field="FILE"
        ) from exc
    live = live_rows(rows)
    shared.load(live)
    return Counter(kind for kind, _key, _value, _expires in live)


def in_use(path: Path) -> bool:
    """True when another process has the WAL-mode SQLite file ``path`` open. Call it before this
    process opens the file: closing the descriptor drops every lock this process holds on it."""
    try:
        fd = os.open(path.with_name(path.name + "-shm"), os.O_RDWR)
    except FileNotFoundError:
        return False
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, SHM_DMS_BYTE)
    except OSError:
        return True
    finally:
        os.close(fd)
    return False


Found = dict[tuple[str, str], tuple[str, "float | None"]]
"""Rows read from a damaged file: (kind, key) -> (value as JSON text, expiry)."""


def _scan(db: sqlite3.Connection, found: Found, unread: list[str], forward: bool) -> None:
    """Read rows of ``db`` into ``found`` in key order (backwards unless ``forward``), going past the
    damage: on an error, the rows up to it are read one at a time, the rest of that kind is
    skipped, and a second error ends the pass."""
    order, past = ("ASC", ">") if forward else ("DESC", "<")
    after: tuple[str, ...] = ()

    def rows(limit: str) -> Iterator[tuple[str, str, str, float | None]]:
        where = {0: "", 1: f"WHERE kind {past} ?", 2: f"WHERE (kind, key) {past} (?, ?)"}[len(after)]
        return db.execute(f"SELECT kind, key, value, expires FROM records {where} ORDER BY kind {order}, key {order}{limit}", after)

    def keep(kind: str, key: str, value: str, expires: float | None) -> None:
        nonlocal after
        after = (kind, key)
        try:
            json.loads(value)
        except (TypeError, ValueError):
            return
        found[(kind, key)] = (value, expires)

    while True:
        try:
            for found_row in rows(""):
                keep(*found_row)
            return
        except sqlite3.DatabaseError as exc:
            if str(exc) not in unread:
                unread.append(str(exc))
        # The cursor reads a row ahead, so the error took the last good row with it: a query for
        # one row stops before the next, and reads up to the damaged page itself.
        try:
            while (row := next(rows(" LIMIT 1"), None)) is not None:
                keep(*row)
            return
        except sqlite3.DatabaseError:
            pass
        if len(after) != 2:
            return
        after = (after[0],)


def salvage(path: Path) -> tuple[list[tuple[str, str, str, float | None]], list[str]]:
    """The rows SQLite can still read from the damaged file ``path`` (with its write-ahead log),
    and the errors met (rows there are lost). The file itself is not touched: a copy is read."""
    with tempfile.TemporaryDirectory(prefix=".salvage-", dir=path.parent) as scratch:
        copy = Path(scratch) / path.name
        for suffix in ("", "-wal"):
            if path.with_name(path.name + suffix).exists():
                shutil.copyfile(path.with_name(path.name + suffix), copy.with_name(copy.name + suffix))
        found: Found = {}
        unread: list[str] = []
        try:
            with closing(sqlite3.connect(copy)) as db:
                _scan(db, found, unread, forward=True)
                if unread:
                    _scan(db, found, unread, forward=False)
        except sqlite3.DatabaseError as exc:  # not even opened: nothing can be read
            unread.append(str(exc))
    return [(kind, key, value, expires) for (kind, key), (value, expires) in sorted(found.items())], unread


@dataclass
class Repair:
    """What :func:`repair` did: the damage found (None: the file was sound and nothing was done),
    the records kept by kind, the errors met while reading (records there are lost), where the
    damaged file was set aside."""

    problem: str | None
    kept: Counter[str] = field(default_factory=Counter)
    unread: list[str] = field(default_factory=list)
    aside: Path | None = None


def repair(shared: SqliteShared) -> Repair:
    """Check ``shared``'s file and, when it is damaged, put a new file in its place holding every
    record that can be read, the damaged one set aside. Raises Unavailable, changing nothing,
    while another process (a running server) has the file open."""
    path = shared.path
    if in_use(path):
        raise Unavailable(f"{path} is open in another process (a running `hostcore serve`?); stop it, then run `hostcore doctor` again")
    if not path.exists():
        return Repair(None)
    try:
        problem = quick_check(path)
    except sqlite3.Error as exc:  # not damage: busy, or not this user's
        raise Unavailable(f"{path} cannot be read ({exc}); make sure it is this user's and try again") from exc
    if problem is None:
        shared.check()  # a sound file: damage recorded for it earlier is forgotten
        return Repair(None)
    rows, unread = salvage(path)
    fresh = path.with_name(path.name + ".repaired")
    fresh.unlink(missing_ok=True)
    with _private_new(fresh) as db:
        _fill(db, rows)
        kept = kinds(db)
    shared.close()
    aside = set_aside(path, "shared state", problem, then="the records that could be read are moved into a new file")
    os.replace(fresh, path)
    shared.check()  # the new file is sound: the damage recorded for the old one goes
    return Repair(problem, kept, unread, aside)
