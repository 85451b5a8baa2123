"""Bad input from outside, end to end through the official MCP client: revision expressions that
would probe other namespaces, coerced argument types, and names a clone elsewhere cannot hold.
Every refusal names the field and writes nothing."""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import E2E_STORAGE, mcp_session, ok, tool_error

pytestmark = pytest.mark.anyio


def refused(result: Any, code: str, field: str) -> str:
    err = tool_error(result)
    assert (err["code"], err.get("field")) == (code, field), err
    assert err["message"].startswith(f"{field}: "), err
    return err["message"]


# --- (10) revisions are commit ids of the page's own history -----------------------------------


@pytest.mark.skipif(E2E_STORAGE not in ("", "git"), reason="revisions need the git storage")
async def test_a_namespace_limited_token_cannot_probe_other_namespaces_through_revisions(server, mode, uid):
    slug = f"team/{uid}"
    async with mcp_session(server, server.tokens["admin"], mode) as c:
        ok(await c.call_tool("save_page", {"slug": f"ops/{uid}-secret", "body": "not for team\n"}))
    async with mcp_session(server, server.tokens["team_write"], mode) as c:
        h1 = ok(await c.call_tool("save_page", {"slug": slug, "body": "one\n"}))["hash"]
        h2 = ok(await c.call_tool("save_page", {"slug": slug, "basehash": h1, "body": "two\n"}))["hash"]
        start = server.revision()
        messages = set()
        for revision in (f":/save_page: ops/{uid}-secret", f":/save_page: ops/{uid}-none", "HEAD~1", "refs/heads/main", "HEAD@{0}", "HEAD"):
            messages.add(refused(await c.call_tool("read_page", {"slug": slug, "revision": revision}), "validation_error", "revision"))
            args = {"slug": slug, "revision": revision, "basehash": h2}
            messages.add(refused(await c.call_tool("restore_page", args), "validation_error", "revision"))
        # one answer whatever the expression names: nothing to learn about ops
        assert messages == {
            "revision: is not a commit id; pass the id of a commit from page_history (all 40 hex digits, or the first 7 or more)"
        }
        assert server.revision() == start

        newest, oldest = (commit["id"] for commit in ok(await c.call_tool("page_history", {"slug": slug}))["commits"])
        for given in (oldest, oldest[:7]):
            old = ok(await c.call_tool("read_page", {"slug": slug, "revision": given}))
            assert (old["body"], old["hash"], old["revision"]) == ("one\n", h1, oldest)
        restored = ok(await c.call_tool("restore_page", {"slug": slug, "revision": oldest[:10], "basehash": h2}))
        assert restored == {"slug": slug, "hash": h1, "restored_from": oldest, "changed": True}
        assert newest != oldest


# --- (13) arguments are typed strictly ----------------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "arguments", "message"),
    [
        ("read_page", {"slug": "team/plan", "offset": "5"}, 'offset: expected an integer, got the string "5"'),
        ("read_page", {"slug": "team/plan", "limit": True}, "limit: expected an integer, got the boolean true"),
        ("read_page", {"slug": "team/plan", "offset": 10**400}, "offset: must be at most 9007199254740991, got an integer"),
        ("list_pages", {"limit": 2.0}, "limit: expected an integer, got the number 2.0"),
        ("save_page", {"slug": "team/plan", "basehash": "0" * 40, "pin": "yes"},
         'pin: expected a boolean (true or false), got the string "yes"'),
        ("save_page", {"slug": "team/strict-tags", "body": "x", "tags": "a,b"}, 'tags: expected an array, got the string "a,b"'),
        ("save_namespace", {"name": "strict-ns", "public": "true"}, 'public: expected a boolean (true or false), got the string "true"'),
        ("edit_page", {"slug": "team/plan", "basehash": "0" * 40, "edits": [{"oldText": "x", "newText": 1}]},
         "edits[0].newText: expected a string, got the integer 1"),
    ],
)  # fmt: skip
async def test_coercible_values_are_refused_naming_field_and_type(server, mode, tool, arguments, message):
    start = server.revision()
    async with mcp_session(server, server.tokens["admin"], mode) as c:
        result = await c.call_tool(tool, arguments)
    err = tool_error(result)
    assert err["code"] == "validation_error" and err["message"] == message, err
    assert err["field"] == message.split(":")[0]
    assert server.revision() == start


# --- (14) names every clone can hold ------------------------------------------------------------


async def test_names_a_clone_elsewhere_could_not_hold_are_refused(server, mode, uid):
    folder = f"team/{uid}"
    async with mcp_session(server, server.tokens["team_write"], mode) as c:
        ok(await c.call_tool("save_page", {"slug": f"{folder}/foo", "body": "x\n"}))
        h = ok(await c.call_tool("save_page", {"slug": f"{folder}/mover", "body": "y\n"}))["hash"]
        start = server.revision()
        for name in ("CON", "nul", "aux.txt", "COM1", "x."):
            refused(await c.call_tool("save_page", {"slug": f"{folder}/{name}", "body": "z\n"}), "validation_error", "slug")
        message = refused(await c.call_tool("save_page", {"slug": f"{folder}/Foo", "body": "z\n"}), "validation_error", "slug")
        assert message == f"slug: {folder}/Foo differs only by case from the existing {folder}/foo; use that page or pick another name"
        upper = f"team/{uid.upper()}"
        message = refused(await c.call_tool("save_page", {"slug": f"{upper}/bar", "body": "z\n"}), "validation_error", "slug")
        assert message == f"slug: {upper} differs only by case from the existing {folder}; use that folder or pick another name"
        args = {"slug": f"{folder}/mover", "new_slug": f"{folder}/FOO", "basehash": h}
        refused(await c.call_tool("move_page", args), "validation_error", "new_slug")
        refused(await c.call_tool("rename_page", {"slug": f"{folder}/mover", "title": "Lpt1", "basehash": h}), "validation_error", "title")
        assert server.revision() == start

    async with mcp_session(server, server.tokens["admin"], mode) as c:
        for name in ("Team", "TEAM", "nul", "ops."):
            refused(await c.call_tool("save_namespace", {"name": name}), "validation_error", "name")
        assert server.revision() == start
