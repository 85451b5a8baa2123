"""Rate limits per principal: the limiter (memory and a real Redis), the writes limit in the service
layer, the requests limit at the transport, and the settings."""

from __future__ import annotations

import io
import logging
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from limits.storage import MemoryStorage

from hostcore import Principal, RateLimited, create_app, hookimpl
from hostcore.domain.principal import SYSTEM
from hostcore.errors import ConfigError
from hostcore.host.config import load_config
from hostcore.host.host import Host, redis_client
from hostcore.host.ratelimits import RateLimiter
from hostcore.testing import RedisServer, redis_server
from tests.conftest import BASE_CONFIG, principal


@pytest.fixture
def redis() -> Iterator[RedisServer]:
    with redis_server(persistent=False) as server:  # a restart empties it
        yield server


def make_host(tmp_path: Path, limits: dict[str, str], **config: object) -> Host:
    app = create_app({**BASE_CONFIG, "RATE_LIMITS": limits, **config}, instance_path=tmp_path / "instance")
    host: Host = app.extensions["hostcore"]
    host.wiki(SYSTEM).save_namespace("notes", title="Notes")
    return host


def limiter_on(url: str, limits: dict[str, str]) -> RateLimiter:
    """A limiter as one worker builds it from REDIS_URL."""
    return RateLimiter(limits, redis_client(url), prefix="test")


# --- the limiter ------------------------------------------------------------------------------


def test_memory_limiter_counts_per_principal_and_kind():
    limiter = RateLimiter({"requests": "3/minute", "writes": "1/minute"})
    assert [limiter.wait("requests", "ann") for _ in range(3)] == [0, 0, 0]
    wait = limiter.wait("requests", "ann")
    assert 59 <= wait <= 60
    assert limiter.wait("requests", "bob") == 0  # per principal, not shared
    assert limiter.wait("writes", "ann") == 0  # per kind
    assert limiter.wait("writes", "ann") > 0
    assert limiter.status() == {"store": "memory", "limits": {"requests": "3 per minute", "writes": "1 per minute"}}


def test_memory_counts_start_no_thread_and_keep_only_the_window():
    limiter = RateLimiter({"requests": "5/second"})
    storage = limiter.memory.storage
    assert isinstance(storage, MemoryStorage)
    first_timer = storage.timer  # started once, when the storage is made
    for _ in range(20):
        limiter.wait("requests", "ann")
        time.sleep(0.02)  # limits' own storage starts a new timer thread after 0.01 s idle
    assert storage.timer is first_timer
    assert [len(entries) for entries in storage.events.values()] == [5]


def test_off_and_missing_kinds_are_not_limited():
    limiter = RateLimiter({"requests": "off"})
    assert all(limiter.wait(kind, "ann") == 0 for kind in ("requests", "writes") for _ in range(1000))


@pytest.mark.redis
def test_wait_is_when_the_oldest_hit_leaves_the_window(redis):
    limiter = limiter_on(redis.url, {"requests": "2/2 second"})
    start = time.time()
    assert limiter.wait("requests", "ann") == 0
    time.sleep(0.5)
    assert limiter.wait("requests", "ann") == 0
    wait = limiter.wait("requests", "ann")
    elapsed = time.time() - start
    assert wait == max(1, -int(-(2 - elapsed) // 1))  # the first hit leaves the window 2 s after it came
    time.sleep(2 - (time.time() - start) + 0.05)
    assert limiter.wait("requests", "ann") == 0  # the first hit left: one more fits
    assert limiter.wait("requests", "ann") > 0  # the second is still in the window


@pytest.mark.redis
def test_limiters_on_one_redis_share_one_counter(redis):
    workers = [limiter_on(redis.url, {"writes": "10/minute"}) for _ in range(2)]
    waits = [workers[i % 2].wait("writes", "ann") for i in range(12)]
    assert waits[:10] == [0] * 10 and all(w > 0 for w in waits[10:])
    assert workers[0].status() == {"store": "redis", "limits": {"writes": "10 per minute"}, "reachable": True}


@pytest.mark.redis
def test_redis_down_falls_back_to_memory_and_comes_back(redis, caplog):
    caplog.set_level(logging.INFO, "hostcore.ratelimits")
    limiter = limiter_on(redis.url, {"writes": "3/minute"})
    assert limiter.wait("writes", "ann") == 0  # one hit in Redis
    redis.stop()
    started = time.monotonic()
    waits = [limiter.wait("writes", "ann") for _ in range(4)]
    assert time.monotonic() - started < 1, "a refused connection must not hold calls up"
    assert waits[:3] == [0, 0, 0] and waits[3] > 0, "memory counts on its own while Redis is down"
    assert limiter.status()["reachable"] is False
    assert [r.message for r in caplog.records].count(
        f"Redis is unreachable (Error 111 connecting to 127.0.0.1:{redis.port}. Connection refused.): rate limits are "
        "counted in each worker's memory until it answers; trying again every 5 s"
    ) == 1
    redis.start()  # empty: the counts made before the stop are gone
    assert limiter.status()["reachable"] is True
    assert caplog.records[-1].message == "Redis answers again: rate limits are shared again"
    limiter._retry_at = 0  # do not wait out RETRY_SECONDS
    assert [limiter.wait("writes", "ann") for _ in range(4)][3] > 0
    assert limiter.shared is not None and limiter.shared.get_window_stats(limiter.items["writes"], "writes", "ann").remaining == 0


# --- the writes limit, in the service layer ---------------------------------------------------


def test_writes_over_the_limit_are_refused_before_anything_is_written(tmp_path):
    host = make_host(tmp_path, {"writes": "2/minute"})
    wiki = host.wiki(principal("write"))
    first = wiki.save_page("notes/a", body="one")
    wiki.edit_page("notes/a", first["hash"], [{"oldText": "one", "newText": "two"}], dry_run=True)  # a preview writes nothing
    wiki.save_page("notes/b", body="two")
    with pytest.raises(RateLimited) as err:
        wiki.save_page("notes/c", body="three")
    assert err.value.data["retry_after"] > 50
    assert str(err.value).startswith("too many writes: tester may make 2 per minute; wait ")
    assert not host.storage.exists("notes/c.md")
    assert host.wiki(principal("write", name="other")).save_page("notes/c", body="three")["created"]
    assert host.wiki(SYSTEM).save_page("notes/d", body="the CLI and jobs are not limited")["created"]
    host.close()


def test_a_rename_is_one_write_however_many_pages_link_to_it(tmp_path):
    host = make_host(tmp_path, {"writes": "4/minute"})
    for i in range(5):
        host.wiki(SYSTEM).save_page(f"notes/p{i}", body="see [[notes/target]]")
    target = host.wiki(SYSTEM).save_page("notes/target", body="here")
    wiki = host.wiki(principal("write"))
    renamed = wiki.rename_page("notes/target", "Goal", target["hash"])
    assert len(renamed["rewritten"]) == 5
    assert [wiki.save_page(f"notes/n{i}", body="x")["created"] for i in range(3)] == [True] * 3
    with pytest.raises(RateLimited):
        wiki.save_page("notes/n3", body="x")
    host.close()


# --- the requests limit, at the transport -----------------------------------------------------


class BearerIsName:
    """Authenticates ``Bearer NAME`` as a writer called NAME."""

    @hookimpl
    def authenticate(self, request, host):
        return Principal(request.headers["Authorization"].split()[1], frozenset({"write"}))


def test_requests_over_the_limit_get_429_with_retry_after(tmp_path):
    app = create_app(
        {**BASE_CONFIG, "RATE_LIMITS": {"requests": "2/minute"}}, instance_path=tmp_path / "instance", plugins=[BearerIsName()]
    )
    client = app.test_client()
    body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"}
    answers = [client.post("/_/mcp", json=body, headers={**headers, "Authorization": "Bearer ann"}) for _ in range(3)]
    assert [a.status_code for a in answers] == [200, 200, 429]
    assert 59 <= int(answers[2].headers["Retry-After"]) <= 60
    assert answers[2].json["error"]["message"].startswith("Too many requests: ann may make 2 per minute; retry after ")
    assert client.post("/_/mcp", json=body, headers={**headers, "Authorization": "Bearer bob"}).status_code == 200
    app.extensions["hostcore"].close()


def test_each_message_of_a_batch_counts_as_a_request(tmp_path):
    """A 2025-03-26 batch is one POST but as many requests as it holds messages: a batch cannot
    multiply what the limit allows."""
    app = create_app(
        {**BASE_CONFIG, "RATE_LIMITS": {"requests": "3/minute"}}, instance_path=tmp_path / "instance", plugins=[BearerIsName()]
    )
    client = app.test_client()
    headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-03-26", "Authorization": "Bearer ann"}
    pings = [{"jsonrpc": "2.0", "id": i, "method": "ping"} for i in range(2)]
    assert [a["id"] for a in client.post("/_/mcp", json=pings, headers=headers).json] == [0, 1]
    over = client.post("/_/mcp", json=pings, headers=headers)  # its first message is the third request, its second the fourth
    assert over.status_code == 429 and over.json["error"]["message"].startswith("Too many requests: ann may make 3 per minute")
    app.extensions["hostcore"].close()


def test_file_downloads_count_with_mcp_requests_and_uploads_by_address(tmp_path):
    """GET /_/files counts against the same per-principal requests limit as MCP; an upload URL is
    the credential, so POST /_/upload counts by the client's address."""
    app = create_app(
        {**BASE_CONFIG, "RATE_LIMITS": {"requests": "2/minute"}}, instance_path=tmp_path / "instance", plugins=[BearerIsName()]
    )
    host = app.extensions["hostcore"]
    host.wiki(SYSTEM).save_namespace("notes", title="Notes")
    host.wiki(SYSTEM).save_page("notes/a", body="x")
    ticket = host.wiki(SYSTEM).upload_attachment("notes/a", "a.txt")
    host.wiki(SYSTEM).complete_upload(ticket["upload_url"].rsplit("/", 1)[1], b"hello")
    client = app.test_client()
    ann = {"Authorization": "Bearer ann"}
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    mcp = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25", **ann}
    assert client.post("/_/mcp", json=ping, headers=mcp).status_code == 200
    assert client.get("/_/files/notes/a/a.txt", headers=ann).data == b"hello"
    over = client.get("/_/files/notes/a/a.txt", headers=ann)
    assert over.status_code == 429 and 59 <= int(over.headers["Retry-After"]) <= 60
    assert over.json["error"]["code"] == "rate_limited" and over.json["error"]["message"].startswith(
        "Too many requests: ann may make 2 per minute; retry after "
    )
    assert client.get("/_/files/notes/a/a.txt", headers={"Authorization": "Bearer bob"}).status_code == 200

    uploads = [client.post("/_/upload/no-such-ticket", data={"file": (io.BytesIO(b"x"), "a.txt")}) for _ in range(3)]
    assert [u.status_code for u in uploads] == [404, 404, 429]  # an unknown upload URL, twice, then over the limit
    assert uploads[2].json["error"]["message"].startswith("Too many requests: address 127.0.0.1 may make 2 per minute")
    other = app.test_client()
    other.environ_base["REMOTE_ADDR"] = "192.0.2.7"
    assert other.post("/_/upload/no-such-ticket", data={"file": (io.BytesIO(b"x"), "a.txt")}).status_code == 404
    host.close()


@pytest.mark.parametrize("path", ["/_/files/notes/a/a.txt", "/_/upload/no-such-ticket"])
def test_file_routes_refuse_a_foreign_host_or_origin_as_mcp_does(app, path):
    client = app.test_client()
    method = client.get if path.startswith("/_/files") else client.post
    assert method(path, headers={"Host": "evil.example"}).status_code == 421
    refused = method(path, headers={"Origin": "https://evil.example"})
    assert refused.status_code == 403 and refused.json["error"]["message"].startswith("Origin 'https://evil.example' is not allowed")


# --- settings ---------------------------------------------------------------------------------


def test_bad_limits_and_redis_url_are_named_with_the_fix(tmp_path):
    with pytest.raises(ConfigError) as err:
        load_config(
            tmp_path,
            {"RATE_LIMITS": {"request": "1/minute", "writes": "lots"}, "REDIS_URL": "localhost:6379"},
            environ={},
        )
    assert err.value.data["problems"] == [
        'RATE_LIMITS.writes: \'lots\' is no rate limit; write it like "60/minute" (per second, minute, hour or day) or "off"',
        "RATE_LIMITS.request: no rate limit named 'request'; the limits are requests, writes, registrations",
        "REDIS_URL: 'localhost:6379' must start with redis://, rediss://, unix:// (e.g. redis://127.0.0.1:6379/0), or be empty",
    ]


def test_limits_merge_with_the_defaults_and_come_from_the_environment(tmp_path):
    config = load_config(tmp_path, environ={"HOSTCORE_RATE_LIMITS__WRITES": "30/minute"})
    assert config["RATE_LIMITS"] == {"requests": "300/minute", "writes": "30/minute", "registrations": "20/hour"}


def test_health_shows_the_limits_to_callers_who_see_every_namespace(tmp_path):
    host = make_host(tmp_path, {"writes": "30/minute"})
    assert host.wiki(principal("read")).health()["rate_limits"] == {
        "store": "memory", "limits": {"requests": "300 per minute", "writes": "30 per minute", "registrations": "20 per hour"}
    }
    assert "rate_limits" not in host.wiki(principal("read", namespaces=["notes"])).health()
    host.close()
