"""Benchmark of the git storage at wiki scale: prints figures, never passes or fails.

Builds a repository of ``--pages`` pages laid out as ``ns/<2-char bucket>/page-N.md``, then
measures, in the same run and on the same repository:

- raw pygit2 commits/s: a minimal loop of object-level commits (blob, nested TreeBuilders along
  the path, commit, ref update), the floor any pygit2 storage pays;
- ``GitStorage.apply`` commits/s for single-page updates with a compare-and-set hash (lock,
  expectation check, compare-and-swap, history index);
- latency of reads, ``hashes`` of one namespace, ``history(path)`` and ``history()``, and the
  time to catch the history index up with commits made outside ``GitStorage`` (the raw ones)
  and to rebuild it from the whole log.

Usage: ``python bench/git_storage.py [--pages 10000] [--commits 500] [--no-fsync]``.
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
from hostcore_git import GitStorage


def page(n: int) -> str:
    return f"ns/{n % 97:02d}/page-{n}.md"


def body(n: int, version: int) -> bytes:
    return f"---\ntitle: Page {n}\n---\n\nVersion {version} of page {n}.\n".encode() * 20


def raw_commits(repo: pygit2.Repository, branch: str, numbers: list[int], round_: int) -> float:
    """Commit one update per page number with bare pygit2; returns the seconds it took."""
    signature = pygit2.Signature("bench", "bench@hostcore")
    start = time.perf_counter()
    for i, n in enumerate(numbers):
        ns, bucket, name = page(n).split("/")
        ref = repo.lookup_reference(branch)
        root = repo[ref.target].tree
        ns_tree = root[ns]
        bucket_tree = ns_tree[bucket]
        leaf = repo.TreeBuilder(bucket_tree)
        leaf.insert(name, repo.create_blob(body(n, 10_000 * round_ + i)), FileMode.BLOB)
        middle = repo.TreeBuilder(ns_tree)
        middle.insert(bucket, leaf.write(), FileMode.TREE)
        top = repo.TreeBuilder(root)
        top.insert(ns, middle.write(), FileMode.TREE)
        commit = repo.create_commit(None, signature, signature, f"raw {i}\n", top.write(), [ref.target])
        ref.set_target(commit)
    return time.perf_counter() - start


def storage_commits(storage: GitStorage, numbers: list[int], round_: int) -> float:
    """Save one update per page number through ``apply``, as save_page does; returns seconds."""
    start = time.perf_counter()
    for i, n in enumerate(numbers):
        current = storage.hash(page(n))
        storage.apply([Put(page(n), body(n, 10_000 * round_ + 5_000 + i), expect=current)], Change("bench", f"apply {i}"))
    return time.perf_counter() - start


def latency(call: Callable[[], object], runs: int) -> str:
    """Median and 95th percentile of ``call`` over ``runs``, in milliseconds."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        call()
        times.append((time.perf_counter() - start) * 1000)
    times.sort()
    return f"p50 {statistics.median(times):.3f} ms  p95 {times[int(len(times) * 0.95)]:.3f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=10_000)
    parser.add_argument("--commits", type=int, default=500)
    parser.add_argument("--no-fsync", action="store_true", help="do not flush git objects and refs to disk")
    args = parser.parse_args()
    pages = args.pages
    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "repo"
        storage = GitStorage(root, {"fsync": not args.no_fsync})
        start = time.perf_counter()
        storage.apply([Put(page(n), body(n, 0), expect=None) for n in range(pages)], Change("bench", "import"))
        print(f"pages {pages}, fsync {'off' if args.no_fsync else 'on'}")
        print(f"import of {pages} pages as one commit: {time.perf_counter() - start:.2f} s")

        repo = pygit2.Repository(str(root))
        branch = repo.lookup_reference("HEAD").target
        # Alternate rounds, so load from other processes on the machine hits both sides alike.
        raw = applied = catch_up = 0.0
        rounds = 10
        for round_ in range(1, rounds + 1):
            raw += raw_commits(repo, branch, [rng.randrange(pages) for _ in range(args.commits // rounds)], round_)
            start = time.perf_counter()
            storage.history()  # indexes the raw commits, which hostcore did not make
            catch_up += time.perf_counter() - start
            applied += storage_commits(storage, [rng.randrange(pages) for _ in range(args.commits // rounds)], round_)
        done = args.commits // rounds * rounds
        print(f"raw pygit2 commits:      {done / raw:8.1f} commits/s")
        print(f"GitStorage.apply:        {done / applied:8.1f} commits/s  (hash + apply, as save_page does)")
        print(f"index catch-up of outside commits: {catch_up / done * 1000:.3f} ms per commit")

        hot = page(rng.randrange(pages))
        for i in range(100):
            storage.apply([Put(hot, body(0, 100_000 + i))], Change("bench", f"hot {i}"))
        print(f"read(page):              {latency(lambda: storage.read(hot), 2000)}")
        print(f"hashes('ns/42'):         {latency(lambda: storage.hashes('ns/42'), 200)}")
        print(f"hashes() all pages:      {latency(lambda: storage.hashes(), 20)}")
        print(f"history(page) 20 newest: {latency(lambda: storage.history(hot), 500)}")
        print(f"history(page) offset 60: {latency(lambda: storage.history(hot, offset=60), 500)}")
        print(f"history() 20 newest:     {latency(lambda: storage.history(), 500)}")
        storage.close()

        commits = sum(1 for _ in repo.walk(repo.references[branch].target))
        (root / "hostcore-history.sqlite").unlink()
        for extra in ("-wal", "-shm"):
            (root / f"hostcore-history.sqlite{extra}").unlink(missing_ok=True)
        start = time.perf_counter()
        GitStorage(root, {"fsync": not args.no_fsync}).close()
        print(f"history index rebuild:   {time.perf_counter() - start:.2f} s for {commits} commits")


if __name__ == "__main__":
    main()
