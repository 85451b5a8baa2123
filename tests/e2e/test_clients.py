"""The contract's errors reach every official client whole: the TypeScript SDK's (what the MCP
Inspector, mcp-remote for Claude Desktop, Claude Code and Cursor are built on) and the Python SDK's.

The TypeScript client checks a result's ``structuredContent`` against the tool's output schema
after ``tools/list``, errors included, and throws when it does not match; so each case goes
through ``ts_client.mjs`` (run with the pinned Node 22 and SDK that ``tests/conformance/run.sh
--install`` puts in ``.tools/``) the way those clients call tools, and through the Python client in
both protocol modes, and must come back as the same error object: its code, field, message (the
next step), and for a conflict the current hash (and body for save_page).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from hostcore import testing

from .conftest import error_object, mcp_session, ok

pytestmark = pytest.mark.anyio

HERE = Path(__file__).resolve().parent
SCRIPT = HERE / "ts_client.mjs"
CLIENTS = ("typescript", "python 2026-07-28", "python legacy")


@pytest.fixture(scope="session")
def typescript_sdk() -> tuple[str, str]:
    """(node, SDK folder), installed from tests/conformance/package-lock.json if they are not yet."""
    return testing.typescript_sdk()


def typescript_calls(sdk: tuple[str, str], url: str, sessions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Run each session's calls through the TypeScript client; one outcome per call, in order."""
    node, folder = sdk
    proc = subprocess.run(
        [node, str(SCRIPT)],
        input=json.dumps({"url": url, "sessions": sessions}),
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "HOSTCORE_TS_SDK": folder},
    )
    assert proc.returncode == 0, proc.stderr
    outcomes = []
    for out in json.loads(proc.stdout):
        assert "result" in out, f"the TypeScript client threw: {out}"
        r = out["result"]
        outcomes.append({"is_error": r.get("isError", False), "structured": r.get("structuredContent"),
                         "texts": [c["text"] for c in r["content"]]})  # fmt: skip
    return outcomes


async def python_calls(server: Any, mode: str, sessions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    outcomes = []
    for session in sessions:
        async with mcp_session(server, session["token"], mode) as c:
            for call in session["calls"]:
                r = await c.call_tool(call["name"], call["arguments"])
                outcomes.append({"is_error": r.is_error, "structured": r.structured_content, "texts": [c.text for c in r.content]})
    return outcomes


@pytest.mark.parametrize("client", CLIENTS)
async def test_contract_errors_reach_the_official_clients_whole(server, typescript_sdk, client, uid):
    slug = f"notes/{uid}"
    async with mcp_session(server, server.tokens["write"]) as c:
        h1 = ok(await c.call_tool("save_page", {"slug": slug, "body": "first\n"}))["hash"]
        h2 = ok(await c.call_tool("save_page", {"slug": slug, "basehash": h1, "body": "second\n"}))["hash"]

    # (token, tool, arguments, what the error object must hold; None: the call succeeds)
    cases: list[tuple[str, str, dict[str, Any], dict[str, Any] | None]] = [
        ("write", "save_page", {"slug": slug, "basehash": h1, "body": "lost update\n"},
         {"code": "conflict", "field": "basehash", "hash": h2, "body": "second\n"}),
        ("write", "edit_page", {"slug": slug, "basehash": h1, "edits": [{"oldText": "second", "newText": "x"}]},
         {"code": "conflict", "field": "basehash", "hash": h2}),
        ("write", "edit_page", {"slug": slug, "basehash": h2, "edits": [{"oldText": "absent", "newText": "x"}]},
         {"code": "validation_error"}),
        ("write", "delete_page", {"slug": f"{slug}-missing"}, {"code": "not_found", "field": "slug"}),
        ("team_write", "read_page", {"slug": "notes/index"}, {"code": "forbidden", "field": "slug"}),
        ("team_write", "save_page", {"slug": slug, "basehash": h2, "body": "x"}, {"code": "forbidden", "field": "slug"}),
        ("read", "save_page", {"slug": slug, "basehash": h2, "body": "x"}, {"code": "insufficient_scope", "required_scope": "write"}),
        ("read", "read_page", {"slug": "notes/_hidden"}, {"code": "validation_error", "field": "slug"}),
        ("read", "read_page", {"slug": f"{slug}-missing"}, {"code": "not_found", "field": "slug"}),
        ("read", "read_page", {"slug": slug}, None),
        ("read", "search", {"query": "second", "since": "yesterday"}, {"code": "validation_error", "field": "since"}),
        ("read", "search", {"query": "second", "since": "2026-05-02", "before": "2026-05-01"}, {"code": "validation_error", "field": "before"}),
        ("read", "search", {"query": "second", "namespace": "notes", "since": "2000-01-01T00:00:00Z"}, None),
    ]  # fmt: skip
    sessions: list[dict[str, Any]] = []
    order = []
    for token in dict.fromkeys(case[0] for case in cases):
        mine = [case for case in cases if case[0] == token]
        sessions.append({"token": server.tokens[token], "calls": [{"name": n, "arguments": a} for _, n, a, _ in mine]})
        order += mine

    if client == "typescript":
        outcomes = typescript_calls(typescript_sdk, server.url, sessions)
    else:
        outcomes = await python_calls(server, client.split()[1], sessions)

    assert len(outcomes) == len(order)
    for (token, tool, _args, expected), got in zip(order, outcomes, strict=False):
        if expected is None and tool == "search":  # hits with found_by: the output schema the TypeScript client checks
            hits = {h["slug"]: h for h in got["structured"]["hits"]} if not got["is_error"] else {}
            assert hits.get(slug, {}).get("found_by") in ("words", "words and meaning"), got
            continue
        if expected is None:
            assert not got["is_error"] and got["structured"]["hash"] == h2, got
            continue
        err = error_object(got["is_error"], got["structured"], got["texts"])
        assert {k: err.get(k) for k in expected} == expected, (token, tool, err)
        assert len(err["message"]) > len(err.get("field", "")) + 20, err  # says what to do, not only where
        if err["code"] != "conflict" or tool != "save_page":
            assert "body" not in err and "second" not in "".join(got["texts"]), (tool, err)
        if err["code"] == "forbidden":
            assert "hash" not in err, err

    async with mcp_session(server, server.tokens["read"]) as c:
        page = ok(await c.call_tool("read_page", {"slug": slug}))
    assert page["hash"] == h2 and page["body"] == "second\n"


async def test_history_names_each_official_clients_declared_name_and_version(server, typescript_sdk, uid):
    """Commits, recent_changes and page_history say "via NAME VERSION" of what each client declared
    in clientInfo, in every protocol mode: not "via node" or "via python-httpx...", the HTTP
    libraries' user agents."""
    from mcp_types import Implementation

    token = server.tokens["write"]
    slugs = {"typescript": f"notes/{uid}-ts", "2026-07-28": f"notes/{uid}-modern", "legacy": f"notes/{uid}-legacy"}
    declared = {"typescript": "hostcore-e2e-typescript 1.0.0"}  # ts_client.mjs's clientInfo
    typescript_calls(typescript_sdk, server.url, [{"token": token, "calls": [
        {"name": "save_page", "arguments": {"slug": slugs["typescript"], "body": "from TypeScript\n"}}]}])  # fmt: skip
    for mode in ("2026-07-28", "legacy"):
        info = Implementation(name=f"hostcore-e2e-python-{mode}", version="2.5.1")
        declared[mode] = f"{info.name} {info.version}"
        async with mcp_session(server, token, mode, client_info=info) as c:
            ok(await c.call_tool("save_page", {"slug": slugs[mode], "body": f"from Python, {mode}\n"}))

    async with mcp_session(server, server.tokens["read"]) as c:
        recent = ok(await c.call_tool("recent_changes", {"limit": 50}))["commits"]
        for client, slug in slugs.items():
            expected = f"save_page: {slug} via {declared[client]}"
            history = ok(await c.call_tool("page_history", {"slug": slug}))["commits"]
            assert history[0]["message"] == expected, (client, history[0])
            assert expected in [commit["message"] for commit in recent], client
            if server.storage_kind == "git":
                logged = server._git("log", "-1", "--format=%s", "HEAD", "--", f"{slug}.md").stdout.decode().strip()
                assert logged == expected, (client, logged)
