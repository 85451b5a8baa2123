"""What the MCP layer costs: latency of read_page over /_/mcp against a bare Flask JSON view.

    python bench/mcp_latency.py [--requests 2000] [--seconds 5] [--workers 2] [--clients 8]

Starts, each on a free loopback port and with the same gunicorn settings (gthread, --workers
worker processes, 4 threads each):

- ``hostcore serve`` on a fresh instance holding one 10 KB page, and
- a bare Flask app (defined below) whose one view returns the same 10 KB page as JSON.

Then measures, sequentially over one keep-alive connection, the median and p95 latency of
(a) GET on the bare view (httpx sync client), (b) a raw 2026-07-28 JSON-RPC ``tools/call
read_page`` POST to /_/mcp (the headers and ``_meta`` envelope the SDK client sends), (c) the same
call through the official MCP client in 2026-07-28 mode, and (d) in legacy (2025-11-25) mode. Then
calls per second with --clients concurrent client processes for each path. Prints figures only; it
never asserts timings. Everything it starts is stopped at the end (process groups).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from mcp_http import tool_request

PAGE_SLUG = "notes/bench"
PAGE_BYTES = 10 * 1024


# --- the bare Flask app, served by gunicorn exactly like hostcore serve does -----------------


def page_body() -> str:
    line = "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor. [[notes/index]]\n"
    body = "# Bench page\n\n" + line * (PAGE_BYTES // len(line) + 1)
    return body[:PAGE_BYTES]


def bare_app() -> Any:
    from flask import Flask, jsonify

    app = Flask("bare")
    payload = {
        "slug": PAGE_SLUG, "title": "Bench", "tags": [], "pin": False, "hash": "0" * 40, "body": page_body(),
        "offset": 0, "total_chars": PAGE_BYTES, "truncated": False, "next_offset": None,
    }  # fmt: skip

    @app.get("/page")
    def page() -> Any:
        return jsonify(payload)

    return app


def serve_bare(port: int, workers: int) -> None:
    from gunicorn.app.base import BaseApplication

    class Bare(BaseApplication):
        def load_config(self) -> None:
            settings = {"bind": f"127.0.0.1:{port}", "workers": workers, "threads": 4, "worker_class": "gthread",
                        "control_socket_disable": True, "loglevel": "warning"}  # fmt: skip
            for key, value in settings.items():
                if key in self.cfg.settings:
                    self.cfg.set(key, value)

        def load(self) -> Any:
            return bare_app()

    Bare().run()


# --- processes ------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def hostcore_cmd() -> list[str]:
    beside = Path(sys.executable).with_name("hostcore")
    return [str(beside)] if beside.exists() else [sys.executable, "-c", "from hostcore.cli.commands import run; run()"]


def clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("HOSTCORE_")}


def start(cmd: list[str], log: Path, env: dict[str, str], probe: str) -> subprocess.Popen[bytes]:
    import httpx

    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, start_new_session=True)
    deadline = time.monotonic() + 30
    with httpx.Client(timeout=2) as http:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise SystemExit(f"{cmd[0]} exited:\n{log.read_text(errors='replace')}")
            try:
                if http.get(probe).status_code < 500:
                    return proc
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
    stop(proc)
    raise SystemExit(f"{' '.join(cmd)} did not answer within 30 s:\n{log.read_text(errors='replace')}")


def stop(proc: subprocess.Popen[Any]) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            proc.wait(timeout=10)
            break
        except subprocess.TimeoutExpired:
            continue
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # a lingering worker of the group
    except ProcessLookupError:
        pass


def cli(instance: Path, *args: str) -> str:
    out = subprocess.run([*hostcore_cmd(), "--instance", str(instance), *args], capture_output=True, text=True, env=clean_env())
    if out.returncode:
        raise SystemExit(f"hostcore {' '.join(args)} failed: {out.stderr}")
    return out.stdout


# --- the three ways to read the page --------------------------------------------------------


def raw_request(token: str) -> tuple[dict[str, str], bytes]:
    return tool_request(token, "read_page", {"slug": PAGE_SLUG})


def check_raw(response: Any) -> None:
    if response.status_code != 200:
        raise SystemExit(f"raw call failed: {response.status_code} {response.text[:300]}")
    data = response.json()
    if data.get("result", {}).get("isError") or len(data["result"]["structuredContent"]["body"]) != PAGE_BYTES:
        raise SystemExit(f"raw call returned an unexpected result: {response.text[:300]}")


def time_sync(fn: Any, n: int, warmup: int = 50) -> list[float]:
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1000)
    return out


def measure_bare(url: str, n: int, token: str | None = None) -> list[float]:
    import httpx

    with httpx.Client(timeout=30, headers={"Authorization": f"Bearer {token}"} if token else {}) as http:

        def one() -> None:
            r = http.get(url)
            r.raise_for_status()
            len(r.json()["body"])

        return time_sync(one, n)


def measure_raw(url: str, token: str, n: int) -> list[float]:
    import httpx

    headers, body = raw_request(token)
    with httpx.Client(timeout=30) as http:
        return time_sync(lambda: check_raw(http.post(url, content=body, headers=headers)), n)


def measure_sdk(url: str, token: str, n: int, mode: str) -> list[float]:
    import anyio
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async def run() -> list[float]:
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=httpx2.Timeout(30)) as http:
            async with Client(streamable_http_client(url, http_client=http), mode=mode) as c:
                for _ in range(50):
                    await c.call_tool("read_page", {"slug": PAGE_SLUG})
                out = []
                for _ in range(n):
                    t0 = time.perf_counter()
                    r = await c.call_tool("read_page", {"slug": PAGE_SLUG})
                    out.append((time.perf_counter() - t0) * 1000)
                    if r.is_error:
                        raise SystemExit(f"SDK call failed: {r.content}")
                return out

    return anyio.run(run)


# --- throughput -----------------------------------------------------------------------------


def _load_worker(kind: str, url: str, token: str, seconds: float, barrier: Any, out: Any) -> None:
    """One concurrent client process: count completed calls during ``seconds`` after the barrier."""
    import httpx

    if kind in ("bare", "raw"):
        headers, body = raw_request(token)
        with httpx.Client(timeout=60) as http:
            call = (lambda: http.get(url).raise_for_status()) if kind == "bare" else (lambda: check_raw(http.post(url, content=body, headers=headers)))
            for _ in range(20):
                call()
            barrier.wait()
            count, end = 0, time.perf_counter() + seconds
            while time.perf_counter() < end:
                call()
                count += 1
        out.put(count)
        return

    import anyio
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    mode = "2026-07-28" if kind == "sdk" else "legacy"

    async def run() -> int:
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=httpx2.Timeout(60)) as http:
            async with Client(streamable_http_client(url, http_client=http), mode=mode) as c:
                for _ in range(20):
                    await c.call_tool("read_page", {"slug": PAGE_SLUG})
                await anyio.to_thread.run_sync(barrier.wait)
                count, end = 0, time.perf_counter() + seconds
                while time.perf_counter() < end:
                    r = await c.call_tool("read_page", {"slug": PAGE_SLUG})
                    if r.is_error:
                        raise SystemExit(f"SDK call failed: {r.content}")
                    count += 1
                return count

    out.put(anyio.run(run))


def throughput(kind: str, url: str, token: str, clients: int, seconds: float) -> float:
    ctx = multiprocessing.get_context("spawn")
    barrier, out = ctx.Barrier(clients), ctx.Queue()
    procs = [ctx.Process(target=_load_worker, args=(kind, url, token, seconds, barrier, out)) for _ in range(clients)]
    for p in procs:
        p.start()
    try:
        total = sum(out.get(timeout=seconds + 120) for _ in procs)
    finally:
        for p in procs:
            p.join(timeout=30)
            if p.is_alive():
                p.kill()
                p.join()
    return total / seconds


# --- main -----------------------------------------------------------------------------------


def summary(name: str, ms: list[float]) -> tuple[float, float]:
    ms = sorted(ms)
    median = statistics.median(ms)
    p95 = ms[min(len(ms) - 1, round(0.95 * len(ms)) - 1)]
    print(f"  {name:<44} median {median:7.3f} ms   p95 {p95:7.3f} ms   (n={len(ms)})")
    return median, p95


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=2000, help="sequential requests per latency figure")
    parser.add_argument("--seconds", type=float, default=5.0, help="duration of each throughput run")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn worker processes for both servers")
    parser.add_argument("--clients", type=int, default=8, help="concurrent client processes for throughput")
    parser.add_argument("--serve-bare", type=int, metavar="PORT", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_bare:
        serve_bare(args.serve_bare, args.workers)
        return

    import anyio
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    procs: list[subprocess.Popen[bytes]] = []
    with tempfile.TemporaryDirectory(prefix="hostcore-bench-") as tmp:
        root = Path(tmp)
        instance = root / "instance"
        token = re.findall(r"hc_[A-Za-z0-9_-]+", cli(instance, "init"))[0]
        config = instance / "hostcore.toml"
        config.write_text(config.read_text().replace("PLUGINS = [", 'PLUGINS = ["bench.service_view", ', 1))
        try:
            port = free_port()
            env = clean_env() | {
                "HOSTCORE_PUBLIC_URL": f"http://127.0.0.1:{port}",
                "HOSTCORE_LOG_LEVEL": "WARNING",
                "HOSTCORE_RATE_LIMITS": '{"requests": "off", "writes": "off"}',  # thousands of calls from one token
                "PYTHONPATH": str(Path(__file__).resolve().parent.parent),
            }
            procs.append(
                start(
                    [*hostcore_cmd(), "serve", "--instance", str(instance), "--bind", f"127.0.0.1:{port}", "--workers", str(args.workers)],
                    root / "hostcore.log",
                    env,
                    f"http://127.0.0.1:{port}/.well-known/oauth-protected-resource",
                )
            )
            bare_port = free_port()
            procs.append(
                start(
                    [sys.executable, __file__, "--serve-bare", str(bare_port), "--workers", str(args.workers)],
                    root / "bare.log",
                    clean_env(),
                    f"http://127.0.0.1:{bare_port}/page",
                )
            )
            mcp_url = f"http://127.0.0.1:{port}/_/mcp"
            bare_url = f"http://127.0.0.1:{bare_port}/page"

            async def seed() -> None:
                async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http:
                    async with Client(streamable_http_client(mcp_url, http_client=http), mode="2026-07-28") as c:
                        r = await c.call_tool("save_page", {"slug": PAGE_SLUG, "title": "Bench", "body": page_body()})
                        if r.is_error:
                            raise SystemExit(f"seeding failed: {r.content}")

            anyio.run(seed)

            from importlib.metadata import version

            print(f"hostcore MCP latency bench: page {PAGE_BYTES} bytes, gunicorn gthread {args.workers} workers x 4 threads,")
            print(f"python {sys.version.split()[0]}, mcp {version('mcp')}, gunicorn {version('gunicorn')}, {os.cpu_count()} CPUs, loopback")
            print(f"\nSequential latency, one keep-alive connection, {args.requests} requests each:")
            bare = summary("(a) bare Flask JSON view (httpx)", measure_bare(bare_url, args.requests))
            service_url = f"http://127.0.0.1:{port}/_/bench/read_page?slug={PAGE_SLUG}"
            service = summary("(a2) Flask view: token + wiki.read_page (httpx)", measure_bare(service_url, args.requests, token))
            raw = summary("(b) raw JSON-RPC tools/call read_page (httpx)", measure_raw(mcp_url, token, args.requests))
            sdk = summary("(c) official MCP client, 2026-07-28", measure_sdk(mcp_url, token, args.requests, "2026-07-28"))
            legacy = summary("(d) official MCP client, legacy 2025-11-25", measure_sdk(mcp_url, token, args.requests, "legacy"))
            print("\nAdded by the MCP layer over the bare view (median / p95):")
            print(f"  raw JSON-RPC        +{raw[0] - bare[0]:6.3f} ms / +{raw[1] - bare[1]:6.3f} ms")
            print(f"  SDK 2026-07-28      +{sdk[0] - bare[0]:6.3f} ms / +{sdk[1] - bare[1]:6.3f} ms")
            print(f"  SDK legacy          +{legacy[0] - bare[0]:6.3f} ms / +{legacy[1] - bare[1]:6.3f} ms")
            print(f"  (SDK client cost over raw: +{sdk[0] - raw[0]:.3f} ms median)")
            print("\nAdded by the MCP layer over the same service call in a plain Flask view (median / p95):")
            print(f"  raw JSON-RPC        +{raw[0] - service[0]:6.3f} ms / +{raw[1] - service[1]:6.3f} ms")

            print(f"\nThroughput, {args.clients} concurrent client processes, {args.seconds:g} s each:")
            for kind, label, url in (
                ("bare", "bare Flask view", bare_url),
                ("raw", "raw JSON-RPC read_page", mcp_url),
                ("sdk", "official client 2026-07-28 read_page", mcp_url),
                ("legacy", "official client legacy read_page", mcp_url),
            ):
                rate = throughput(kind, url, token, args.clients, args.seconds)
                print(f"  {label:<40} {rate:8.0f} calls/s")
        finally:
            for proc in procs:
                stop(proc)


if __name__ == "__main__":
    main()
