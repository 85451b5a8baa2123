"""Change requests through a real ``hostcore serve``, driven by both official clients (the
TypeScript SDK's checks each result against the tool's output schema after tools/list): proposed
by a token that may only propose, validated, listed, read with diffs, dry-run, refused to a writer
for a structural request, applied by a reviewer as one commit, refused a second time, and hidden
from a reader of other namespaces."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import anyio
import pytest

from .conftest import error_object, mcp_session, ok
from .test_clients import CLIENTS, python_calls, typescript_calls, typescript_sdk  # noqa: F401  (the fixture)

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def cr_tokens(server) -> dict[str, str]:
    return {"propose": server.create_token("cr-propose", ["propose"]), "review": server.create_token("cr-review", ["review"])}


async def _run(server: Any, sdk: Any, client: str, cases: list[tuple[str, str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """The outcomes of ``cases`` (token, tool, arguments), one session per run of calls with one token, in order."""
    sessions: list[dict[str, Any]] = []
    for token, name, arguments in cases:
        if not sessions or sessions[-1]["token"] != token:
            sessions.append({"token": token, "calls": []})
        sessions[-1]["calls"].append({"name": name, "arguments": arguments})
    if client == "typescript":
        return typescript_calls(sdk, server.url, sessions)
    return await python_calls(server, client.split()[1], sessions)


def _check(outcome: dict[str, Any], expected: dict[str, Any], tool: str) -> dict[str, Any]:
    if "code" in expected:
        err = error_object(outcome["is_error"], outcome["structured"], outcome["texts"])
        assert {k: err.get(k) for k in expected} == expected, (tool, err)
        return err
    assert not outcome["is_error"], (tool, outcome["texts"])
    assert {k: outcome["structured"].get(k) for k in expected} == expected, (tool, outcome["structured"])
    return dict(outcome["structured"])


@pytest.mark.parametrize("client", CLIENTS)
async def test_change_requests_reach_the_official_clients_whole(server, typescript_sdk, cr_tokens, client, uid):  # noqa: F811
    slug = f"notes/{uid}"
    async with mcp_session(server, server.tokens["admin"]) as c:
        base = ok(await c.call_tool("save_page", {"slug": slug, "body": "one\ntwo\n"}))["hash"]
    propose, review, write, read = cr_tokens["propose"], cr_tokens["review"], server.tokens["write"], server.tokens["read"]
    edit = {"op": "edit", "slug": slug, "basehash": base, "edits": [{"oldText": "two", "newText": "TWO"}]}
    new = {"op": "save", "slug": f"{slug}-new", "body": "fresh\n"}
    why = {"title": "Tidy", "reason": "the person asked", "source": "https://chat.example/1"}

    first: list[tuple[str, str, dict[str, Any], dict[str, Any]]] = [
        (propose, "validate_change_request", {"changes": [edit, new], **why}, {"valid": True, "risk": "structural", "errors": []}),
        (propose, "create_change_request", {"changes": [edit], **why}, {"state": "open", "risk": "structural"}),
        (propose, "create_change_request", {"changes": [new], **why}, {"state": "open", "risk": "additive"}),
        (propose, "create_change_request", {"changes": [{**edit, "basehash": "0" * 40}], **why},
         {"code": "validation_error", "field": "changes[0].basehash"}),
        (propose, "save_page", {"slug": f"{slug}-direct", "body": "x"}, {"changed": False, "created": False}),
        (read, "list_change_requests", {"author": "cr-propose", "limit": 100}, {"more": False}),
    ]  # fmt: skip
    got = await _run(server, typescript_sdk, client, [(t, n, a) for t, n, a, _ in first])
    results = [_check(o, e, n) for (_t, n, _a, e), o in zip(first, got, strict=True)]
    structural, additive = results[1]["id"], results[2]["id"]
    direct = results[4]  # a token that may only propose: its write became a change request, with where to review it
    assert direct["proposed"].startswith("cr-") and direct["review_url"].endswith(f"/_/review/{direct['proposed']}")
    assert "may only propose" in direct["review"]
    assert len(results[3]["errors"]) == 1 and results[3]["errors"][0]["code"] == "conflict"
    assert {structural, additive} <= {r["id"] for r in results[5]["change_requests"]}

    second: list[tuple[str, str, dict[str, Any], dict[str, Any]]] = [
        (read, "read_change_request", {"id": structural}, {"state": "open", "reason": "the person asked", "author": "cr-propose"}),
        (read, "dry_run_change_request", {"id": structural}, {"ready": True, "needs_refresh": False}),
        (server.tokens["team_read"], "read_change_request", {"id": structural}, {"code": "not_found", "field": "id"}),
        (write, "apply_change_request", {"id": structural}, {"code": "insufficient_scope", "required_scope": "review"}),
        (write, "apply_change_request", {"id": additive, "note": "go"}, {"state": "applied", "decided_by": "write"}),
        (review, "apply_change_request", {"id": structural, "note": "yes"}, {"state": "applied", "decided_by": "cr-review"}),
        (review, "apply_change_request", {"id": structural}, {"code": "conflict", "field": "id", "state": "applied"}),
        (propose, "reject_change_request", {"id": structural}, {"code": "conflict", "field": "id"}),
        (read, "read_change_request", {"id": "cr-nope"}, {"code": "not_found", "field": "id"}),
    ]  # fmt: skip
    got = await _run(server, typescript_sdk, client, [(t, n, a) for t, n, a, _ in second])
    results = [_check(o, e, n) for (_t, n, _a, e), o in zip(second, got, strict=True)]
    assert "-two\n+TWO" in results[0]["pages"][0]["diff"]

    async with mcp_session(server, read) as c:
        assert ok(await c.call_tool("read_page", {"slug": slug}))["body"] == "one\nTWO\n"
        assert ok(await c.call_tool("read_page", {"slug": f"{slug}-new"}))["body"] == "fresh\n"
    if server.storage_kind != "git":
        return
    log = server._git("log", "-1", "--format=%an%n%B", "--", f"{slug}.md").stdout.decode()
    assert log.startswith(f"cr-review\napply_change_request: {structural}: Tidy") and "Approved-by: cr-review" in log


@pytest.mark.parametrize("client", CLIENTS)
async def test_writes_in_a_namespace_under_review_answer_proposed(server, typescript_sdk, client):  # noqa: F811
    ns = f"rv-{client.replace(' ', '-').replace('.', '')}"
    async with mcp_session(server, server.tokens["admin"]) as c:
        ok(await c.call_tool("save_namespace", {"name": ns, "title": "Reviewed", "review": True}))
        base = ok(await c.call_tool("save_page", {"slug": f"{ns}/a", "body": "one\n"}))["hash"]
    write = server.tokens["write"]
    cases: list[tuple[str, str, dict[str, Any], dict[str, Any]]] = [
        (write, "save_page", {"slug": f"{ns}/a", "basehash": base, "body": "two\n"}, {"changed": False, "hash": base}),
        (write, "edit_page", {"slug": f"{ns}/a", "basehash": base, "edits": [{"oldText": "one", "newText": "1"}]}, {"changed": False}),
        (write, "append_to_page", {"slug": f"{ns}/a", "markdown": "more"}, {"changed": False}),
        (write, "delete_page", {"slug": f"{ns}/a", "basehash": base}, {"deleted": False}),
        (write, "apply_changes", {"changes": [{"op": "save", "slug": f"{ns}/b", "body": "b\n"}]}, {"changed": False}),
        (write, "move_page", {"slug": f"{ns}/a", "new_slug": f"{ns}/c", "basehash": base}, {"code": "forbidden"}),
        (write, "save_page", {"slug": f"{ns}/a", "basehash": "0" * 40, "body": "x"}, {"code": "conflict"}),
    ]  # fmt: skip
    got = await _run(server, typescript_sdk, client, [(t, n, a) for t, n, a, _ in cases])
    results = [_check(o, e, n) for (_t, n, _a, e), o in zip(cases, got, strict=True)]
    assert all(r["proposed"].startswith("cr-") and "review scope" in r["review"] for r in results[:5])
    async with mcp_session(server, server.tokens["read"]) as c:
        assert ok(await c.call_tool("read_page", {"slug": f"{ns}/a"}))["body"] == "one\n"
        listed = ok(await c.call_tool("list_change_requests", {"namespace": ns}))
    assert listed["total"] == 5 and {r["author"] for r in listed["change_requests"]} == {"write"}


@pytest.mark.parametrize("client", CLIENTS)
async def test_undo_session_reaches_the_official_clients_whole(server, typescript_sdk, cr_tokens, client, uid):  # noqa: F811
    slug = f"notes/undo-{uid}"
    async with mcp_session(server, server.tokens["admin"]) as c:
        ok(await c.call_tool("save_page", {"slug": slug, "body": "as it was\n"}))
    await anyio.sleep(1.05)  # history keeps whole seconds
    since = datetime.now(UTC).replace(microsecond=0).isoformat()
    async with mcp_session(server, server.tokens["write"]) as c:
        base = ok(await c.call_tool("read_page", {"slug": slug}))["hash"]
        ok(await c.call_tool("edit_page", {"slug": slug, "basehash": base, "edits": [{"oldText": "as it was", "newText": "the bot's"}]}))
    propose, review = cr_tokens["propose"], cr_tokens["review"]
    cases: list[tuple[str, str, dict[str, Any], dict[str, Any]]] = [
        (propose, "undo_session", {"since": since, "principal": "write"}, {"dry_run": True, "proposed": "", "conflicts": []}),
        (propose, "undo_session", {"since": since, "principal": "write", "dry_run": False}, {"dry_run": False}),
        (propose, "undo_session", {"since": "soon", "principal": "write"}, {"code": "validation_error", "field": "since"}),
        (server.tokens["read"], "undo_session", {"since": since, "principal": "write"}, {"code": "insufficient_scope"}),
    ]  # fmt: skip
    got = await _run(server, typescript_sdk, client, [(t, n, a) for t, n, a, _ in cases])
    results = [_check(o, e, n) for (_t, n, _a, e), o in zip(cases, got, strict=True)]
    assert [(r["slug"], r["op"]) for r in results[0]["reverts"]] == [(slug, "save")]
    proposed = results[1]["proposed"]
    async with mcp_session(server, review) as c:
        assert ok(await c.call_tool("apply_change_request", {"id": proposed, "note": "undo it"}))["state"] == "applied"
        assert ok(await c.call_tool("read_page", {"slug": slug}))["body"] == "as it was\n"
