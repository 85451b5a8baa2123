"""Every file and folder the wiki makes is its user's alone (0600 / 0700), whatever the umask it was
started with: the instance folder holds the session signing key, password hashes, token digests,
every namespace's pages and their indexes. Run as an operator would: the real CLI and ``hostcore
serve`` in subprocesses started with the usual umask of 022."""

from __future__ import annotations

import json
import os
import re
import stat
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hostcore import testing


@pytest.fixture
def umask_022() -> Iterator[None]:
    """The usual umask, inherited by every subprocess the test starts."""
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def exposed(folder: Path) -> list[str]:
    """Everything under ``folder`` (it included) that group or others may read, write or enter."""
    found = []
    for path in [folder, *folder.rglob("*")]:
        mode = path.lstat().st_mode
        if not stat.S_ISLNK(mode) and mode & 0o077:
            found.append(f"{path.relative_to(folder.parent)} {stat.S_IMODE(mode):04o}")
    return found


def call(base: str, token: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """One tools/call through the MCP endpoint; returns its structured result."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
    request = urllib.request.Request(
        base + "/_/mcp",
        json.dumps(body).encode(),
        {"Authorization": f"Bearer {token}", "Content-Type": "application/json",
         "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"},
    )  # fmt: skip
    with urllib.request.urlopen(request, timeout=60) as answer:
        result = json.loads(answer.read())["result"]
    assert not result.get("isError"), result
    return result["structuredContent"]


@pytest.mark.serve
def test_an_instance_made_and_served_under_umask_022_is_private(tmp_path: Path, umask_022: None) -> None:
    instance = tmp_path / "instance"
    testing.cli(instance, "init")
    admin = testing.create_token(instance, "operator", ["admin"])
    proc, base, _port, _log = testing.start_server(instance)
    try:
        call(base, admin, "save_namespace", {"name": "pub", "title": "Public", "public": True})
        for i in range(3):
            call(base, admin, "save_page", {"slug": f"pub/p{i}", "body": f"zeppelin {i} [[pub/p{(i + 1) % 3}]]\n"})
        assert call(base, admin, "search", {"query": "zeppelin"})["hits"]
        assert call(base, admin, "backlinks", {"slug": "pub/p1"})["backlinks"]
        with urllib.request.urlopen(base + "/pub/p1", timeout=60) as page:  # the web caches: blocks, templates
            assert b"zeppelin 1" in page.read()
        while_serving = exposed(instance)  # with each SQLite file's -wal and -shm, and the lock files
    finally:
        testing.stop_process_group(proc)
    testing.cli(instance, "reindex")
    testing.cli(instance, "token", "create", "--name", "late", "--scope", "read")
    assert while_serving == [] and exposed(instance) == []


@pytest.mark.serve
def test_an_exposed_instance_is_named_by_check_and_made_private_at_start(tmp_path: Path, umask_022: None) -> None:
    instance = tmp_path / "instance"
    testing.cli(instance, "init")
    for path in [instance, *instance.rglob("*")]:  # as an older version, or `cp -r` with umask 022, left it
        path.chmod(0o755 if path.is_dir() else 0o644)
    before = exposed(instance)
    checked = testing.cli(instance, "check", check=False)
    assert checked.returncode == 1
    assert re.search(rf"problem: \d+ files or folders other users may read or enter: {re.escape(str(instance))} \(0755\), ", checked.stdout)
    assert exposed(instance) == before  # check changes nothing

    testing.cli(instance, "token", "list")  # any command that starts the wiki, as `hostcore serve` does
    assert exposed(instance) == []
    assert testing.cli(instance, "check").stdout.endswith("config OK\n")


def test_sqlite_files_are_made_private_whatever_the_umask(tmp_path: Path, umask_022: None) -> None:
    from hostcore import connect, wal

    db, _ = connect(tmp_path / "derived.sqlite", isolation_level=None)
    wal(db)
    db.execute("CREATE TABLE t (x)")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["derived.sqlite", "derived.sqlite-shm", "derived.sqlite-wal", "derived.sqlite.lock"]
    assert exposed(tmp_path) == []
    db.close()
