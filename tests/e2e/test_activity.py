"""The activity log end to end (issue 26, item 4): calls made through both official clients (the
TypeScript SDK's and the Python SDK's, in both protocol modes) against two gunicorn workers are
each recorded with the client's declared name and version, its session, the page and the
outcome; read_activity and list_agent_sessions answer through every client (the TypeScript client
checks their results against their output schemas), a token reads its own records only, and an
admin reads everyone's."""

from __future__ import annotations

import time
from typing import Any

import anyio
import pytest
from mcp_types import Implementation

from .conftest import mcp_session, ok, tool_error
from .test_clients import python_calls, typescript_calls, typescript_sdk  # noqa: F401  (the fixture)

pytestmark = pytest.mark.anyio

TS_CLIENT = "hostcore-e2e-typescript 1.0.0"  # ts_client.mjs's clientInfo


async def logged(server: Any, principal: str, count: int, slug: str | None = None) -> list[dict[str, Any]]:
    """The admin's read of ``principal``'s records (touching ``slug``, when given) once there are
    ``count`` (each worker writes its records within half a second), or what there is after 10 seconds."""
    deadline = time.monotonic() + 10
    async with mcp_session(server, server.tokens["admin"]) as c:
        while True:
            records = ok(await c.call_tool("read_activity", {"principal": principal, "limit": 200}))["records"]
            records = [r for r in records if slug is None or r["slugs"] == [slug]]
            if len(records) >= count or time.monotonic() > deadline:
                return records
            await anyio.sleep(0.2)


async def test_calls_through_both_official_clients_are_recorded_and_read_back(server, typescript_sdk, uid):  # noqa: F811
    name = f"act-{uid}"[:60]
    token = server.create_token(name, ["write"], ["team"])
    calls = [{"name": "read_page", "arguments": {"slug": "team/index"}},
             {"name": "read_page", "arguments": {"slug": "notes/index"}}]  # forbidden: refused, and recorded  # fmt: skip
    typescript_calls(typescript_sdk, server.url, [{"token": token, "calls": calls}])
    for mode in ("2026-07-28", "legacy"):
        info = Implementation(name=f"hostcore-e2e-python-{mode}", version="2.5.1")
        async with mcp_session(server, token, mode, client_info=info) as c:
            ok(await c.call_tool("read_page", {"slug": "team/index"}))
            assert tool_error(await c.call_tool("read_page", {"slug": "notes/index"}))["code"] == "forbidden"

    records = await logged(server, name, 6)
    seen = sorted((r["client"], r["tool"], tuple(r["slugs"]), r["outcome"], r["session"] is None) for r in records)
    expected = []
    for client, stateless in ((TS_CLIENT, False), ("hostcore-e2e-python-2026-07-28 2.5.1", True),
                              ("hostcore-e2e-python-legacy 2.5.1", False)):  # fmt: skip
        expected += [(client, "read_page", ("notes/index",), "forbidden", stateless),
                     (client, "read_page", ("team/index",), "ok", stateless)]  # fmt: skip
    assert seen == sorted(expected)
    assert all(r["principal"] == name and r["auth"] == "token" and r["ms"] > 0 for r in records)

    own_calls = [{"name": "read_activity", "arguments": {"limit": 50}}, {"name": "list_agent_sessions", "arguments": {}},
                 {"name": "read_activity", "arguments": {"principal": "admin"}}]  # fmt: skip
    ts_own = typescript_calls(typescript_sdk, server.url, [{"token": token, "calls": own_calls}])
    py_own = await python_calls(server, "legacy", [{"token": token, "calls": own_calls}])
    for own in (ts_own, py_own):
        assert not own[0]["is_error"] and {r["principal"] for r in own[0]["structured"]["records"]} == {name}
        # the namespace the token may not use stays out of what it reads back
        assert ("notes/index",) not in {tuple(r["slugs"]) for r in own[0]["structured"]["records"]}
        sessions = own[1]["structured"]["sessions"]
        assert {s["client"] for s in sessions} >= {TS_CLIENT, "hostcore-e2e-python-legacy 2.5.1"}
        assert {s["principal"] for s in sessions} == {name}
        assert own[2]["is_error"] and '"code": "forbidden"' in own[2]["texts"][-1]

    async with mcp_session(server, server.tokens["admin"], "legacy") as c:
        sessions = ok(await c.call_tool("list_agent_sessions", {"principal": name}))["sessions"]
        stateless = [s for s in sessions if s["session"] is None]
        assert [(s["client"], s["calls"], s["errors"]) for s in stateless] == [("hostcore-e2e-python-2026-07-28 2.5.1", 2, 1)]
        assert all(s["auth"] == "token" and s["first"] <= s["last"] for s in sessions)
        everyone = ok(await c.call_tool("read_activity", {"limit": 200}))["records"]
        assert {r["principal"] for r in everyone} >= {name, "admin"}  # the admin's own calls too


def test_a_clean_stop_of_the_server_loses_no_record(tmp_path):
    """Records wait in each worker's memory for the writer; stopping ``hostcore serve`` (SIGTERM to
    gunicorn and its two workers) right after the calls writes them all (gunicorn's worker_exit)."""
    import re
    import sqlite3

    import httpx

    from .conftest import cli, start_server, stop_process_group

    instance = tmp_path / "instance"
    token = re.findall(r"hc_[A-Za-z0-9_-]+", cli(instance, "init").stdout)[0]
    proc, base, _port, _log = start_server(instance)
    calls = 60
    try:
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "list_namespaces", "arguments": {}}}
        headers = {"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream",
                   "MCP-Protocol-Version": "2025-06-18"}  # fmt: skip
        for _ in range(calls):
            with httpx.Client(timeout=30) as http:  # a connection each: the calls spread over both workers
                assert not http.post(base + "/_/mcp", json=body, headers=headers).json()["result"]["isError"]
    finally:
        stop_process_group(proc)
    with sqlite3.connect(instance / "activity.sqlite") as db:
        assert db.execute("SELECT count(*) FROM activity WHERE action = 'list_namespaces'").fetchone()[0] == calls


async def test_calls_over_stdio_land_in_the_same_log(server, uid):
    """A local client's ``hostcore mcp --stdio`` process writes its records into the instance's log
    (by the time it exits), where the HTTP server reads them."""
    from .test_stdio import short, stdio_session

    slug = f"notes/stdio-log-{short(uid)}"
    async with stdio_session(server, server.tokens["write"]) as local:
        assert tool_error(await local.call_tool("read_page", {"slug": slug}))["code"] == "not_found"
    records = await logged(server, "write", 1, slug)
    assert [(r["tool"], r["outcome"], r["auth"]) for r in records] == [("read_page", "not_found", "token")]
    assert records[0]["client"].startswith("mcp ")  # the Python SDK's declared name
