"""Lost updates are impossible: 8 processes save one page with the same basehash at the same moment.

Each racer is its own OS process with its own official MCP client (see ``race_worker.py``); a
barrier (every racer reports ``ready``, then all get ``go`` at once) lines them up. With two
gunicorn workers the saves land on different server processes, so only the storage's
inter-process compare-and-set can pick the winner.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from .conftest import error_object, mcp_session, ok, run_together, tool_error
from .race_worker import body_of

pytestmark = pytest.mark.anyio

RACERS = 8
WORKER = Path(__file__).with_name("race_worker.py")


def race(server, token: str, mode: str, slug: str, basehash: str) -> list[dict]:
    argvs = [[sys.executable, str(WORKER), server.url, token, mode, slug, basehash, str(i)] for i in range(RACERS)]
    return run_together(argvs, timeout=120)


@pytest.mark.parametrize("mode", ["2026-07-28", "legacy"])
async def test_eight_processes_save_with_one_basehash(server, mode, uid):
    slug = f"notes/{uid}"
    token = server.tokens["write"]
    async with mcp_session(server, token, mode) as c:
        base = ok(await c.call_tool("save_page", {"slug": slug, "body": "base\n", "title": "Race", "tags": ["race"]}))["hash"]

    results = race(server, token, mode, slug, base)

    winners = [r for r in results if not r["is_error"]]
    losers = [r for r in results if r["is_error"]]
    assert len(winners) == 1, [(r["index"], r["structured"]) for r in results]
    winner = winners[0]
    win_hash = winner["structured"]["hash"]
    assert winner["structured"]["changed"] is True and win_hash != base
    assert len(losers) == RACERS - 1
    for r in losers:
        err = error_object(r["is_error"], r["structured"], r["texts"])
        assert err["code"] == "conflict", err
        assert err["hash"] == win_hash, (r["index"], err["hash"], win_hash)
        assert err["body"] == body_of(winner["index"])  # save_page conflicts carry the current body

    async with mcp_session(server, token, mode) as c:
        got, offset = [], 0
        while True:
            page = ok(await c.call_tool("read_page", {"slug": slug, "offset": offset, "limit": 100000}))
            got.append(page["body"])
            if not page["truncated"]:
                break
            offset = page["next_offset"]
    assert page["hash"] == win_hash
    assert "".join(got) == body_of(winner["index"])
    assert (page["title"], page["tags"]) == ("Race", ["race"])
    stored = server.stored(f"{slug}.md").decode()
    assert stored.endswith(body_of(winner["index"])) and stored.count("writer ") == 20_000
    # nothing else left behind by the losers (temporary files, stray pages)
    assert [p for p in server.listing() if uid in p] == [f"{slug}.md"]


async def test_concurrent_edits_and_namespace_creates_have_one_winner(server, uid):
    """The same rule for edit_page, delete_page and save_namespace, with concurrent clients of one process."""
    import anyio

    slug = f"notes/{uid}"
    async with mcp_session(server, server.tokens["write"]) as c:
        base = ok(await c.call_tool("save_page", {"slug": slug, "body": "counter: 0\n"}))["hash"]

    async def run_all(token: str, calls: list[tuple[str, dict]]) -> list:
        results: list = [None] * len(calls)

        async def one(i: int, name: str, args: dict) -> None:
            async with mcp_session(server, token) as c:
                results[i] = await c.call_tool(name, args)

        async with anyio.create_task_group() as tg:
            for i, (name, args) in enumerate(calls):
                tg.start_soon(one, i, name, args)
        return results

    edits = [("edit_page", {"slug": slug, "basehash": base, "edits": [{"oldText": "counter: 0", "newText": f"counter: {i + 1}"}]}) for i in range(RACERS)]
    results = await run_all(server.tokens["write"], edits)
    won = [r for r in results if not r.is_error]
    assert len(won) == 1, [r.content for r in results]
    new_hash = won[0].structured_content["hash"]
    for r in results:
        if r.is_error:
            err = tool_error(r)
            assert err["code"] == "conflict" and err["hash"] == new_hash and "body" not in err, err

    deletes = [("delete_page", {"slug": slug, "basehash": new_hash})] * 4
    results = await run_all(server.tokens["write"], deletes)
    assert sum(not r.is_error for r in results) == 1, [r.content for r in results]
    assert all(tool_error(r)["hash"] == "" for r in results if r.is_error)
    assert server.stored(f"{slug}.md") is None

    name = f"race{uid[-30:]}".replace("--", "-")
    creates = [("save_namespace", {"name": name, "title": f"creator {i}"}) for i in range(RACERS)]
    results = await run_all(server.tokens["admin"], creates)
    created = [r for r in results if not r.is_error]
    assert len(created) == 1, [r.content for r in results]
    for r in results:
        if r.is_error:
            err = tool_error(r)
            assert err["code"] == "conflict" and err["hash"] == created[0].structured_content["hash"], err
