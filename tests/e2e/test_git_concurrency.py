"""The git storage under concurrent writers and a killed server worker, end to end.

Writers are separate OS processes (fresh interpreters, see ``git_writer.py``), each with its own
official MCP client over HTTP, so their calls spread over both gunicorn workers and only the
storage's inter-process lock and compare-and-swap keep them apart. Afterwards the repository is
checked from outside with git: ``git fsck --full --strict`` is clean, and there is exactly one
commit per acknowledged content-changing write. The crash test kills gunicorn workers with SIGKILL
in the middle of writes to a server of its own and checks that nothing acknowledged is lost, no page
is torn, the server keeps answering, and a ref lock left behind never blocks writes for long.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from .conftest import (
    E2E_STORAGE,
    RunningServer,
    cli,
    mcp_session,
    ok,
    run_together,
    start_server,
    stop_process_group,
    tool_error,
)
from .git_writer import END, crash_body

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(E2E_STORAGE not in ("", "git"), reason="git storage only"),
]

WRITER = Path(__file__).with_name("git_writer.py")
WRITERS = 4
SECONDS = 3.0
KILLS = 3
STALE_REF_LOCK = 5.0  # hostcore_git.storage.STALE_REF_LOCK: a ref lock this old was left by a killed process


def git(git_dir: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(["git", "--git-dir", str(git_dir), *args], capture_output=True, text=True, timeout=120, check=False)
    if check and proc.returncode:
        raise AssertionError(f"git {' '.join(args)} failed: {proc.stderr}")
    return proc


def commit_count(git_dir: Path) -> int:
    return int(git(git_dir, "rev-list", "--count", "HEAD").stdout)


# A pack fsck listed and the server's background merge removed before fsck opened it (the merged
# pack holds its objects): fsck is run again, as an operator would; anything else fails at once.
PACK_GONE = re.compile(r"packfile (\S+ )?(index not opened|index unavailable|cannot be accessed)|unable to open \S+\.(pack|idx)", re.IGNORECASE)


def assert_fsck_clean(git_dir: Path) -> None:
    for _ in range(5):
        proc = git(git_dir, "fsck", "--full", "--strict", "--no-dangling", "--no-progress", check=False)
        out = proc.stdout + proc.stderr
        if not PACK_GONE.search(out):
            break
        time.sleep(0.5)
    assert proc.returncode == 0, out
    assert not re.search(r"error|missing|broken|corrupt|bad", out, re.IGNORECASE), out


async def read_whole(c: Any, slug: str) -> dict[str, Any] | None:
    """The page with its whole body (following windows), or None when it does not exist."""
    parts, offset = [], 0
    while True:
        r = await c.call_tool("read_page", {"slug": slug, "offset": offset, "limit": 100_000})
        if r.is_error:
            assert tool_error(r)["code"] == "not_found", r.content
            return None
        page = r.structured_content
        parts.append(page["body"])
        if not page["truncated"]:
            page["body"] = "".join(parts)
            return page
        offset = page["next_offset"]


# --- many writers on the shared server ----------------------------------------------------------


def run_writers(server: RunningServer, namespace: str, shared: str) -> list[dict[str, Any]]:
    token = server.tokens["write"]
    modes = ["2026-07-28", "legacy"]
    argvs = [
        [sys.executable, str(WRITER), "mix", server.url, token, modes[i % 2], namespace, shared, str(i), str(SECONDS)]
        for i in range(WRITERS)
    ]
    return run_together(argvs, timeout=90)


async def test_concurrent_writers_lose_nothing_and_make_one_commit_each(server, uid):
    namespace = f"{uid}-ns"
    shared = f"{namespace}/shared"
    async with mcp_session(server, server.tokens["admin"]) as c:
        ok(await c.call_tool("save_namespace", {"name": namespace}))
        ok(await c.call_tool("save_page", {"slug": shared, "body": f"# Markers\n\n{END}\n", "title": "Shared"}))
    repo = server.storage
    before = commit_count(repo)

    results = await anyio.to_thread.run_sync(run_writers, server, namespace, shared)

    assert [r["errors"] for r in results] == [[] for _ in results]
    acked = sum(r["commits"] for r in results)
    markers = [m for r in results for m in r["markers"]]
    assert all(r["markers"] for r in results), "every writer got at least one round in"
    assert commit_count(repo) == before + acked, (acked, sum(r["conflicts"] for r in results))
    assert_fsck_clean(repo)

    async with mcp_session(server, server.tokens["read"]) as c:
        page = await read_whole(c, shared)
        assert page is not None
        lines = page["body"].splitlines()
        assert sorted(line for line in lines if line.startswith("- marker ")) == sorted(markers)  # each exactly once
        assert lines[-1] == END
        for r in results:
            # each writer's markers in its own order: an edit never lands before an earlier one
            mine = [line for line in lines if line.startswith(f"- marker w{r['index']}-")]
            assert mine == r["markers"]
            for slug, h in r["pages"].items():
                got = await read_whole(c, slug)
                assert got is not None and got["hash"] == h, slug
            renamed = await read_whole(c, r["renamed"])
            assert renamed is not None and renamed["hash"] == r["renamed_hash"]
            assert renamed["body"] == f"renamed page of writer {r['index']}\n"
            for old in r["renamed_from"]:
                if old != r["renamed"]:
                    assert await read_whole(c, old) is None, old
            linker = await read_whole(c, r["linker"])
            assert linker["body"] == f"follows [[{r['renamed']}|writer {r['index']}]]\n"
            assert ok(await c.call_tool("backlinks", {"slug": r["renamed"]}))["backlinks"] == [{"slug": r["linker"], "title": r["linker"]}]
        # the history index agrees with the branch, commit for commit
        recent = ok(await c.call_tool("recent_changes", {"limit": min(200, acked)}))["commits"]
    logged = git(repo, "log", f"-{len(recent)}", "--format=%H").stdout.split()
    assert [c["id"] for c in recent] == logged
    stored = git(repo, "show", f"HEAD:{shared}.md").stdout
    assert stored.endswith(page["body"]) and git(repo, "rev-parse", f"HEAD:{shared}.md").stdout.strip() == page["hash"]


# --- a worker killed in the middle of writes ------------------------------------------------------


def children(pid: int) -> list[int]:
    """Pids whose parent is ``pid`` (from /proc)."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (comm) "
        if int(fields[1]) == pid and fields[0] != "Z":
            out.append(int(entry))
    return sorted(out)


def wait_for_workers(arbiter: int, count: int, exclude: set[int], timeout: float = 20.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pids = [p for p in children(arbiter) if p not in exclude]
        if len(pids) >= count:
            return pids
        time.sleep(0.05)
    raise AssertionError(f"gunicorn has {children(arbiter)} as workers, wanted {count} besides {exclude}")


def lock_holder(lock: Path, pids: set[int], timeout: float) -> int | None:
    """A pid among ``pids`` holding the flock on ``lock`` (from /proc/locks), polled for ``timeout`` s."""
    inode = f":{os.stat(lock).st_ino} "
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with open("/proc/locks") as fh:
            for line in fh:
                fields = line.split()
                if "->" in fields or inode not in line + " " or fields[1] != "FLOCK":
                    continue  # "->" marks a process waiting for the lock, not holding it
                if int(fields[4]) in pids:
                    return int(fields[4])
    return None


class Lines:
    """Collects a process's stdout lines (JSON) in a thread, so the test can watch them arrive."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.items: list[dict[str, Any]] = []
        self.cond = threading.Condition()
        self.thread = threading.Thread(target=self._read, args=(proc,), daemon=True)
        self.thread.start()

    def _read(self, proc: subprocess.Popen[str]) -> None:
        for line in proc.stdout:
            with self.cond:
                self.items.append(json.loads(line))
                self.cond.notify_all()

    def wait(self, predicate: Any, timeout: float) -> None:
        with self.cond:
            assert self.cond.wait_for(lambda: predicate(self.items), timeout), self.items[-5:]


@pytest.fixture
def crash_server(tmp_path: Path):
    instance = tmp_path / "instance"
    init = cli(instance, "init")
    token = re.findall(r"hc_[A-Za-z0-9_-]+", init.stdout)[0]
    proc, base, _port, log = start_server(instance, workers=2)
    try:
        yield proc, base + "/_/mcp", token, instance / "wiki", log
    finally:
        stop_process_group(proc)


async def test_killed_worker_loses_no_acknowledged_write_and_tears_no_page(crash_server, tmp_path):
    proc, url, token, repo, log = crash_server
    arbiter = proc.pid
    wait_for_workers(arbiter, 2, set())
    stderr = tmp_path / "writer.err"
    with open(stderr, "wb") as err_file:
        writer = subprocess.Popen(
            [sys.executable, str(WRITER), "crash", url, token, "notes", "5"],
            stdout=subprocess.PIPE,
            stderr=err_file,
            text=True,
        )
    lines = Lines(writer)
    killed: set[int] = set()
    caught = 0
    try:
        # Three times: catch a worker inside the storage's locked section (it holds the flock on
        # hostcore.lock while it checks, writes the commit and moves the branch) and SIGKILL it
        # there; if none is caught in time, kill a worker anyway.
        for round_ in range(KILLS):
            lines.wait(lambda items, n=round_: sum("ack" in i for i in items) >= 4 * (n + 1) or any("done" in i for i in items), 30)
            if any("done" in i for i in lines.items):
                break  # the writer finished early; kill no more
            current = wait_for_workers(arbiter, 2, killed)
            victim = lock_holder(repo / "hostcore.lock", set(current), timeout=3.0)
            if victim is not None:
                caught += 1
            else:
                victim = current[round_ % 2]
            os.kill(victim, signal.SIGKILL)
            killed.add(victim)
        writer.wait(timeout=60)
        lines.thread.join(10)
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.wait()
        lines.thread.join(10)
        writer.stdout.close()
    assert writer.returncode == 0, stderr.read_text()
    items = lines.items
    assert items[-1] == {"done": True}, items[-5:]
    assert not [i for i in items if i.get("fatal")], [i for i in items if "error" in i]

    # gunicorn replaced the killed workers and the server answers
    fresh = wait_for_workers(arbiter, 2, killed)
    assert not set(fresh) & killed
    assert caught >= 1, "no kill landed inside the storage's locked section"
    assert_fsck_clean(repo)

    attempted: dict[str, list[str]] = {}
    for item in items:
        if "attempt" in item:
            attempted.setdefault(item["attempt"], []).append(item["key"])
    acked = [i for i in items if "ack" in i]
    assert len(acked) >= 6
    last_ack = {i["ack"]: i for i in acked}
    async with mcp_session(url, token) as c:
        for slug, keys in attempted.items():
            page = await read_whole(c, slug)
            if slug in last_ack:
                assert page is not None, f"acknowledged {slug} is gone"
            if page is None:
                continue
            # whole: exactly one of the bodies written to it, with the hash of the blob at HEAD
            match = [k for k in keys if crash_body(k) == page["body"]]
            assert match, f"{slug}: body is none of the {len(keys)} written ({len(page['body'])} chars)"
            assert git(repo, "rev-parse", f"HEAD:{slug}.md").stdout.strip() == page["hash"]
            if slug in last_ack:
                # never older than the last acknowledged write (a later, unanswered one may have landed)
                assert keys.index(match[0]) >= keys.index(last_ack[slug]["key"]), (slug, match[0], last_ack[slug]["key"])
                if match[0] == last_ack[slug]["key"]:
                    assert page["hash"] == last_ack[slug]["hash"]
        listed = ok(await c.call_tool("list_pages", {"namespace": "notes", "limit": 500}))
        assert set(last_ack) <= {p["slug"] for p in listed["pages"]}
        # the history index caught up with every commit, even one whose worker died before indexing it
        recent = ok(await c.call_tool("recent_changes", {"limit": 200}))["commits"]
    assert [c["id"] for c in recent] == git(repo, "log", f"-{len(recent)}", "--format=%H").stdout.split()
    # every acknowledged write is a commit on the branch (later saves may have replaced it since)
    raw = git(repo, "log", "--raw", "--no-abbrev", "--no-renames", "--format=").stdout
    written = {(line.split("\t")[1], line.split()[3]) for line in raw.splitlines() if line.startswith(":")}
    assert {(f"{i['ack']}.md", i["hash"]) for i in acked} <= written

    # A ref lock left by a process killed while moving the branch: a later write waits until the
    # lock is old enough to be a leftover, removes it and goes through, a few seconds at most.
    lock = repo / "refs" / "heads" / "main.lock"
    for age in (0.0, 60.0):
        lock.write_text("0" * 40 + "\n")
        os.utime(lock, (time.time() - age, time.time() - age))
        started = time.monotonic()
        async with mcp_session(url, token) as c:
            saved = ok(await c.call_tool("save_page", {"slug": f"notes/after-lock-{int(age)}", "body": "written past a stale lock\n"}))
        took = time.monotonic() - started
        assert took < STALE_REF_LOCK + 3.0, took
        if age:
            assert took < 2.0, took
        assert not lock.exists()
        assert git(repo, "rev-parse", f"HEAD:notes/after-lock-{int(age)}.md").stdout.strip() == saved["hash"]
    assert_fsck_clean(repo)
    assert "removing stale ref lock" in log.read_text(errors="replace")  # the worker says what it did
