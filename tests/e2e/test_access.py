"""Who may do what: bearer tokens, the scope order, namespace limits, and the HTTP-level checks
(401 with resource metadata, foreign Origin 403, foreign Host 421) of the MCP endpoint."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from .conftest import mcp_session, ok, tool_error

pytestmark = pytest.mark.anyio

META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}


def rpc(method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**(params or {}), "_meta": META}}


def headers(token: str | None = None, **extra: str) -> dict[str, str]:
    out = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2026-07-28",
    }
    if token:
        out["Authorization"] = f"Bearer {token}"
    out.update(extra)
    return out


def rpc_body(r: httpx.Response) -> dict[str, Any]:
    """The JSON-RPC message of a response, sent as plain JSON or as one SSE ``message`` event."""
    if r.headers.get("content-type", "").startswith("text/event-stream"):
        for event in r.text.replace("\r\n", "\n").split("\n\n"):
            data = [line[5:].strip() for line in event.split("\n") if line.startswith("data:")]
            if data:
                message = json.loads("\n".join(data))
                if "id" in message:
                    return message
        raise AssertionError(f"no JSON-RPC response in the event stream: {r.text[:300]}")
    return r.json()


def read_index(token: str | None = None, **extra: str) -> tuple[dict[str, Any], dict[str, str]]:
    body = rpc("tools/call", {"name": "read_page", "arguments": {"slug": "notes/index"}})
    return body, headers(token, **{"Mcp-Method": "tools/call", "Mcp-Name": "read_page", **extra})


# --- authentication ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "authorization",
    [None, "Bearer hc_not-a-real-token", "Bearer not-even-our-format", "Basic dXNlcjpwYXNz", "Bearer"],
    ids=["none", "unknown", "foreign", "basic", "empty"],
)
def test_missing_or_bad_token_gets_401_with_resource_metadata(server, authorization):
    body, hdrs = read_index()
    if authorization is not None:
        hdrs["Authorization"] = authorization
    with httpx.Client(timeout=30) as http:
        r = http.post(server.url, json=body, headers=hdrs)
    assert r.status_code == 401, r.text
    challenge = r.headers.get("WWW-Authenticate", "")
    assert challenge.startswith("Bearer "), challenge
    assert f'resource_metadata="{server.base}/.well-known/oauth-protected-resource/_/mcp"' in challenge, challenge
    if authorization is not None:
        assert 'error="invalid_token"' in challenge, challenge
    assert r.json()["error"]["message"]


def test_resource_metadata(server):
    with httpx.Client(timeout=30) as http:
        r = http.get(server.base + "/.well-known/oauth-protected-resource/_/mcp")
        root = http.get(server.base + "/.well-known/oauth-protected-resource")
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/json")
    meta = r.json()
    assert meta["resource"] == server.url
    assert set(meta["scopes_supported"]) == {"read", "propose", "write", "review", "admin"}
    assert meta["bearer_methods_supported"] == ["header"]
    assert isinstance(meta["authorization_servers"], list)
    assert root.status_code == 200 and root.json()["resource"] == server.url


async def test_revoked_token_gets_401(server, mode):
    name = f"short-lived-{mode}"
    token = server.create_token(name, ["read"])
    async with mcp_session(server, token, mode) as c:
        assert ok(await c.call_tool("read_page", {"slug": "notes/index"}))["slug"] == "notes/index"
    server.cli("token", "revoke", name)
    body, hdrs = read_index(token)
    with httpx.Client(timeout=30) as http:
        r = http.post(server.url, json=body, headers=hdrs)
    assert r.status_code == 401, r.text
    assert "resource_metadata=" in r.headers["WWW-Authenticate"]
    assert 'error="invalid_token"' in r.headers["WWW-Authenticate"]
    # the official client surfaces it as a failure too, in either mode
    with pytest.raises(Exception):  # noqa: B017 - the SDK's exception type differs by mode
        async with mcp_session(server, token, mode) as c:
            await c.call_tool("read_page", {"slug": "notes/index"})


# --- scopes -----------------------------------------------------------------------------------


async def test_read_token_cannot_write(server, mode, uid):
    async with mcp_session(server, server.tokens["read"], mode) as c:
        page = ok(await c.call_tool("read_page", {"slug": "notes/index"}))
        for tool, args in (
            ("save_page", {"slug": f"notes/{uid}", "body": "x"}),
            ("save_page", {"slug": "notes/index", "basehash": page["hash"], "title": "hijacked"}),
            ("edit_page", {"slug": "notes/index", "basehash": page["hash"], "edits": [{"oldText": "Welcome", "newText": "x"}]}),
            ("delete_page", {"slug": "notes/index"}),
        ):
            r = await c.call_tool(tool, args)
            err = tool_error(r)
            assert err["code"] == "insufficient_scope", (tool, err)
            assert "'write'" in err["message"] and "'write'" in r.content[0].text, err
            assert err.get("required_scope") == "write", err
        for tool, args in (("read_namespace", {"name": "notes"}), ("save_namespace", {"name": f"r{uid[-20:]}"})):
            err = tool_error(await c.call_tool(tool, args))
            assert err["code"] == "insufficient_scope" and "'admin'" in err["message"], err
        # nothing changed
        assert ok(await c.call_tool("read_page", {"slug": "notes/index"}))["hash"] == page["hash"]
        assert server.stored(f"notes/{uid}.md") is None
        # reads and lists work
        assert ok(await c.call_tool("list_pages", {}))["total"] >= 1
        assert ok(await c.call_tool("list_namespaces", {}))["namespaces"]


async def test_write_token_reads_and_writes_but_is_not_admin(server, mode, uid):
    async with mcp_session(server, server.tokens["write"], mode) as c:
        assert ok(await c.call_tool("read_page", {"slug": "notes/index"}))["title"]  # write implies read
        assert ok(await c.call_tool("list_pages", {}))["total"] >= 1
        saved = ok(await c.call_tool("save_page", {"slug": f"notes/{uid}", "body": "by a writer\n"}))
        assert saved["created"] is True
        for tool, args in (
            ("save_namespace", {"name": f"w{uid[-20:]}"}),
            ("read_namespace", {"name": "notes"}),
        ):
            err = tool_error(await c.call_tool(tool, args))
            assert err["code"] == "insufficient_scope", err
            assert "'admin'" in err["message"] and err.get("required_scope") == "admin", err
    assert server.stored(f"w{uid[-20:]}/.namespace.yaml") is None


async def test_admin_token_can_do_everything(server, mode, uid):
    async with mcp_session(server, server.tokens["admin"], mode) as c:
        assert ok(await c.call_tool("read_namespace", {"name": "notes"}))["name"] == "notes"
        h = ok(await c.call_tool("save_page", {"slug": f"notes/{uid}", "body": "x"}))["hash"]
        assert ok(await c.call_tool("delete_page", {"slug": f"notes/{uid}", "basehash": h}))["deleted"]


# --- namespace limits -------------------------------------------------------------------------


async def test_namespace_limited_token(server, mode, uid):
    async with mcp_session(server, server.tokens["team_write"], mode) as c:
        names = [n["name"] for n in ok(await c.call_tool("list_namespaces", {}))["namespaces"]]
        assert names == ["team"]
        listed = ok(await c.call_tool("list_pages", {"limit": 500}))
        assert listed["pages"] and all(p["slug"].startswith("team/") for p in listed["pages"]), listed
        assert ok(await c.call_tool("list_pages", {"namespace": "team"}))["total"] == listed["total"]

        # its own namespace: read and write
        page = ok(await c.call_tool("read_page", {"slug": "team/index"}))
        saved = ok(await c.call_tool("save_page", {"slug": f"team/{uid}", "body": "team work\n"}))
        edited = ok(
            await c.call_tool(
                "edit_page", {"slug": f"team/{uid}", "basehash": saved["hash"], "edits": [{"oldText": "work", "newText": "play"}]}
            )
        )
        assert edited["changed"] is True and page["slug"] == "team/index"

        # other namespaces: forbidden, naming the field, and nothing written
        notes = "notes/index"
        for tool, args, field in (
            ("read_page", {"slug": notes}, "slug"),
            ("save_page", {"slug": f"notes/{uid}", "body": "x"}, "slug"),
            ("save_page", {"slug": notes, "basehash": "0" * 40, "title": "x"}, "slug"),
            ("edit_page", {"slug": notes, "basehash": "0" * 40, "edits": [{"oldText": "W", "newText": "w"}]}, "slug"),
            ("delete_page", {"slug": notes}, "slug"),
            ("list_pages", {"namespace": "notes"}, "namespace"),
            ("read_page", {"slug": "ops/index"}, "slug"),
        ):
            r = await c.call_tool(tool, args)
            err = tool_error(r)
            assert err["code"] == "forbidden", (tool, err)
            assert err.get("field") == field and err["message"].startswith(f"{field}: "), err
            # a forbidden read leaks neither body nor hash
            assert "Welcome" not in r.content[0].text and "hash" not in err, err
        assert server.stored(f"notes/{uid}.md") is None
        # a missing page elsewhere is forbidden too, not "not found" (no probing other namespaces)
        err = tool_error(await c.call_tool("read_page", {"slug": "notes/does-not-exist"}))
        assert err["code"] == "forbidden", err


async def test_namespace_limited_read_and_admin_tokens(server, mode, uid):
    async with mcp_session(server, server.tokens["team_read"], mode) as c:
        assert ok(await c.call_tool("read_page", {"slug": "team/index"}))
        err = tool_error(await c.call_tool("save_page", {"slug": f"team/{uid}", "body": "x"}))
        assert err["code"] == "insufficient_scope" and err.get("required_scope") == "write", err
        err = tool_error(await c.call_tool("read_page", {"slug": "notes/index"}))
        assert err["code"] == "forbidden", err

    async with mcp_session(server, server.tokens["team_admin"], mode) as c:
        settings = ok(await c.call_tool("read_namespace", {"name": "team"}))
        assert settings["name"] == "team"
        for tool, args in (
            ("read_namespace", {"name": "notes"}),
            ("save_namespace", {"name": "notes", "basehash": "0" * 40, "title": "x"}),
            ("save_namespace", {"name": f"t{uid[-20:]}"}),  # cannot create namespaces outside its list
        ):
            err = tool_error(await c.call_tool(tool, args))
            assert err["code"] == "forbidden" and err.get("field") == "name", (tool, err)
        assert server.stored(f"t{uid[-20:]}/.namespace.yaml") is None
        names = [n["name"] for n in ok(await c.call_tool("list_namespaces", {}))["namespaces"]]
        assert names == ["team"]

    async with mcp_session(server, server.tokens["team_ops_write"], mode) as c:
        names = [n["name"] for n in ok(await c.call_tool("list_namespaces", {}))["namespaces"]]
        assert names == ["ops", "team"]
        slugs = {p["slug"].split("/")[0] for p in ok(await c.call_tool("list_pages", {"limit": 500}))["pages"]}
        assert slugs == {"ops", "team"}


# --- Origin and Host --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "origin", ["http://evil.example", "https://127.0.0.1.evil.example", "null", "file://", "http://wiki.example.org"]
)
def test_foreign_origin_is_refused(server, origin):
    body, hdrs = read_index(server.tokens["admin"], Origin=origin)
    with httpx.Client(timeout=30) as http:
        r = http.post(server.url, json=body, headers=hdrs)
        # refused before authentication: no token needed to be told
        anonymous = http.post(server.url, json=body, headers={k: v for k, v in hdrs.items() if k != "Authorization"})
    assert r.status_code == 403, r.text
    assert "Origin" in r.json()["error"]["message"]
    assert anonymous.status_code == 403


@pytest.mark.parametrize("origin_host", ["127.0.0.1:{port}", "localhost:{port}", "[::1]:{port}", "127.0.0.1"])
def test_same_origin_and_loopback_origins_are_accepted(server, origin_host):
    origin = "http://" + origin_host.format(port=server.port)
    body, hdrs = read_index(server.tokens["read"], Origin=origin)
    with httpx.Client(timeout=30) as http:
        r = http.post(server.url, json=body, headers=hdrs)
    assert r.status_code == 200, r.text
    assert rpc_body(r)["result"]["structuredContent"]["slug"] == "notes/index"


@pytest.mark.parametrize("host", ["evil.example", "evil.example:{port}", "127.0.0.1.nip.io:{port}"])
def test_foreign_host_gets_421(server, host):
    body, hdrs = read_index(server.tokens["read"], Host=host.format(port=server.port))
    with httpx.Client(timeout=30) as http:
        r = http.post(server.url, json=body, headers=hdrs)
    assert r.status_code == 421, r.text
    assert "Host" in r.json()["error"]["message"]


@pytest.mark.parametrize("host", ["localhost:{port}", "127.0.0.1:{port}"])
def test_loopback_host_is_served(server, host):
    body, hdrs = read_index(server.tokens["read"], Host=host.format(port=server.port))
    with httpx.Client(timeout=30) as http:
        r = http.post(server.url, json=body, headers=hdrs)
    assert r.status_code == 200, r.text


# --- the raw 2026-07-28 wire ------------------------------------------------------------------


def test_raw_stateless_call(server):
    """A 2026-07-28 tools/call is one self-contained POST: no handshake, no session id."""
    body, hdrs = read_index(server.tokens["read"])
    with httpx.Client(timeout=30) as http:
        r = http.post(server.url, json=body, headers=hdrs)
    assert r.status_code == 200, r.text
    assert "mcp-session-id" not in r.headers
    result = rpc_body(r)["result"]
    assert result["isError"] is False
    assert result["structuredContent"]["hash"] == json.loads(result["content"][0]["text"].split("\n", 1)[1])["hash"]


def test_chunked_request_body_is_read(server):
    """A POST without Content-Length (Transfer-Encoding: chunked) must reach the MCP layer whole."""
    payload = json.dumps(read_index()[0]).encode()

    def chunks():
        for i in range(0, len(payload), 64):
            yield payload[i : i + 64]

    _, hdrs = read_index(server.tokens["read"])
    with httpx.Client(timeout=30) as http:
        r = http.post(server.url, content=chunks(), headers=hdrs)
    assert r.status_code == 200, r.text
    assert rpc_body(r)["result"]["structuredContent"]["slug"] == "notes/index"


def test_chunked_request_body_over_limit_gets_413(server):
    def chunks():
        yield b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_page","arguments":{"slug":"notes/index","x":"'
        for _ in range(90):
            yield b"a" * 100_000
        yield b'"}}}'

    _, hdrs = read_index(server.tokens["read"])
    with httpx.Client(timeout=60) as http:
        r = http.post(server.url, content=chunks(), headers=hdrs)
    assert r.status_code == 413, r.text


@pytest.mark.parametrize("version", ["2025-03-26", "2025-06-18", "2025-11-25"])
def test_older_revisions_over_raw_http(server, version):
    """initialize at each 2025 revision, then a tools/call carrying that MCP-Protocol-Version; no session kept
    (the answer's Mcp-Session-Id only names the client for history: a call without it is served the same)."""
    hdrs = {"Authorization": f"Bearer {server.tokens['read']}", "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream"}  # fmt: skip
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "raw-test", "version": "1"}}}  # fmt: skip
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "read_page", "arguments": {"slug": "notes/index"}}}
    with httpx.Client(timeout=30) as http:
        r = http.post(server.url, json=init, headers=hdrs)
        assert r.status_code == 200, r.text
        result = rpc_body(r)["result"]
        assert result["protocolVersion"] == version
        assert result["serverInfo"]["name"] == "hostcore" and "basehash" in result["instructions"]
        assert r.headers["mcp-session-id"].startswith("hc1.")
        r = http.post(server.url, json=call, headers={**hdrs, "MCP-Protocol-Version": version})
    assert r.status_code == 200, r.text
    assert rpc_body(r)["result"]["structuredContent"]["slug"] == "notes/index"


def test_serve_leaves_the_shared_gunicorn_control_socket_alone(server):
    """gunicorn 25+ opens a control socket at ~/.gunicorn/gunicorn.ctl by default: one path for every
    server of the user, so each new hostcore instance takes it over and removes it when it stops."""
    log = server.log.read_text(errors="replace")
    assert "Control socket listening at" not in log or str(server.instance) in log.split("Control socket listening at", 1)[1].split("\n")[0], log
