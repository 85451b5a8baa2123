"""Concurrent saves on the git storage alone (no HTTP): saves per second and CPU per save.

    python bench/git_concurrent_saves.py [--processes 2] [--threads 16] [--seconds 8] [--dir D]
                                         [--compare REV] [--rounds 2]

Each of --processes processes opens ``GitStorage`` on one fresh repository (fsync on, the
default) and runs --threads threads, each saving its own page over and over (one commit per save,
committed in groups: :mod:`hostcore_git.group`) for --seconds. Prints the saves per second of all
of them and the CPU time per save of the processes (user + system), then checks from outside with
git that the branch has one commit per save.

Each run's repository is deleted before the next run starts, as a server's files come and go:
on a file system without a journal (ext4 here) a file created just after many were deleted costs
about 1 ms instead of 50 us, which a storage that creates files per save pays (the bench prints
what creating a file costs before each run). ``--compare REV`` runs git revision REV's
``hostcore`` and ``plugins/git`` (``git archive``, ahead on ``PYTHONPATH``) in turns with this
tree, --rounds times each, and prints both medians and their ratio. Prints figures only.
"""

from __future__ import annotations

import argparse
import ast
import multiprocessing
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from concurrent_writers import file_creation_us

ROOT = Path(__file__).resolve().parent.parent


def _process(root: str, number: int, threads: int, seconds: float, queue: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    from hostcore import Change, Put
    from hostcore_git import GitStorage

    storage = GitStorage(Path(root))
    counts = [0] * threads
    deadline = time.monotonic() + seconds

    def saves(thread: int) -> None:
        while time.monotonic() < deadline:
            n = counts[thread]
            body = f"process {number} thread {thread} save {n}\n" * 30
            storage.apply([Put(f"ns/p{number}-{thread}.md", body.encode())], Change(f"w{number}-{thread}", f"save {number} {thread} {n}"))
            counts[thread] += 1

    workers = [threading.Thread(target=saves, args=(t,)) for t in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    storage.close()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    queue.put((sum(counts), usage.ru_utime + usage.ru_stime))


def run_once(args: argparse.Namespace, scratch: Path) -> tuple[float, float]:
    """One run in this process's tree (PYTHONPATH decides which one): (saves/s, CPU ms per save)."""
    root = scratch / "repo"
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); import git_concurrent_saves as b; "
        "print(repr(b.measure(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(Path(__file__).parent), str(root), str(args.processes), str(args.threads), str(args.seconds)],
        capture_output=True, text=True, check=True, env=os.environ | {"PYTHONPATH": os.environ.get("PYTHONPATH", "")},
    ).stdout
    rate, cpu, commits, saves = ast.literal_eval(out.strip().splitlines()[-1])
    if commits != saves:
        print(f"  the branch has {commits} commits for {saves} saves: MISMATCH")
    shutil.rmtree(root)
    return rate, cpu


def measure(root: str, processes: int, threads: int, seconds: float) -> tuple[float, float, int, int]:
    """In a fresh interpreter: run the processes; (saves/s, CPU ms per save, commits, saves)."""
    from hostcore_git import GitStorage

    GitStorage(Path(root)).close()
    queue: multiprocessing.Queue = multiprocessing.get_context("fork").Queue()  # type: ignore[type-arg]
    procs = [multiprocessing.get_context("fork").Process(target=_process, args=(root, p, threads, seconds, queue)) for p in range(processes)]
    for proc in procs:
        proc.start()
    results = [queue.get() for _ in procs]
    for proc in procs:
        proc.join()
    saves, cpu = sum(r[0] for r in results), sum(r[1] for r in results)
    commits = int(subprocess.run(["git", "--git-dir", root, "rev-list", "--count", "main"], capture_output=True, text=True, check=True).stdout)
    return saves / seconds, cpu * 1000 / max(1, saves), commits, saves


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--threads", type=int, default=16, help="per process")
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--compare", metavar="REV", help="also run git revision REV's storage, in turns with this tree")
    parser.add_argument("--rounds", type=int, default=2, help="turns each")
    parser.add_argument("--dir", help="where the repositories go (default: the system's temporary folder)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="hostcore-git-saves-", dir=args.dir) as scratch:
        trees: dict[str, str] = {"this tree": ""}
        if args.compare:
            old = Path(scratch) / "old"
            old.mkdir()
            archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.compare, "hostcore", "plugins/git"], capture_output=True, check=True).stdout
            subprocess.run(["tar", "-x", "-C", str(old)], input=archive, check=True)
            trees[args.compare] = f"{old / 'plugins' / 'git'}{os.pathsep}{old}"
        results: dict[str, list[tuple[float, float]]] = {name: [] for name in trees}
        print(f"{args.processes} processes x {args.threads} threads saving their own pages for {args.seconds:g} s, fsync on")
        for _ in range(args.rounds if args.compare else 1):
            for name, path in trees.items():
                creation = file_creation_us(Path(tempfile.mkdtemp(dir=scratch)))
                os.environ["PYTHONPATH"] = path
                rate, cpu = run_once(args, Path(scratch))
                results[name].append((rate, cpu))
                print(f"{name:>12}: {rate:7.0f} saves/s, {cpu:5.2f} ms CPU per save (creating a file cost {creation:.0f} us just before)")
        if args.compare:
            medians = {name: (statistics.median(r for r, _ in runs), statistics.median(c for _, c in runs)) for name, runs in results.items()}
            for name, (rate, cpu) in medians.items():
                print(f"{name:>12}: median {rate:.0f} saves/s, {cpu:.2f} ms CPU per save")
            mine, theirs = medians["this tree"], medians[args.compare]
            print(f"this tree / {args.compare}: {mine[0] / theirs[0]:.2f}x the saves per second, {mine[1] / theirs[1]:.2f}x the CPU per save")


if __name__ == "__main__":
    main()
