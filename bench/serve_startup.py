"""Start-up of ``hostcore serve`` on an existing instance, as an operator meets it: seconds from
launch until ``/_/health`` answers, and until a first ``search`` through ``/_/mcp`` does; and
``hostcore --help``.

    python bench/serve_startup.py --instance DIR --token TOKEN [--runs 3] [--workers 2] [--query WORD]

Use it on an instance made by ``hostcore init`` (the default config: web and the embedder
included) whose indexes have caught up (``hostcore reindex``), so that nothing changed since:
each run launches the server, polls health every 20 ms, then sends one search with the token
(any token that may read), then stops the server. Prints each run and the medians, with the
machine's load average (1 minute) beside each figure. Prints figures only.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from http.client import HTTPConnection
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from mcp_http import tool_request

from hostcore.testing import free_port, hostcore_cmd, stop_process_group
from hostcore.testing.servers import start_process_group


def get(port: int, path: str, body: bytes | None = None, headers: dict[str, str] | None = None) -> tuple[int, bytes] | None:
    try:
        http = HTTPConnection("127.0.0.1", port, timeout=30)
        http.request("POST" if body else "GET", path, body=body, headers=headers or {})
        response = http.getresponse()
        return response.status, response.read()
    except OSError:
        return None


def one_run(instance: Path, token: str, workers: int, query: str) -> tuple[float, float]:
    """(seconds until health answered, until the first search answered) from launch."""
    port = free_port()
    log = instance.parent / f"serve-startup-{port}.log"
    began = time.perf_counter()
    with open(log, "wb") as out:
        proc = start_process_group(
            [*hostcore_cmd(), "serve", "--instance", str(instance), "--bind", f"127.0.0.1:{port}", "--workers", str(workers)],
            marker="serve", what="hostcore serve", stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        )
    try:
        while (answer := get(port, "/_/health")) is None or answer[0] != 200:
            if proc.poll() is not None or time.perf_counter() - began > 120:
                raise SystemExit(f"the server did not answer: {log.read_text(errors='replace')[-2000:]}")
            time.sleep(0.02)
        health = time.perf_counter() - began
        headers, body = tool_request(token, "search", {"query": query})
        answer = get(port, "/_/mcp", body, headers)
        if answer is None or answer[0] != 200 or b'"isError":true' in answer[1]:
            raise SystemExit(f"the search failed: {answer}")
        return health, time.perf_counter() - began
    finally:
        stop_process_group(proc)
        log.unlink(missing_ok=True)


def help_seconds() -> float:
    began = time.perf_counter()
    subprocess.run([*hostcore_cmd(), "--help"], check=True, capture_output=True)
    return time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--instance", type=Path, required=True)
    parser.add_argument("--token", default=os.environ.get("HOSTCORE_TOKEN"), help="a token that may read (default: $HOSTCORE_TOKEN)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--query", default="page")
    args = parser.parse_args()
    if not args.token:
        parser.error("--token (or HOSTCORE_TOKEN) is needed for the search")
    helps, healths, searches = [], [], []
    for run in range(args.runs):
        load = os.getloadavg()[0]
        helps.append(help_seconds())
        health, search = one_run(args.instance, args.token, args.workers, args.query)
        healths.append(health)
        searches.append(search)
        print(f"run {run + 1}: hostcore --help {helps[-1]:.2f} s; serve: health {health:.2f} s, first search {search:.2f} s (load {load:.1f})")
    print(f"median: hostcore --help {statistics.median(helps):.2f} s; health {statistics.median(healths):.2f} s; "
          f"first search {statistics.median(searches):.2f} s (load now {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
