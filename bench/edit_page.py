"""What edit_page costs on a big page: 128 edits spread over a 960 KB page, with dryRun.

    python bench/edit_page.py [--runs 20] [--seconds 4] [--editors 8] [--readers 4]

1. In process, on the embedded default (git storage): p50/p95 of ``edit_page`` (dryRun), and of its
   two parts (applying the edits, the diff), beside, in the same run on the same texts, the way it
   was done before: ``count`` + ``replace`` per edit, then difflib over the whole page. Wall time and
   this process's CPU time (steadier when others share the machine).
2. Over MCP, ``hostcore serve`` (2 workers): ``read_page`` latency of a small page from --readers
   client threads, alone and while --editors clients send such dryRun edits at once, and the
   edits' own latency meanwhile.

Prints figures only; it never asserts timings. The server it starts is stopped at the end.
"""

from __future__ import annotations

import argparse
import difflib
import json
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
from timing import percentiles, timed  # bench/timing.py beside this script

from hostcore.app import build_host
from hostcore.domain.edits import apply_edits, unified_diff
from hostcore.domain.principal import SYSTEM
from hostcore.testing import cli, create_token, start_server, stop_process_group

BIG = "notes/big"
SMALL = "notes/index"
PAGE_CHARS = 960 * 1024
EDITS = 128
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "0"},
    "io.modelcontextprotocol/clientCapabilities": {},
}
FILLER = (
    "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt.\n",
    "Ut enim ad minim veniam, quis nostrud exercitation ullamco laboris nisi ut aliquip ex ea.\n",
    "\n",
    "- a list item that many sections repeat word for word\n",
)


def big_page() -> tuple[str, list[dict[str, str]]]:
    """A 960 KB body of sections whose text repeats (as notes and logs do), and 128 edits spread over it."""
    parts, n = [], 0
    while sum(map(len, parts)) < PAGE_CHARS:
        parts.append(f"## Section {n}\n\n")
        parts.extend(FILLER[i % len(FILLER)] for i in range(n % 7, n % 7 + 40))
        n += 1
    body = "".join(parts)[:PAGE_CHARS]
    step = (n - 1) // EDITS
    edits = [{"oldText": f"## Section {i * step}\n", "newText": f"## Part {i * step} (edited)\n"} for i in range(EDITS)]
    return body, edits


def old_way(body: str, edits: list[dict[str, str]], slug: str) -> str:
    """The baseline: what edit_page did before, count + replace per edit and difflib over the whole page."""
    new = body
    for e in edits:
        assert new.count(e["oldText"]) == 1
        new = new.replace(e["oldText"], e["newText"], 1)
    lines = difflib.unified_diff(body.splitlines(keepends=True), new.splitlines(keepends=True), f"a/{slug}", f"b/{slug}", n=2)
    return "".join(lines)


def in_process(instance: Path, body: str, edits: list[dict[str, str]], runs: int) -> None:
    host = build_host(instance)
    wiki = host.wiki(SYSTEM)
    h = wiki.read_page(BIG)["hash"]
    new, spans = apply_edits(body, edits)
    diff = unified_diff(body, new, spans, f"a/{BIG}", f"b/{BIG}")
    print(f"page {len(body) // 1024} KB, {body.count(chr(10))} lines, {len(edits)} edits; diff {len(diff) // 1024} KB")
    rows = [
        ("edit_page dryRun (service)", lambda: wiki.edit_page(BIG, h, edits, dry_run=True), runs),
        ("  applying the edits", lambda: apply_edits(body, edits), runs),
        ("  the diff of the edited spans", lambda: unified_diff(body, new, spans, "a", "b"), runs),
        ("baseline: count+replace, difflib over the page", lambda: old_way(body, edits, BIG), max(3, runs // 4)),
    ]
    for label, fn, n in rows:
        wall, cpu = percentiles(timed(fn, n)), percentiles(timed(fn, n, time.process_time))
        print(f"  {label:48} wall {wall}   CPU {cpu}")
    host.close()


def call(http: httpx.Client, url: str, token: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """One raw 2026-07-28 ``tools/call`` (no handshake), as bench/mcp_latency.py sends it."""
    headers = {
        "Authorization": f"Bearer {token}", "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call", "Mcp-Name": name,
    }  # fmt: skip
    params = {"name": name, "arguments": arguments, "_meta": META}
    payload = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    answer = http.post(url, content=json.dumps(payload), headers=headers)
    answer.raise_for_status()
    result = answer.json()["result"]
    if result.get("isError"):
        raise SystemExit(f"{name} failed: {result['content'][0]['text']}")
    return result["structuredContent"]


def readers_latency(url: str, token: str, readers: int, seconds: float) -> list[float]:
    samples: list[float] = []
    end = time.perf_counter() + seconds

    def read() -> None:
        with httpx.Client(timeout=120) as http:
            while time.perf_counter() < end:
                start = time.perf_counter()
                call(http, url, token, "read_page", {"slug": SMALL})
                samples.append((time.perf_counter() - start) * 1000)

    threads = [threading.Thread(target=read) for _ in range(readers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return samples


def over_mcp(instance: Path, edits: list[dict[str, str]], editors: int, readers: int, seconds: float) -> None:
    token = create_token(instance, "bench", ["write"])
    proc, base, _port, _log = start_server(instance, workers=2)
    url = base + "/_/mcp"
    try:
        with httpx.Client(timeout=120) as http:
            h = call(http, url, token, "read_page", {"slug": BIG, "limit": 1})["hash"]
            args = {"slug": BIG, "basehash": h, "edits": edits, "dryRun": True}
            call(http, url, token, "edit_page", args)
        alone = readers_latency(url, token, readers, seconds)
        edit_samples: list[float] = []
        stop = threading.Event()

        def edit() -> None:
            with httpx.Client(timeout=300) as client:
                while not stop.is_set():
                    start = time.perf_counter()
                    call(client, url, token, "edit_page", args)
                    edit_samples.append((time.perf_counter() - start) * 1000)

        threads = [threading.Thread(target=edit) for _ in range(editors)]
        for t in threads:
            t.start()
        time.sleep(0.5)
        loaded = readers_latency(url, token, readers, seconds)
        stop.set()
        for t in threads:
            t.join()
        print(f"over MCP, 2 workers, {readers} reader threads reading {SMALL}:")
        print(f"  readers alone                          {percentiles(alone)}  ({len(alone)} reads)")
        print(f"  readers while {editors} clients edit_page   {percentiles(loaded)}  ({len(loaded)} reads)")
        print(f"  ratio (p50 loaded / alone)             {statistics.median(loaded) / statistics.median(alone):8.1f}")
        print(f"  the {editors} concurrent edit_page calls    {percentiles(edit_samples)}  ({len(edit_samples)} calls)")
    finally:
        stop_process_group(proc)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=4)
    parser.add_argument("--editors", type=int, default=8)
    parser.add_argument("--readers", type=int, default=4)
    args = parser.parse_args()
    body, edits = big_page()
    with tempfile.TemporaryDirectory(prefix="hostcore-bench-") as tmp:
        instance = Path(tmp) / "instance"
        cli(instance, "init")
        host = build_host(instance)
        host.wiki(SYSTEM).save_page(BIG, body=body)
        host.close()
        in_process(instance, body, edits, args.runs)
        over_mcp(instance, edits, args.editors, args.readers, args.seconds)


if __name__ == "__main__":
    main()
