"""blame_page end to end (issue 26, item 5): through the TypeScript client (which checks the result
against the tool's output schema) and the Python client in both modes, each line of a page
written by two clients names the change, author and client that last wrote it; on a storage
without history (fs) every client gets the ``no_history`` error whole."""

from __future__ import annotations

import json

import pytest
from mcp_types import Implementation

from .conftest import mcp_session, ok
from .test_clients import CLIENTS, python_calls, typescript_calls, typescript_sdk  # noqa: F401  (the fixture)

pytestmark = pytest.mark.anyio

TS_CLIENT = "hostcore-e2e-typescript 1.0.0"  # ts_client.mjs's clientInfo


@pytest.mark.parametrize("client", CLIENTS)
async def test_blame_page_names_who_last_wrote_each_line(server, typescript_sdk, client, uid):  # noqa: F811
    slug = f"notes/{uid}"
    writer = server.tokens["write"]
    typescript_calls(typescript_sdk, server.url, [{"token": writer, "calls": [
        {"name": "save_page", "arguments": {"slug": slug, "body": "first line\nsecond line\n"}}]}])  # fmt: skip
    info = Implementation(name="hostcore-e2e-python-legacy", version="2.5.1")
    async with mcp_session(server, server.tokens["admin"], "legacy", client_info=info) as c:
        h = ok(await c.call_tool("read_page", {"slug": slug}))["hash"]
        ok(await c.call_tool("edit_page", {"slug": slug, "basehash": h, "edits": [{"oldText": "second", "newText": "2nd"}]}))

    calls = [{"token": server.tokens["read"], "calls": [{"name": "blame_page", "arguments": {"slug": slug}}]}]
    if client == "typescript":
        got = typescript_calls(typescript_sdk, server.url, calls)[0]
    else:
        got = (await python_calls(server, client.split()[1], calls))[0]
    if server.storage_kind == "fs":
        assert got["is_error"] and json.loads(got["texts"][-1])["code"] == "no_history"
        return
    assert not got["is_error"], got["texts"]
    result = got["structured"]
    changes = {c["id"]: c for c in result["changes"]}
    body = [(line["text"], changes[line["change"]]["author"], changes[line["change"]]["client"])
            for line in result["lines"] if line["line"] >= result["body_line"]]  # fmt: skip
    assert body == [("first line", "write", TS_CLIENT), ("2nd line", "admin", "hostcore-e2e-python-legacy 2.5.1")]
    assert result["complete"] and not result["more"]
