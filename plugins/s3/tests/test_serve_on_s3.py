"""End to end: ``hostcore serve`` with STORAGE = "s3" against moto, driven by the official MCP client."""

import json
import re
from pathlib import Path

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from hostcore.testing import cli, start_server, stop_process_group
from hostcore.testing.s3 import S3Server, prefix_for

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def ok(result) -> dict:
    assert not result.is_error, result.content
    return result.structured_content


async def test_pages_history_and_restore_through_mcp(s3_server: S3Server, tmp_path: Path) -> None:
    instance = tmp_path / "instance"
    env = {
        **s3_server.env,
        "HOSTCORE_STORAGE": "s3",
        "HOSTCORE_PLUGINS": json.dumps(["s3", "tokens", "sqlite", "docs", "wordllama"]),
        "HOSTCORE_SEARCH": "sqlite",
        "HOSTCORE_PLUGIN_CONFIG__S3__BUCKET": s3_server.bucket,
        "HOSTCORE_PLUGIN_CONFIG__S3__ENDPOINT_URL": s3_server.url,
        "HOSTCORE_PLUGIN_CONFIG__S3__PREFIX": prefix_for(tmp_path),
    }
    token = re.findall(r"hc_[A-Za-z0-9_-]+", cli(instance, "init", env=env).stdout)[0]
    proc, base, _port, log = start_server(instance, env=env)
    try:
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http:
            async with Client(streamable_http_client(base + "/_/mcp", http_client=http), mode="2026-07-28") as c:  # type: ignore[arg-type]
                first = ok(await c.call_tool("save_page", {"slug": "notes/plan", "body": "# Plan\n\nfirst draft\n"}))
                stale = await c.call_tool("save_page", {"slug": "notes/plan", "body": "lost\n", "basehash": "0" * 40})
                assert stale.is_error and json.loads(stale.content[0].text)["code"] == "conflict"
                ok(await c.call_tool("save_page", {"slug": "notes/plan", "body": "# Plan\n\nsecond draft\n", "basehash": first["hash"]}))
                page = ok(await c.call_tool("read_page", {"slug": "notes/plan"}))
                moved = ok(await c.call_tool("move_page", {"slug": "notes/plan", "new_slug": "notes/roadmap", "basehash": page["hash"]}))
                assert [h["slug"] for h in ok(await c.call_tool("search", {"query": "draft"}))["hits"]] == ["notes/roadmap"]
                history = ok(await c.call_tool("page_history", {"slug": "notes/roadmap"}))["commits"]
                assert [h["message"].split(":")[0] for h in history] == ["move_page", "save_page", "save_page"]
                old = ok(await c.call_tool("read_page", {"slug": "notes/roadmap", "revision": history[2]["id"]}))
                assert "first draft" in old["body"]
                restored = ok(await c.call_tool(
                    "restore_page", {"slug": "notes/roadmap", "revision": history[2]["id"], "basehash": moved["hash"]}
                ))  # fmt: skip
                assert restored["changed"]
                recent = ok(await c.call_tool("recent_changes", {"limit": 2}))["commits"]
                assert recent[0]["message"].startswith("restore_page") and recent[0]["files"] == ["notes/roadmap.md"]
                assert "first draft" in ok(await c.call_tool("read_page", {"slug": "notes/roadmap"}))["body"]
                assert (await c.call_tool("read_page", {"slug": "notes/plan"})).is_error
    finally:
        stop_process_group(proc)
    assert "Traceback" not in log.read_text()
