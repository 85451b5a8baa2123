"""Benchmark of start-up on a big git wiki, and of catching up with a push from outside.

Prints figures, never passes or fails. Builds a wiki of ``--pages`` pages (fsync off, so it builds
fast) on git storage with SQLite search, starts it once so the link graph
and the search index are built, then times, in the same run:

- start-up (``build_host`` with its start-up catch-up, then one ``search`` for a rare word and
  one ``health`` answered) with nothing changed; and the same with the recorded storage versions forgotten, which
  makes the indexes compare every page's hash with storage: the full-comparison baseline (what
  start-up did before the indexes recorded versions);
- start-up after ``--pushed`` pages were committed into the repository from outside hostcore
  (modified and new pages, one commit made with pygit2 as a ``git push`` would land it), by
  the tree diff and, for the baseline, by the full comparison;
- in a running host, the first ``search`` after such a push (it catches up before answering)
  beside a ``search`` with nothing changed;
- ``hostcore serve`` (gunicorn, 2 workers) from launch until it answers HTTP, with nothing changed,
  beside the same on a wiki of 10 pages (what starting the processes costs whatever the size).

Usage: ``python bench/startup.py [--pages 50000] [--pushed 100] [--runs 3]``.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pygit2
from wiki_scale import build, page_bytes, slug

from hostcore import SYSTEM
from hostcore.app import build_host
from hostcore.host.host import Host
from hostcore.testing import start_server, stop_process_group
from hostcore_git.trees import build as build_tree

CONFIG = 'PLUGINS = ["git", "sqlite"]\nSTORAGE = "git"\nSEARCH = "sqlite"\n[PLUGIN_CONFIG.git]\nfsync = false\n'


def answer(host: Host) -> None:
    wiki = host.wiki(SYSTEM)
    wiki.search("page 4321")  # a rare word: what is timed is start-up, not ranking a common word
    wiki.health("ns0")


def start(instance: Path, *, forget: bool = False) -> float:
    """Seconds from ``build_host`` until the host answered a search and a health report."""
    if forget:
        host = build_host(instance, start=False)
        host.links.set_storage_version(None)
        host.search.set_storage_version(None)
        host.close()
    began = time.perf_counter()
    host = build_host(instance)
    answer(host)
    took = time.perf_counter() - began
    host.close()
    return took


def median_of(runs: int, fn: Callable[[], float]) -> float:
    return statistics.median(fn() for _ in range(runs))


def push_from_outside(repo_path: Path, total: int, count: int, round_: int) -> None:
    """One commit on the branch, made outside hostcore: ``count`` pages, half changed, half new."""
    repo = pygit2.Repository(str(repo_path))
    ref = repo.lookup_reference(repo.lookup_reference("HEAD").target)
    rng = random.Random(round_)
    changes = {}
    for i in range(count):
        n = rng.randrange(total) if i % 2 else total + round_ * count + i
        changes[slug(n) + ".md"] = repo.create_blob(page_bytes(n, total, rng) + b"\npushed in round %d\n" % round_)
    tree = build_tree(repo, repo[ref.target].tree, changes)
    signature = pygit2.Signature("outside", "outside@example.org")
    ref.set_target(repo.create_commit(None, signature, signature, f"push {round_}", tree, [ref.target]))
    repo.free()


def serve_until_it_answers(instance: Path) -> float:
    began = time.perf_counter()
    proc, _base, _port, _log = start_server(instance, workers=2)
    took = time.perf_counter() - began
    stop_process_group(proc)
    return took


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pages", type=int, default=50_000)
    parser.add_argument("--pushed", type=int, default=100)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="hostcore-bench-") as tmp:
        instance = Path(tmp) / "instance"
        began = time.perf_counter()
        build(instance, args.pages)
        (instance / "hostcore.toml").write_text(CONFIG)
        built = time.perf_counter() - began
        first = start(instance)  # builds the link graph and the search index from nothing
        print(f"{args.pages} pages: built in {built:.1f} s, first start (indexes built) {first:.1f} s")

        rounds = iter(range(1, 1000))
        repo = instance / "wiki"

        def pushed_then(forget: bool) -> float:
            push_from_outside(repo, args.pages, args.pushed, next(rounds))
            return start(instance, forget=forget)

        rows = [
            ("start, nothing changed", median_of(args.runs, lambda: start(instance)), median_of(args.runs, lambda: start(instance, forget=True))),
            (f"start after {args.pushed} pages pushed", median_of(args.runs, lambda: pushed_then(False)), median_of(args.runs, lambda: pushed_then(True))),
        ]
        print(f"{'':32} {'tree diff s':>12} {'full comparison s':>18} {'ratio':>6}")
        for name, diff, full in rows:
            print(f"{name:32} {diff:>12.3f} {full:>18.3f} {full / diff:>6.1f}")

        host = build_host(instance)
        wiki = host.wiki(SYSTEM)
        samples_idle, samples_pushed = [], []
        for _ in range(args.runs):
            began = time.perf_counter()
            wiki.search("page 4321")
            samples_idle.append(time.perf_counter() - began)
            push_from_outside(repo, args.pages, args.pushed, next(rounds))
            began = time.perf_counter()
            wiki.search("page 4321")
            samples_pushed.append(time.perf_counter() - began)
        host.close()
        print(f"running host: search {statistics.median(samples_idle) * 1000:.1f} ms with nothing changed, "
              f"{statistics.median(samples_pushed) * 1000:.1f} ms right after {args.pushed} pages were pushed (catch-up included)")  # fmt: skip
        small = Path(tmp) / "small"
        build(small, 10)
        (small / "hostcore.toml").write_text(CONFIG)
        start(small)
        big = median_of(args.runs, lambda: serve_until_it_answers(instance))
        tiny = median_of(args.runs, lambda: serve_until_it_answers(small))
        print(f"hostcore serve (2 workers) until it answers, nothing changed: {big:.2f} s at {args.pages} pages, "
              f"{tiny:.2f} s at 10 pages (the processes' own start)")  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
