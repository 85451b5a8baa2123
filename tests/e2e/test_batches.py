"""JSON-RPC batches over HTTP against ``hostcore serve``: MCP 2025-03-26 requires a server to accept
them (no MCP-Protocol-Version header means that revision too); the later revisions removed them,
so a batch there is refused with a message that says so."""

from __future__ import annotations

import httpx
import pytest

from hostcore.mcp.batches import MAX_MESSAGES

HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


def post(server, body, version: str | None, token: str = "read") -> httpx.Response:
    headers = {**HEADERS, "Authorization": f"Bearer {server.tokens[token]}"}
    if version:
        headers["MCP-Protocol-Version"] = version
    with httpx.Client(timeout=60) as http:
        return http.post(server.url, json=body, headers=headers)


def request(id, method, **params):
    return {"jsonrpc": "2.0", "id": id, "method": method, **({"params": params} if params else {})}


NOTIFICATION = {"jsonrpc": "2.0", "method": "notifications/initialized"}


@pytest.mark.parametrize("version", ["2025-03-26", None], ids=["2025-03-26", "no-header"])
def test_a_batch_gets_one_answer_per_request_in_order(server, version):
    batch = [
        request("first", "tools/call", name="read_page", arguments={"slug": "notes/index"}),
        NOTIFICATION,
        request(2, "tools/list"),
        request(3, "tools/call", name="read_page", arguments={"slug": "notes/no-such-page"}),
        request(4, "ping"),
    ]
    r = post(server, batch, version)
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/json"), r.text
    answers = r.json()
    assert [a["id"] for a in answers] == ["first", 2, 3, 4]  # the notification has no entry
    assert answers[0]["result"]["structuredContent"]["slug"] == "notes/index"
    assert "read_page" in {t["name"] for t in answers[1]["result"]["tools"]}
    assert answers[2]["result"]["isError"] is True and "not_found" in answers[2]["result"]["content"][-1]["text"]
    assert answers[3]["result"] == {}


def test_a_batch_of_notifications_only_is_accepted_with_no_body(server):
    r = post(server, [NOTIFICATION, NOTIFICATION], "2025-03-26")
    assert r.status_code == 202 and r.content == b""


def test_what_a_batch_may_not_hold_gets_an_error_entry_and_the_rest_is_answered(server):
    init = request(1, "initialize", protocolVersion="2025-03-26", capabilities={}, clientInfo={"name": "raw", "version": "1"})
    r = post(server, [init, 42, request(2, "ping")], "2025-03-26")
    assert r.status_code == 200, r.text
    first, second, third = r.json()
    assert first["id"] == 1 and first["error"]["code"] == -32600 and "initialize" in first["error"]["message"]
    assert second["id"] is None and second["error"]["code"] == -32600 and "42" in second["error"]["message"]
    assert third == {"jsonrpc": "2.0", "id": 2, "result": {}}


@pytest.mark.parametrize("size", [0, MAX_MESSAGES + 1])
def test_an_empty_or_oversized_batch_is_refused(server, size):
    r = post(server, [request(i, "ping") for i in range(size)], "2025-03-26")
    assert r.status_code == 400 and r.json()["error"]["code"] == -32600
    assert f"1 to {MAX_MESSAGES} JSON-RPC messages, not {size}" in r.json()["error"]["message"]


@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25", "2026-07-28"])
def test_later_revisions_refuse_a_batch_and_say_so(server, version):
    r = post(server, [request(1, "ping"), request(2, "ping")], version)
    assert r.status_code == 400
    error = r.json()["error"]
    assert error["code"] == -32600 and error["message"].startswith(f"MCP-Protocol-Version {version} takes one JSON-RPC message per POST")


def test_a_batch_is_checked_like_a_single_message(server):
    """The batch's headers apply to each message (a wrong Accept is the whole POST's answer), and
    its calls are scoped to the token like any call (a read token cannot write)."""
    with httpx.Client(timeout=60) as http:
        r = http.post(server.url, json=[request(1, "ping")],
                      headers={**HEADERS, "Accept": "text/html", "Authorization": f"Bearer {server.tokens['read']}"})  # fmt: skip
    assert r.status_code == 406, r.text
    r = post(server, [request(1, "tools/call", name="save_page", arguments={"slug": "notes/batch", "body": "x"})], "2025-03-26")
    assert r.json()[0]["result"]["isError"] is True and "insufficient_scope" in r.json()[0]["result"]["content"][-1]["text"]
    assert post(server, [request(1, "ping")], "2025-03-26", token="write").json() == [{"jsonrpc": "2.0", "id": 1, "result": {}}]
