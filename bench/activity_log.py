"""What the activity log costs a call: the same calls through gunicorn with and without it, in one run.

    python bench/activity_log.py [--pages 50] [--calls 1000] [--rounds 5] [--workers 2]

Makes one instance with ``hostcore init`` (the embedded default: git, SQLite search, tokens,
accounts, web, wordllama) holding ``--pages`` small pages, copies it, and serves the two copies
side by side with ``hostcore serve`` (gunicorn, ``--workers`` workers): one as ``init`` wrote it
(the log on), one with ``ACTIVITY_LOG = false``. Then ``--rounds`` rounds, each timing
``--calls`` sequential ``read_page`` calls (raw 2026-07-28 JSON-RPC over one keep-alive
connection, cycling through the pages) against each server, the order of the two alternating
from round to round, so drift in the machine's load falls on both alike. Per server: latency
p50/p95 and the CPU the server's processes spent per call (its process group's user and system
time, from /proc: the background writer included), with the machine's load beside each phase;
then the difference. Also, in-process, what one record costs the calling thread
(``ActivityLog.record``: an append under a lock and a wake-up of the writer). Prints figures
only; never asserts timings. Everything it starts is stopped at the end.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from mcp_http import ToolClient, load
from mcp_latency import clean_env, cli, free_port, hostcore_cmd, start, stop
from timing import percentiles

TICK = os.sysconf("SC_CLK_TCK")


def group_cpu(pgid: int) -> float:
    """Seconds of CPU (user + system) the live processes of process group ``pgid`` have used."""
    total = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid:  # after the name: state, ppid, pgrp, ..., utime (12), stime (13)
            total += int(fields[11]) + int(fields[12])
    return total / TICK


def seed(instance: Path, pages: int) -> list[str]:
    """Save ``pages`` pages of about 2 KB through the service layer (before any server runs)."""
    from hostcore import SYSTEM, create_app

    app = create_app(instance_path=instance)
    host = app.extensions["hostcore"]
    wiki = host.wiki(SYSTEM)
    slugs = [f"notes/page-{n:03d}" for n in range(pages)]
    line = "Some words of a page that people and assistants share, linking [[notes/index]].\n"
    for slug in slugs:
        wiki.save_page(slug, body=f"# {slug}\n\n" + line * 25, title=slug)
    host.close()
    return slugs


def record_cost(runs: int = 10_000) -> float:
    """Microseconds one ``ActivityLog.record`` takes the calling thread (SQLite store, writer running)."""
    from hostcore.host.activity import ActivityLog, SqliteActivityStore
    from hostcore.seams.activity import Activity

    with tempfile.TemporaryDirectory(prefix="hostcore-bench-activity-") as tmp:
        log = ActivityLog(SqliteActivityStore(Path(tmp) / "activity.sqlite"), days=30, keep=1_000_000)
        a = Activity(time.time(), "bench", "token", "bench 0", "", "read_page", ("notes/page-000",), "ok", 1.0)
        start_ = time.perf_counter()
        for _ in range(runs):
            log.record(a)
        took = time.perf_counter() - start_
        log.close()
    return took / runs * 1e6


def phase(url: str, token: str, slugs: list[str], calls: int, pgid: int) -> tuple[list[float], float]:
    """(latencies in ms, server CPU ms per call) of ``calls`` read_page calls."""
    client = ToolClient(url, token)
    for slug in slugs[:20]:  # warm the connection and the workers' caches
        client.call("read_page", {"slug": slug})
    cpu0 = group_cpu(pgid)
    samples = []
    for n in range(calls):
        ms, result = client.call("read_page", {"slug": slugs[n % len(slugs)]})
        if result.get("isError"):
            raise SystemExit(f"read_page failed: {result}")
        samples.append(ms)
    cpu = (group_cpu(pgid) - cpu0) * 1000 / calls
    client.close()
    return samples, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pages", type=int, default=50)
    parser.add_argument("--calls", type=int, default=1000, help="read_page calls per phase")
    parser.add_argument("--rounds", type=int, default=5, help="phases per server, interleaved")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()

    print(f"in-process: ActivityLog.record {record_cost():.2f} us a call (load {load():.2f})")
    procs = []
    with tempfile.TemporaryDirectory(prefix="hostcore-bench-") as tmp:
        root = Path(tmp)
        on = root / "on"
        token = re.findall(r"hc_[A-Za-z0-9_-]+", cli(on, "init"))[0]
        slugs = seed(on, args.pages)
        off = root / "off"
        shutil.copytree(on, off)
        (off / "hostcore.toml").write_text((off / "hostcore.toml").read_text() + "\nACTIVITY_LOG = false\n")
        servers = {}
        try:
            for name, instance in (("on", on), ("off", off)):
                port = free_port()
                env = clean_env() | {"HOSTCORE_PUBLIC_URL": f"http://127.0.0.1:{port}", "HOSTCORE_LOG_LEVEL": "WARNING",
                                     "HOSTCORE_RATE_LIMITS": '{"requests": "off", "writes": "off"}'}  # fmt: skip
                cmd = [*hostcore_cmd(), "serve", "--instance", str(instance), "--bind", f"127.0.0.1:{port}", "--workers", str(args.workers)]
                proc = start(cmd, root / f"{name}.log", env, f"http://127.0.0.1:{port}/_/health")
                procs.append(proc)
                servers[name] = (f"http://127.0.0.1:{port}/_/mcp", proc.pid)
            print(f"{args.pages} pages, {args.workers} workers each; {args.rounds} rounds of {args.calls} read_page calls per server")
            latencies: dict[str, list[float]] = {"on": [], "off": []}
            cpus: dict[str, list[float]] = {"on": [], "off": []}
            for r in range(args.rounds):
                for name in ("on", "off") if r % 2 == 0 else ("off", "on"):
                    url, pgid = servers[name]
                    samples, cpu = phase(url, token, slugs, args.calls, pgid)
                    latencies[name] += samples
                    cpus[name].append(cpu)
                    print(f"  round {r + 1} log {name:3}: {percentiles(samples)}  server CPU {cpu:6.3f} ms a call  (load {load():.2f})")
            print("whole run:")
            for name in ("on", "off"):
                print(f"  log {name:3}: {percentiles(latencies[name])}  server CPU {statistics.median(cpus[name]):6.3f} ms a call (median of rounds)")
            d_p50 = statistics.median(latencies["on"]) - statistics.median(latencies["off"])
            d_cpu = statistics.median(cpus["on"]) - statistics.median(cpus["off"])
            ratio = statistics.median(cpus["on"]) / statistics.median(cpus["off"])
            print(f"  with the log: p50 {d_p50 * 1000:+.0f} us, server CPU {d_cpu * 1000:+.0f} us a call (x{ratio:.3f})  (load {load():.2f})")
        finally:
            for proc in procs:
                stop(proc)
        logged = on / "activity.sqlite"
        if logged.exists():
            import sqlite3

            with sqlite3.connect(logged) as db:
                count = db.execute("SELECT count(*) FROM activity").fetchone()[0]
            print(f"records in the log-on instance: {count}; log-off instance has a log: {(off / 'activity.sqlite').exists()}")


if __name__ == "__main__":
    sys.exit(main())
