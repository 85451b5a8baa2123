"""``hostcore serve --bind``: what an operator gets from ``hostcore init`` and ``serve`` alone,
without setting PUBLIC_URL (``make serve BIND=...``)."""

from __future__ import annotations

import threading
import time
from http.client import HTTPConnection

import httpx
import pytest

from hostcore.cli.workers import SLACK
from hostcore.testing.servers import connections_by_process, worker_pids

from .conftest import cli, create_token, mcp_session, ok, start_server, stop_process_group

pytestmark = pytest.mark.anyio


async def test_public_url_follows_the_bind_address(tmp_path):
    """The 401's resource_metadata, the protected-resource document and search's urls name the
    port serve listens on, not the :8080 that ``init`` used to write into hostcore.toml."""
    instance = tmp_path / "instance"
    cli(instance, "init")
    reader = create_token(instance, "reader", ["read"])
    proc, base, port, log = start_server(instance, workers=1)
    try:
        assert base == f"http://127.0.0.1:{port}" and port != 8080
        assert f"MCP endpoint: {base}/_/mcp" in log.read_text()
        with httpx.Client(timeout=30) as http:
            refused = http.post(base + "/_/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
            assert refused.status_code == 401
            metadata = f"{base}/.well-known/oauth-protected-resource/_/mcp"
            assert f'resource_metadata="{metadata}"' in refused.headers["WWW-Authenticate"]
            assert http.get(metadata).json()["resource"] == f"{base}/_/mcp"
        async with mcp_session(base + "/_/mcp", reader) as c:
            found = ok(await c.call_tool("search", {"query": "welcome"}))
        assert found["results"] == [{"id": "notes/index", "title": "Welcome", "url": f"{base}/notes/index"}]
    finally:
        stop_process_group(proc)


def test_connections_are_spread_evenly_over_the_workers(tmp_path):
    """32 keep-alive clients that connect at once and keep asking: each of the 2 workers ends up
    holding 16 of them, give or take the board's slack. gunicorn's plain gthread worker let
    whichever worker was awake accept: 46 and 18 of 64 writers, and the first one's clients waited
    twice as long. Every request is answered; the connections a worker hands back are announced
    (``Connection: close``) and the client reconnects."""
    instance = tmp_path / "instance"
    cli(instance, "init")
    proc, _, port, _ = start_server(instance, workers=2)
    clients, stop, failures = 32, threading.Event(), []
    barrier = threading.Barrier(clients + 1)

    def client() -> None:
        http = HTTPConnection("127.0.0.1", port, timeout=30)
        try:
            http.connect()
            barrier.wait()
            while not stop.is_set():
                http.request("GET", "/_/health")
                response = http.getresponse()
                response.read()
                if response.status != 200:
                    failures.append(response.status)
                if response.getheader("Connection") == "close":  # handed back: connect again
                    http.close()
                    http.connect()
                time.sleep(0.01)
        except Exception as exc:
            failures.append(repr(exc))
        finally:
            http.close()

    threads = [threading.Thread(target=client) for _ in range(clients)]
    try:
        for t in threads:
            t.start()
        barrier.wait()
        workers = worker_pids(proc.pid)
        assert len(workers) == 2
        deadline, counts = time.monotonic() + 30, {}
        while time.monotonic() < deadline:
            time.sleep(0.5)
            counts = connections_by_process(workers, port)
            if sum(counts.values()) == clients and max(counts.values()) - min(counts.values()) <= 2 * SLACK:
                break
        assert sum(counts.values()) == clients and max(counts.values()) - min(counts.values()) <= 2 * SLACK, counts
    finally:
        stop.set()
        for t in threads:
            t.join()
        stop_process_group(proc)
    assert failures == []
