"""``hostcore serve --bind``: what an operator gets from ``hostcore init`` and ``serve`` alone,
without setting PUBLIC_URL (``make serve BIND=...``)."""

from __future__ import annotations

import httpx
import pytest

from .conftest import cli, create_token, mcp_session, ok, start_server, stop_process_group

pytestmark = pytest.mark.anyio


async def test_public_url_follows_the_bind_address(tmp_path):
    """The 401's resource_metadata, the protected-resource document and search's urls name the
    port serve listens on, not the :8080 that ``init`` used to write into hostcore.toml."""
    instance = tmp_path / "instance"
    cli(instance, "init")
    reader = create_token(instance, "reader", ["read"])
    proc, base, port, log = start_server(instance, workers=1)
    try:
        assert base == f"http://127.0.0.1:{port}" and port != 8080
        assert f"MCP endpoint: {base}/_/mcp" in log.read_text()
        with httpx.Client(timeout=30) as http:
            refused = http.post(base + "/_/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
            assert refused.status_code == 401
            metadata = f"{base}/.well-known/oauth-protected-resource/_/mcp"
            assert f'resource_metadata="{metadata}"' in refused.headers["WWW-Authenticate"]
            assert http.get(metadata).json()["resource"] == f"{base}/_/mcp"
        async with mcp_session(base + "/_/mcp", reader) as c:
            found = ok(await c.call_tool("search", {"query": "welcome"}))
        assert found["results"] == [{"id": "notes/index", "title": "Welcome", "url": f"{base}/notes/index"}]
    finally:
        stop_process_group(proc)
