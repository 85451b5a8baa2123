"""The section tools, edit_page's rebase and apply_changes through a real ``hostcore serve``: driven
by both official clients (the TypeScript SDK's checks each result against the tool's output schema
after tools/list), and by eight client processes editing eight sections of one page at once."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from .conftest import error_object, mcp_session, ok, run_together
from .test_clients import CLIENTS, python_calls, typescript_calls, typescript_sdk  # noqa: F401  (the fixture)

pytestmark = pytest.mark.anyio

WORKER = Path(__file__).with_name("section_worker.py")
PAGE = "# Team page\n\nIntro.\n\n## Alpha\n\nalpha text\n\n## Beta\n\nbeta text\n\n## Gamma\n\ngamma text\n"


def commits_touching(server: Any, path: str) -> int:
    return len(server._git("log", "--format=%H", "--", path).stdout.split())


@pytest.mark.parametrize("client", CLIENTS)
async def test_section_tools_reach_the_official_clients_whole(server, typescript_sdk, client, uid):  # noqa: F811
    slug = f"notes/{uid}"
    async with mcp_session(server, server.tokens["write"]) as c:
        base = ok(await c.call_tool("save_page", {"slug": slug, "body": PAGE}))["hash"]
        revs = {s["section_id"]: s["rev"] for s in ok(await c.call_tool("outline", {"slug": slug}))["sections"]}
    # rebase reads the version it was given from storage that keeps history (git, s3); fs keeps none
    rebases = server.storage_kind != "fs"
    rebased = {"rebased": True, "basehash": base} if rebases else {"code": "conflict", "field": "basehash"}

    # (token, tool, arguments, what the result or error object must hold)
    cases: list[tuple[str, str, dict[str, Any], dict[str, Any]]] = [
        ("write", "outline", {"slug": slug}, {"total": 4, "more": False}),
        ("write", "read_section", {"slug": slug, "section_id": "alpha"}, {"rev": revs["alpha"], "block_count": 1}),
        ("write", "edit_blocks", {"slug": slug, "section_id": "alpha", "rev": revs["alpha"], "after_block": 1,
                                  "markdown": "more alpha"}, {"changed": True, "block_count": 2}),
        ("write", "replace_text", {"slug": slug, "section_id": "beta", "rev": revs["beta"], "old_text": "beta text",
                                   "new_text": "beta words"}, {"changed": True, "block": 1}),
        ("write", "append_to_page", {"slug": slug, "markdown": "appended"}, {"section_id": "gamma", "block_count": 2}),
        ("write", "edit_page", {"slug": slug, "basehash": base, "rebase": True,
                                "edits": [{"oldText": "gamma text", "newText": "gamma words"}]}, rebased),
        ("write", "apply_changes", {"changes": [{"op": "save", "slug": f"{slug}-a", "body": "a\n"},
                                               {"op": "save", "slug": f"{slug}-b", "body": f"[[{slug}-a]]\n"}]}, {"changed": True}),
        ("write", "edit_blocks", {"slug": slug, "section_id": "alpha", "rev": revs["alpha"], "after_block": 0,
                                  "remove_blocks": 1}, {"code": "conflict", "field": "rev"}),
        ("write", "read_section", {"slug": slug, "section_id": "nowhere"}, {"code": "not_found", "field": "section_id"}),
        ("write", "edit_blocks", {"slug": slug, "section_id": "team-page", "rev": revs["team-page"], "after_block": 5},
         {"code": "validation_error", "field": "after_block"}),
        ("write", "replace_text", {"slug": slug, "section_id": "team-page", "rev": revs["team-page"], "old_text": "absent",
                                   "new_text": "x"}, {"code": "validation_error", "field": "old_text"}),
        ("write", "apply_changes", {"changes": [{"op": "save", "slug": f"{slug}-c", "body": "c\n"}, {"op": "delete", "slug": f"{slug}-c"}]},
         {"code": "validation_error", "field": "changes[1].slug"}),
        ("read", "edit_blocks", {"slug": slug, "section_id": "beta", "rev": "x", "after_block": 0, "markdown": "x"},
         {"code": "insufficient_scope", "required_scope": "write"}),
        ("team_write", "outline", {"slug": slug}, {"code": "forbidden", "field": "slug"}),
        ("team_write", "append_to_page", {"slug": slug, "markdown": "x"}, {"code": "forbidden", "field": "slug"}),
    ]  # fmt: skip
    sessions: list[dict[str, Any]] = []
    order = []
    for token in dict.fromkeys(case[0] for case in cases):
        mine = [case for case in cases if case[0] == token]
        sessions.append({"token": server.tokens[token], "calls": [{"name": n, "arguments": a} for _, n, a, _ in mine]})
        order += mine
    if client == "typescript":
        outcomes = typescript_calls(typescript_sdk, server.url, sessions)
    else:
        outcomes = await python_calls(server, client.split()[1], sessions)

    assert len(outcomes) == len(order)
    for (_token, tool, _args, expected), got in zip(order, outcomes, strict=True):
        if "code" in expected:
            err = error_object(got["is_error"], got["structured"], got["texts"])
            assert {k: err.get(k) for k in expected} == expected, (tool, err)
            assert len(err["message"]) > len(err.get("field", "")) + 20, err
            if err["code"] == "conflict" and tool != "edit_page":
                assert err["rev"] and err["hash"], err
            continue
        assert not got["is_error"], (tool, got["texts"])
        assert {k: got["structured"].get(k) for k in expected} == expected, (tool, got["structured"])

    async with mcp_session(server, server.tokens["read"]) as c:
        page = ok(await c.call_tool("read_page", {"slug": slug}))
        gamma = ok(await c.call_tool("read_page", {"slug": slug, "section": "gamma"}))["body"]
        backlinks = ok(await c.call_tool("backlinks", {"slug": f"{slug}-a"}))["backlinks"]
    words = "gamma words" if rebases else "gamma text"
    assert gamma == f"## Gamma\n\n{words}\n\nappended\n"
    assert page["body"] == PAGE.replace("alpha text\n", "alpha text\n\nmore alpha\n").replace("beta text", "beta words").replace(
        "gamma text\n", f"{words}\n\nappended\n"
    )
    assert [b["slug"] for b in backlinks] == [f"{slug}-b"]


async def test_eight_clients_edit_eight_sections_of_one_page_at_once(server, uid):
    """Eight processes, each its own client, each replacing its own section's text with the rev
    its last edit returned: no conflict, every section ends at its writer's last acknowledged text,
    and (on git) every landed edit is one commit."""
    slug = f"notes/{uid}"
    rounds = 5
    body = "# Shared\n\n" + "".join(f"## Part {i}\n\npart {i} text\n\n" for i in range(8))
    async with mcp_session(server, server.tokens["write"]) as c:
        ok(await c.call_tool("save_page", {"slug": slug, "body": body}))
    before = commits_touching(server, f"{slug}.md") if server.storage_kind == "git" else 0
    argvs = [[sys.executable, str(WORKER), server.url, server.tokens["write"], "2026-07-28", slug, f"part-{i}", str(rounds)]
             for i in range(8)]  # fmt: skip
    results = run_together(argvs, timeout=600)
    assert [r["errors"] for r in results] == [[]] * 8
    assert all(len(r["acknowledged"]) == rounds for r in results)
    async with mcp_session(server, server.tokens["read"]) as c:
        for r in results:
            read = ok(await c.call_tool("read_section", {"slug": slug, "section_id": r["section_id"]}))
            assert [b["text"] for b in read["blocks"]] == [r["acknowledged"][-1]]
    if server.storage_kind == "git":
        assert commits_touching(server, f"{slug}.md") - before == 8 * rounds


async def test_appends_from_four_clients_at_once_all_land(server, uid):
    slug = f"notes/{uid}"
    async with mcp_session(server, server.tokens["write"]) as c:
        ok(await c.call_tool("save_page", {"slug": slug, "body": "# Log\n"}))
    tokens = [server.create_token(f"{uid}-{i}", ["write"]) for i in range(4)]
    argvs = [[sys.executable, str(WORKER), server.url, token, "legacy", slug, "-", "3"] for token in tokens]
    results = run_together(argvs, timeout=600)
    assert [r["errors"] for r in results] == [[]] * 4
    async with mcp_session(server, server.tokens["read"]) as c:
        blocks = [b["text"] for b in ok(await c.call_tool("read_section", {"slug": slug, "section_id": "log"}))["blocks"]]
    assert sorted(blocks) == sorted(text for r in results for text in r["acknowledged"])
    for r in results:  # each writer's appends land in the order it made them
        assert [b for b in blocks if b in r["acknowledged"]] == r["acknowledged"]
