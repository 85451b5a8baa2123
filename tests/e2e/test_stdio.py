"""``hostcore mcp --stdio``: the same tools, resources and prompts over stdin and stdout, started
by the official clients' stdio transports (the Python SDK's and the TypeScript SDK's, as Claude
Desktop starts a local server), against the instance a running ``hostcore serve`` serves, while
HTTP clients write the same wiki."""

from __future__ import annotations

import hashlib
import json
import subprocess
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

from hostcore import testing

from .conftest import E2E_ENV, mcp_session, ok, tool_error
from .test_assistants import typescript
from .test_clients import typescript_sdk  # noqa: F401  (the fixture)

pytestmark = pytest.mark.anyio


def stdio_command(server: Any, token: str | None) -> tuple[list[str], dict[str, str]]:
    """The command a local client starts, and its environment (the token in HOSTCORE_TOKEN)."""
    env = testing.hostcore_env({**E2E_ENV, **({"HOSTCORE_TOKEN": token} if token else {})})
    return [*testing.hostcore_cmd(), "--instance", str(server.instance), "mcp", "--stdio"], env


@asynccontextmanager
async def stdio_session(server: Any, token: str, mode: str = "legacy") -> Any:
    argv, env = stdio_command(server, token)
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=env)
    async with Client(stdio_client(params), mode=mode) as client:  # type: ignore[arg-type]
        yield client


def short(uid: str) -> str:
    return hashlib.sha1(uid.encode()).hexdigest()[:12]


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_python_stdio_client_shares_the_wiki_with_the_http_server(server, uid, mode):
    slug = f"notes/stdio-{short(uid)}"
    async with stdio_session(server, server.tokens["write"], mode) as local:
        tools = {t.name for t in (await local.list_tools()).tools}
        assert {"save_page", "capture", "read_guide", "search"} <= tools
        made = ok(await local.call_tool("save_page", {"slug": slug, "body": f"# Written locally\n\nzebracorn {short(uid)}\n"}))
        async with mcp_session(server, server.tokens["write"]) as remote:
            read = ok(await remote.call_tool("read_page", {"slug": slug}))
            assert read["hash"] == made["hash"]
            found = ok(await remote.call_tool("search", {"query": f"zebracorn {short(uid)}"}))
            assert [h["slug"] for h in found["hits"]] == [slug]
            body = f"changed over HTTP: quagmoth {short(uid)}\n"
            changed = ok(await remote.call_tool("save_page", {"slug": slug, "basehash": made["hash"], "body": body}))
        contents = (await local.read_resource(f"hostcore://page/{slug}")).contents[0]
        assert contents.text == body and contents.meta["hash"] == changed["hash"]
        # this process's derived indexes catch up with the server's write before answering
        assert [h["slug"] for h in ok(await local.call_tool("search", {"query": f"quagmoth {short(uid)}"}))["hits"]] == [slug]
        stale = tool_error(await local.call_tool("save_page", {"slug": slug, "basehash": made["hash"], "body": "lost\n"}))
        assert stale["code"] == "conflict" and stale["hash"] == changed["hash"]
    history = subprocess.run(["git", "--git-dir", str(server.storage), "log", "--format=%an|%s", "--", f"{slug}.md"],
                             capture_output=True, text=True, check=True).stdout.splitlines()  # fmt: skip
    if server.storage_kind == "git":
        assert history[-1].startswith(f"write|save_page: {slug} via mcp ")  # the Python SDK's declared name


async def test_typescript_stdio_client_gets_the_same_tools_resources_and_prompts(server, typescript_sdk, uid):  # noqa: F811
    argv, env = stdio_command(server, server.tokens["write"])
    slug = f"notes/ts-stdio-{short(uid)}"
    calls = [
        {"name": "save_page", "arguments": {"slug": slug, "body": "from the TypeScript client\n"}},
        {"name": "capture", "arguments": {"namespace": "notes", "text": f"ts thought {short(uid)}"}},
        {"name": "save_page", "arguments": {"slug": "notes/../x", "body": "x"}},
        {"method": "readResource", "params": {"uri": f"hostcore://page/{slug}"}},
        {"method": "readResource", "params": {"uri": "hostcore://page/notes/none-such-page"}},
        {"method": "listPrompts", "params": {}},
        {"method": "getInstructions"},
    ]
    saved, captured, refused, read, missing, prompts, told = typescript(
        typescript_sdk, [{"stdio": {"command": argv[0], "args": argv[1:], "env": env}, "calls": calls}]
    )
    assert saved["result"]["structuredContent"]["created"]
    assert captured["result"]["structuredContent"]["slug"] == "notes/inbox"
    assert refused["result"]["isError"] and json.loads(refused["result"]["content"][-1]["text"])["field"] == "slug"
    assert read["result"]["contents"][0]["text"] == "from the TypeScript client\n"
    assert missing["code"] == -32602 and missing["data"]["code"] == "not_found"
    assert {"summarise_page", "draft_page"} <= {p["name"] for p in prompts["result"]["prompts"]}
    assert "capture" in told["result"]
    assert server.stored(f"{slug}.md") is not None
    assert f"ts thought {short(uid)}" in server.stored("notes/inbox.md").decode()


async def test_captures_over_stdio_and_http_at_once_all_land(server, uid):
    """Two stdio processes and HTTP clients capture into one inbox at the same time: every
    capture lands once, none conflicts (the storage's locks are shared by every process)."""
    ns = f"st-{short(uid)}"
    async with mcp_session(server, server.tokens["admin"]) as admin:
        ok(await admin.call_tool("save_namespace", {"name": ns}))
    texts: list[str] = []

    async def capturing(name: str, session: Any) -> None:
        async with session as client:
            for i in range(6):
                text = f"{name} capture {i}"
                ok(await client.call_tool("capture", {"namespace": ns, "text": text}))
                texts.append(text)

    async with anyio.create_task_group() as tg:
        for worker in range(2):
            tg.start_soon(capturing, f"stdio {worker}", stdio_session(server, server.tokens["write"]))
            tg.start_soon(capturing, f"http {worker}", mcp_session(server, server.tokens["write"]))
    inbox = server.stored(f"{ns}/inbox.md").decode()
    landed = [line for line in inbox.splitlines() if line.startswith(("stdio ", "http "))]
    assert sorted(landed) == sorted(texts) and len(texts) == 24


def test_a_token_is_needed_and_checked(server):
    argv, env = stdio_command(server, None)
    missing = subprocess.run(argv, env=env, input="", capture_output=True, text=True, timeout=60)
    assert missing.returncode != 0 and "HOSTCORE_TOKEN" in missing.stderr
    argv, env = stdio_command(server, "hc_not-a-token")
    wrong = subprocess.run(argv, env=env, input="", capture_output=True, text=True, timeout=60)
    assert wrong.returncode == 1 and "the token is unknown or revoked" in wrong.stderr and wrong.stdout == ""
    no_stdio = subprocess.run(argv[:-1], env=env, input="", capture_output=True, text=True, timeout=60)
    assert no_stdio.returncode != 0 and "--stdio" in no_stdio.stderr


async def test_a_token_revoked_meanwhile_stops_working_at_the_next_call(server, uid):
    name = f"stdio-revoked-{short(uid)}"
    token = server.create_token(name, ["write"])
    async with stdio_session(server, token) as local:
        ok(await local.call_tool("read_guide", {}))
        server.cli("token", "revoke", name)
        refused = tool_error(await local.call_tool("read_guide", {}))
        assert refused["code"] == "unauthorized"
        with pytest.raises(MCPError) as listed:
            await local.list_resources()
        assert listed.value.code == -32602 and listed.value.data["code"] == "unauthorized"
