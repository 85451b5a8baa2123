"""Slow clients against ``hostcore serve`` alone (2 workers of 16 threads, no proxy in front):
connections that send a head and part of a body, with no token, must not stop anyone else, and a
request that never finishes arriving is cut within its bound (see docs/operators.md, Serving)."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from hostcore.cli.intake import BUFFER_BYTES, GRACE, MIN_RATE

from .conftest import cli, create_token, mcp_session, ok, start_server, stop_process_group

pytestmark = pytest.mark.anyio

ANSWERED_WITHIN = 5.0
"""How long a real client may wait meanwhile (answers take tens of ms on an idle machine; before
the fix they timed out after 15 s)."""
THREADS = 16
"""Per worker: ``hostcore serve``'s default."""
SMALL, LARGE = 1000, BUFFER_BYTES * 4
"""Declared body sizes: one the worker reads before a thread takes the request, one the
application reads itself (after refusing a caller without a token)."""


@dataclass
class Served:
    base: str
    port: int
    token: str
    log: Path


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    instance = tmp_path_factory.mktemp("slow") / "instance"
    cli(instance, "init")
    token = create_token(instance, "reader", ["read"])
    proc, base, port, log = start_server(instance, workers=2)
    try:
        yield Served(base, port, token, log)
    finally:
        stop_process_group(proc)


def open_slow(
    port: int, path: str, length: int, sent: bytes = b'{"jsonrpc": "2.0", ', token: str = "", form: bool = False
) -> socket.socket:
    """A connection that has sent a POST's head (of JSON, or of a ``form``) and the first bytes of a
    ``length``-byte body, and then nothing more."""
    conn = socket.create_connection(("127.0.0.1", port), timeout=30)
    kind = "application/x-www-form-urlencoded" if form else "application/json"
    head = (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: {kind}\r\n"
            f"Accept: application/json, text/event-stream\r\nContent-Length: {length}\r\n")  # fmt: skip
    if token:
        head += f"Authorization: Bearer {token}\r\n"
    conn.sendall(head.encode() + b"\r\n" + sent)
    return conn


def answer_of(conn: socket.socket, wait: float) -> tuple[bytes, float]:
    """What the server sent until it closed the connection (or ``wait`` passed), and when."""
    start, got = time.monotonic(), b""
    conn.settimeout(wait)
    try:
        while data := conn.recv(65536):
            got += data
    except TimeoutError:
        pass
    return got, time.monotonic() - start


async def timed_client(served: Served) -> dict[str, float]:
    """Seconds a real client waited for each answer: /_/health, and read_page through the official
    MCP client (its connection, handshake and tools/list included)."""
    took = {}
    start = time.monotonic()
    with httpx.Client(timeout=60) as http:
        assert http.get(served.base + "/_/health").status_code == 200
    took["health"] = time.monotonic() - start
    start = time.monotonic()
    async with mcp_session(served.base + "/_/mcp", served.token, "legacy") as c:
        assert ok(await c.call_tool("read_page", {"slug": "notes/index"}))["slug"] == "notes/index"
    took["read_page"] = time.monotonic() - start
    return took


@pytest.mark.parametrize("count", [64, 200])
@pytest.mark.parametrize(
    "path, form, refused",
    [("/_/mcp", False, b"401"), ("/_/oauth/register", False, b"400"), ("/_/login", True, None)],
    ids=["mcp", "register", "login"],
)
async def test_slow_clients_without_a_token_do_not_stop_the_wiki(served, count, path, form, refused):
    """``count`` connections send a head and part of a body, no token, and wait; half of them
    announce a body the worker reads before any thread takes the request, half one the
    application reads itself. Meanwhile /_/health and read_page answer at once. A large body is
    refused before it is read where the route can tell (the MCP endpoint without a token: 401; a
    registration over its size: 400); the sign-in form reads its body, so those wait, but on at
    most half of each worker's threads, and the others are answered 503 at once."""
    with ExitStack() as stack:
        small = [stack.enter_context(open_slow(served.port, path, SMALL, form=form)) for _ in range(count // 2)]
        large = [stack.enter_context(open_slow(served.port, path, LARGE, form=form)) for _ in range(count // 2)]
        time.sleep(1)  # every one of them is in the server now
        took = await timed_client(served)
        assert max(took.values()) < ANSWERED_WITHIN, took
        assert all(answer_of(conn, 0.01)[0] == b"" for conn in small), "a small body is waited for, answered when whole"
        if refused:
            for conn in large:
                got, _ = answer_of(conn, 10)
                assert got.startswith(b"HTTP/1.1 " + refused + b" "), got[:100]
        else:
            answers = [answer_of(conn, 0.01)[0] for conn in large]
            assert len([a for a in answers if not a]) <= 2 * THREADS // 2
            assert all(a.startswith(b"HTTP/1.1 503 ") and b"Retry-After: 10" in a for a in answers if a), answers
        took = await timed_client(served)  # and once more, with the connections still open
        assert max(took.values()) < ANSWERED_WITHIN, took


@pytest.mark.parametrize("length", [SMALL, LARGE])
@pytest.mark.parametrize("authorized", [True, False], ids=["token", "no-token"])
def test_a_body_that_never_finishes_is_cut_within_its_bound(served, length, authorized):
    """A request whose body stops halfway is answered 408 and closed after GRACE seconds (the bytes
    it sent buy it a little more: MIN_RATE), whoever sends it and whichever reads it (the worker
    or, for a large body with a token, the application); before the fix it was held for as long
    as the client kept the connection (more than 300 s)."""
    sent = b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", '
    with open_slow(served.port, "/_/mcp", length, sent, served.token if authorized else "") as conn:
        got, took = answer_of(conn, GRACE + 30)
    if length == LARGE and not authorized:
        assert got.startswith(b"HTTP/1.1 401 ") and took < ANSWERED_WITHIN, (got[:100], took)
        return
    assert got.startswith(b"HTTP/1.1 408 ") and b"Connection: close" in got, got[:200]
    bound = GRACE + 2 * len(sent) / MIN_RATE + 1.0  # +1: the event loop looks every 0.25 s, and the machine may be busy
    assert GRACE - 1.0 < took < bound + ANSWERED_WITHIN, took


def test_a_head_sent_a_byte_at_a_time_is_cut(served):
    """A client that trickles its head (one byte a second, forever) gets no thread and is closed
    after GRACE seconds."""
    with socket.create_connection(("127.0.0.1", served.port), timeout=30) as conn:
        start, closed = time.monotonic(), False
        for byte in b"GET /_/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 100:
            try:
                conn.send(bytes([byte]))
                conn.settimeout(1.0)
                if conn.recv(1024) == b"":
                    closed = True
                    break
            except TimeoutError:
                continue
            except OSError:  # reset: closed too
                closed = True
                break
        took = time.monotonic() - start
    assert closed and GRACE - 1.0 < took < GRACE + ANSWERED_WITHIN, (closed, took)


def test_whole_requests_keep_alive_and_pipelined_ones_are_answered_in_order(served):
    """What the worker reads before a thread takes it is what the thread then parses: two requests
    sent in one write on a kept-alive connection both get their answers, in order."""
    body = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/list"}).encode()
    one = (f"POST /_/mcp HTTP/1.1\r\nHost: 127.0.0.1:{served.port}\r\nContent-Type: application/json\r\n"
           f"Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-11-25\r\n"
           f"Authorization: Bearer {served.token}\r\nContent-Length: {len(body)}\r\n\r\n").encode() + body  # fmt: skip
    health = f"GET /_/health HTTP/1.1\r\nHost: 127.0.0.1:{served.port}\r\n\r\n".encode()
    with socket.create_connection(("127.0.0.1", served.port), timeout=30) as conn:
        conn.sendall(one + health)
        got = b""
        while got.count(b"HTTP/1.1 200 ") < 2 or not got.rstrip().endswith(b"}"):
            data = conn.recv(65536)
            assert data, got[-300:]
            got += data
    first, second = got.index(b'"id":7'), got.index(b'"status":"ok"')
    assert first < second and b"Connection: keep-alive" in got
