"""History names the client by what it declares (``clientInfo``: name and version), in every
protocol revision; the HTTP User-Agent only when a client declares nothing. The older revisions
send ``clientInfo`` in ``initialize`` alone: its answer's ``Mcp-Session-Id`` carries it back on
every later request (nothing is kept on the server)."""

from __future__ import annotations

import json

import pytest

import hostcore_tokens
from hostcore import SYSTEM, create_app
from hostcore.mcp import clients

ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"


@pytest.fixture
def app(tmp_path):
    """On git storage, which keeps the history that names the client."""
    app = create_app({"PLUGINS": ["git", "tokens"], "STORAGE": "git"}, instance_path=tmp_path / "instance")
    app.extensions["hostcore"].wiki(SYSTEM).save_namespace("notes")
    yield app
    app.extensions["hostcore"].close()


@pytest.fixture
def token(host):
    return hostcore_tokens.store(host).create("writer", ["write"])


def message(response) -> dict:
    text = response.get_data(as_text=True)
    return json.loads(text.split("data: ", 1)[1] if text.startswith("event:") else text)


def call(client, token, name, arguments, headers, meta=None):
    body = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
    if meta is not None:
        body["params"]["_meta"] = meta
    response = client.post("/_/mcp", json=body, headers={**ACCEPT, "Authorization": f"Bearer {token}", **headers})
    assert response.status_code == 200, response.data
    result = message(response)["result"]
    assert not result.get("isError"), result
    return result["structuredContent"]


def last_message(host, slug):
    return host.wiki(SYSTEM).page_history(slug)["commits"][0]["message"]


@pytest.mark.parametrize("version", ["2025-03-26", "2025-06-18", "2025-11-25"])
def test_an_older_revision_names_the_client_of_its_initialize(client, host, token, version):
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "Claude Desktop", "version": "0.9.3"}}}  # fmt: skip
    hello = client.post("/_/mcp", json=init, headers={**ACCEPT, "Authorization": f"Bearer {token}", "User-Agent": "node"})
    assert hello.status_code == 200 and message(hello)["result"]["protocolVersion"] == version
    session = hello.headers["Mcp-Session-Id"]
    assert all(0x21 <= ord(c) <= 0x7E for c in session)  # visible ASCII, as the specifications ask

    later = {"MCP-Protocol-Version": version, "User-Agent": "node", "Mcp-Session-Id": session}
    call(client, token, "save_page", {"slug": "notes/named", "body": "x"}, later)
    assert last_message(host, "notes/named") == "save_page: notes/named via Claude Desktop 0.9.3"
    assert host.wiki(SYSTEM).recent_changes(1)["commits"][0]["message"].endswith("via Claude Desktop 0.9.3")

    h = call(client, token, "read_page", {"slug": "notes/named"}, later)["hash"]
    anonymous = {"MCP-Protocol-Version": version, "User-Agent": "curl/8.5.0 (x86_64)"}  # no session: the user agent
    call(client, token, "save_page", {"slug": "notes/named", "basehash": h, "body": "y"}, anonymous)
    assert last_message(host, "notes/named") == "save_page: notes/named via curl/8.5.0"


def test_a_2026_request_names_its_own_client_with_its_version(client, host, token):
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", CAPABILITIES: {},
            "io.modelcontextprotocol/clientInfo": {"name": "inspector", "version": "2.1.0"}}  # fmt: skip
    headers = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "save_page", "User-Agent": "node"}
    call(client, token, "save_page", {"slug": "notes/modern", "body": "x"}, headers, meta)
    assert last_message(host, "notes/modern") == "save_page: notes/modern via inspector 2.1.0"


@pytest.mark.parametrize(
    ("declared", "shown"),
    [
        ({"name": "evil\nSigned-off-by: admin", "version": "1\r\n2"}, "evil Signed-off-by: admin 1 2"),
        ({"name": "x" * 500, "version": "v" * 100}, "x" * clients.MAX_NAME + " " + "v" * clients.MAX_VERSION),
        ({"name": "   ", "version": "1.0"}, None),
        ({"name": 42}, None),
        ("not an object", None),
    ],
)
def test_a_declared_name_is_one_bounded_line(declared, shown):
    assert clients.from_session_id(clients.session_id(declared)) == shown


@pytest.mark.parametrize("forged", ["", "abc", "hc1.x.!!!", "hc1.x.bm90IGpzb24", "hc1.x." + "A" * 600, "hc1.x.WzFd"])
def test_a_session_id_that_is_not_ours_names_no_one(forged):
    assert clients.from_session_id(forged) is None
