"""The one recipe of every SQLite file beside the wiki (``hostcore.DerivedDB``): a connection per
thread, reopened when the file is replaced, never shared with a forked child, a layout version,
damage set aside, a generation mark. Real SQLite files, real threads, a real forked process.
"""

from __future__ import annotations

import multiprocessing
import os
import sqlite3
import threading
from pathlib import Path

import pytest

from hostcore import DerivedDB, Unavailable, rows_in, set_aside
from hostcore.seams.sqlite import IN_BATCH

SCHEMA = "CREATE TABLE IF NOT EXISTS notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL)"


def filled(path: Path, rows: int = 400, **kwargs: object) -> DerivedDB:
    db = DerivedDB(path, "test store", SCHEMA, 1, **kwargs)  # type: ignore[arg-type]
    with db.transaction() as conn:
        conn.executemany("INSERT INTO notes (text) VALUES (?)", [(f"note {i} " * 20,) for i in range(rows)])
    return db


def in_thread(fn):  # type: ignore[no-untyped-def]
    out = []
    thread = threading.Thread(target=lambda: out.append(fn()))
    thread.start()
    thread.join(30)
    return out[0]


def test_each_thread_has_its_own_connection_and_close_ends_them_all(tmp_path):
    db = filled(tmp_path / "store.sqlite")
    mine = db.connection()
    assert db.connection() is mine
    held = threading.Event()
    done = threading.Event()
    other: list[sqlite3.Connection] = []

    def worker() -> None:
        other.append(db.connection())
        held.set()
        done.wait(30)

    thread = threading.Thread(target=worker)
    thread.start()
    assert held.wait(30) and other[0] is not mine
    db.close()
    for conn in (mine, other[0]):
        with pytest.raises(sqlite3.ProgrammingError, match="closed"):
            conn.execute("SELECT 1")
    done.set()
    thread.join(30)
    assert db.connection() is not mine and db.connection().execute("SELECT count(*) FROM notes").fetchone() == (400,)
    db.close()


def test_a_finished_threads_connection_is_closed_when_another_opens(tmp_path):
    db = filled(tmp_path / "store.sqlite")
    theirs = in_thread(db.connection)
    in_thread(db.connection)  # a new thread's first use prunes the finished one's
    with pytest.raises(sqlite3.ProgrammingError, match="closed"):
        theirs.execute("SELECT 1")
    db.close()


def test_a_replaced_file_is_reopened(tmp_path):
    path = tmp_path / "store.sqlite"
    db = filled(path, rows=3)
    before = db.connection()
    set_aside(path, "test store", "a test")  # as another process does with a damaged file
    filled(path, rows=7).close()  # and the file made anew
    assert db.connection() is not before
    assert db.connection().execute("SELECT count(*) FROM notes").fetchone() == (7,)
    db.close()


def test_a_forked_child_neither_uses_nor_closes_its_parents_connection(tmp_path):
    db = filled(tmp_path / "store.sqlite", rows=3)
    inherited = db.connection()

    def child() -> None:
        own = db.connection()
        db.close()
        assert own is not inherited
        inherited.execute("SELECT 1")  # left open: closing it here could drop the parent's write-ahead log
        os._exit(0)

    process = multiprocessing.get_context("fork").Process(target=child)
    process.start()
    process.join(30)
    assert process.exitcode == 0
    assert inherited.execute("SELECT count(*) FROM notes").fetchone() == (3,)
    db.close()


def test_a_file_of_another_layout_is_made_anew(tmp_path):
    path = tmp_path / "store.sqlite"
    filled(path).close()
    newer = DerivedDB(path, "test store", "CREATE TABLE IF NOT EXISTS words (word TEXT PRIMARY KEY)", 2)
    conn = newer.connection()
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert tables == {"meta", "words"} and conn.execute("PRAGMA user_version").fetchone() == (2,)
    assert newer.generation() is not None and newer.storage_version() is None
    newer.close()


def test_a_file_made_anew_gives_its_space_back(tmp_path):
    """An older layout's rows are dropped and their pages returned to the disk (a passage index of
    a new layout would otherwise keep the old one's hundreds of MB while it fills again)."""
    path = tmp_path / "store.sqlite"
    filled(path, rows=20_000).close()
    old_size = path.stat().st_size
    newer = DerivedDB(path, "test store", "CREATE TABLE IF NOT EXISTS words (word TEXT PRIMARY KEY)", 2)
    conn = newer.connection()
    assert conn.execute("PRAGMA freelist_count").fetchone() == (0,)
    assert old_size > 2_000_000 and path.stat().st_size < old_size / 10
    with newer.transaction() as db:
        db.executemany("INSERT INTO words VALUES (?)", [(f"w{i} " * 20,) for i in range(20_000)])
    grown = path.stat().st_size + Path(f"{path}-wal").stat().st_size
    newer.clear()
    assert conn.execute("SELECT count(*) FROM words").fetchone() == (0,)
    assert path.stat().st_size + Path(f"{path}-wal").stat().st_size < grown / 4
    newer.close()


def test_generation_and_storage_version_are_seen_by_every_connection(tmp_path):
    path = tmp_path / "store.sqlite"
    one, two = filled(path, rows=1), DerivedDB(path, "test store", SCHEMA, 1)
    first = two.generation()
    with one.transaction() as conn:
        conn.execute("INSERT INTO notes (text) VALUES ('more')")
    second = two.generation()
    assert second != first
    with one.transaction(mark=False) as conn:
        conn.execute("INSERT INTO notes (text) VALUES ('unmarked')")
    assert two.generation() == second
    one.set_storage_version("abc")
    assert two.storage_version() == "abc"
    two.clear()
    assert one.storage_version() is None and one.connection().execute("SELECT count(*) FROM notes").fetchone() == (0,)
    one.close()
    two.close()


def damage(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[:4096] + b"\xa5" * (len(data) - 8192) + data[-4096:])


def test_damage_met_at_run_time_sets_the_file_aside_and_marks_a_rebuild(tmp_path, caplog):
    path = tmp_path / "store.sqlite"
    db = filled(path, rebuild=True)
    db.close()  # a fresh connection: nothing cached
    damage(path)
    with pytest.raises(Unavailable, match="the test store is being rebuilt from storage after damage"), db.guard() as conn:
        conn.execute("SELECT count(*), max(text) FROM notes").fetchone()
    assert db.rebuild is not None and db.rebuild.pending
    assert len(list(tmp_path.glob("store.sqlite.damaged-*"))) == 1 and "set aside as store.sqlite.damaged-" in caplog.text
    assert db.connection().execute("SELECT count(*) FROM notes").fetchone() == (0,)  # made anew, for the rebuild
    db.close()


def test_damage_without_a_rebuild_makes_the_file_anew_at_next_use(tmp_path):
    path = tmp_path / "store.sqlite"
    db = filled(path)
    db.close()
    damage(path)
    with pytest.raises(Unavailable, match="the test store was damaged and is made anew"), db.guard() as conn:
        conn.execute("SELECT count(*), max(text) FROM notes").fetchone()
    assert db.rebuild is None and db.connection().execute("SELECT count(*) FROM notes").fetchone() == (0,)
    db.close()


def test_a_damaged_file_found_at_start_up_is_set_aside(tmp_path):
    path = tmp_path / "store.sqlite"
    filled(path).close()
    path.write_bytes(b"this is not a database " * 200)
    db = DerivedDB(path, "test store", SCHEMA, 1, rebuild=True)
    assert db.check() and db.rebuild is not None and db.rebuild.pending
    assert not db.check()  # the new file is sound
    db.close()


def test_a_failed_transaction_leaves_the_file_as_it_was(tmp_path):
    db = filled(tmp_path / "store.sqlite", rows=2)
    with pytest.raises(ValueError, match="halfway"), db.transaction() as conn:
        conn.execute("INSERT INTO notes (text) VALUES ('lost')")
        raise ValueError("halfway")
    assert db.connection().execute("SELECT count(*) FROM notes").fetchone() == (2,)
    assert not db.connection().in_transaction
    db.close()


def test_rows_in_looks_up_any_number_of_keys_in_bound_batches(tmp_path):
    db = sqlite3.connect(tmp_path / "keys.sqlite")
    db.execute("CREATE TABLE t (k INTEGER PRIMARY KEY, g INTEGER NOT NULL)")
    db.executemany("INSERT INTO t VALUES (?, ?)", [(k, k % 3) for k in range(3 * IN_BATCH)])
    keys = list(range(1, 3 * IN_BATCH + 10, 2))  # more than two batches, some absent
    statements: list[str] = []
    db.set_trace_callback(statements.append)
    rows = list(rows_in(db, "SELECT k, g FROM t WHERE k IN", keys))
    assert sorted(rows) == [(k, k % 3) for k in keys if k < 3 * IN_BATCH]
    assert len(statements) == -(-len(keys) // IN_BATCH)  # one statement a batch
    grouped = dict(rows_in(db, "SELECT g, count(*) FROM t WHERE k IN", keys[:IN_BATCH], " GROUP BY g"))
    assert grouped == {g: sum(1 for k in keys[:IN_BATCH] if k % 3 == g) for g in range(3)}
    assert list(rows_in(db, "SELECT k, g FROM t WHERE k IN", [])) == []
    db.close()
