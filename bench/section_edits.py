"""Assistants editing one shared page: today's tools (read_page + edit_page with the page hash)
against the section tools (section rev), in the same run; and reading a big page by sections.

    python bench/section_edits.py [--agents 8] [--seconds 20] [--calls 200] [--workers 2]

On a fresh ``hostcore init`` instance (the embedded default: git storage) served by ``hostcore
serve`` (--workers gunicorn workers), with a write token made by the CLI:

1. **Page hash**: --agents assistants, each its own process with the official MCP client
   (2026-07-28), each owning one section of one shared page, edit it for --seconds: read_page,
   then edit_page replacing its section's text with basehash; a conflict means read again and
   retry.
2. **Section rev**: the same on a fresh page with the section tools: read_section once, then
   replace_text with the rev each edit returns; a conflict (there should be none) means read the
   section again.

For each: edits landed per second, conflicts per 100 landed edits, whether the page's git history
gained exactly one commit per landed edit (counted with git on the bare repository), and whether
every section ends at its writer's last acknowledged text.

3. **A 1 MiB page with 2,000 headings**: --calls sequential calls each of outline (its default
   first 200 sections, then all 2,000) and of read_section (a random section), through the official
   client (the whole call: client, HTTP, server, the result parsed and checked against the output
   schema), p50 and p95; beside them the same client reading a tiny page, the floor any call pays;
   then the same calls as raw JSON-RPC POSTs (the result parsed, not checked against the schema:
   the Python client's jsonschema check costs about as much as the rest for a long outline).

Prints the machine's load average (before and after) and CPU count beside the figures: on a
machine others share, figures move with their load. Prints figures only; never asserts timings.
Everything it starts is stopped at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import percentiles

META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "0"},
    "io.modelcontextprotocol/clientCapabilities": {},
}
RAW_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2026-07-28"}
LIMITS = {"HOSTCORE_RATE_LIMITS": json.dumps({"requests": "1000000/minute", "writes": "1000000/minute"})}


# --- one assistant (a process of its own) ----------------------------------------------------


async def agent(url: str, token: str, slug: str, section: int, mode: str, seconds: float) -> dict[str, Any]:
    import anyio
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    section_id, heading = f"part-{section}", f"## Part {section}\n\n"
    landed, conflicts, last = 0, 0, ""
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=httpx2.Timeout(120.0)) as http:
        async with Client(streamable_http_client(url, http_client=http), mode="2026-07-28") as c:
            await c.list_tools()
            print("ready", flush=True)
            if (await anyio.to_thread.run_sync(sys.stdin.readline)).strip() != "go":
                return {}
            deadline = time.time() + seconds
            rev, text = "", ""
            n = 0
            while time.time() < deadline:
                n += 1
                new = f"Part {section} text, edit {n}."
                if mode == "hash":
                    page = (await c.call_tool("read_page", {"slug": slug})).structured_content
                    body = page["body"]
                    start = body.index(heading) + len(heading)
                    text = body[start : body.index("\n", start)]
                    r = await c.call_tool("edit_page", {"slug": slug, "basehash": page["hash"],
                                                        "edits": [{"oldText": heading + text, "newText": heading + new}]})  # fmt: skip
                else:
                    if not rev:
                        read = (await c.call_tool("read_section", {"slug": slug, "section_id": section_id})).structured_content
                        rev, text = read["rev"], read["blocks"][0]["text"]
                    r = await c.call_tool("replace_text", {"slug": slug, "section_id": section_id, "rev": rev,
                                                           "old_text": text, "new_text": new})  # fmt: skip
                if r.is_error:
                    error = json.loads(r.content[-1].text)
                    if error["code"] != "conflict":
                        raise RuntimeError(f"{mode} agent {section}: {error}")
                    conflicts += 1
                    rev = ""
                    continue
                landed += 1
                last = new
                if mode == "rev":
                    rev, text = r.structured_content["rev"], new
    return {"section": section, "landed": landed, "conflicts": conflicts, "last": last}


def agent_main(argv: list[str]) -> None:
    import anyio

    url, token, slug, section, mode, seconds = argv
    out = anyio.run(agent, url, token, slug, int(section), mode, float(seconds))
    print(json.dumps(out), flush=True)


# --- the runs ---------------------------------------------------------------------------------


def shared_page(agents: int) -> str:
    return "# Shared page\n\nEveryone edits their own part.\n\n" + "".join(
        f"## Part {i}\n\nPart {i} text, edit 0.\n\n" for i in range(agents)
    )


def big_page(headings: int = 2000, size: int = 1024 * 1024) -> str:
    filler = "Words of a long page, with a [[notes/index]] link and `code`. "
    per = size // headings
    parts = []
    for i in range(headings):
        head = f"{'##' if i % 5 == 0 else '###'} Topic {i}\n\n"
        para = (filler * (per // len(filler) + 1))[: max(0, per - len(head) - 2)]
        parts.append(head + para + "\n\n")
    return "".join(parts)[:size]


def commits(instance: Path, path: str) -> int:
    out = subprocess.run(["git", "--git-dir", str(instance / "wiki"), "log", "--format=%H", "--", path],
                         capture_output=True, text=True, check=True).stdout  # fmt: skip
    return len(out.split())


def call(base: str, token: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """One call through the official client (a fresh session), for setting up and checking."""
    import anyio
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async def go() -> dict[str, Any]:
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=httpx2.Timeout(120.0)) as http:
            async with Client(streamable_http_client(base + "/_/mcp", http_client=http), mode="2026-07-28") as c:
                r = await c.call_tool(tool, arguments)
                if r.is_error:
                    raise RuntimeError(f"{tool}: {[x.text for x in r.content]}")
                return dict(r.structured_content or {})

    return anyio.run(go)


def edit_run(base: str, token: str, instance: Path, mode: str, agents: int, seconds: float) -> dict[str, Any]:
    slug = f"notes/shared-{mode}"
    call(base, token, "save_page", {"slug": slug, "body": shared_page(agents)})
    before = commits(instance, f"{slug}.md")
    argv = [sys.executable, __file__, "--agent", base + "/_/mcp", token, slug]
    procs = [
        subprocess.Popen([*argv, str(i), mode, str(seconds)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for i in range(agents)
    ]
    for p in procs:  # every client connected and its tools listed, then all start at once
        if p.stdout.readline().strip() != "ready":
            raise RuntimeError(f"agent did not start: {p.communicate()[1][-2000:]}")
    for p in procs:
        p.stdin.write("go\n")
        p.stdin.flush()
    results = []
    for p in procs:
        out, err = p.communicate(timeout=seconds + 300)
        if p.returncode:
            raise RuntimeError(f"agent failed: {err[-2000:]}")
        results.append(json.loads(out.strip().splitlines()[-1]))
    landed = sum(r["landed"] for r in results)
    conflicts = sum(r["conflicts"] for r in results)
    gained = commits(instance, f"{slug}.md") - before
    sections_ok = all(
        [b["text"] for b in call(base, token, "read_section", {"slug": slug, "section_id": f"part-{r['section']}"})["blocks"]]
        == [r["last"] or f"Part {r['section']} text, edit 0."]
        for r in results
    )
    return {"landed": landed, "conflicts": conflicts, "per_second": landed / seconds, "commits": gained,
            "one_commit_each": gained == landed, "sections_ok": sections_ok,
            "per_agent": [r["landed"] for r in results]}  # fmt: skip


def read_run(base: str, token: str, calls: int) -> dict[str, list[float]]:
    import anyio
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    slug = "notes/big"
    body = big_page()
    call(base, token, "save_page", {"slug": slug, "body": body})
    rnd = random.Random(1)
    call(base, token, "save_page", {"slug": "notes/tiny", "body": "A tiny page.\n"})
    out: dict[str, list[float]] = {}
    ids = [s["section_id"] for s in call(base, token, "outline", {"slug": slug, "limit": 2000})["sections"]]
    assert len(ids) == 2000, len(ids)
    cases = [
        ("read_page, a tiny page (the floor)", "read_page", lambda: {"slug": "notes/tiny"}),
        ("outline (its first 200 sections)", "outline", lambda: {"slug": slug}),
        ("outline (all 2,000 sections)", "outline", lambda: {"slug": slug, "limit": 2000}),
        ("read_section (a random one)", "read_section", lambda: {"slug": slug, "section_id": rnd.choice(ids)}),
    ]

    async def go() -> None:
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=httpx2.Timeout(120.0)) as http:
            async with Client(streamable_http_client(base + "/_/mcp", http_client=http), mode="2026-07-28") as c:
                await c.list_tools()
                for name, tool, arguments in cases:
                    out[name] = []
                    for _ in range(calls):
                        start = time.perf_counter()
                        r = await c.call_tool(tool, arguments())
                        out[name].append((time.perf_counter() - start) * 1000)
                        assert not r.is_error, r.content

    anyio.run(go)
    with httpx2.Client(headers=RAW_HEADERS | {"Authorization": f"Bearer {token}"}, timeout=120.0) as http:
        for name, tool, arguments in cases:
            out[f"{name}, raw HTTP"] = raw = []
            for n in range(calls):
                body = {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": tool, "arguments": arguments(), "_meta": META}}
                start = time.perf_counter()
                reply = http.post(base + "/_/mcp", json=body, headers={"Mcp-Method": "tools/call", "Mcp-Name": tool}).json()
                raw.append((time.perf_counter() - start) * 1000)
                assert not reply["result"].get("isError"), reply
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--agents", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()

    from hostcore.testing import cli, create_token, start_server, stop_process_group

    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="bench-sections-") as tmp:
        instance = Path(tmp) / "instance"
        cli(instance, "init", env=LIMITS)
        token = create_token(instance, "bench", ["write"], env=LIMITS)
        proc, base, _port, _log = start_server(instance, args.workers, env=LIMITS)
        try:
            runs = {mode: edit_run(base, token, instance, mode, args.agents, args.seconds) for mode in ("hash", "rev")}
            reads = read_run(base, token, args.calls)
        finally:
            stop_process_group(proc)
    load_after = os.getloadavg()

    print(f"machine: {os.cpu_count()} CPUs, load average {load_before[0]:.1f} before, {load_after[0]:.1f} after "
          "(shared with other work: figures move with it)")  # fmt: skip
    print(f"{args.agents} assistants, one section of one page each, {args.seconds:.0f} s per run, {args.workers} gunicorn workers, git storage")
    names = {"hash": "read_page + edit_page (page hash)", "rev": "read_section + replace_text (section rev)"}
    for mode, r in runs.items():
        rate = 100 * r["conflicts"] / max(1, r["landed"])
        print(f"  {names[mode]:42s} landed {r['landed']:5d} ({r['per_second']:6.1f}/s)  conflicts {r['conflicts']:5d} "
              f"({rate:6.1f} per 100 edits)  one commit per landed edit: {r['one_commit_each']} ({r['commits']} commits)  "
              f"every section at its writer's last acknowledged text: {r['sections_ok']}  per agent {r['per_agent']}")  # fmt: skip
    print(f"1 MiB page, 2,000 headings, {args.calls} sequential calls each through the official Python client (2026-07-28):")
    for name, samples in reads.items():
        print(f"  {name:36s} {percentiles(samples)}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--agent":
        agent_main(sys.argv[2:])
    else:
        main()
