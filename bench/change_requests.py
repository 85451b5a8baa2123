"""A 50-page change request through /_/mcp: validated, created, dry-run, read (with 50 diffs) and
applied, each call timed.

    python bench/change_requests.py [--pages 50] [--rounds 10] [--workers 2]

On a fresh ``hostcore init`` instance (the embedded default: git storage) served by ``hostcore
serve`` (--workers gunicorn workers), with tokens made by the CLI: one that may only propose, one
that reviews. The --pages pages are written first in one apply_changes call. Then, --rounds times:
validate_change_request and create_change_request with one edit per page (a structural request),
dry_run_change_request, read_change_request (every page's diff) and apply_change_request (the 50
pages and the request's record in one commit), each a raw JSON-RPC ``tools/call`` over one
keep-alive connection (no SDK: the figures are the server's). The next round edits the pages as
the last one left them. Prints p50 and p95 (the largest sample under 20 rounds) of each, with
the machine's load; never asserts timings. Everything it starts is stopped at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mcp_http import ToolClient
from timing import percentiles

LIMITS = {"HOSTCORE_RATE_LIMITS": json.dumps({"requests": "1000000/minute", "writes": "1000000/minute"})}
STEPS = ("validate_change_request", "create_change_request", "dry_run_change_request", "read_change_request", "apply_change_request")


def result(client: ToolClient, tool: str, arguments: dict[str, Any], times: dict[str, list[float]] | None = None) -> dict[str, Any]:
    elapsed, answer = client.call(tool, arguments)
    assert not answer.get("isError"), (tool, answer)
    if times is not None:
        times[tool].append(elapsed)
    return dict(answer["structuredContent"])


def body(i: int, round_: int) -> str:
    return f"# Page {i}\n\nIntro of page {i}.\n\n## Status\n\nround {round_}\n\n## Notes\n\nSome notes on page {i}.\n"


def run(url: str, tokens: dict[str, str], pages: int, rounds: int) -> dict[str, list[float]]:
    writer, proposer, reviewer = (ToolClient(url, tokens[name]) for name in ("write", "propose", "review"))
    slugs = [f"notes/cr-{i:03d}" for i in range(pages)]
    made = result(writer, "apply_changes", {"changes": [{"op": "save", "slug": s, "body": body(i, 0)} for i, s in enumerate(slugs)]})
    hashes = [c["hash"] for c in made["changes"]]
    times: dict[str, list[float]] = {step: [] for step in STEPS}
    for r in range(rounds):
        changes = [
            {"op": "edit", "slug": s, "basehash": h, "edits": [{"oldText": f"round {r}", "newText": f"round {r + 1}"}]}
            for s, h in zip(slugs, hashes, strict=True)
        ]
        request = {"changes": changes, "title": f"Round {r + 1}", "reason": "the bench moves every page on a round"}
        assert result(proposer, "validate_change_request", request, times)["valid"]
        cr = result(proposer, "create_change_request", request, times)["id"]
        assert result(reviewer, "dry_run_change_request", {"id": cr}, times)["ready"]
        assert len(result(reviewer, "read_change_request", {"id": cr}, times)["pages"]) == pages
        applied = result(reviewer, "apply_change_request", {"id": cr, "note": "go"}, times)
        hashes = [c["hash"] for c in applied["changes"]]
    for client in (writer, proposer, reviewer):
        client.close()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()

    from hostcore.testing import cli, create_token, start_server, stop_process_group

    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="bench-change-requests-") as tmp:
        instance = Path(tmp) / "instance"
        cli(instance, "init", env=LIMITS)
        tokens = {scope: create_token(instance, f"bench-{scope}", [scope], env=LIMITS) for scope in ("write", "propose", "review")}
        proc, base, _port, _log = start_server(instance, args.workers, env=LIMITS)
        try:
            times = run(base + "/_/mcp", tokens, args.pages, args.rounds)
        finally:
            stop_process_group(proc)
    load_after = os.getloadavg()

    print(f"machine: {os.cpu_count()} CPUs, load average {load_before[0]:.1f} before, {load_after[0]:.1f} after "
          "(shared with other work: figures move with it)")  # fmt: skip
    print(f"a change request of {args.pages} page edits, {args.rounds} rounds, {args.workers} gunicorn workers, git storage:")
    for step, samples in times.items():
        print(f"  {step:26s} {percentiles(samples)}")


if __name__ == "__main__":
    main()
