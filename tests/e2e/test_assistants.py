"""capture, read_guide, pages as resources and the prompts, through a real ``hostcore serve`` and
both official clients: the TypeScript SDK's (which checks every result's shape, tools' against
their output schemas) and the Python SDK's in both protocol modes."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from typing import Any

import pytest

from .conftest import mcp_session, ok, tool_error
from .test_clients import SCRIPT, typescript_sdk  # noqa: F401  (the fixture)

pytestmark = pytest.mark.anyio


def typescript(sdk: tuple[str, str], sessions: list[dict[str, Any]], url: str = "") -> list[dict[str, Any]]:
    """Each call of each session through ts_client.mjs: {"result": ...} or {"thrown", "code", "data"}."""
    node, folder = sdk
    proc = subprocess.run(
        [node, str(SCRIPT)], input=json.dumps({"url": url, "sessions": sessions}), capture_output=True, text=True,
        timeout=180, env={**os.environ, "HOSTCORE_TS_SDK": folder},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def namespace_with_guide(server: Any, uid: str, pages: int = 0) -> tuple[str, str]:
    """A namespace of its own (name, write token limited to it) whose guide is ``<ns>/guide``,
    with ``pages`` more pages planted in storage from outside."""
    ns = "as-" + hashlib.sha1(uid.encode()).hexdigest()[:12]
    token = server.create_token(f"{ns}-writer", ["write"], [ns])
    server.plant({f"{ns}/.namespace.yaml": "title: Assistants\nguide: guide\n",
                  f"{ns}/guide.md": "---\ntitle: How we work\n---\nWrite short pages. Link them.\n",
                  **{f"{ns}/page-{i:03d}.md": f"# Page {i}\n" for i in range(pages)}})  # fmt: skip
    return ns, token


def calls_for(ns: str) -> list[dict[str, Any]]:
    """What each client does, in order; the outcomes are compared client by client."""
    return [
        {"name": "capture", "arguments": {"namespace": ns, "text": "A thought", "url": "https://example.org/x"}},
        {"name": "capture", "arguments": {"namespace": ns, "text": "x", "url": "ftp://no"}},
        {"name": "capture", "arguments": {"namespace": "notes", "text": "elsewhere"}},
        {"name": "read_guide", "arguments": {"namespace": ns}},
        {"name": "read_guide", "arguments": {"namespace": "notes"}},
        {"method": "readResource", "params": {"uri": f"hostcore://page/{ns}/guide"}},
        {"method": "readResource", "params": {"uri": "hostcore://page/notes/index"}},
        {"method": "listResourceTemplates", "params": {}},
        {"method": "listPrompts", "params": {}},
        {"method": "getPrompt", "params": {"name": "summarise_page", "arguments": {"slug": f"{ns}/guide"}}},
        {"method": "getInstructions"},
        {"method": "complete", "params": {"ref": {"type": "ref/resource", "uri": "hostcore://page/{+slug}"},
                                          "argument": {"name": "slug", "value": f"{ns}/g"}}},
    ]


def check_outcomes(ns: str, outcomes: list[dict[str, Any]]) -> None:
    """The same outcomes whichever client: each a {"result"} or {"thrown", "code", "data"}."""
    captured, bad_url, foreign, guide, no_guide, page, forbidden, templates, prompts, summary, told, completed = outcomes
    assert captured["result"]["structuredContent"]["slug"] == f"{ns}/inbox" and captured["result"]["structuredContent"]["created"]
    assert json.loads(bad_url["result"]["content"][-1]["text"])["field"] == "url"
    assert json.loads(foreign["result"]["content"][-1]["text"])["code"] == "forbidden"
    [read] = guide["result"]["structuredContent"]["guides"]
    assert (read["slug"], read["title"], read["body"]) == (f"{ns}/guide", "How we work", "Write short pages. Link them.\n")
    assert json.loads(no_guide["result"]["content"][-1]["text"])["code"] == "forbidden"
    [contents] = page["result"]["contents"]
    assert contents["text"] == read["body"] and contents["_meta"]["hash"] == read["hash"]
    assert forbidden["code"] == -32602 and forbidden["data"]["code"] == "forbidden"
    assert [t["uriTemplate"] for t in templates["result"]["resourceTemplates"]][:2] == [
        "hostcore://page/{+slug}", "hostcore://attachment/{+slug}/{filename}",
    ]
    assert {"summarise_page", "draft_page"} <= {p["name"] for p in prompts["result"]["prompts"]}
    assert summary["result"]["messages"][1]["content"]["resource"]["text"] == read["body"]
    assert f"{ns}/guide for {ns}" in told["result"]
    assert completed["result"]["completion"]["values"] == [f"{ns}/guide"]


async def python_outcomes(server: Any, token: str, mode: str, calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The calls through the Python client, in the TypeScript outcomes' JSON shape."""
    import mcp_types as types
    from mcp.shared.exceptions import MCPError

    out: list[dict[str, Any]] = []
    async with mcp_session(server, token, mode) as c:
        for call in calls:
            method = call.get("method")
            try:
                if method == "getInstructions":  # 2026-07-28 has no handshake: its server/discover tells them
                    told = c.instructions if mode == "legacy" else (await c.session.send_discover(mode))["instructions"]
                    out.append({"result": told})
                    continue
                if method is None:
                    result: Any = await c.call_tool(call["name"], call["arguments"])
                elif method == "readResource":
                    result = await c.read_resource(call["params"]["uri"])
                elif method == "listResourceTemplates":
                    result = await c.list_resource_templates()
                elif method == "listPrompts":
                    result = await c.list_prompts()
                elif method == "complete":
                    ref = types.ResourceTemplateReference(uri=call["params"]["ref"]["uri"])
                    result = await c.complete(ref, call["params"]["argument"])
                else:
                    result = await c.get_prompt(call["params"]["name"], call["params"]["arguments"])
                out.append({"result": result.model_dump(mode="json", by_alias=True, exclude_none=True)})
            except MCPError as err:
                out.append({"thrown": err.message, "code": err.code, "data": err.data})
    return out


CLIENTS = ["typescript", "python 2026-07-28", "python legacy"]


async def client_outcomes(server: Any, sdk: tuple[str, str], client: str, token: str, calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``calls`` through ``client`` (one of CLIENTS), in the TypeScript outcomes' JSON shape."""
    if client == "typescript":
        return typescript(sdk, [{"token": token, "calls": calls}], server.url)
    return await python_outcomes(server, token, client.split()[1], calls)


@pytest.mark.parametrize("client", CLIENTS)
async def test_capture_guides_resources_and_prompts_through_each_client(server, typescript_sdk, client, uid):  # noqa: F811
    ns, token = namespace_with_guide(server, uid)
    check_outcomes(ns, await client_outcomes(server, typescript_sdk, client, token, calls_for(ns)))
    inbox = server.stored(f"{ns}/inbox.md").decode()
    assert "A thought\n\n<https://example.org/x>" in inbox
    assert f"by {ns}-writer via " in inbox  # who, and the client by its declared name


async def test_resources_list_pages_through_a_namespace_by_cursor(server, typescript_sdk, uid):  # noqa: F811
    ns, token = namespace_with_guide(server, uid, pages=230)
    expected = sorted([f"hostcore://page/{ns}/guide", *(f"hostcore://page/{ns}/page-{i:03d}" for i in range(230))])
    [listed] = typescript(typescript_sdk, [{"token": token, "calls": [{"method": "listAllResources", "params": {}}]}], server.url)
    assert [r["uri"] for r in listed["result"]["resources"]] == expected and listed["result"]["pages"] == 3
    for mode in ("2026-07-28", "legacy"):
        async with mcp_session(server, token, mode) as c:
            uris, cursor = [], None
            while True:
                page = await c.list_resources(cursor=cursor)
                uris += [r.uri for r in page.resources]
                cursor = page.next_cursor
                if cursor is None:
                    break
            assert uris == expected, mode
    async with mcp_session(server, server.tokens["admin"]) as c:
        first = await c.list_resources()
        assert len(first.resources) == 100 and first.next_cursor


async def test_a_read_token_can_read_guides_but_not_capture(server, uid):
    ns, _token = namespace_with_guide(server, uid)
    async with mcp_session(server, server.tokens["read"]) as c:
        assert tool_error(await c.call_tool("capture", {"namespace": ns, "text": "x"}))["code"] == "insufficient_scope"
        assert ok(await c.call_tool("read_guide", {"namespace": ns}))["guides"][0]["slug"] == f"{ns}/guide"
    assert server.stored(f"{ns}/inbox.md") is None
