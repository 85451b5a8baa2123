"""Benchmark of a wiki on S3 beside one on git, in the same run, through the service layer (what a
tool call costs without HTTP), and how soon a change made through one host is found by search
through another: prints figures, never passes or fails.

Starts moto's S3 server on loopback (as the tests do). On a git host and an S3 host (SQLite
search on both) it times ``save_page`` (updates with their basehash), ``read_page`` and ``search``
over ``--pages`` pages. Then two S3 hosts on one bucket (each its own instance folder, search index
and link graph, as on two machines): host A saves a page with a new word, host B searches for it
every 10 ms until found; the delay from A's save returning to B's first search that finds it is
the cross-host visibility delay (``--rounds`` rounds), once with reads alone catching up
(``CATCH_UP_SECONDS = 0``) and once with the 1 s background poll (then B's search after a
change usually finds its index caught up already). moto answers one request at a time on
loopback, so S3 figures are request counts times a loopback round trip, not AWS's latency.

Usage: ``python bench/s3_vs_git.py [--pages 100] [--rounds 40]`` (needs the s3 plugin's test extra).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from s3_storage import summary  # bench/s3_storage.py beside this script: p50 and p95

from hostcore import Principal, create_app
from hostcore.testing import stop_process_group
from hostcore.testing.s3 import BUCKET, CREDENTIALS, make_bucket, start_moto

ADMIN = Principal("bench", frozenset({"admin"}))


def host_of(instance: Path, storage: str, url: str, prefix: str, catch_up: float = 0.0) -> Any:
    config: dict[str, Any] = {"PLUGINS": [storage, "tokens", "sqlite"], "STORAGE": storage, "SEARCH": "sqlite",
                              "CATCH_UP_SECONDS": catch_up, "RATE_LIMITS": {"requests": "off", "writes": "off"}}  # fmt: skip
    if storage == "s3":
        config["PLUGIN_CONFIG"] = {"s3": {"bucket": BUCKET, "endpoint_url": url, "prefix": prefix}}
    return create_app(config, instance_path=instance).extensions["hostcore"]


def latencies(host: Any, pages: int) -> dict[str, list[float]]:
    wiki = host.wiki(ADMIN)
    wiki.save_namespace("bench", title="Bench")
    out: dict[str, list[float]] = {"save_page": [], "read_page": [], "search": []}

    def timed(op: str, fn: Callable[[], Any]) -> Any:
        start = time.perf_counter()
        result = fn()
        out[op].append((time.perf_counter() - start) * 1000)
        return result

    hashes = {n: wiki.save_page(f"bench/p{n}", body=f"# Page {n}\n\nword{n} common text\n")["hash"] for n in range(pages)}
    for n in range(pages):
        timed("save_page", lambda: wiki.save_page(f"bench/p{n}", body=f"# Page {n}\n\nword{n} common text, again\n", basehash=hashes[n]))  # noqa: B023
    for n in range(pages):
        timed("read_page", lambda: wiki.read_page(f"bench/p{n}"))  # noqa: B023
    for n in range(pages):
        timed("search", lambda: wiki.search(f"word{n}"))  # noqa: B023
    return out


def visibility(a: Any, b: Any, rounds: int, tag: str) -> tuple[list[float], list[float]]:
    """(ms from A's save returning to B finding the page, ms of B's first search after the save)."""
    wa, wb = a.wiki(ADMIN), b.wiki(ADMIN)
    delays, first = [], []
    for n in range(rounds):
        wa.save_page(f"bench/{tag}{n}", body=f"# Seen {n}\n\n{tag}marker{n}\n")
        saved = time.perf_counter()
        time.sleep(0.2)  # another client's search comes a moment later (gives the poll a chance)
        start = time.perf_counter()
        found = [h["slug"] for h in wb.search(f"{tag}marker{n}")["hits"]]
        first.append((time.perf_counter() - start) * 1000)
        while not found:
            time.sleep(0.01)
            found = [h["slug"] for h in wb.search(f"{tag}marker{n}")["hits"]]
        delays.append((time.perf_counter() - saved) * 1000 - 200)
    return delays, first


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pages", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=40)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-s3-git-") as tmp:
        os.environ.update(CREDENTIALS)
        proc, url = start_moto(Path(tmp) / "moto.log")
        try:
            make_bucket(url, BUCKET)
            results = {}
            for storage in ("git", "s3"):
                host = host_of(Path(tmp) / storage, storage, url, "lat")
                results[storage] = latencies(host, args.pages)
                host.close()
            seen = {}
            for poll in (0.0, 1.0):
                prefix = f"vis{int(poll)}"
                a = host_of(Path(tmp) / f"{prefix}-a", "s3", url, prefix, poll)
                a.wiki(ADMIN).save_namespace("bench", title="Bench")
                b = host_of(Path(tmp) / f"{prefix}-b", "s3", url, prefix, poll)
                seen[poll] = visibility(a, b, args.rounds, prefix)
                a.close()
                b.close()
        finally:
            stop_process_group(proc)
    print(f"wiki on s3 (moto on loopback) beside git, {args.pages} pages, service layer; ms per call")
    print(f"{'call':<10} {'git p50':>8} {'git p95':>8} {'s3 p50':>8} {'s3 p95':>8} {'s3/git p50':>11}")
    for op in results["git"]:
        g50, g95 = summary(results["git"][op])
        s50, s95 = summary(results["s3"][op])
        print(f"{op:<10} {g50:8.2f} {g95:8.2f} {s50:8.2f} {s95:8.2f} {s50 / g50:10.1f}x")
    print(f"\ncross-host visibility, two s3 hosts on one bucket, {args.rounds} rounds; ms")
    print(f"{'CATCH_UP_SECONDS':<17} {'delay p50':>10} {'delay p95':>10} {'B search p50':>13} {'B search p95':>13}")
    for poll, (delays, first) in seen.items():
        d50, d95 = summary(delays)
        f50, f95 = summary(first)
        print(f"{poll:<17} {d50:10.1f} {d95:10.1f} {f50:13.2f} {f95:13.2f}")


if __name__ == "__main__":
    main()
