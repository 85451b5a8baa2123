"""What the assistants' additions cost through /_/mcp in process: resources/list (the first page,
and one far down by cursor, for every namespace and for a token limited to one of 8), resources/read
of a page, initialize (whose instructions name each namespace's operating guide), and capture.

    python bench/assistants.py [--pages 50000] [--runs 200]

One instance on the git storage (the embedded default) with --pages pages over 8 namespaces, each
namespace naming a guide, written in one commit and indexed before timing. Each figure is the
whole JSON-RPC call through the Flask test client (no HTTP server, no network): p50 and p95 of
--runs sequential calls. Prints figures only, with the machine's load.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from timing import percentiles, timed

from hostcore import SYSTEM, Principal, create_app, hookimpl
from hostcore.domain.pages import Page, namespace_path, page_path
from hostcore.seams.storage import Change, Put

NAMESPACES = [f"ns{i}" for i in range(8)]
CALLERS = {"all": Principal("bench", frozenset({"write"})), "one": Principal("one", frozenset({"write"}), frozenset({"ns3"}))}


class Tokens:
    @hookimpl
    def authenticate(self, request: Any, host: Any) -> Principal | None:
        return CALLERS.get(request.headers.get("Authorization", "").removeprefix("Bearer "))


def build(folder: Path, pages: int) -> Any:
    limits = {"requests": "1000000/minute", "writes": "1000000/minute"}
    app = create_app({"PLUGINS": ["git"], "STORAGE": "git", "RATE_LIMITS": limits}, instance_path=folder, plugins=[Tokens()])
    host = app.extensions["hostcore"]
    system = host.wiki(SYSTEM)
    ops = []
    for ns in NAMESPACES:
        system.save_namespace(ns, guide="guide")
        ops.append(Put(page_path(f"{ns}/guide"), Page(f"{ns}/guide", "Guide", "Keep pages short.\n").to_bytes(), expect=None))
    for i in range(pages):
        slug = f"{NAMESPACES[i % 8]}/page-{i:06d}"
        ops.append(Put(page_path(slug), Page(slug, f"Page {i}", f"# Page {i}\n\nText of page {i}.\n").to_bytes(), expect=None))
    change = Change(author="bench", message="bench pages")
    host.storage.apply(ops, change)
    host.notify("storage_changed", paths=[op.path for op in ops], change=change)
    host.indexes.link_graph()  # caught up before timing
    assert host.storage.exists(namespace_path("ns0"))
    return app


def rpc(client: Any, method: str, params: dict[str, Any], who: str = "all") -> dict[str, Any]:
    response = client.post(
        "/_/mcp", json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params},
        headers={"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25",
                 "Authorization": f"Bearer {who}"},
    )  # fmt: skip
    answer = json.loads(response.get_data(as_text=True))
    assert "result" in answer, answer
    return answer["result"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pages", type=int, default=50_000)
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    with tempfile.TemporaryDirectory(prefix="bench-assistants-") as tmp:
        start = time.perf_counter()
        app = build(Path(tmp) / "instance", args.pages)
        print(f"{args.pages} pages in 8 namespaces written and indexed in {time.perf_counter() - start:.1f} s")
        client = app.test_client()
        deep: dict[str, str] = {}
        for who in CALLERS:
            cursor = None
            for _ in range(min(50, args.pages // 100)):
                cursor = rpc(client, "resources/list", {"cursor": cursor} if cursor else {}, who).get("nextCursor")
            deep[who] = cursor or ""
        init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}
        cases = {
            "resources/list, first 100, every namespace": lambda: rpc(client, "resources/list", {}),
            "resources/list, 50 pages in by cursor": lambda: rpc(client, "resources/list", {"cursor": deep["all"]}),
            "resources/list, first 100, token of 1 namespace": lambda: rpc(client, "resources/list", {}, "one"),
            "resources/list, 50 pages in, token of 1 namespace": lambda: rpc(client, "resources/list", {"cursor": deep["one"]}, "one"),
            "resources/read hostcore://page/ns3/page-000003": lambda: rpc(client, "resources/read", {"uri": "hostcore://page/ns3/page-000003"}),
            "initialize (instructions name 8 guides)": lambda: rpc(client, "initialize", init),
            "tools/call capture": lambda: rpc(client, "tools/call", {"name": "capture", "arguments": {"namespace": "ns1", "text": "a thought"}}),
        }  # fmt: skip
        for name, call in cases.items():
            call()
            print(f"{name:52s} {percentiles(timed(call, args.runs))}")
        app.extensions["hostcore"].close()
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
