"""Concurrent saves on the git storage alone (no HTTP): saves per second and CPU per save.

    python bench/git_concurrent_saves.py [--processes 2] [--threads 16] [--seconds 8] [--dir D]
                                         [--compare REV] [--rounds 2] [--pages N]

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
tree, --rounds times each, and prints both medians and their ratio. ``--pages N`` runs each tree
on a fresh repository and on one of N pages in 8 namespaces (``ns0/page-0.md``... in one
commit, as an import leaves it), in turns, the writers saving their pages among ``ns0``'s, and
prints their ratio: a save's cost should not follow the size of its folder. Each figure has the
p50 and p99 latency of a save and the machine's load average (1 minute) beside it. Prints figures only.
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


NAMESPACES = 8


def _process(root: str, number: int, threads: int, seconds: float, queue: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    from hostcore import Change, Put
    from hostcore_git import GitStorage

    storage = GitStorage(Path(root))
    counts = [0] * threads
    latencies: list[float] = []
    deadline = time.monotonic() + seconds

    def saves(thread: int) -> None:
        while time.monotonic() < deadline:
            n = counts[thread]
            body = f"process {number} thread {thread} save {n}\n" * 30
            started = time.perf_counter()
            storage.apply([Put(f"ns0/p{number}-{thread}.md", body.encode())], Change(f"w{number}-{thread}", f"save {number} {thread} {n}"))
            latencies.append(time.perf_counter() - started)
            counts[thread] += 1

    workers = [threading.Thread(target=saves, args=(t,)) for t in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    storage.close()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    queue.put((sum(counts), usage.ru_utime + usage.ru_stime, latencies))


def build_wiki(root: Path, pages: int) -> None:
    """A bare repository of ``pages`` pages of 1-2 KB in :data:`NAMESPACES` folders, one commit,
    packed (as git gc leaves an import)."""
    import pygit2

    repo = pygit2.init_repository(str(root), bare=True, initial_head="main")
    folders = [repo.TreeBuilder() for _ in range(NAMESPACES)]
    for i in range(pages):
        body = f"---\ntitle: Page {i}\ntags: [bench, t{i % 97}]\n---\n# Page {i}\n\nSee [[ns{(i + 1) % NAMESPACES}/page-{i + 1}]].\n" + f"Words of page {i}. " * (60 + i % 60)
        folders[i % NAMESPACES].insert(f"page-{i}.md", repo.create_blob(body.encode()), pygit2.enums.FileMode.BLOB)
    top = repo.TreeBuilder()
    for n, folder in enumerate(folders):
        top.insert(f"ns{n}", folder.write(), pygit2.enums.FileMode.TREE)
    who = pygit2.Signature("bench", "bench@hostcore")
    repo.create_commit("refs/heads/main", who, who, "import", top.write(), [])
    subprocess.run(["git", "--git-dir", str(root), "repack", "-a", "-d", "-q"], check=True)
    subprocess.run(["git", "--git-dir", str(root), "prune"], check=True)


def run_once(args: argparse.Namespace, scratch: Path, template: Path | None) -> tuple[float, float, float, float]:
    """One run in this process's tree (PYTHONPATH decides which one), on a copy of ``template``
    (None: a fresh repository): (saves/s, CPU ms per save, p50 ms, p99 ms)."""
    root = scratch / "repo"
    if template is not None:
        shutil.copytree(template, root)
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); import git_concurrent_saves as b; "
        "print(repr(b.measure(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(Path(__file__).parent), str(root), str(args.processes), str(args.threads), str(args.seconds)],
        capture_output=True, text=True, check=True, env=os.environ | {"PYTHONPATH": os.environ.get("PYTHONPATH", "")},
    ).stdout
    rate, cpu, commits, saves, p50, p99 = ast.literal_eval(out.strip().splitlines()[-1])
    if commits != saves:
        print(f"  the branch has {commits} commits for {saves} saves: MISMATCH")
    shutil.rmtree(root)
    return rate, cpu, p50, p99


def measure(root: str, processes: int, threads: int, seconds: float) -> tuple[float, float, int, int, float, float]:
    """In a fresh interpreter: run the processes; (saves/s, CPU ms per save, new commits, saves,
    p50 and p99 ms of a save)."""
    from hostcore_git import GitStorage

    GitStorage(Path(root)).close()
    before = int(subprocess.run(["git", "--git-dir", root, "rev-list", "--count", "--all"], capture_output=True, text=True, check=True).stdout)
    queue: multiprocessing.Queue = multiprocessing.get_context("fork").Queue()  # type: ignore[type-arg]
    procs = [multiprocessing.get_context("fork").Process(target=_process, args=(root, p, threads, seconds, queue)) for p in range(processes)]
    for proc in procs:
        proc.start()
    results = [queue.get() for _ in procs]
    for proc in procs:
        proc.join()
    saves, cpu = sum(r[0] for r in results), sum(r[1] for r in results)
    commits = int(subprocess.run(["git", "--git-dir", root, "rev-list", "--count", "main"], capture_output=True, text=True, check=True).stdout) - before
    ms = statistics.quantiles([x * 1000 for r in results for x in r[2]], n=100)
    return saves / seconds, cpu * 1000 / max(1, saves), commits, saves, ms[49], ms[98]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--threads", type=int, default=16, help="per process")
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--compare", metavar="REV", help="also run git revision REV's storage, in turns with this tree")
    parser.add_argument("--rounds", type=int, default=2, help="turns each")
    parser.add_argument("--dir", help="where the repositories go (default: the system's temporary folder)")
    parser.add_argument("--pages", type=int, help="also run on a wiki of this many pages, in turns with a fresh one")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="hostcore-git-saves-", dir=args.dir) as scratch:
        trees: dict[str, str] = {"this tree": ""}
        if args.compare:
            old = Path(scratch) / "old"
            old.mkdir()
            archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.compare, "hostcore", "plugins/git"], capture_output=True, check=True).stdout
            subprocess.run(["tar", "-x", "-C", str(old)], input=archive, check=True)
            trees[args.compare] = f"{old / 'plugins' / 'git'}{os.pathsep}{old}"
        wikis: dict[str, Path | None] = {"fresh": None}
        if args.pages:
            started = time.monotonic()
            wikis[f"{args.pages} pages"] = template = Path(scratch) / "template"
            build_wiki(template, args.pages)
            print(f"built the {args.pages}-page wiki in {time.monotonic() - started:.0f} s")
        variants = [(f"{tree}, {wiki}" if args.pages else tree, path, template) for tree, path in trees.items() for wiki, template in wikis.items()]
        results: dict[str, list[tuple[float, float, float, float]]] = {name: [] for name, _, _ in variants}
        print(f"{args.processes} processes x {args.threads} threads saving their own pages for {args.seconds:g} s, fsync on")
        for _ in range(args.rounds if args.compare or args.pages else 1):
            for name, path, template in variants:
                creation = file_creation_us(Path(tempfile.mkdtemp(dir=scratch)))
                os.environ["PYTHONPATH"] = path
                load = os.getloadavg()[0]
                rate, cpu, p50, p99 = run_once(args, Path(scratch), template)
                results[name].append((rate, cpu, p50, p99))
                print(f"{name:>24}: {rate:7.0f} saves/s, p50 {p50:6.1f} ms, p99 {p99:6.1f} ms, {cpu:5.2f} ms CPU per save"
                      f" (load {load:.1f} before, {os.getloadavg()[0]:.1f} after; creating a file cost {creation:.0f} us just before)")
        if len(variants) > 1:
            medians = {name: tuple(statistics.median(run[i] for run in runs) for i in range(4)) for name, runs in results.items()}
            for name, (rate, cpu, _p50, p99) in medians.items():
                print(f"{name:>24}: median {rate:.0f} saves/s, p99 {p99:.0f} ms, {cpu:.2f} ms CPU per save")
            first = variants[0][0]
            for name, _, _ in variants[1:]:
                print(f"{name} / {first}: {medians[name][0] / medians[first][0]:.2f}x the saves per second, {medians[name][1] / medians[first][1]:.2f}x the CPU per save")

if __name__ == "__main__":
    main()
