"""A real server for end-to-end tests: the instance made by the CLI, ``hostcore serve`` on a free port."""

from __future__ import annotations

import atexit
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

# --- process groups: started, refused in the fast tier, never left behind ---------------------
#
# Every server the helpers start (``hostcore serve``, moto, ``redis-server``) runs in a process
# group of its own, so stopping it stops its workers too. Each group is remembered until it is
# stopped; what is left (a test that never stopped its server, a second Ctrl-C in the middle of a
# teardown) is stopped at the end of the pytest session (``hostcore.testing.tiers``) and at
# interpreter exit, which an interrupted pytest reaches too (Ctrl-C, and SIGTERM through the
# tiers plugin).

_running: dict[int, subprocess.Popen[Any]] = {}
_refused: set[str] = set()


def refuse(markers: set[str] | frozenset[str]) -> None:
    """Make the helpers refuse to start what tests with these markers start (the fast tier runs
    without them, so an unmarked test that starts one fails, naming the marker to add)."""
    _refused.clear()
    _refused.update(markers)


def check_tier(marker: str, what: str) -> None:
    """Raise when the running tier leaves out tests marked ``marker``: the test starting ``what`` lacks the mark."""
    if marker in _refused:
        raise RuntimeError(
            f"this test starts {what}, which the fast tier (`pytest --fast`, `make check`) leaves out: "
            f"mark it @pytest.mark.{marker} (see docs/writing_plugins.md, Testing a plugin)"
        )


def start_process_group(argv: list[str], *, marker: str, what: str, **popen: Any) -> subprocess.Popen[Any]:
    """``Popen(argv, **popen)`` in a process group of its own, stopped at exit if nobody stops it
    first (:func:`stop_process_group`); refused (see :func:`check_tier`) in a tier that leaves out
    tests marked ``marker``, saying the test starts ``what``."""
    check_tier(marker, what)
    proc = subprocess.Popen(argv, start_new_session=True, **popen)
    _running[proc.pid] = proc
    return proc


def stop_all_process_groups() -> None:
    """Stop every process group the helpers started and nobody stopped."""
    for proc in list(_running.values()):
        stop_process_group(proc)


atexit.register(stop_all_process_groups)
os.register_at_fork(after_in_child=_running.clear)  # a forked child's exit must not stop its parent's servers

# --- a real server for end-to-end tests ------------------------------------------------------
#
# The same way an operator runs hostcore: the CLI makes the instance and its tokens, and
# ``hostcore serve`` (gunicorn) answers on a free loopback port in a process group of its own.

STARTUP_TIMEOUT = 30.0


def hostcore_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for hostcore subprocesses: this one without HOSTCORE_* variables, plus ``extra``."""
    return {**{k: v for k, v in os.environ.items() if not k.startswith("HOSTCORE_")}, **(extra or {})}


def hostcore_cmd() -> list[str]:
    """The `hostcore` console script of the running interpreter's environment."""
    beside = Path(sys.executable).with_name("hostcore")
    if beside.exists():
        return [str(beside)]
    found = shutil.which("hostcore")
    if found:
        return [found]
    return [sys.executable, "-c", "from hostcore.cli import run; run()"]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cli(
    instance: Path, *args: str, check: bool = True, env: dict[str, str] | None = None, input: str | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``hostcore --instance DIR ARGS`` (``env``: extra variables; ``input``: its standard input)
    and return the completed process. A process of the wiki: a test calling it is marked ``serve``."""
    check_tier("serve", "the hostcore CLI in a process of its own")
    env = hostcore_env(env)
    proc = subprocess.run(
        [*hostcore_cmd(), "--instance", str(instance), *args],
        input=input,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"hostcore {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


def create_token(
    instance: Path,
    name: str,
    scopes: tuple[str, ...] | list[str],
    namespaces: tuple[str, ...] | list[str] = (),
    env: dict[str, str] | None = None,
) -> str:
    """Create a token with the real CLI and return it."""
    args = ["token", "create", "--name", name]
    for s in scopes:
        args += ["--scope", s]
    for ns in namespaces:
        args += ["--namespace", ns]
    out = cli(instance, *args, env=env).stdout.strip()
    assert re.fullmatch(r"hc_\S+", out), f"token create printed more than the token: {out!r}"
    return out


def _wait_until_up(proc: subprocess.Popen[bytes], base: str, log: Path) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT
    last: Exception | None = None
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"hostcore serve exited with {proc.returncode}:\n{log.read_text(errors='replace')}")
        try:
            with urllib.request.urlopen(base + "/.well-known/oauth-protected-resource/_/mcp", timeout=2) as answer:
                if answer.status == 200:
                    return
        except OSError as exc:
            last = exc
        time.sleep(0.1)
    raise RuntimeError(f"hostcore serve did not answer within {STARTUP_TIMEOUT}s ({last}):\n{log.read_text(errors='replace')}")


def stop_process_group(proc: subprocess.Popen[Any]) -> None:
    """TERM the whole process group (gunicorn arbiter and workers), KILL it if it lingers."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            pass
    # The arbiter may be gone while a worker still lingers: sweep the group either way.
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    if proc.poll() is None:
        proc.wait(timeout=10)
    _running.pop(proc.pid, None)


def start_server(
    instance: Path, workers: int = 2, log: Path | None = None, env: dict[str, str] | None = None, threads: int | None = None
) -> tuple[subprocess.Popen[bytes], str, int, Path]:
    """Start ``hostcore serve`` in its own process group on a free loopback port; wait until it answers.

    Returns (process, base URL, port, log file). ``env`` adds environment variables (e.g. PYTHONPATH
    for an unpackaged plugin); ``threads``: per worker (serve's default when None). The public URL is what serve derives from ``--bind``, as for an
    operator who sets none. Stop it with :func:`stop_process_group`.
    """
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log = log or instance.parent / f"serve-{port}.log"
    env = hostcore_env(env)
    with open(log, "wb") as out:
        proc = start_process_group(
            [*hostcore_cmd(), "serve", "--instance", str(instance), "--bind", f"127.0.0.1:{port}", "--workers", str(workers)]
            + (["--threads", str(threads)] if threads else []),
            marker="serve",
            what="hostcore serve",
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
        )
    try:
        _wait_until_up(proc, base, log)
    except BaseException:
        stop_process_group(proc)
        raise
    return proc, base, port, log


def typescript_sdk() -> tuple[str, str]:
    """(node, the ``@modelcontextprotocol/sdk`` package folder): the Node 22 and TypeScript SDK
    pinned by ``tests/conformance`` in a source checkout, installed by its ``run.sh`` if absent
    (``CONFORMANCE_TOOLS`` names another tools folder)."""
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.run([str(root / "tests/conformance/run.sh"), "--install"], capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        raise RuntimeError(f"installing the TypeScript SDK failed:\n{proc.stderr}")
    tools = Path(os.environ.get("CONFORMANCE_TOOLS", root / ".tools/conformance")) / "node_modules"
    return str(tools / "node/bin/node"), str(tools / "@modelcontextprotocol/sdk")


def connections_by_process(pids: list[int], port: int) -> dict[int, int]:
    """How many established TCP connections to ``port`` each process of ``pids`` holds (read
    from /proc: the sockets a process has open, matched with the kernel's connection table)."""
    owner = {}
    for pid in pids:
        try:
            fds = list(Path(f"/proc/{pid}/fd").iterdir())
        except OSError:  # the process is gone
            continue
        for fd in fds:
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith("socket:["):
                owner[target[8:-1]] = pid
    counts = dict.fromkeys(pids, 0)
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            local_port, state, inode = int(fields[1].rsplit(":", 1)[1], 16), fields[3], fields[9]
            if local_port == port and state == "01" and inode in owner:
                counts[owner[inode]] += 1
    return counts


def worker_pids(master: int) -> list[int]:
    """The pids of the processes whose parent is ``master`` (gunicorn's workers), from /proc."""
    children = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == master:
                children.append(int(stat.parent.name))
        except (OSError, IndexError, ValueError):
            continue
    return sorted(children)
