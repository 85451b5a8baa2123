"""Shared state (``host.shared``): the same contract in SQLite (one machine) and Redis (many),
including one winner among racing processes and a clear error when Redis is down."""

import multiprocessing
import time

import pytest

from hostcore import Unavailable
from hostcore.host.host import redis_client
from hostcore.host.shared import RedisShared, SqliteShared
from hostcore.testing import FakeClock
from hostcore.testing.redis import redis_server


@pytest.fixture(scope="module")
def redis_url():
    with redis_server() as srv:
        yield srv.url


def _open(kind, where):
    if kind == "sqlite":
        return SqliteShared(where)
    return RedisShared(redis_client(where), prefix=f"test-{time.monotonic_ns()}")


@pytest.fixture(params=["sqlite", pytest.param("redis", marks=pytest.mark.redis)])
def store(request, tmp_path):
    where = tmp_path / "shared.sqlite" if request.param == "sqlite" else request.getfixturevalue("redis_url")
    shared = _open(request.param, where)
    yield shared
    shared.close()
    if isinstance(shared, RedisShared):
        shared.client.close()


def test_put_get_delete_and_scan(store):
    assert store.get("tokens", "a") is None
    store.put("tokens", "b", {"n": 2})
    store.put("tokens", "a", {"n": 1, "nested": {"x": [1, "é"]}})
    store.put("other", "a", {"n": 9})
    assert store.get("tokens", "a") == {"n": 1, "nested": {"x": [1, "é"]}}
    assert store.scan("tokens") == [("a", {"n": 1, "nested": {"x": [1, "é"]}}), ("b", {"n": 2})]
    store.put("tokens", "a", {"n": 3})
    assert store.get("tokens", "a") == {"n": 3}
    assert store.delete("tokens", "a") is True and store.delete("tokens", "a") is False
    assert store.scan("tokens") == [("b", {"n": 2})] and store.get("other", "a") == {"n": 9}


def test_add_creates_only_once_and_take_hands_out_once(store):
    assert store.add("codes", "c1", {"v": 1}) is True
    assert store.add("codes", "c1", {"v": 2}) is False
    assert store.get("codes", "c1") == {"v": 1}
    assert store.take("codes", "c1") == {"v": 1}
    assert store.take("codes", "c1") is None and store.get("codes", "c1") is None


def test_records_expire_for_every_operation(store):
    """SQLite measures expiry by its clock, moved by hand here; Redis expires keys by its own time,
    so there the test waits."""
    if isinstance(store, SqliteShared):
        store.clock = FakeClock()
        elapse = store.clock.advance
    else:
        elapse = time.sleep
    store.put("codes", "short", {"v": 1}, ttl=0.2)
    store.put("codes", "long", {"v": 2}, ttl=60)
    assert store.get("codes", "short") == {"v": 1}
    elapse(0.35)
    assert store.get("codes", "short") is None
    assert store.take("codes", "short") is None
    assert store.scan("codes") == [("long", {"v": 2})]
    assert store.add("codes", "short", {"v": 3}) is True  # an expired record does not block a new one
    assert store.get("codes", "short") == {"v": 3}


@pytest.mark.parametrize("bad", [0, -1, float("nan"), float("inf")])
def test_a_bad_ttl_or_kind_is_refused(store, bad):
    with pytest.raises(ValueError, match="ttl"):
        store.put("codes", "k", {}, ttl=bad)
    with pytest.raises(ValueError, match="kind"):
        store.put("a:b", "k", {})
    with pytest.raises(ValueError, match="key"):
        store.get("codes", "")
    assert store.scan("codes") == []


def _race(kind, where, prefix, op, start, results):
    shared = SqliteShared(where) if kind == "sqlite" else RedisShared(redis_client(where), prefix=prefix)
    start.wait()
    for i in range(20):
        if op == "add":
            results.put(shared.add("race", f"k{i}", {"pid": multiprocessing.current_process().name}))
        else:
            results.put(shared.take("race", f"k{i}") is not None)


@pytest.mark.slow
@pytest.mark.parametrize("op", ["add", "take"])
@pytest.mark.parametrize("kind", ["sqlite", pytest.param("redis", marks=pytest.mark.redis)])
def test_racing_processes_have_exactly_one_winner_per_key(kind, op, tmp_path, request):
    where = tmp_path / "shared.sqlite" if kind == "sqlite" else request.getfixturevalue("redis_url")
    prefix = f"race-{time.monotonic_ns()}"
    setup = SqliteShared(where) if kind == "sqlite" else RedisShared(redis_client(where), prefix=prefix)
    if op == "take":
        for i in range(20):
            setup.put("race", f"k{i}", {"i": i})
    ctx = multiprocessing.get_context("fork")  # the children open their own connections
    start, results = ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=_race, args=(kind, where, prefix, op, start, results)) for _ in range(6)]
    for p in procs:
        p.start()
    start.set()
    outcomes = [results.get(timeout=60) for _ in range(6 * 20)]
    for p in procs:
        p.join(30)
    results.close()
    results.join_thread()
    setup.close()
    assert sum(outcomes) == 20  # one winner for each of the 20 keys
    assert len(setup.scan("race")) == (20 if op == "add" else 0)


@pytest.mark.redis
def test_redis_down_is_a_clear_unavailable_error():
    with redis_server() as srv:
        shared = RedisShared(redis_client(srv.url))
        shared.put("tokens", "a", {"n": 1})
        srv.stop()
        with pytest.raises(Unavailable, match="REDIS_URL"):
            shared.get("tokens", "a")
        with pytest.raises(Unavailable, match="start Redis"):
            shared.add("tokens", "b", {})
        shared.client.close()


@pytest.mark.redis
@pytest.mark.parametrize("written", [False, True])
def test_redis_without_a_written_public_url_warns(written, redis_url, tmp_path, caplog):
    """Hosts sharing Redis find each other's records under their PUBLIC_URL: one left to the bind
    address (``hostcore serve --bind``) differs from host to host, so the host says so at start."""
    from hostcore import create_app

    config = {"STORAGE": "fs", "SEARCH": "", "PLUGINS": ["fs"], "REDIS_URL": redis_url}
    if written:
        config["PUBLIC_URL"] = "https://wiki.example.org"
    with caplog.at_level("WARNING", logger="hostcore"):
        app = create_app(config, instance_path=tmp_path, defaults={"PUBLIC_URL": "http://10.0.0.5:8080"})
    app.extensions["hostcore"].close()
    warned = [r.getMessage() for r in caplog.records if "PUBLIC_URL is not" in r.getMessage()]
    assert warned == ([] if written else [warned[0]])
    if not written:
        assert "http://10.0.0.5:8080" in warned[0] and "hostcore.toml" in warned[0]


def _open_new(where, start, results):
    from hostcore import connect, wal

    start.wait()
    try:
        db, _opened = connect(where, timeout=30, isolation_level=None)
        wal(db)
        results.put(db.execute("PRAGMA journal_mode").fetchone()[0])
        db.close()
    except Exception as exc:  # reported, not lost in a child's stderr
        results.put(repr(exc))


@pytest.mark.slow
def test_processes_opening_a_new_file_at_once_all_get_wal(tmp_path):
    """Workers that start together open a new SQLite file together: switching it to WAL needs a
    lock SQLite refuses at once ("database is locked") rather than waits for; each waits its turn."""
    for round_ in range(20):
        where = tmp_path / f"new-{round_}.sqlite"
        ctx = multiprocessing.get_context("fork")
        start, results = ctx.Event(), ctx.Queue()
        procs = [ctx.Process(target=_open_new, args=(where, start, results)) for _ in range(12)]
        for p in procs:
            p.start()
        start.set()
        modes = [results.get(timeout=60) for _ in procs]
        for p in procs:
            p.join(30)
        assert modes == ["wal"] * 12
