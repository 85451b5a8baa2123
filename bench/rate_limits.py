"""What rate limiting adds to an MCP call: no limiter, counters in memory, counters in Redis.

    python bench/rate_limits.py [--calls 2000]

Builds three apps on fresh instances (fs storage, the tokens plugin): RATE_LIMITS "off", limits
counted in memory, and limits counted in a real ``redis-server`` on loopback (REDIS_URL). The
limits are set high (1,000,000 per minute) so nothing is refused: the figures are the cost of
counting. Then, in the same run and interleaved call by call, it times raw 2026-07-28
``tools/call`` POSTs to /_/mcp through Flask's test client (in-process, so the network does not
drown the difference): ``read_page`` (one count: requests) and ``edit_page`` (two: requests and
writes). Also times ``RateLimiter.wait`` alone. Prints medians and the added cost per call over no
limiter; it never asserts timings.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from hostcore import SYSTEM, create_app
from hostcore.host.host import redis_client
from hostcore.host.ratelimits import RateLimiter
from hostcore.testing import redis_server

HIGH = {"requests": "1000000/minute", "writes": "1000000/minute"}
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "0"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


def make_app(root: Path, name: str, limits: dict[str, str], redis_url: str = "") -> tuple[Any, str]:
    """An app and an admin token for it."""
    config = {"PLUGINS": ["fs", "tokens"], "STORAGE": "fs", "RATE_LIMITS": limits, "REDIS_URL": redis_url}
    app = create_app(config, instance_path=root / name)
    host = app.extensions["hostcore"]
    host.wiki(SYSTEM).save_namespace("notes", title="Notes")
    host.wiki(SYSTEM).save_page("notes/bench", body="counter 0\n" + "Some text of the page.\n" * 200)
    from hostcore_tokens import store  # the tokens plugin's own store, as its CLI uses it

    token = store(host).create("bench", ["write"])
    return app, token


def call(client: Any, token: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    headers = {
        "Authorization": f"Bearer {token}",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call",
        "Mcp-Name": tool,
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments, "_meta": META}}
    answer = client.post("/_/mcp", data=json.dumps(body), headers=headers, content_type="application/json")
    if answer.status_code != 200 or answer.json["result"].get("isError"):
        raise SystemExit(f"{tool} failed: {answer.status_code} {answer.get_data(as_text=True)[:300]}")
    return answer.json["result"]["structuredContent"]


def interleaved(fns: dict[str, Callable[[], Any]], calls: int) -> dict[str, float]:
    """Median time per call of each function, in milliseconds, calling them in turn (so load from
    elsewhere on the machine falls on all of them alike)."""
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(calls):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(t) * 1000 for name, t in times.items()}


class Editor:
    """edit_page calls that each change the page (a counter in its first line), keeping the hash."""

    def __init__(self, client: Any, token: str) -> None:
        self.client, self.token, self.n = client, token, 0
        self.hash = call(client, token, "read_page", {"slug": "notes/bench"})["hash"]

    def __call__(self) -> None:
        edits = [{"oldText": f"counter {self.n}", "newText": f"counter {self.n + 1}"}]
        self.hash = call(self.client, self.token, "edit_page", {"slug": "notes/bench", "basehash": self.hash, "edits": edits})["hash"]
        self.n += 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=2000, help="read_page calls per setup (edit_page: a fifth)")
    args = parser.parse_args()
    edits = max(args.calls // 5, 20)

    with tempfile.TemporaryDirectory() as tmp, redis_server() as redis:
        root = Path(tmp)
        setups = {
            "no limiter": make_app(root, "off", {"requests": "off", "writes": "off"}),
            "memory": make_app(root, "memory", HIGH),
            "redis": make_app(root, "redis", HIGH, redis.url),
        }
        clients = {name: (app.test_client(), token) for name, (app, token) in setups.items()}
        read = interleaved(
            {name: partial(call, client, token, "read_page", {"slug": "notes/bench"}) for name, (client, token) in clients.items()},
            args.calls,
        )
        edit = interleaved({name: Editor(client, token) for name, (client, token) in clients.items()}, edits)
        limiters = {"memory": RateLimiter(HIGH), "redis": RateLimiter(HIGH, redis_client(redis.url), prefix="bench")}
        alone = interleaved({name: partial(limiter.wait, "requests", "bench") for name, limiter in limiters.items()}, args.calls)
        for app, _token in setups.values():
            app.extensions["hostcore"].close()

    print(f"rate limits: median ms per MCP call, {args.calls} read_page and {edits} edit_page calls per setup, interleaved")
    print(f"{'':12} {'read_page':>10} {'added':>8} {'edit_page':>10} {'added':>8} {'wait() alone':>13}")
    for name in setups:
        own = f"{alone[name]:13.4f}" if name in alone else f"{'':13}"
        added_read, added_edit = read[name] - read["no limiter"], edit[name] - edit["no limiter"]
        print(f"{name:12} {read[name]:10.3f} {added_read:+8.3f} {edit[name]:10.3f} {added_edit:+8.3f} {own}")
    print("read_page counts one request; edit_page a request and a write (Redis: one round trip each).")


if __name__ == "__main__":
    main()
