"""Concurrent writers on the git storage: save_page throughput and latency over /_/mcp.

    python bench/concurrent_writers.py [--writers 64] [--seconds 10] [--saves 200] [--workers 2]

Starts ``hostcore serve`` (gthread, --workers worker processes, 16 threads each, as ``make
serve`` does) on a fresh instance with the embedded default (git storage, tantivy search), makes a
write token with the CLI, then runs the load twice against the same server:

- baseline: one writer, saving its own page back to back;
- load: --writers writers at once (threads spread over 4 client processes), each saving its own
  page repeatedly (the first save creates it, every later one sends the hash it got back as
  basehash) for at most --seconds and --saves saves.

Prints the server's CPU time per write too (its processes' user + system time over the run, from
/proc): steadier than the rate on a machine whose speed changes from minute to minute; and how
many connections each worker holds halfway through the load (from /proc).

Each save is a raw JSON-RPC ``tools/call save_page`` POST carrying a real bearer token. Prints
acknowledged writes per second and the p50/p95/p99 latency of each run, and checks from outside
with git that the branch gained exactly one commit per acknowledged write and that every page holds
its writer's last acknowledged body. Prints figures only; it never asserts timings.

The instances go under ``--dir`` (default: the system's temporary folder), kept until the bench
ends; it prints first what creating a file costs there (see :func:`file_creation_us`) and how
fast the machine runs Python now (:func:`python_loop_seconds`): both move the figures.

``--instance DIR`` runs a copy of an existing instance (say a 50,000-page wiki made with ``hostcore
init``, its indexes caught up) in turns with a fresh one, the writers saving in ``--folder``, and
prints their ratio with the machine's load beside each run.
``--env KEY=VALUE`` passes environment variables to the server (a ``HOSTCORE_*`` setting).
``--compare REV [--rounds N]`` measures the baseline in the same run: it serves revision REV (its
core and plugins, ``git archive``, ahead on ``PYTHONPATH``) and this tree in turns, N times each,
each on a fresh instance, and prints both and their ratio (the machine's load changes from minute to minute,
so figures from separate runs do not compare). ``--threads`` sets gunicorn's threads per worker.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.client import HTTPConnection
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from mcp_http import tool_request

CLIENT_PROCESSES = 4
PAGE_LINE = "A line of a page written by one of many concurrent writers. [[notes/index]]\n"




def request(token: str, slug: str, body: str, basehash: str | None) -> tuple[dict[str, str], bytes]:
    return tool_request(token, "save_page", {"slug": slug, "body": body} | ({"basehash": basehash} if basehash else {}))


def body_of(writer: int, n: int) -> str:
    return f"# Writer {writer}\n\nsave {n}\n\n" + PAGE_LINE * 20


def write_loop(url: str, token: str, slug: str, writer: int, deadline: float, saves: int, out: list[Any]) -> None:
    """Save page ``slug`` up to ``saves`` times before ``deadline``; append (slug, latencies, last)."""
    # The standard library's client over one keep-alive connection: the writers share two
    # cores with the server, so the cheaper the client, the more of them the server sees.
    parts = urlsplit(url)
    http = HTTPConnection(parts.hostname, parts.port, timeout=120)
    basehash, latencies, last = None, [], None
    try:
        for n in range(saves):
            if time.monotonic() > deadline:
                break
            headers, content = request(token, slug, body_of(writer, n), basehash)
            start = time.perf_counter()
            http.request("POST", parts.path, body=content, headers=headers)
            response = http.getresponse()
            text = response.read()
            elapsed = time.perf_counter() - start
            result = json.loads(text).get("result", {}) if response.status == 200 else {}
            if result.get("isError") or "structuredContent" not in result:
                raise SystemExit(f"save of {slug} failed: {response.status} {text[:300]!r}")
            basehash, last = result["structuredContent"]["hash"], n
            latencies.append(elapsed)
    finally:
        http.close()
        out.append((slug, latencies, last))


def client_process(url: str, token: str, run: str, writers: list[int], ready: Any, seconds: float, saves: int, queue: Any, folder: str = "notes") -> None:
    out: list[Any] = []
    ready.wait()  # every client process has imported what it needs before the first save
    deadline = time.monotonic() + seconds
    threads = [threading.Thread(target=write_loop, args=(url, token, f"{folder}/{run}-w{w}", w, deadline, saves, out)) for w in writers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    queue.put(out)


def run_load(url: str, token: str, run: str, writers: int, seconds: float, saves: int, folder: str = "notes") -> tuple[list[float], list[float], float, dict[str, int]]:
    """(latencies, each writer's first latency, wall seconds, slug -> last acknowledged save
    number) of one run."""
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    groups = [list(range(i, writers, CLIENT_PROCESSES)) for i in range(min(CLIENT_PROCESSES, writers))]
    ready = ctx.Barrier(len(groups) + 1)
    procs = [ctx.Process(target=client_process, args=(url, token, run, g, ready, seconds, saves, queue, folder)) for g in groups]
    for p in procs:
        p.start()
    ready.wait()
    start_at = time.time()
    results = [item for _ in procs for item in queue.get()]
    wall = time.time() - start_at
    for p in procs:
        p.join()
    latencies = [x for _, lat, _ in results for x in lat]
    firsts = [lat[0] for _, lat, _ in results if lat]
    return latencies, firsts, wall, {slug: last for slug, _, last in results if last is not None}


def server_cpu(pid: int) -> float:
    """CPU seconds (user + system) used so far by process ``pid`` and its descendants (the workers)."""
    stats: dict[int, tuple[int, float]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            stats[int(entry.name)] = int(fields[1]), (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    tree, total = {pid}, 0.0
    for _ in range(4):  # serve -> gunicorn master -> workers
        tree |= {child for child, (parent, _) in stats.items() if parent in tree}
    for member in tree:
        total += stats.get(member, (0, 0.0))[1]
    return total


def git(git_dir: Path, *args: str) -> str:
    return subprocess.run(["git", "--git-dir", str(git_dir), *args], capture_output=True, text=True, check=True).stdout


def report(name: str, latencies: list[float], wall: float) -> float:
    ms = sorted(x * 1000 for x in latencies)
    q = statistics.quantiles(ms, n=100) if len(ms) > 1 else ms * 99
    rate = len(ms) / wall
    print(f"{name:34s} {len(ms):6d} writes {rate:8.1f} writes/s   p50 {q[49]:7.1f} ms  p95 {q[94]:7.1f} ms  p99 {q[98]:7.1f} ms")
    return rate


def check(git_dir: Path, before: int, acknowledged: int, last: dict[str, int]) -> None:
    commits = int(git(git_dir, "rev-list", "--count", "HEAD"))
    status = "ok" if commits - before == acknowledged else "MISMATCH"
    print(f"{'':34s} commits {commits - before} == acknowledged writes {acknowledged}: {status}")
    lost = [slug for slug, n in last.items() if git(git_dir, "show", f"HEAD:{slug}.md").find(f"\nsave {n}\n") < 0]
    if lost:
        print(f"{'':34s} LOST: {len(lost)} pages do not hold their last acknowledged save: {lost[:5]}")


def serve_and_load(
    args: argparse.Namespace, env: dict[str, str], label: str, scratch: Path, template: Path | None = None
) -> tuple[float, float, float, list[float], float]:
    """One fresh instance, or a copy of ``template`` (in a new folder under ``scratch``, deleted
    when the bench ends) and server: 1 writer, then --writers writers, in --folder (made if
    missing). Returns (1-writer rate, load rate, load p99 ms, load latencies, the server's CPU ms
    per write under load)."""
    from hostcore.testing import cli, create_token, start_server, stop_process_group
    from hostcore.testing.servers import connections_by_process, worker_pids

    instance = Path(tempfile.mkdtemp(prefix="run-", dir=scratch)) / "instance"
    if template is not None:
        shutil.copytree(template, instance)
    else:
        cli(instance, "init", env=env)
    token = create_token(instance, "bench", ["write", "admin"], env=env)
    proc, base, port, log = start_server(instance, workers=args.workers, env=env, threads=args.threads)
    git_dir = instance / "wiki"
    try:
        url = base + "/_/mcp"
        parts = urlsplit(url)
        http = HTTPConnection(parts.hostname, parts.port, timeout=120)
        headers, body = tool_request(token, "save_namespace", {"name": args.folder})
        http.request("POST", parts.path, body=body, headers=headers)
        http.getresponse().read()  # an error when it exists already: nothing to make
        http.close()
        threads = args.threads or 16
        print(f"{label}: hostcore serve, {args.workers} workers x {threads} threads; {args.writers} writers; {args.seconds:g} s or {args.saves} saves each")
        rates, latencies = [], []
        for run, name, writers in (("single", "baseline: 1 writer", 1), ("load", f"load: {args.writers} writers", args.writers)):
            before, cpu = int(git(git_dir, "rev-list", "--count", "HEAD")), server_cpu(proc.pid)
            held: list[dict[int, int]] = []  # the connections each worker holds halfway through
            halfway = threading.Timer(2.0 + args.seconds / 2, lambda into=held: into.append(connections_by_process(worker_pids(proc.pid), port)))
            halfway.start()
            latencies, firsts, wall, last = run_load(url, token, run, writers, args.seconds, args.saves, args.folder)
            halfway.cancel()
            time.sleep(0.5)  # the background catch-up of the last saves
            cpu_per_write = (server_cpu(proc.pid) - cpu) * 1000 / max(1, len(latencies))
            rates.append(report(name, latencies, wall))
            print(f"{'':34s} server CPU {cpu_per_write:.1f} ms per write")
            if writers > 1:  # all start at once: their first saves meet the workers cold, the page new
                print(f"{'':34s} each writer's first save: median {statistics.median(firsts) * 1000:.0f} ms, max {max(firsts) * 1000:.0f} ms")
            if held:
                print(f"{'':34s} connections per worker halfway: {', '.join(str(n) for n in sorted(held[0].values(), reverse=True))}")
            check(git_dir, before, len(latencies), last)
        print(f"{args.writers} writers save {rates[1] / rates[0]:.1f} times as many pages per second as 1 writer")
    finally:
        stop_process_group(proc)
    if "Traceback" in log.read_text(errors="replace"):
        print(f"the server logged errors:\n{log.read_text(errors='replace')[-3000:]}", file=sys.stderr)
    ms = sorted(x * 1000 for x in latencies)
    return rates[0], rates[1], statistics.quantiles(ms, n=100)[98], ms, cpu_per_write


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--writers", type=int, default=64)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--saves", type=int, default=200, help="at most this many saves per writer")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=None, help="per worker (default: hostcore serve's)")
    parser.add_argument("--env", action="append", default=[], help="KEY=VALUE for the server")
    parser.add_argument("--compare", metavar="REV", help="also serve git revision REV (core and plugins), in turns with this tree")
    parser.add_argument("--rounds", type=int, default=1, help="with --compare: turns each")
    parser.add_argument("--dir", help="where the instances go (default: the system's temporary folder)")
    parser.add_argument("--instance", type=Path, help="also run on a copy of this instance (its indexes caught up), in turns with a fresh one")
    parser.add_argument("--folder", default="notes", help="the namespace the writers save in (made if missing)")
    args = parser.parse_args()
    # The writers share one token: per-principal rate limits would measure the limiter, not the storage.
    env = {"HOSTCORE_RATE_LIMITS": '{"requests": "off", "writes": "off"}'} | dict(item.split("=", 1) for item in args.env)
    # Every run's instance is kept until the bench ends: on a file system without a journal (ext4
    # here) each file created scans past the inodes deleted in the last minutes, so deleting a run's
    # thousands of files slowed the next run's writes.
    with tempfile.TemporaryDirectory(prefix="hostcore-writers-", dir=args.dir) as scratch:
        print(f"creating a file in {args.dir or tempfile.gettempdir()} costs {file_creation_us(Path(scratch)):.0f} us now")
        print(f"this machine's speed now: {python_loop_seconds():.2f} s for 10^7 turns of a Python loop")
        compare(args, env, Path(scratch))


def python_loop_seconds(turns: int = 10**7) -> float:
    """Seconds this process takes for ``turns`` additions in a Python loop: how fast the machine
    runs now (a small virtual machine's speed changed 2.3-fold from one day to the next, and every
    figure with it; compare figures measured at the same speed, or in the same run)."""
    started, total = time.perf_counter(), 0
    for i in range(turns):
        total += i
    return time.perf_counter() - started


def file_creation_us(folder: Path, files: int = 200) -> float:
    """What creating (and writing) a small file costs in ``folder`` now, in microseconds: on ext4
    without a journal, as here, it grows with the inodes deleted nearby in the last minutes (each
    creation scans past them), from about 35 us to over 1 ms after a test suite's clean-up. The git
    storage creates three such files per group of saves (its pack, index and keep), the search
    index several per commit."""
    probe = folder / "probe"
    probe.mkdir()
    started = time.perf_counter()
    for i in range(files):
        (probe / str(i)).write_bytes(b"x")
    return (time.perf_counter() - started) / files * 1e6


def compare(args: argparse.Namespace, env: dict[str, str], scratch: Path) -> None:
    if not args.compare and not args.instance:
        serve_and_load(args, env, "this tree", scratch)
        return
    with tempfile.TemporaryDirectory(prefix="hostcore-writers-rev-") as old:
        trees = {"this tree": env}
        if args.compare:
            root = Path(__file__).resolve().parent.parent
            archive = subprocess.run(["git", "-C", str(root), "archive", args.compare, "hostcore", "plugins"], capture_output=True, check=True).stdout
            subprocess.run(["tar", "-x", "-C", old], input=archive, check=True)
            # The core and every plugin of REV ahead of the installed (editable) ones on the path.
            path = os.pathsep.join([old, *sorted(str(p) for p in Path(old, "plugins").iterdir() if p.is_dir())])
            trees[args.compare] = env | {"PYTHONPATH": path}
        wikis: dict[str, Path | None] = {"fresh": None} | ({args.instance.name: args.instance} if args.instance else {})
        variants = [(f"{tree}, {wiki}" if args.instance else tree, tree_env, template) for tree, tree_env in trees.items() for wiki, template in wikis.items()]
        results: dict[str, list[tuple[float, float, float, list[float], float]]] = {name: [] for name, _, _ in variants}
        for _ in range(args.rounds):
            for name, variant_env, template in variants:
                load = os.getloadavg()[0]
                results[name].append(serve_and_load(args, variant_env, name, scratch, template))
                print(f"(load {load:.1f} before, {os.getloadavg()[0]:.1f} after)\n")
    summary = {}
    for name, runs in results.items():
        ms = sorted(x for run in runs for x in run[3])
        q = statistics.quantiles(ms, n=100)
        rate = statistics.median(run[1] for run in runs)
        summary[name] = rate, q[98]
        print(f"{name:>12}: {args.writers} writers {rate:6.1f} writes/s (median of {len(runs)}), p50 {q[49]:6.0f} ms, p99 {q[98]:6.0f} ms,"
              f" server CPU {statistics.median(run[4] for run in runs):4.1f} ms per write; 1 writer {statistics.median(run[0] for run in runs):5.1f} writes/s")
    first, (first_rate, first_p99) = variants[0][0], summary[variants[0][0]]
    for name, (rate, p99) in list(summary.items())[1:]:
        print(f"{name} / {first}: {rate / first_rate:.2f}x the writes per second, p99 {p99 / first_p99:.2f}x")

if __name__ == "__main__":
    main()
