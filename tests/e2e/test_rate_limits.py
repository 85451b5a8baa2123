"""Rate limits against ``hostcore serve`` with 2 workers and a real Redis: one shared counter per
principal, 429 with a correct Retry-After, the writes limit as a tool error through the official
MCP client, and Redis stopped mid-run (tokens live in Redis too, so token requests are refused
with 503 meanwhile; the counters are shared again once it is back, as documented in
docs/operators.md and docs/multihost.md)."""

from __future__ import annotations

import http.client
import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from hostcore import testing
from hostcore.host.ratelimits import RETRY_SECONDS
from hostcore.testing import RedisServer, redis_server, stop_process_group

from .conftest import E2E_ENV, cli, mcp_session, ok, tool_error

REQUESTS, WRITES = 20, 5
PING = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"})


@dataclass
class LimitedServer:
    base: str
    port: int
    pid: int
    instance: Path
    log: Path
    redis: RedisServer
    env: dict[str, str]

    def token(self, name: str) -> str:
        """A token made by the CLI with the server's settings: kept in its Redis."""
        return testing.create_token(self.instance, name, ["write"], env=self.env)


@pytest.fixture(scope="module")
def limited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LimitedServer]:
    instance = tmp_path_factory.mktemp("limits") / "instance"
    cli(instance, "init")
    with redis_server() as redis:
        env = {
            **E2E_ENV,
            "HOSTCORE_REDIS_URL": redis.url,
            # Names the wiki in Redis: the CLI (tokens) and the server must agree, so set, not derived from --bind.
            "HOSTCORE_PUBLIC_URL": "http://wiki.test",
            "HOSTCORE_RATE_LIMITS": json.dumps({"requests": f"{REQUESTS}/minute", "writes": f"{WRITES}/minute"}),
        }
        proc, base, port, log = testing.start_server(instance, workers=2, env=env)
        try:
            yield LimitedServer(base, port, proc.pid, instance, log, redis, env)
        finally:
            stop_process_group(proc)


def _workers(arbiter: int) -> list[int]:
    return [int(pid) for pid in Path(f"/proc/{arbiter}/task/{arbiter}/children").read_text().split()]


def _worker_of(srv: LimitedServer, conn: http.client.HTTPConnection) -> int:
    """The gunicorn worker holding the server side of ``conn`` (from /proc: its socket's inode)."""
    assert conn.sock is not None
    client_port = conn.sock.getsockname()[1]
    wanted = f"0100007F:{srv.port:04X} 0100007F:{client_port:04X}"
    lines = Path("/proc/net/tcp").read_text().splitlines()[1:]
    inode = next(line.split()[9] for line in lines if " ".join(line.split()[1:3]) == wanted)
    for pid in _workers(srv.pid):
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") == f"socket:[{inode}]":
                    return pid
            except OSError:
                continue
    raise AssertionError(f"no worker holds the connection from port {client_port}")


def one_connection_per_worker(srv: LimitedServer) -> list[http.client.HTTPConnection]:
    """Two kept-alive connections, each answered by a different worker."""
    by_worker: dict[int, http.client.HTTPConnection] = {}
    opened = []
    for _ in range(50):
        conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=30)
        conn.request("GET", "/.well-known/oauth-protected-resource")  # a worker accepts it; nothing counts
        conn.getresponse().read()
        opened.append(conn)
        by_worker.setdefault(_worker_of(srv, conn), conn)
        if len(by_worker) == 2:
            break
    for conn in opened:
        if conn not in by_worker.values():
            conn.close()
    assert len(by_worker) == 2, "every connection went to one worker"
    return list(by_worker.values())


def ping(conn: http.client.HTTPConnection, token: str) -> tuple[int, dict[str, str], Any]:
    port = conn.sock.getsockname()[1] if conn.sock else None
    conn.request(
        "POST", "/_/mcp", PING,
        {"Authorization": f"Bearer {token}", "Content-Type": "application/json",
         "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"},
    )  # fmt: skip
    answer = conn.getresponse()
    body = answer.read()
    assert conn.sock is not None and conn.sock.getsockname()[1] == port, "the connection was not kept alive"
    return answer.status, dict(answer.getheaders()), json.loads(body) if answer.status == 429 else None


def burst(srv: LimitedServer, token: str, count: int) -> list[tuple[int, dict[str, str], Any, float, float]]:
    """``count`` pings by ``token``, alternating between the two workers; with send and answer times."""
    conns = one_connection_per_worker(srv)
    out = []
    try:
        for i in range(count):
            sent = time.time()
            status, headers, body = ping(conns[i % 2], token)
            out.append((status, headers, body, sent, time.time()))
    finally:
        for conn in conns:
            conn.close()
    return out


def statuses(answers: list[tuple[Any, ...]]) -> list[int]:
    return [a[0] for a in answers]


def test_two_workers_share_one_counter_and_retry_after_is_when_a_request_fits(limited):
    answers = burst(limited, limited.token("burst"), REQUESTS + 4)
    assert statuses(answers) == [200] * REQUESTS + [429] * 4
    first_sent, first_answered = answers[0][3], answers[0][4]
    for _status, headers, body, sent, answered in answers[REQUESTS:]:
        retry_after = int(headers["Retry-After"])
        # The first request leaves the moving window 60 s after it was counted.
        assert first_sent + 60 - answered - 1 <= retry_after <= first_answered + 60 - sent + 1
        assert body["error"]["message"] == f"Too many requests: burst may make {REQUESTS} per minute; retry after {retry_after} seconds"
    assert statuses(burst(limited, limited.token("another"), 1)) == [200]  # per principal


@pytest.mark.anyio
async def test_writes_over_the_limit_get_a_rate_limited_tool_error(limited):
    async with mcp_session(limited.base + "/_/mcp", limited.token("writer")) as c:
        for i in range(WRITES):
            ok(await c.call_tool("save_page", {"slug": f"notes/limited-{i}", "body": "x"}))
        err = tool_error(await c.call_tool("save_page", {"slug": "notes/limited-over", "body": "x"}))
        assert err["code"] == "rate_limited" and 50 <= err["retry_after"] <= 60
        assert err["message"] == (
            f"too many writes: writer may make {WRITES} per minute; wait {err['retry_after']} seconds, then try again "
            "(nothing was changed)"
        )
        assert tool_error(await c.call_tool("read_page", {"slug": "notes/limited-over"}))["code"] == "not_found"
        health = ok(await c.call_tool("health", {}))
    assert health["rate_limits"] == {
        "store": "redis", "reachable": True,
        "limits": {"requests": f"{REQUESTS} per minute", "writes": f"{WRITES} per minute", "registrations": "20 per hour"},
    }  # fmt: skip


@pytest.mark.anyio
async def test_redis_stopped_mid_run_refuses_token_requests_until_it_is_back(limited):
    token = limited.token("outage-writer")
    limited.redis.stop()
    try:
        # Tokens live in Redis: a request with one is refused, clearly, rather than guessed at.
        conn = http.client.HTTPConnection("127.0.0.1", limited.port, timeout=30)
        conn.request("POST", "/_/mcp", PING, {"Authorization": f"Bearer {token}", "Content-Type": "application/json",
                                              "Accept": "application/json, text/event-stream"})  # fmt: skip
        answer = conn.getresponse()
        body = json.loads(answer.read())
        assert answer.status == 503 and "REDIS_URL" in json.dumps(body), body
        conn.request("GET", "/_/health")
        assert conn.getresponse().status == 200  # the liveness check does not depend on Redis
        conn.close()
    finally:
        limited.redis.start()  # back on the same port
    time.sleep(RETRY_SECONDS + 0.5)  # each worker tries Redis again after RETRY_SECONDS
    answers = burst(limited, limited.token("after-outage"), REQUESTS + 2)
    assert statuses(answers) == [200] * REQUESTS + [429] * 2, "shared again: one counter over both workers"
