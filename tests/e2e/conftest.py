"""End-to-end fixtures: a real instance, real tokens and a real ``hostcore serve`` (gunicorn, 2 workers).

Everything is driven the way an operator and an MCP client would: the instance is made by the
CLI in subprocesses, the server is a separate process group on a free loopback port, and every
test talks to it over HTTP through the official MCP client (or plain httpx for transport checks).

The storage backend is the instance default (``hostcore init``); ``HOSTCORE_E2E_STORAGE=fs`` or ``git``
picks another. Tests look at storage from outside (``RunningServer.stored/listing/plant``) the way
an operator would: files in the fs folder, or ``git`` on the bare repository.

The server is shared by the whole session, so tests keep out of each other's way by using their
own slugs (see the ``uid`` fixture) and their own namespaces where a test needs a known set of pages.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
import time
import tomllib
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from hostcore import testing
from hostcore.testing import stop_process_group

E2E_STORAGE = os.environ.get("HOSTCORE_E2E_STORAGE", "")
"""Run the suite on another storage backend than the instance default: HOSTCORE_E2E_STORAGE=fs or git."""
SUITE_LIMITS = {"HOSTCORE_RATE_LIMITS": json.dumps({"requests": "100000/minute", "writes": "100000/minute"})}
"""The suite drives a few tokens far harder than people do (the defaults allow 60 writes a minute);
test_rate_limits.py tests the limits with its own."""
E2E_ENV = {
    **SUITE_LIMITS,
    **({"HOSTCORE_STORAGE": E2E_STORAGE, "HOSTCORE_PLUGINS": json.dumps([E2E_STORAGE, "tokens", "sqlite", "docs", "wordllama"])} if E2E_STORAGE else {}),
}


def cli(instance: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return testing.cli(instance, *args, check=check, env=E2E_ENV)


def create_token(instance: Path, name: str, scopes: Any, namespaces: Any = ()) -> str:
    return testing.create_token(instance, name, scopes, namespaces, env=E2E_ENV)


def start_server(instance: Path, workers: int = 2, log: Path | None = None) -> tuple[Any, str, int, Path]:
    return testing.start_server(instance, workers, log, env=E2E_ENV)

def pytest_itemcollected(item: pytest.Item) -> None:
    """Every test here runs against a real ``hostcore serve``: the fast tier leaves them out."""
    item.add_marker(pytest.mark.serve)


MODES = ("2026-07-28", "legacy")
"""Protocol modes of the official client: 2026-07-28 (stateless, no handshake) and the
2025-11-25 initialize handshake ("legacy")."""

EXTRA_NAMESPACES = ("team", "ops", "empty")

# name -> (scopes, namespaces); the admin token comes from `hostcore init`.
TOKEN_MATRIX: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "write": (("write",), ()),
    "read": (("read",), ()),
    "team_write": (("write",), ("team",)),
    "team_read": (("read",), ("team",)),
    "team_admin": (("admin",), ("team",)),
    "team_ops_write": (("write",), ("team", "ops")),
}

@dataclass
class RunningServer:
    """What the tests get: where the server listens, the tokens by name, the instance folder."""

    base: str
    port: int
    instance: Path
    tokens: dict[str, str]
    log: Path
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def url(self) -> str:
        return self.base + "/_/mcp"

    @property
    def storage(self) -> Path:
        """The storage folder: a tree of ``<slug>.md`` files (fs) or a bare repository (git)."""
        return self.instance / "wiki"

    @property
    def storage_kind(self) -> str:
        if E2E_STORAGE:
            return E2E_STORAGE
        with open(self.instance / "hostcore.toml", "rb") as fh:
            return tomllib.load(fh).get("STORAGE", "fs")

    # What is stored, seen from outside hostcore (an operator's view), for any storage backend.

    def _git(self, *args: str, cwd: Path | None = None, check: bool = True) -> subprocess.CompletedProcess[bytes]:
        cmd = ["git", "-c", "user.name=e2e", "-c", "user.email=e2e@example.invalid"]
        cmd += ["--git-dir", str(self.storage)] if cwd is None else []
        proc = subprocess.run([*cmd, *args], cwd=cwd, capture_output=True, timeout=60)
        if check and proc.returncode:
            raise AssertionError(f"git {' '.join(args)}: {proc.stderr.decode(errors='replace')}")
        return proc

    def stored(self, path: str) -> bytes | None:
        """The stored bytes at ``path`` (e.g. ``notes/index.md``), or None when absent."""
        if self.storage_kind == "git":
            proc = self._git("show", f"HEAD:{path}", check=False)
            return proc.stdout if proc.returncode == 0 else None
        file = self.storage / path
        return file.read_bytes() if file.is_file() else None

    def listing(self) -> list[str]:
        """Every stored path, sorted, hidden ones too."""
        if self.storage_kind == "git":
            return sorted(self._git("ls-tree", "-r", "--name-only", "HEAD").stdout.decode().split())
        return sorted(str(p.relative_to(self.storage)) for p in self.storage.rglob("*") if p.is_file())

    def revision(self) -> str:
        """Something that changes with every write: the branch head (git) or the newest mtime (fs)."""
        if self.storage_kind == "git":
            return self._git("rev-parse", "HEAD").stdout.decode().strip()
        return str(max((p.stat().st_mtime_ns for p in self.storage.rglob("*") if p.is_file()), default=0))

    def plant(self, files: dict[str, str | None], message: str = "planted by the e2e tests") -> None:
        """Change storage bypassing hostcore: write (or, for None, remove) files in the fs folder,
        or commit them from a clone and push into the bare repository, as an operator would with git."""
        if self.storage_kind != "git":
            for rel, text in files.items():
                target = self.storage / rel
                if text is None:
                    target.unlink()
                else:
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_text(text)
            return
        with tempfile.TemporaryDirectory(prefix="e2e-plant-") as tmp:
            work = Path(tmp) / "work"
            self._git("clone", "-q", str(self.storage), str(work), cwd=Path(tmp))
            for rel, text in files.items():
                target = work / rel
                if text is None:
                    self._git("rm", "-q", rel, cwd=work)
                else:
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_text(text)
            self._git("add", "-A", cwd=work)
            self._git("commit", "-q", "-m", message, cwd=work)
            self._git("push", "-q", "origin", "HEAD", cwd=work)

    def cli(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return cli(self.instance, *args, check=check)

    def create_token(self, name: str, scopes: list[str] | tuple[str, ...], namespaces: list[str] | tuple[str, ...] = ()) -> str:
        return create_token(self.instance, name, scopes, namespaces)


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    root = tmp_path_factory.mktemp("e2e")
    instance = root / "instance"
    init = cli(instance, "init")
    found = re.findall(r"hc_[A-Za-z0-9_-]+", init.stdout)
    assert len(found) == 1, f"init should print exactly one admin token on stdout: {init.stdout!r}"
    tokens = {"admin": found[0]}
    for name, (scopes, namespaces) in TOKEN_MATRIX.items():
        tokens[name] = create_token(instance, name, scopes, namespaces)

    proc, base, port, log = start_server(instance)
    running = RunningServer(base=base, port=port, instance=instance, tokens=tokens, log=log, proc=proc)
    try:
        _setup_namespaces(running)
        yield running
    finally:
        stop_process_group(proc)


def _setup_namespaces(srv: RunningServer) -> None:
    import anyio

    async def setup() -> None:
        async with mcp_session(srv, srv.tokens["admin"], "2026-07-28") as c:
            for name in EXTRA_NAMESPACES:
                r = await c.call_tool("save_namespace", {"name": name, "title": name.title(), "description": f"the {name} namespace"})
                assert not r.is_error, r.content
            for slug in ("team/index", "team/plan", "ops/index"):
                r = await c.call_tool("save_page", {"slug": slug, "body": f"# {slug}\n\nSeed page.\n"})
                assert not r.is_error, r.content

    anyio.run(setup)


# --- MCP client helpers ---------------------------------------------------------------------


@asynccontextmanager
async def mcp_session(
    srv: RunningServer | str, token: str | None, mode: str = "2026-07-28", client_info: Any = None
) -> AsyncIterator[Client]:
    """An official MCP client session for ``token`` in ``mode`` ("2026-07-28", "legacy" or "auto"),
    declaring ``client_info`` (an ``mcp_types.Implementation``; the SDK's own by default)."""
    url = srv if isinstance(srv, str) else srv.url
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(60.0)) as http:
        transport = streamable_http_client(url, http_client=http)
        async with Client(transport, mode=mode, client_info=client_info) as client:  # type: ignore[arg-type]
            yield client


def error_object(is_error: Any, structured: Any, texts: list[str]) -> dict[str, Any]:
    """The error object of a tool error seen by any client, after checking its shape: ``isError``,
    no ``structuredContent`` (the TypeScript client would check it against the tool's output
    schema), the last text block the error as JSON; a conflict is that JSON alone, any other error
    opens with its message, which starts with the field at fault."""
    assert is_error, f"expected a tool error, got {structured or texts}"
    assert structured is None, f"an error must not carry structuredContent: {structured}"
    err = json.loads(texts[-1])
    assert isinstance(err, dict) and err["code"] and err["message"], err
    if err["code"] == "conflict":
        assert len(texts) == 1 and isinstance(err["hash"], str), texts
    else:
        assert texts == [err["message"], texts[-1]], texts
    if err.get("field"):
        assert err["message"].startswith(f"{err['field']}: "), err
    return err


def tool_error(result: Any) -> dict[str, Any]:
    """The error object of an official Python client's tool error result (see ``error_object``)."""
    return error_object(result.is_error, result.structured_content, [c.text for c in result.content])


def ok(result: Any) -> dict[str, Any]:
    """The structured content of a successful tool result."""
    assert not result.is_error, f"tool failed: {result.structured_content or result.content}"
    assert isinstance(result.structured_content, dict), result.content
    return result.structured_content


def text_json(result: Any) -> dict[str, Any]:
    """The JSON object carried by the first text block (a conflict error is one, by the contract)."""
    return json.loads(result.content[0].text)


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def uid(request: pytest.FixtureRequest) -> str:
    """A slug segment unique to this test (and its parameters)."""
    name = re.sub(r"[^A-Za-z0-9-]+", "-", request.node.name).strip("-").lower()
    return name[:90]


def run_together(argvs: list[list[str]], timeout: float) -> list[dict[str, Any]]:
    """Start one process per argv, wait until each prints "ready", release them all at once with
    "go" on stdin (a barrier across processes), and return the JSON each prints last."""
    procs = [
        subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for argv in argvs
    ]
    try:
        for p in procs:
            line = p.stdout.readline()
            if line.strip() != "ready":
                p.kill()
                raise AssertionError(f"process did not get ready: {line!r} {p.communicate()[1]}")
        for p in procs:
            p.stdin.write("go\n")
            p.stdin.flush()
        results = []
        deadline = time.monotonic() + timeout
        for p in procs:
            out, err = p.communicate(timeout=max(1.0, deadline - time.monotonic()))
            assert p.returncode == 0, err
            results.append(json.loads(out.strip().splitlines()[-1]))
        return results
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.communicate()
