"""Benchmark of the s3 storage beside git, in the same run: prints figures, never passes or fails.

Starts moto's S3 server on loopback (as the tests do), then on both backends: creates ``--pages``
pages, updates each once with its hash as the expectation (a save_page's storage part), reads
each (bytes and hash), moves ``--moves`` pages (a batch: put + delete) and lists a page's
history. Prints the median and p95 of each per operation and the s3/git ratio. moto answers one
request at a time on this machine, so the S3 figures are request counts times a loopback round
trip, not what a real bucket costs (tens of ms per request on AWS).

Usage: ``python bench/s3_storage.py [--pages 200] [--moves 50]`` (needs the s3 plugin's test extra).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from hostcore import Change, Delete, Put, Storage
from hostcore.testing import stop_process_group
from hostcore.testing.s3 import BUCKET, CREDENTIALS, make_bucket, start_moto
from hostcore_git import GitStorage
from hostcore_s3 import S3Storage

CHANGE = Change("bench", "save_page: bench")


def body(n: int, version: int) -> bytes:
    return f"---\ntitle: Page {n}\n---\n\nVersion {version} of page {n}.\n".encode() * 20


def run(storage: Storage, pages: int, moves: int) -> dict[str, list[float]]:
    """Milliseconds per operation, by operation."""
    out: dict[str, list[float]] = {"create": [], "save": [], "read": [], "move": [], "history": []}
    hashes: dict[str, str | None] = {}

    def timed(op: str, fn: Callable[[], object]) -> None:
        start = time.perf_counter()
        fn()
        out[op].append((time.perf_counter() - start) * 1000)

    def move(old: str, new: str) -> None:
        data, digest = storage.read_with_hash(old)
        storage.apply([Put(new, data, expect=None), Delete(old, expect=digest)], Change("bench", "move_page", moves=((old, new),)))

    paths = [f"ns/p{n}.md" for n in range(pages)]
    for n, path in enumerate(paths):
        timed("create", lambda: hashes.update(storage.apply([Put(path, body(n, 0), expect=None)], CHANGE)))  # noqa: B023
    for n, path in enumerate(paths):
        timed("save", lambda: storage.apply([Put(path, body(n, 1), expect=hashes[path])], CHANGE))  # noqa: B023
    for path in paths:
        timed("read", lambda: storage.read_with_hash(path))  # noqa: B023
    for n in range(moves):
        timed("move", lambda: move(paths[n], f"ns/moved{n}.md"))  # noqa: B023
    for n in range(moves):
        timed("history", lambda: storage.history(f"ns/moved{n}.md", limit=20))  # noqa: B023
    return out


def summary(values: list[float]) -> tuple[float, float]:
    ordered = sorted(values)
    return statistics.median(ordered), ordered[max(0, int(len(ordered) * 0.95) - 1)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pages", type=int, default=200)
    parser.add_argument("--moves", type=int, default=50)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-s3-") as tmp:
        os.environ.update(CREDENTIALS)
        proc, url = start_moto(Path(tmp) / "moto.log")
        try:
            make_bucket(url, BUCKET)
            git = GitStorage(Path(tmp) / "git", {})
            s3 = S3Storage(Path(tmp) / "s3", {"bucket": BUCKET, "endpoint_url": url, "prefix": "bench"})
            results = {name: run(storage, args.pages, args.moves) for name, storage in (("git", git), ("s3", s3))}
            git.close()
            s3.close()
        finally:
            stop_process_group(proc)
    print(f"s3 storage (moto on loopback) beside git, {args.pages} pages, {args.moves} moves; ms per operation")
    print(f"{'operation':<10} {'git p50':>8} {'git p95':>8} {'s3 p50':>8} {'s3 p95':>8} {'s3/git p50':>11}")
    for op in results["git"]:
        g50, g95 = summary(results["git"][op])
        s50, s95 = summary(results["s3"][op])
        print(f"{op:<10} {g50:8.2f} {g95:8.2f} {s50:8.2f} {s95:8.2f} {s50 / g50:10.1f}x")


if __name__ == "__main__":
    main()
