"""Comments per heading end to end: through the TypeScript client (which checks each result against
the tool's output schema) and the Python client in both modes, a read-only token posts to a
heading's thread (its @-mentions stripped), lists the page's threads and reads one page by page;
a token limited to another namespace is refused; every call is in the activity log."""

from __future__ import annotations

import pytest

from .conftest import mcp_session, ok, tool_error
from .test_activity import logged
from .test_clients import CLIENTS, python_calls, typescript_calls, typescript_sdk  # noqa: F401  (the fixture)

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("client", CLIENTS)
async def test_post_list_and_read_threads_through_each_client(server, typescript_sdk, client, uid):  # noqa: F811
    slug = f"notes/{uid}"
    async with mcp_session(server, server.tokens["write"]) as c:
        ok(await c.call_tool("save_page", {"slug": slug, "body": "# Install\n\nrun it\n\n# Usage\n\nuse it\n"}))
    name = f"cmt{CLIENTS.index(client)}-{uid}"[:60]
    token = server.create_token(name, ["read"], ["notes"])
    calls = [
        {"name": "post_comment", "arguments": {"slug": slug, "section_id": "install", "text": "@ana which version?"}},
        {"name": "post_comment", "arguments": {"slug": slug, "section_id": "install", "text": "second"}},
        {"name": "post_comment", "arguments": {"slug": slug, "section_id": "usage", "text": "third"}},
        {"name": "list_comment_threads", "arguments": {"slug": slug}},
        {"name": "read_comment_thread", "arguments": {"slug": slug, "section_id": "install", "limit": 1}},
        {"name": "read_comment_thread", "arguments": {"slug": slug, "section_id": "install", "offset": 1, "limit": 1}},
        {"name": "post_comment", "arguments": {"slug": slug, "section_id": "nowhere", "text": "lost"}},
        {"name": "post_comment", "arguments": {"slug": "team/plan", "section_id": "_top", "text": "not mine"}},
    ]
    if client == "typescript":
        got = typescript_calls(typescript_sdk, server.url, [{"token": token, "calls": calls}])
    else:
        got = await python_calls(server, client.split()[1], [{"token": token, "calls": calls}])
    assert not any(g["is_error"] for g in got[:6]), [g["texts"] for g in got[:6]]
    posted = got[0]["structured"]
    assert posted["text"] == "ana which version?" and posted["count"] == 1 and posted["section_id"] == "install"
    threads = got[3]["structured"]["threads"]
    assert [(t["section_id"], t["heading"], t["count"], t["orphaned"]) for t in threads] == [
        ("install", "Install", 2, False), ("usage", "Usage", 1, False)]  # fmt: skip
    first, second = got[4]["structured"], got[5]["structured"]
    assert [c["text"] for c in first["comments"]] == ["ana which version?"] and first["more"] and first["next_offset"] == 1
    assert [c["text"] for c in second["comments"]] == ["second"] and not second["more"]
    assert all(c["author"] == name for c in first["comments"] + second["comments"])
    assert got[6]["is_error"] and '"field": "section_id"' in got[6]["texts"][-1]
    assert got[7]["is_error"] and '"code": "forbidden"' in got[7]["texts"][-1]

    records = await logged(server, name, len(calls))
    tools = sorted((r["tool"], r["outcome"]) for r in records)
    assert ("list_comment_threads", "ok") in tools and ("read_comment_thread", "ok") in tools
    assert tools.count(("post_comment", "ok")) == 3 and ("post_comment", "forbidden") in tools


async def test_an_over_long_comment_names_the_field_and_posts_nothing(server, uid):
    slug = f"notes/{uid}"
    async with mcp_session(server, server.tokens["write"]) as c:
        ok(await c.call_tool("save_page", {"slug": slug, "body": "# A\n\nx\n"}))
        error = tool_error(await c.call_tool("post_comment", {"slug": slug, "section_id": "a", "text": "x" * 4001}))
        assert error["code"] == "validation_error" and error["field"] == "text"
        assert ok(await c.call_tool("list_comment_threads", {"slug": slug}))["threads"] == []
