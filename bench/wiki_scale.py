"""Benchmark of the service layer on git storage at 1,000 / 10,000 / 50,000 pages.

Prints figures, never passes or fails. For each size it builds an instance whose pages sit in
folders (``ns<k>/<bucket>/page-N``) and link to three others (some links dangle), starts the host
(the link graph is built from storage on start-up: timed), then measures median and p95 latency of
``backlinks``, ``health`` and ``recent_changes`` through the service layer, and, at the middle
size, commits per second through ``save_page`` beside raw pygit2 commits in the same run.

Usage: ``python bench/wiki_scale.py [--sizes 1000,10000,50000] [--runs 50] [--commits 200]``.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pygit2
from pygit2.enums import FileMode

from hostcore import Change, Put
from hostcore.app import build_host
from hostcore.domain.pages import Page
from hostcore.domain.principal import SYSTEM


def slug(n: int) -> str:
    return f"ns{n % 8}/b{n % 53:02d}/page-{n}"


def page_bytes(n: int, total: int, rng: random.Random) -> bytes:
    links = " ".join(f"[[{slug(rng.randrange(total + total // 50))}]]" for _ in range(3))
    body = f"# Page {n}\n\nSome text about topic {n % 97}. See {links}.\n" + "Filler sentence for size. " * 40
    return Page(slug=slug(n), title=f"Page {n}", body=body, tags=(f"t{n % 11}",)).to_bytes()


def timed(fn: Callable[[], object], runs: int) -> tuple[float, float]:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    samples.sort()
    return statistics.median(samples), samples[int(0.95 * (len(samples) - 1))]


def build(instance: Path, total: int) -> None:
    instance.mkdir(parents=True)
    (instance / "hostcore.toml").write_text('PLUGINS = ["git"]\nSTORAGE = "git"\n[PLUGIN_CONFIG.git]\nfsync = false\n')
    host = build_host(instance, start=False)
    rng = random.Random(total)
    ops = [Put(f"ns{k}/.namespace.yaml", b"title: NS\n", expect=None) for k in range(8)]
    ops += [Put(slug(n) + ".md", page_bytes(n, total, rng), expect=None) for n in range(total)]
    host.storage.apply(ops, Change("bench", "import"))
    for i in range(30):  # some history for recent_changes
        host.storage.apply([Put(slug(i) + ".md", page_bytes(i, total, rng) + b"\nedit %d\n" % i)], Change("bench", f"edit {i}"))
    host.close()


def raw_commits_per_second(repo_path: Path, count: int) -> float:
    repo = pygit2.Repository(str(repo_path))
    ref = repo.lookup_reference(repo.head.name)
    sig = pygit2.Signature("bench", "bench@hostcore")
    start = time.perf_counter()
    for i in range(count):
        root = repo[ref.target].tree
        ns_tree = root["ns0"]
        bucket = ns_tree["b00"]
        leaf = repo.TreeBuilder(bucket)
        leaf.insert("raw.md", repo.create_blob(b"raw %d\n" % i), FileMode.BLOB)
        middle = repo.TreeBuilder(ns_tree)
        middle.insert("b00", leaf.write(), FileMode.TREE)
        top = repo.TreeBuilder(root)
        top.insert("ns0", middle.write(), FileMode.TREE)
        commit = repo.create_commit(None, sig, sig, f"raw {i}", top.write(), [ref.target])
        ref.set_target(commit)
        ref = repo.lookup_reference(repo.head.name)
    return count / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1000,10000,50000")
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--commits", type=int, default=200)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"{'pages':>7} {'build s':>8} {'start s':>8} {'backlinks p50/p95 ms':>21} {'health p50/p95 ms':>18} "
          f"{'recent_changes p50/p95 ms':>26}")  # fmt: skip
    for total in sizes:
        with tempfile.TemporaryDirectory(prefix="hostcore-bench-") as tmp:
            instance = Path(tmp) / "instance"
            t0 = time.perf_counter()
            build(instance, total)
            built = time.perf_counter() - t0
            t0 = time.perf_counter()
            host = build_host(instance)  # start-up builds the link graph from storage
            started = time.perf_counter() - t0
            wiki = host.wiki(SYSTEM)
            rng = random.Random(1)
            bl = timed(lambda wiki=wiki, rng=rng, total=total: wiki.backlinks(slug(rng.randrange(total))), args.runs)
            he = timed(wiki.health, max(5, args.runs // 5))
            rc = timed(lambda wiki=wiki: wiki.recent_changes(20), args.runs)
            print(f"{total:>7} {built:>8.1f} {started:>8.1f} {bl[0]:>10.2f} / {bl[1]:>7.2f} {he[0]:>8.2f} / {he[1]:>7.2f} "
                  f"{rc[0]:>12.2f} / {rc[1]:>9.2f}")  # fmt: skip
            if total == sizes[len(sizes) // 2]:
                h = wiki.read_page(slug(7))["hash"]
                start = time.perf_counter()
                for i in range(args.commits):
                    h = wiki.save_page(slug(7), basehash=h, body=f"version {i}\n")["hash"]
                service = args.commits / (time.perf_counter() - start)
                raw = raw_commits_per_second(host.storage.root, args.commits)
                host.close()
                commit_line = (f"commits/s at {total} pages (fsync off): save_page {service:.0f}, raw pygit2 {raw:.0f}, "
                               f"ratio {service / raw:.2f}")  # fmt: skip
            else:
                host.close()
    print(commit_line)


if __name__ == "__main__":
    main()
