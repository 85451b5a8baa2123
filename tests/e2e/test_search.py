"""search and fetch end to end: the embedded default (git storage + sqlite search) behind gunicorn
with 2 workers, driven through the official MCP client.

The shared server holds pages of every other test, so each test here searches in namespaces of its
own (``srch*``), made once per module by :func:`corpus`. Catch-up after an outside commit and
``hostcore reindex`` need the server stopped, so they run on a separate instance.
"""

from __future__ import annotations

import os
import pty
import re
import select
import shutil
import subprocess
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from hostcore_tantivy import TantivySearch

from .conftest import (
    E2E_ENV,
    MODES,
    RunningServer,
    cli,
    mcp_session,
    ok,
    start_server,
    stop_process_group,
    tool_error,
)

pytestmark = pytest.mark.anyio

# (title, body, tags) by slug: a small wiki about running services.
CORPUS: dict[str, tuple[str, str, list[str]]] = {
    "srch/kubernetes-upgrades": (
        "Kubernetes upgrades",
        "How we roll the cluster to a new version, one node at a time. Drain first, then upgrade.",
        ["runbook", "infra"],
    ),
    "srch/cluster-notes": (
        "Cluster notes",
        (
            "Kubernetes, kubernetes and more kubernetes: the kubernetes scheduler, kubernetes pods and "
            "kubernetes services all live here. Kubernetes everywhere."
        ),
        ["infra"],
    ),
    "srch/postgres-backup": (
        "Postgres backup",
        "Nightly backup of the postgres database with pg_dump. Once a week we restore the backup into staging.",
        ["runbook", "database"],
    ),
    "srch/mysql-backup": (
        "MySQL backup",
        "The mysql backup runs hourly. To restore, stop the replica first and load the newest backup.",
        ["database"],
    ),
    "srch/restore-drill": (
        "Restore drill",
        "Every quarter we practise a restore from backup and time each step.",
        ["on call"],
    ),
    "srch/deployment-guide": (
        "Deployment guide",
        "Deploying happens on Tuesdays; the deployer watches the dashboards for an hour.",
        [],
    ),
    "srch/cafe": ("Café menu", "Crème brûlée and espresso at the café on the third floor.", ["fun"]),
    "srch/weekly-meeting": ("Weekly meeting", "Minutes: we discussed the roadmap and the hiring plan.", ["meeting"]),
    # another namespace, invisible to a token limited to srch
    "srchx/kubernetes-elsewhere": ("Kubernetes elsewhere", "Kubernetes notes of another team.", ["infra"]),
    # hostile markup
    "srchx/hostile": (
        '<img src=x onerror="alert(2)"> Hostile',
        'Before <script>alert(1)</script> after; <img src=x onerror="alert(3)"> & <b>bold</b> xsswords.',
        ["<i>tag</i>"],
    ),
}
PAGED = 23  # pages in srchp, all holding the word "pagingword"
NAMESPACES = ("srch", "srchx", "srchp", "srche", "srchm", "srchf")


@pytest.fixture(scope="module")
def corpus(server: RunningServer) -> dict[str, str]:
    """The search namespaces and pages, and a token limited to ``srch``. Returns tokens by name."""

    async def setup() -> None:
        async with mcp_session(server, server.tokens["admin"]) as c:
            for name in NAMESPACES:
                ok(await c.call_tool("save_namespace", {"name": name, "title": name}))
            for slug, (title, body, tags) in CORPUS.items():
                ok(await c.call_tool("save_page", {"slug": slug, "title": title, "body": body, "tags": tags}))
            for i in range(PAGED):
                body = "pagingword " * (1 + i % 5) + f"filler text number {i}."
                ok(await c.call_tool("save_page", {"slug": f"srchp/page-{i:02d}", "title": f"Page {i}", "body": body}))

    anyio.run(setup)
    return {
        "srch_read": server.create_token("srch-read", ["read"], ["srch"]),
        "read": server.tokens["read"],
        "admin": server.tokens["admin"],
        "write": server.tokens["write"],
    }


async def search(c: Any, query: str, **args: Any) -> dict[str, Any]:
    return ok(await c.call_tool("search", {"query": query, **args}))


async def found(c: Any, query: str, namespace: str | None = "srch", **args: Any) -> list[str]:
    """Slugs of every hit found by the query's words (up to 50), best first: the query language's
    answer (plain words add pages near in meaning, found_by "meaning": ``test_meaning``)."""
    if namespace is not None:
        args["namespace"] = namespace
    return [h["slug"] for h in (await search(c, query, limit=50, **args))["hits"] if h["found_by"] != "meaning"]


def field_error(result: Any, code: str, field: str) -> dict[str, Any]:
    err = tool_error(result)
    assert err["code"] == code and err.get("field") == field, err
    return err


# --- ranking and result shape ------------------------------------------------------------------


async def test_title_match_ranks_first_and_result_shape(server, corpus, mode):
    async with mcp_session(server, corpus["read"], mode) as c:
        result = await search(c, "kubernetes", namespace="srch")
        hits = result["hits"]
        # cluster-notes says kubernetes eight times in its body; the page titled with it still wins
        assert [h["slug"] for h in hits][:2] == ["srch/kubernetes-upgrades", "srch/cluster-notes"], hits
        assert all(h["found_by"] == "meaning" for h in hits[2:]), hits  # then pages near in meaning, if any
        assert hits[0]["title"] == "Kubernetes upgrades" and hits[0]["tags"] == ["runbook", "infra"]
        scores = [h["score"] for h in hits]
        assert scores == sorted(scores, reverse=True) and scores[0] > scores[1], scores
        assert all("<mark>" in h["snippet"] for h in hits), hits
        assert "<mark>Kubernetes</mark>" in hits[1]["snippet"], hits[1]
        assert result["more"] is False and result["next_offset"] is None
        # ChatGPT-style results repeat the hits, with page URLs under PUBLIC_URL (the server's base)
        assert result["results"] == [
            {"id": h["slug"], "title": h["title"], "url": f"{server.base}/{h['slug']}"} for h in hits
        ]
        assert (await found(c, "backup"))[:2] in (
            ["srch/postgres-backup", "srch/mysql-backup"],
            ["srch/mysql-backup", "srch/postgres-backup"],
        )
        assert (await found(c, "restore"))[0] == "srch/restore-drill"
        assert (await found(c, "meeting"))[0] == "srch/weekly-meeting"


# --- query syntax, as the tool description promises ---------------------------------------------


async def test_query_syntax(server, corpus, mode):
    async with mcp_session(server, corpus["read"], mode) as c:
        tools = {t.name: t for t in (await c.list_tools()).tools}
        described = tools["search"].description
        for feature in ('"a quoted phrase"', "prefix*", "a OR b", "NOT word", "-word", "tag:name", "<mark>"):
            assert feature in described, feature

        # words must all match
        assert sorted(await found(c, "restore backup")) == ["srch/mysql-backup", "srch/postgres-backup", "srch/restore-drill"]
        assert sorted(await found(c, "restore AND backup")) == sorted(await found(c, "restore backup"))
        # a quoted phrase: the words next to each other, in order
        assert await found(c, '"restore the backup"') == ["srch/postgres-backup"]
        assert await found(c, '"backup the restore"') == []
        # a word in any English inflection, the form typed first; prefix* for the rest
        assert await found(c, "deploy") == ["srch/deployment-guide"]
        assert await found(c, "deploys") == ["srch/deployment-guide"]
        assert await found(c, "deployer") == ["srch/deployment-guide"]
        assert await found(c, "deploy*") == ["srch/deployment-guide"]
        assert await found(c, '"the deploy"*') == ["srch/deployment-guide"]
        assert await found(c, '"the deploy"') == []
        # OR
        assert sorted(await found(c, "postgres OR mysql")) == ["srch/mysql-backup", "srch/postgres-backup"]
        assert sorted(await found(c, "espresso OR roadmap OR nothingmatchesthis")) == ["srch/cafe", "srch/weekly-meeting"]
        # NOT word and -word
        expected = ["srch/postgres-backup", "srch/restore-drill"]
        assert sorted(await found(c, "backup NOT mysql")) == expected
        assert sorted(await found(c, "backup -mysql")) == expected
        # parentheses group, AND binds tighter than OR
        assert await found(c, "(postgres OR mysql) -hourly") == ["srch/postgres-backup"]
        assert sorted(await found(c, "postgres OR mysql hourly")) == ["srch/mysql-backup", "srch/postgres-backup"]
        # tag:name filters, tag:"two words" too; tags are searched as words as well
        assert await found(c, "backup tag:runbook") == ["srch/postgres-backup"]
        assert sorted(await found(c, "tag:database")) == ["srch/mysql-backup", "srch/postgres-backup"]
        assert await found(c, 'tag:"on call"') == ["srch/restore-drill"]
        assert await found(c, "tag:Runbook -backup") == ["srch/kubernetes-upgrades"]
        assert sorted(await found(c, "runbook")) == ["srch/kubernetes-upgrades", "srch/postgres-backup"]
        # case and accents ignored, both ways
        assert await found(c, "CAFE") == ["srch/cafe"]
        assert await found(c, "creme brulee") == ["srch/cafe"]
        assert await found(c, "crème") == ["srch/cafe"]
        # other punctuation is read as spaces: odd input degrades, never leaks FTS5 syntax errors
        for odd in ('backup"', "backup)", "(backup", "backup:", "pg_dump", "backup ^ ~ { } [ ] ; ! ?", "NEAR(backup restore)"):
            r = await c.call_tool("search", {"query": odd, "namespace": "srch"})
            if r.is_error:
                assert tool_error(r)["code"] == "validation_error", (odd, r.content)
        assert await found(c, "pg_dump") == ["srch/postgres-backup"]
        # nothing to find: rejected naming the query, with a hint
        for bad in ("NOT backup", "-backup", "backup OR", "   "):
            err = field_error(await c.call_tool("search", {"query": bad}), "validation_error", "query")
            assert err["message"].startswith("query: "), err


async def test_meaning_and_filters(server, corpus, mode):
    async with mcp_session(server, corpus["read"], mode) as c:
        schema = {t.name: t for t in (await c.list_tools()).tools}["search"].input_schema["properties"]
        assert {"tags", "author", "since", "before"} <= set(schema), schema
        # no page holds every word: the pages near in meaning answer, found_by says so
        hits = (await search(c, "restoring a database from yesterday's copy", namespace="srch"))["hits"]
        assert hits and {h["found_by"] for h in hits} == {"meaning"}, hits
        assert {"srch/postgres-backup", "srch/mysql-backup"} & {h["slug"] for h in hits[:3]}, hits
        # a code ranks by its words alone
        assert {h["found_by"] for h in (await search(c, "pg_dump", namespace="srch"))["hits"]} == {"words"}
        # filters, inside the engine and on what meaning adds
        assert await found(c, "backup", tags=["runbook"]) == ["srch/postgres-backup"]
        assert sorted(await found(c, "backup", tags=["Database"], since="2000-01-01")) == ["srch/mysql-backup", "srch/postgres-backup"]
        assert (await search(c, "backup", namespace="srch", before="2000-01-01"))["hits"] == []
        assert (await search(c, "restoring a database from yesterday's copy", namespace="srch", author="nobody"))["hits"] == []
        history = ok(await c.call_tool("page_history", {"slug": "srch/postgres-backup"}))
        author = history["commits"][0]["author"]
        by = [h["slug"] for h in (await search(c, "backup", namespace="srch", author=author.upper()))["hits"]]
        assert "srch/postgres-backup" in by, (author, by)
        field_error(await c.call_tool("search", {"query": "backup", "since": "yesterday"}), "validation_error", "since")
        field_error(await c.call_tool("search", {"query": "backup", "since": "2026-05-02", "before": "2026-05-01"}), "validation_error", "before")


async def test_prefix_star_inside_a_quoted_phrase(server, corpus):
    async with mcp_session(server, corpus["read"]) as c:
        assert await found(c, '"the deploy*"') == ["srch/deployment-guide"]


# --- paging and bounds -----------------------------------------------------------------------------


async def test_paging_and_bounds(server, corpus, mode):
    async with mcp_session(server, corpus["read"], mode) as c:
        everything = await found(c, "pagingword", namespace="srchp")
        assert len(everything) == PAGED and len(set(everything)) == PAGED
        walked, offset, sizes = [], 0, []
        while True:
            page = await search(c, "pagingword", namespace="srchp", offset=offset, limit=5)
            walked += [h["slug"] for h in page["hits"]]
            sizes.append(len(page["hits"]))
            if not page["more"]:
                assert page["next_offset"] is None
                break
            assert page["next_offset"] == offset + 5
            offset = page["next_offset"]
        assert sizes == [5, 5, 5, 5, 3]
        assert walked == everything  # exact, stable paging: no duplicates, nothing skipped
        exact = await search(c, "pagingword", namespace="srchp", limit=PAGED)
        assert exact["more"] is False and len(exact["hits"]) == PAGED
        short = await search(c, "pagingword", namespace="srchp", limit=PAGED - 1)
        assert short["more"] is True and short["next_offset"] == PAGED - 1
        # the default limit is 20
        default = await search(c, "pagingword", namespace="srchp")
        assert len(default["hits"]) == 20 and default["more"] is True and default["next_offset"] == 20
        # the edges of the allowed range work
        assert len((await search(c, "pagingword", namespace="srchp", limit=50))["hits"]) == PAGED
        assert len((await search(c, "pagingword", namespace="srchp", limit=1))["hits"]) == 1
        far = await search(c, "pagingword", namespace="srchp", offset=1000)
        assert far["hits"] == [] and far["more"] is False and far["next_offset"] is None
        # out of range: rejected naming the field
        for args, name in (
            ({"limit": 0}, "limit"),
            ({"limit": 51}, "limit"),
            ({"limit": -1}, "limit"),
            ({"offset": 1001}, "offset"),
            ({"offset": -1}, "offset"),
            ({"query": ""}, "query"),
            ({"query": "x" * 1001}, "query"),
            ({"namespace": "_hidden"}, "namespace"),
            ({"namespace": "srch/x"}, "namespace"),
        ):
            r = await c.call_tool("search", {"query": "pagingword", **args})
            err = field_error(r, "validation_error", name)
            assert err["message"].startswith(f"{name}: "), err
        tools = {t.name: t for t in (await c.list_tools()).tools}
        props = tools["search"].input_schema["properties"]
        assert props["limit"]["minimum"] == 1 and props["limit"]["maximum"] == 50 and props["limit"]["default"] == 20
        assert props["offset"]["minimum"] == 0 and props["offset"]["maximum"] == 1000


# --- namespace limits -------------------------------------------------------------------------------


async def test_namespace_limits(server, corpus, mode):
    async with mcp_session(server, corpus["read"], mode) as c:
        everywhere = await found(c, "kubernetes", namespace=None)
        assert {"srch/kubernetes-upgrades", "srch/cluster-notes", "srchx/kubernetes-elsewhere"} <= set(everywhere)
        assert await found(c, "kubernetes", namespace="srchx") == ["srchx/kubernetes-elsewhere"]
        assert await found(c, "kubernetes", namespace="empty") == []
        assert await found(c, "kubernetes", namespace="nosuchnamespace") == []
    async with mcp_session(server, corpus["srch_read"], mode) as c:
        # no namespace given: only the token's namespaces, for every kind of query
        for query in ("kubernetes", "kubernetes OR hostile", "tag:infra", "elsewhere", "xsswords", "pagingword", "Seed"):
            result = await search(c, query, limit=50)
            assert all(h["slug"].startswith("srch/") for h in result["hits"]), (query, result["hits"])
            assert all(r["id"].startswith("srch/") for r in result["results"]), (query, result["results"])
        assert sorted(await found(c, "kubernetes", namespace=None)) == ["srch/cluster-notes", "srch/kubernetes-upgrades"]
        assert await found(c, "elsewhere", namespace=None) == []
        assert await found(c, "kubernetes", namespace="srch") == ["srch/kubernetes-upgrades", "srch/cluster-notes"]
        # asking for another namespace is refused, naming the argument
        for other in ("srchx", "notes", "team"):
            field_error(await c.call_tool("search", {"query": "kubernetes", "namespace": other}), "forbidden", "namespace")
        # fetch respects the limit too
        assert tool_error(await c.call_tool("fetch", {"id": "srchx/kubernetes-elsewhere"}))["code"] == "forbidden"
        assert tool_error(await c.call_tool("fetch", {"id": "notes/index"}))["code"] == "forbidden"
        assert ok(await c.call_tool("fetch", {"id": "srch/cafe"}))["title"] == "Café menu"
    async with mcp_session(server, server.tokens["team_read"], mode) as c:
        assert await found(c, "kubernetes", namespace=None) == []


async def test_search_and_fetch_need_read_scope(server, corpus, mode):
    for name in ("read", "write", "admin", "team_read"):
        async with mcp_session(server, server.tokens[name], mode) as c:
            tools = {t.name: t for t in (await c.list_tools()).tools}
            for tool in ("search", "fetch"):
                assert tool in tools, (name, tool)
                assert tools[tool].annotations.read_only_hint is True and tools[tool].annotations.destructive_hint is False
    # without a token nothing is answered, with a challenge naming the scopes
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "search", "arguments": {"query": "kubernetes"}}}
    hdrs = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"}
    with httpx.Client(timeout=30) as http:
        for tool, args in (("search", {"query": "kubernetes"}), ("fetch", {"id": "srch/cafe"})):
            body["params"] = {"name": tool, "arguments": args}
            for extra in ({}, {"Authorization": "Bearer hc_not-a-token"}):
                r = http.post(server.url, json=body, headers={**hdrs, **extra})
                assert r.status_code == 401, r.text
                assert "kubernetes" not in r.text.lower() and "Café" not in r.text
                assert 'scope="read' in r.headers["WWW-Authenticate"], r.headers


# --- escaping ----------------------------------------------------------------------------------------


def assert_safe_html(text: str) -> None:
    """Escaped HTML whose only tags are <mark> and </mark>."""
    without_marks = text.replace("<mark>", "").replace("</mark>", "")
    assert "<" not in without_marks and ">" not in without_marks, text
    assert text.count("<mark>") == text.count("</mark>"), text


async def test_snippets_are_escaped_html(server, corpus, mode):
    title, _body, tags = CORPUS["srchx/hostile"]
    async with mcp_session(server, corpus["read"], mode) as c:
        for query in ("xsswords", "alert", "script", "onerror", "hostile", "img", "bold", "tag", '"script alert"'):
            result = await search(c, query, namespace="srchx")
            assert [h["slug"] for h in result["hits"]] == ["srchx/hostile"], (query, result)
            hit = result["hits"][0]
            assert_safe_html(hit["snippet"])
            if query != "tag":  # a match in the tags alone leaves the snippet unmarked
                assert "<mark>" in hit["snippet"], (query, hit["snippet"])
            # the title and tags are plain text (JSON strings, like read_page's), never HTML
            assert hit["title"] == title and hit["tags"] == tags and result["results"][0]["title"] == title
        snippet = (await search(c, "xsswords", namespace="srchx"))["hits"][0]["snippet"]
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in snippet, snippet
        assert "&lt;img src=x onerror=&quot;alert(3)&quot;&gt;" in snippet, snippet
        assert "&amp;" in snippet and "&lt;b&gt;bold&lt;/b&gt;" in snippet, snippet
        assert "<mark>xsswords</mark>" in snippet, snippet
        # a match only in the title shows the title, escaped
        snippet = (await search(c, "hostile", namespace="srchx"))["hits"][0]["snippet"]
        assert "<mark>Hostile</mark>" in snippet and "&lt;img src=x onerror=&quot;alert(2)&quot;&gt;" in snippet, snippet
        # the text content block carries no live markup either
        r = await c.call_tool("search", {"query": "xsswords", "namespace": "srchx"})
        assert "<script>" not in r.content[0].text


# --- freshness across workers ----------------------------------------------------------------------


def serving_workers(server: RunningServer) -> set[int]:
    """The gunicorn workers holding an established connection to the server right now (Linux /proc)."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[1].endswith(f":{server.port:04X}") and fields[3] == "01":
                inodes.add(f"socket:[{fields[9]}]")
    assert server.proc is not None
    children = Path(f"/proc/{server.proc.pid}/task/{server.proc.pid}/children").read_text().split()
    workers = set()
    for pid in children:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") in inodes:
                    workers.add(int(pid))
            except OSError:
                continue
    return workers


async def test_search_sees_writes_made_through_another_connection(server, corpus):
    """Write through one connection, search through a fresh one: whichever worker answers, never stale.

    Runs 20 rounds, more (up to 60) until some round's search was answered by another gunicorn
    worker than its write (seen through /proc on Linux)."""
    can_see_workers = Path(f"/proc/{os.getpid()}/fd").is_dir()
    seen: set[int] = set()
    crossed = 0  # rounds whose search ran on a worker that did not take the write
    live_hash = None
    rounds = 0
    while rounds < 20 or (can_see_workers and not crossed and rounds < 60):
        i = rounds
        async with mcp_session(server, corpus["write"], MODES[i % 2]) as w:
            # one page edited over and over, and one new page per round
            if live_hash is None:
                saved = ok(await w.call_tool("save_page", {"slug": "srchf/live", "body": f"live page marker{i}x"}))
            else:
                edits = [{"oldText": f"marker{i - 1}x", "newText": f"marker{i}x"}]
                saved = ok(await w.call_tool("edit_page", {"slug": "srchf/live", "basehash": live_hash, "edits": edits}))
            live_hash = saved["hash"]
            ok(await w.call_tool("save_page", {"slug": f"srchf/new-{i}", "title": f"Round{i} fresh", "body": "born now"}))
            writers = serving_workers(server) if can_see_workers else set()
        async with mcp_session(server, corpus["read"], MODES[(i + 1) % 2]) as r:
            assert await found(r, f"marker{i}x", namespace="srchf") == ["srchf/live"], f"round {i}: edit not seen"
            assert await found(r, f"marker{i - 1}x", namespace="srchf") == [], f"round {i}: stale hit"
            assert await found(r, f"round{i}", namespace="srchf") == [f"srchf/new-{i}"], f"round {i}: new page not seen"
            readers = serving_workers(server) if can_see_workers else set()
        seen |= writers | readers
        crossed += bool(readers - writers)
        rounds += 1
    async with mcp_session(server, corpus["read"]) as r:
        assert len(await found(r, "born", namespace="srchf")) == rounds
    if can_see_workers:
        assert len(seen) == 2 and crossed, f"workers {seen} answered {rounds} rounds, {crossed} crossed"


# --- every kind of write is in the very next search -----------------------------------------------


async def test_edit_move_rename_delete_in_next_search(server, corpus, mode):
    m = "a" if mode == "legacy" else "b"
    slug, linker, outsider = f"srche/star-{m}", f"srchm/links-{m}", f"srche/links-{m}"
    async with mcp_session(server, corpus["admin"], mode) as c:
        h = ok(await c.call_tool("save_page", {"slug": slug, "title": f"Star {m}", "body": f"quasar{m} shines"}))["hash"]
        for page in (linker, outsider):
            ok(await c.call_tool("save_page", {"slug": page, "body": f"See [[srchm/star-{m}]] for details."}))
        assert await found(c, f"quasar{m}", namespace=None) == [slug]

        h = ok(await c.call_tool("edit_page", {"slug": slug, "basehash": h, "edits": [{"oldText": f"quasar{m}", "newText": f"pulsar{m}"}]}))["hash"]
        assert await found(c, f"quasar{m}", namespace=None) == []
        assert await found(c, f"pulsar{m}", namespace=None) == [slug]

        h = ok(await c.call_tool("save_page", {"slug": slug, "basehash": h, "title": f"Blazar{m}", "tags": [f"tag{m}"]}))["hash"]
        assert await found(c, f"blazar{m}", namespace=None) == [slug]
        assert await found(c, f"tag:tag{m}", namespace=None) == [slug]
        assert await found(c, f"star pulsar{m}", namespace=None) == []  # the old title is gone

        moved = ok(await c.call_tool("move_page", {"slug": slug, "new_slug": f"srchm/star-{m}", "basehash": h}))
        assert await found(c, f"pulsar{m}", namespace=None) == [f"srchm/star-{m}"]
        assert await found(c, f"pulsar{m}", namespace="srche") == []
        assert await found(c, f"pulsar{m}", namespace="srchm") == [f"srchm/star-{m}"]

        renamed = ok(await c.call_tool("rename_page", {"slug": f"srchm/star-{m}", "title": f"Neutron Star {m}", "basehash": moved["hash"]}))
        new_slug = f"srchm/neutron-star-{m}"
        assert renamed["slug"] == new_slug, renamed
        assert await found(c, f"pulsar{m}", namespace=None) == [new_slug]
        assert await found(c, f"neutron {m}", namespace="srchm") == [new_slug, linker]
        # the page whose link rename_page rewrote is re-indexed too; one in another (private)
        # namespace keeps its link as written, listed in failed_links
        hit = next(h for h in (await search(c, f"neutron star {m}", namespace="srchm"))["hits"] if h["slug"] == linker)
        assert f"srchm/<mark>neutron</mark>-<mark>star</mark>-<mark>{m}</mark>" in hit["snippet"], hit
        assert [f["slug"] for f in renamed["failed_links"]] == [outsider]
        assert await found(c, f"neutron star {m}", namespace="srche") == []

        ok(await c.call_tool("delete_page", {"slug": new_slug, "basehash": renamed["hash"]}))
        assert await found(c, f"pulsar{m}", namespace=None) == []
        assert await found(c, f"blazar{m}", namespace=None) == []
        assert tool_error(await c.call_tool("fetch", {"id": new_slug}))["code"] == "not_found"


# --- fetch ---------------------------------------------------------------------------------------------


async def test_fetch_round_trip(server, corpus, mode):
    async with mcp_session(server, corpus["read"], mode) as c:
        result = await search(c, "scheduler pods", namespace="srch")
        first = result["results"][0]
        assert first["id"] == "srch/cluster-notes"
        page = ok(await c.call_tool("fetch", {"id": first["id"]}))
        read = ok(await c.call_tool("read_page", {"slug": first["id"]}))
        title, body, tags = CORPUS["srch/cluster-notes"]
        assert page == {
            "id": "srch/cluster-notes",
            "title": title,
            "text": body,
            "url": first["url"],
            "metadata": {"slug": "srch/cluster-notes", "namespace": "srch", "tags": tags, "hash": read["hash"]},
        }
        assert page["url"].startswith(server.base + "/") and page["url"] == f"{server.base}/srch/cluster-notes"
        # the hostile page: fetch returns the Markdown as written (it is text, not HTML)
        hostile = ok(await c.call_tool("fetch", {"id": "srchx/hostile"}))
        assert hostile["text"] == CORPUS["srchx/hostile"][1] and hostile["title"] == CORPUS["srchx/hostile"][0]
        assert tool_error(await c.call_tool("fetch", {"id": "srch/no-such-page"}))["code"] == "not_found"
        for bad in ("../etc/passwd", "srch", "srch/.hidden", ""):
            assert tool_error(await c.call_tool("fetch", {"id": bad}))["code"] == "validation_error", bad


async def test_fetch_errors_name_its_id_argument(server, corpus):
    async with mcp_session(server, corpus["srch_read"]) as c:
        field_error(await c.call_tool("fetch", {"id": "srch/no-such-page"}), "not_found", "id")
        field_error(await c.call_tool("fetch", {"id": "srchx/kubernetes-elsewhere"}), "forbidden", "id")
        field_error(await c.call_tool("fetch", {"id": "../etc/passwd"}), "validation_error", "id")


# --- catch-up after an outside commit, and `hostcore reindex` ----------------------------------------


def reindex_on_a_terminal(instance: Path) -> tuple[int, str, str]:
    """Run ``hostcore reindex`` with stderr on a pseudo-terminal (so click draws its bar)."""
    from hostcore.testing import hostcore_cmd, hostcore_env

    master, slave = pty.openpty()
    try:
        with subprocess.Popen(
            [*hostcore_cmd(), "--instance", str(instance), "reindex"],
            stdout=subprocess.PIPE,
            stderr=slave,
            stdin=subprocess.DEVNULL,
            env=hostcore_env(E2E_ENV),
        ) as proc:
            os.close(slave)
            slave = -1
            err = b""
            while True:
                ready, _, _ = select.select([master], [], [], 60)
                if not ready:
                    proc.kill()
                    raise AssertionError(f"hostcore reindex hangs; stderr so far: {err!r}")
                try:
                    chunk = os.read(master, 4096)
                except OSError:  # EIO: the child closed the terminal
                    break
                if not chunk:
                    break
                err += chunk
            assert proc.stdout is not None
            out = proc.stdout.read().decode()
            code = proc.wait(timeout=60)
    finally:
        os.close(master)
        if slave != -1:
            os.close(slave)
    return code, out, err.decode(errors="replace")


def test_catch_up_after_outside_commit_and_reindex(tmp_path):
    instance = tmp_path / "instance"
    init = cli(instance, "init")
    (token,) = re.findall(r"hc_[A-Za-z0-9_-]+", init.stdout)
    srv = RunningServer(base="", port=0, instance=instance, tokens={"admin": token}, log=tmp_path / "unused.log")

    async def call(calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
        async with mcp_session(srv, token) as c:
            return [await c.call_tool(name, args) for name, args in calls]

    def serve() -> subprocess.Popen[bytes]:
        proc, base, port, log = start_server(instance, workers=1)
        srv.base, srv.port, srv.log, srv.proc = base, port, log, proc
        return proc

    def slugs(result: Any) -> list[str]:
        return [h["slug"] for h in ok(result)["hits"]]

    proc = serve()
    try:
        for r in anyio.run(call, [
            ("save_page", {"slug": "notes/keep", "body": "nebula stays"}),
            ("save_page", {"slug": "notes/gone", "body": "comet leaves"}),
            ("save_page", {"slug": "notes/changed", "body": "asteroid before"}),
        ]):
            ok(r)
    finally:
        stop_process_group(proc)

    srv.plant({
        "notes/outside.md": "---\ntitle: From outside\ntags:\n- planted\n---\nA magnetar was committed with git.\n",
        "notes/changed.md": "---\ntitle: Changed\n---\nmeteorite after\n",
        "notes/gone.md": None,
    })

    proc = serve()
    try:
        magnetar, comet, asteroid, meteorite, nebula, tagged, fetched = anyio.run(call, [
            ("search", {"query": "magnetar"}),
            ("search", {"query": "comet"}),
            ("search", {"query": "asteroid"}),
            ("search", {"query": "meteorite"}),
            ("search", {"query": "nebula"}),
            ("search", {"query": "tag:planted"}),
            ("fetch", {"id": "notes/outside"}),
        ])
        assert slugs(magnetar) == ["notes/outside"]
        assert ok(magnetar)["hits"][0]["title"] == "From outside"
        assert ok(magnetar)["results"][0]["url"] == f"{srv.base}/notes/outside"
        assert slugs(comet) == [] and slugs(asteroid) == []
        assert slugs(meteorite) == ["notes/changed"] and slugs(nebula) == ["notes/keep"]
        assert slugs(tagged) == ["notes/outside"]
        assert ok(fetched)["text"] == "A magnetar was committed with git.\n"
    finally:
        stop_process_group(proc)
    # reindex with the server stopped, after losing the index: a progress bar on stderr, the count on stdout
    shutil.rmtree(instance / "search")
    pages = sorted(p[: -len(".md")] for p in srv.listing() if p.endswith(".md") and not p.rsplit("/", 1)[-1].startswith("."))
    code, out, err = reindex_on_a_terminal(instance)
    assert code == 0, (out, err)
    assert out.splitlines() == [f"indexed {len(pages)} pages", f"embedded the passages of {len(pages)} pages and attachments"], (out, pages)
    assert "indexing pages" in err and "embedding passages" in err and "[#" in err and "100%" in err, err
    assert indexed_slugs(instance) == pages
    plain = cli(instance, "reindex")  # not a terminal: the label only, no bar drawing, same result
    assert plain.stdout == out and "indexing pages" in plain.stderr
    assert indexed_slugs(instance) == pages

    proc = serve()
    try:
        (magnetar, meteorite) = anyio.run(call, [("search", {"query": "magnetar"}), ("search", {"query": "meteorite OR nebula"})])
        assert slugs(magnetar) == ["notes/outside"]
        assert sorted(slugs(meteorite)) == ["notes/changed", "notes/keep"]
    finally:
        stop_process_group(proc)


def indexed_slugs(instance: Path) -> list[str]:
    """The slugs in the embedded search index (tantivy), read from outside the server."""
    index = TantivySearch(instance / "search")
    try:
        return sorted(index.hashes())
    finally:
        index.close()
