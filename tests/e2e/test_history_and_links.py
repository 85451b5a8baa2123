"""Reorganising and history, end to end: move_page, rename_page, backlinks, health, recent_changes,
page_history, read_page at a revision, restore_page and the recoverable delete_page.

Everything goes through the official MCP client against the shared gunicorn server (two workers,
the embedded git storage), and every claim a tool makes about history is checked against the bare
repository itself with ``git --git-dir <instance>/wiki``: commit ids, authors, messages, the
files a commit changed, and the blob at HEAD (a page's hash is the git blob id of its stored
file). Refused calls must leave the branch head where it was.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from .conftest import (
    E2E_STORAGE,
    RunningServer,
    cli,
    mcp_session,
    ok,
    start_server,
    stop_process_group,
    tool_error,
)

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(E2E_STORAGE not in ("", "git"), reason="history and the repository checks need the git storage"),
]

SEP = "\x1f"


# --- the operator's view of the repository ---------------------------------------------------


def git(server: RunningServer, *args: str) -> str:
    return server._git(*args).stdout.decode()


def head(server: RunningServer) -> str:
    return git(server, "rev-parse", "HEAD").strip()


def commit_count(server: RunningServer) -> int:
    return int(git(server, "rev-list", "--count", "HEAD"))


def log(server: RunningServer, n: int, *paths: str) -> list[dict[str, Any]]:
    """The newest ``n`` commits (touching ``paths`` when given): id, author, epoch time, subject."""
    out = git(server, "log", f"-{n}", f"--format=%H{SEP}%an{SEP}%at{SEP}%s", *(["--", *paths] if paths else []))
    rows = [line.split(SEP) for line in out.splitlines() if line]
    return [{"id": i, "author": a, "time": int(t), "message": s} for i, a, t, s in rows]


def files_of(server: RunningServer, commit: str) -> dict[str, str]:
    """path -> status letter (A, M, D) of what ``commit`` changed, rename detection off."""
    out = git(server, "show", "--no-renames", "--name-status", "--format=", commit)
    return {path: status for status, path in (line.split("\t", 1) for line in out.splitlines() if line)}


def blob_at(server: RunningServer, rev: str, path: str) -> str | None:
    proc = server._git("rev-parse", "--verify", "--quiet", f"{rev}:{path}", check=False)
    return proc.stdout.decode().strip() if proc.returncode == 0 else None


def slugify(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")


def expect_message(message: str, tool: str, subject: str, mode: str) -> None:
    """``<tool>: <subject> via <client>``: the name and version the client declares, in every mode
    (the 2026-07-28 client in every request, the legacy one in initialize, carried by its session id)."""
    from mcp.client.session import DEFAULT_CLIENT_INFO

    assert message == f"{tool}: {subject} via {DEFAULT_CLIENT_INFO.name} {DEFAULT_CLIENT_INFO.version}", (mode, message)


def assert_refused(result: Any, code: str, field: str | None = None) -> dict[str, Any]:
    err = tool_error(result)
    assert err["code"] == code, err
    if field is not None:
        assert err.get("field") == field, err
    return err


async def read_all(c: Any, slug: str, **extra: Any) -> dict[str, Any]:
    """read_page, following the windows of a long body; returns the last window with the whole body."""
    parts, offset = [], 0
    while True:
        page = ok(await c.call_tool("read_page", {"slug": slug, "offset": offset, "limit": 100_000, **extra}))
        parts.append(page["body"])
        if not page["truncated"]:
            break
        offset = page["next_offset"]
    page["body"] = "".join(parts)
    return page


def assert_head_holds(server: RunningServer, slug: str, page: dict[str, Any]) -> None:
    """The file at HEAD is exactly what read_page returned: same blob id, and it ends with the body."""
    stored = server.stored(f"{slug}.md")
    assert stored is not None, f"{slug}.md is not at HEAD"
    assert blob_at(server, "HEAD", f"{slug}.md") == page["hash"]
    assert stored.decode().endswith(page["body"])


# --- move_page --------------------------------------------------------------------------------


async def test_move_page_keeps_title_tags_pin_and_hash(server, mode, uid):
    src, dst, linker = f"notes/{uid}", f"team/{uid}", f"notes/{uid}-linker"
    body = f"# Moving\n\nSee [[notes/{uid}-elsewhere]].\n"
    async with mcp_session(server, server.tokens["write"], mode) as c:
        h = ok(await c.call_tool("save_page", {"slug": src, "body": body, "title": "Moving Page", "tags": ["a", "b"], "pin": True}))["hash"]
        ok(await c.call_tool("save_page", {"slug": linker, "body": f"points at [[{src}]]\n", "title": "Linker"}))
        before = commit_count(server)

        moved = ok(await c.call_tool("move_page", {"slug": src, "new_slug": dst, "basehash": h}))
        assert moved == {"slug": dst, "old_slug": src, "hash": h}

        page = await read_all(c, dst)
        assert (page["title"], page["tags"], page["pin"], page["hash"], page["body"]) == ("Moving Page", ["a", "b"], True, h, body)
        assert_refused(await c.call_tool("read_page", {"slug": src}), "not_found")
        # links to the page are not rewritten by a move: the linker still points at the old slug
        assert ok(await c.call_tool("read_page", {"slug": linker}))["body"] == f"points at [[{src}]]\n"
        assert ok(await c.call_tool("backlinks", {"slug": src}))["backlinks"] == [{"slug": linker, "title": "Linker"}]
        assert ok(await c.call_tool("backlinks", {"slug": dst}))["backlinks"] == []
        history = ok(await c.call_tool("page_history", {"slug": dst}))["commits"]

    assert commit_count(server) == before + 1
    last = log(server, 1)[0]
    assert last["author"] == "write"
    expect_message(last["message"], "move_page", f"{src} -> {dst}", mode)
    assert files_of(server, "HEAD") == {f"{src}.md": "D", f"{dst}.md": "A"}
    assert_head_holds(server, dst, page)
    assert server.stored(f"{src}.md") is None
    assert history[0]["id"] == last["id"] and history[0]["files"] == sorted([f"{src}.md", f"{dst}.md"])


async def test_move_page_refusals_write_nothing(server, mode, uid):
    src, taken = f"notes/{uid}", f"team/{uid}"
    async with mcp_session(server, server.tokens["write"], mode) as c:
        h1 = ok(await c.call_tool("save_page", {"slug": src, "body": "first\n"}))["hash"]
        h2 = ok(await c.call_tool("save_page", {"slug": src, "basehash": h1, "body": "second\n"}))["hash"]
        ok(await c.call_tool("save_page", {"slug": taken, "body": "already here\n"}))
        index_hash = ok(await c.call_tool("read_page", {"slug": "team/index"}))["hash"]
        start = head(server)

        err = assert_refused(await c.call_tool("move_page", {"slug": src, "new_slug": f"nowhere-{uid[:60]}/x", "basehash": h2}), "validation_error", "new_slug")
        assert "does not exist" in err["message"]
        err = assert_refused(await c.call_tool("move_page", {"slug": src, "new_slug": taken, "basehash": h2}), "validation_error", "new_slug")
        assert "holds a page" in err["message"]
        err = assert_refused(await c.call_tool("move_page", {"slug": "team/index", "new_slug": f"team/{uid}-home", "basehash": index_hash}), "validation_error", "slug")
        assert "index page" in err["message"]
        err = assert_refused(await c.call_tool("move_page", {"slug": src, "new_slug": f"team/{uid}-moved", "basehash": h1}), "conflict")
        assert err["hash"] == h2
        err = assert_refused(await c.call_tool("move_page", {"slug": f"notes/{uid}-ghost", "new_slug": f"team/{uid}-ghost", "basehash": h1}), "conflict")
        assert err["hash"] == ""
        assert_refused(await c.call_tool("move_page", {"slug": src, "new_slug": src, "basehash": h2}), "validation_error", "new_slug")

        assert ok(await c.call_tool("read_page", {"slug": src}))["hash"] == h2
        assert ok(await c.call_tool("read_page", {"slug": taken}))["body"] == "already here\n"
        assert_refused(await c.call_tool("read_page", {"slug": f"team/{uid}-moved"}), "not_found")

    async with mcp_session(server, server.tokens["team_write"], mode) as c:
        # a token limited to team cannot move a page out of it, nor into it from outside
        mine = ok(await c.call_tool("save_page", {"slug": f"team/{uid}-mine", "body": "mine\n"}))["hash"]
        start = head(server)
        assert_refused(await c.call_tool("move_page", {"slug": f"team/{uid}-mine", "new_slug": f"ops/{uid}", "basehash": mine}), "forbidden", "new_slug")
        assert_refused(await c.call_tool("move_page", {"slug": src, "new_slug": f"team/{uid}-in", "basehash": h2}), "forbidden", "slug")

    assert head(server) == start
    assert server.stored(f"ops/{uid}.md") is None and server.stored(f"team/{uid}-in.md") is None


# --- rename_page ------------------------------------------------------------------------------


async def test_rename_page_rewrites_links_each_in_its_own_commit(server, mode, uid):
    old = f"team/{uid}-old"
    title = f"Renamed {uid}!"
    new = f"team/{slugify(title)}"
    linker, unrelated, outside = f"team/{uid}-linker", f"team/{uid}-unrelated", f"ops/{uid}-outside"
    linker_body = f"See [[{old}|the label]] and [[{uid}-old#Part Two]], but not `[[{old}]]`.\n\n```\n[[{old}]]\n```\n"
    async with mcp_session(server, server.tokens["admin"], mode) as c:
        ok(await c.call_tool("save_page", {"slug": outside, "body": f"from ops: [[{old}]]\n"}))
    async with mcp_session(server, server.tokens["team_write"], mode) as c:
        h = ok(await c.call_tool("save_page", {"slug": old, "body": "the target\n", "tags": ["kept"]}))["hash"]
        ok(await c.call_tool("save_page", {"slug": linker, "body": linker_body, "title": "Linker"}))
        unrelated_hash = ok(await c.call_tool("save_page", {"slug": unrelated, "body": "[[team/plan]]\n"}))["hash"]
        before = commit_count(server)

        raw = await c.call_tool("rename_page", {"slug": old, "title": title, "basehash": h})
        result = ok(raw)
        assert result["slug"] == new and result["old_slug"] == old and result["title"] == title
        assert result["rewritten"] == [linker]
        # the ops page links here but is not the limited token's to see: counted, never named
        assert result["failed_links"] == [] and result["hidden_failed_links"] == 1
        assert outside not in str(result) and all(outside not in block.text for block in raw.content)

        page = await read_all(c, new)
        assert (page["title"], page["tags"], page["body"], page["hash"]) == (title, ["kept"], "the target\n", result["hash"])
        assert_refused(await c.call_tool("read_page", {"slug": old}), "not_found")
        rewritten = await read_all(c, linker)
        assert rewritten["body"] == (
            f"See [[{new}|the label]] and [[{new}#Part Two]], but not `[[{old}]]`.\n\n```\n[[{old}]]\n```\n"
        )
        assert ok(await c.call_tool("read_page", {"slug": unrelated}))["hash"] == unrelated_hash
        assert ok(await c.call_tool("backlinks", {"slug": new}))["backlinks"] == [{"slug": linker, "title": "Linker"}]
        # the ops page is not the limited token's to see, even though it still links to the old slug
        assert ok(await c.call_tool("backlinks", {"slug": old}))["backlinks"] == []

    async with mcp_session(server, server.tokens["admin"], mode) as c:
        assert ok(await c.call_tool("read_page", {"slug": outside}))["body"] == f"from ops: [[{old}]]\n"
        assert ok(await c.call_tool("backlinks", {"slug": old}))["backlinks"] == [{"slug": outside, "title": outside}]

    # one commit for the rename, one for the linker; none for the pages left alone
    assert commit_count(server) == before + 2
    rename_commit, links_commit = reversed(log(server, 2))
    assert rename_commit["author"] == links_commit["author"] == "team_write"
    expect_message(rename_commit["message"], "rename_page", f"{old} -> {new}", mode)
    expect_message(links_commit["message"], "rename_page", f"links in {linker}: {old} -> {new}", mode)
    assert files_of(server, rename_commit["id"]) == {f"{old}.md": "D", f"{new}.md": "A"}
    assert files_of(server, links_commit["id"]) == {f"{linker}.md": "M"}
    assert_head_holds(server, new, page)
    assert_head_holds(server, linker, rewritten)


async def test_rename_index_page_keeps_its_slug(server, uid):
    ns = f"{uid}-ns"
    async with mcp_session(server, server.tokens["admin"]) as c:
        ok(await c.call_tool("save_namespace", {"name": ns}))
        h = ok(await c.call_tool("save_page", {"slug": f"{ns}/index", "body": "home\n"}))["hash"]
        before = commit_count(server)
        result = ok(await c.call_tool("rename_page", {"slug": f"{ns}/index", "title": "A Brand New Home", "basehash": h}))
        assert (result["slug"], result["old_slug"], result["rewritten"], result["failed_links"]) == (f"{ns}/index", f"{ns}/index", [], [])
        page = ok(await c.call_tool("read_page", {"slug": f"{ns}/index"}))
        assert page["title"] == "A Brand New Home" and page["hash"] == result["hash"] != h
        err = assert_refused(await c.call_tool("rename_page", {"slug": f"{ns}/index", "title": "Again", "basehash": h}), "conflict")
        assert err["hash"] == result["hash"]
    assert commit_count(server) == before + 1
    assert files_of(server, "HEAD") == {f"{ns}/index.md": "M"}


# --- backlinks --------------------------------------------------------------------------------


async def test_backlinks_lists_only_accessible_pages(server, mode, uid):
    target = f"team/{uid}"
    sources = {f"team/{uid}-a": "Team A", f"ops/{uid}-b": "Ops B", f"notes/{uid}-c": "Notes C"}
    async with mcp_session(server, server.tokens["admin"], mode) as c:
        for slug, title in sources.items():
            ok(await c.call_tool("save_page", {"slug": slug, "body": f"link: [[{target}|go]]\n", "title": title}))
        everyone = ok(await c.call_tool("backlinks", {"slug": target}))
    assert everyone == {"slug": target, "backlinks": [{"slug": s, "title": sources[s]} for s in sorted(sources)]}

    async with mcp_session(server, server.tokens["team_read"], mode) as c:
        assert ok(await c.call_tool("backlinks", {"slug": target}))["backlinks"] == [{"slug": f"team/{uid}-a", "title": "Team A"}]
        assert_refused(await c.call_tool("backlinks", {"slug": f"ops/{uid}-b"}), "forbidden", "slug")
    async with mcp_session(server, server.tokens["team_ops_write"], mode) as c:
        got = ok(await c.call_tool("backlinks", {"slug": target}))["backlinks"]
        assert [b["slug"] for b in got] == [f"ops/{uid}-b", f"team/{uid}-a"]
        # a deleted linking page no longer counts
        ok(await c.call_tool("delete_page", {"slug": f"ops/{uid}-b"}))
        assert [b["slug"] for b in ok(await c.call_tool("backlinks", {"slug": target}))["backlinks"]] == [f"team/{uid}-a"]


# --- health -----------------------------------------------------------------------------------


async def test_health_reports_missing_and_orphans_per_namespace_and_per_token(server, mode, uid):
    one, two = f"{uid}-one", f"{uid}-two"
    pages = {
        f"{one}/index": f"[[{one}/a]]\n",
        f"{one}/a": f"[[{one}/nothing-here]] and [[{two}/b]] and `[[{one}/in-code]]`\n",
        f"{one}/lonely": "no links at all\n",
        f"{two}/b": "plain\n",
        f"{two}/c": "[[gone]]\n",  # relative: two/gone
    }
    async with mcp_session(server, server.tokens["admin"], mode) as c:
        for ns in (one, two):
            ok(await c.call_tool("save_namespace", {"name": ns}))
        for slug, body in pages.items():
            ok(await c.call_tool("save_page", {"slug": slug, "body": body}))
        report_one = ok(await c.call_tool("health", {"namespace": one}))
        report_two = ok(await c.call_tool("health", {"namespace": two}))
        whole = ok(await c.call_tool("health", {}))

    expected_one = {
        "missing": [{"from": f"{one}/a", "to": f"{one}/nothing-here"}],
        "missing_attachments": [],
        "orphans": [f"{one}/lonely"],
        "stale": [],
        "rebuilding": [],
        "counts": {"missing": 1, "orphans": 1, "stale": 0, "missing_attachments": 0},
    }
    expected_two = {
        "missing": [{"from": f"{two}/c", "to": f"{two}/gone"}],
        "missing_attachments": [],
        "orphans": [f"{two}/c"],
        "stale": [],
        "rebuilding": [],
        "counts": {"missing": 1, "orphans": 1, "stale": 0, "missing_attachments": 0},
    }
    assert {k: v for k, v in report_one.items() if k not in ("storage", "rate_limits", "passages")} == expected_one
    assert {k: v for k, v in report_two.items() if k not in ("storage", "rate_limits", "passages")} == expected_two
    for entry in expected_one["missing"] + expected_two["missing"]:
        assert entry in whole["missing"]
    assert {f"{one}/lonely", f"{two}/c"} <= set(whole["orphans"])
    assert not any(o.startswith((f"{one}/", f"{two}/")) and o not in (f"{one}/lonely", f"{two}/c") for o in whole["orphans"])
    assert whole["counts"]["missing"] >= 2 and whole["counts"]["orphans"] >= 2
    assert "storage" in whole and "passages" in whole  # operators see the storage and index facts; limited tokens do not

    limited = server.create_token(f"health-{uid[-40:]}", ["read"], [one])
    async with mcp_session(server, limited, mode) as c:
        mine = ok(await c.call_tool("health", {}))
        assert mine == expected_one
        assert ok(await c.call_tool("health", {"namespace": one})) == expected_one
        assert_refused(await c.call_tool("health", {"namespace": two}), "forbidden", "namespace")

    # fixing the dangling link and linking the orphan changes the report
    async with mcp_session(server, server.tokens["admin"], mode) as c:
        h = ok(await c.call_tool("read_page", {"slug": f"{one}/index"}))["hash"]
        ok(await c.call_tool("edit_page", {"slug": f"{one}/index", "basehash": h, "edits": [{"oldText": "]]", "newText": "]] [[lonely]]"}]}))
        ok(await c.call_tool("save_page", {"slug": f"{one}/nothing-here", "body": "now it exists\n"}))
        report = ok(await c.call_tool("health", {"namespace": one}))
    assert report["missing"] == [] and report["orphans"] == [] and report["counts"] == {"missing": 0, "orphans": 0, "stale": 0, "missing_attachments": 0}


@pytest.fixture(scope="module")
def aged_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, str]]:
    """A separate instance whose repository holds a page last committed 400 days ago (pushed in by
    an operator before start-up), so health has a stale page to report. Yields (url, admin token,
    the commit time as health prints it)."""
    instance = tmp_path_factory.mktemp("aged") / "instance"
    init = cli(instance, "init")
    token = re.findall(r"hc_[A-Za-z0-9_-]+", init.stdout)[0]
    old = int(time.time()) - 400 * 86400
    env = {**os.environ, "GIT_AUTHOR_DATE": f"@{old} +0000", "GIT_COMMITTER_DATE": f"@{old} +0000"}
    base = ["git", "-c", "user.name=operator", "-c", "user.email=operator@example.invalid"]
    with tempfile.TemporaryDirectory(prefix="e2e-aged-") as tmp:
        work = Path(tmp) / "work"
        subprocess.run([*base, "clone", "-q", str(instance / "wiki"), str(work)], check=True, capture_output=True)
        (work / "notes").mkdir(exist_ok=True)
        (work / "notes" / "ancient.md").write_text("---\ntitle: Ancient\n---\nwritten long ago\n")
        (work / "notes" / "also-old.md").write_text("linked from nowhere, [[notes/ancient]]\n")
        for args in (["add", "-A"], ["commit", "-q", "-m", "planted long ago"], ["push", "-q", "origin", "HEAD"]):
            subprocess.run([*base, *args], cwd=work, check=True, capture_output=True, env=env)
    proc, url, _port, _log = start_server(instance, workers=1)
    try:
        yield url + "/_/mcp", token, datetime.fromtimestamp(old, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    finally:
        stop_process_group(proc)


async def test_health_reports_pages_without_a_commit_for_180_days(aged_server):
    url, token, when = aged_server
    async with mcp_session(url, token) as c:
        report = ok(await c.call_tool("health", {"namespace": "notes"}))
        assert report["stale"] == [{"slug": "notes/also-old", "changed": when}, {"slug": "notes/ancient", "changed": when}]
        assert report["counts"]["stale"] == 2
        assert report["orphans"] == ["notes/also-old"]  # ancient is linked from also-old; index pages never count
        commits = ok(await c.call_tool("recent_changes", {"limit": 1}))["commits"]
        assert commits[0]["author"] == "operator" and commits[0]["message"] == "planted long ago" and commits[0]["time"] == when
        # a new commit makes the page fresh again
        h = ok(await c.call_tool("read_page", {"slug": "notes/ancient"}))["hash"]
        ok(await c.call_tool("edit_page", {"slug": "notes/ancient", "basehash": h, "edits": [{"oldText": "long ago", "newText": "today"}]}))
        report = ok(await c.call_tool("health", {"namespace": "notes"}))
        assert report["stale"] == [{"slug": "notes/also-old", "changed": when}] and report["counts"]["stale"] == 1


# --- recent_changes ---------------------------------------------------------------------------


async def test_recent_changes_agree_with_git_log(server, mode, uid):
    slug = f"notes/{uid}"
    async with mcp_session(server, server.tokens["write"], mode) as c:
        h = ok(await c.call_tool("save_page", {"slug": slug, "body": "one\n"}))["hash"]
        h = ok(await c.call_tool("edit_page", {"slug": slug, "basehash": h, "edits": [{"oldText": "one", "newText": "two"}]}))["hash"]
        ok(await c.call_tool("save_page", {"slug": f"team/{uid}", "body": "team\n"}))
        ok(await c.call_tool("delete_page", {"slug": slug, "basehash": h}))
        commits = ok(await c.call_tool("recent_changes", {"limit": 4}))["commits"]

    expected = log(server, 4)
    assert [c["id"] for c in commits] == [e["id"] for e in expected]
    for got, want in zip(commits, expected, strict=True):
        assert got["author"] == want["author"] and got["message"] == want["message"]
        assert got["time"] == datetime.fromtimestamp(want["time"], UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        assert got["files"] == sorted(files_of(server, got["id"]))
    # ours, newest first, by the token's name
    assert [(c["author"], c["message"].split(" via ")[0], c["files"]) for c in commits] == [
        ("write", f"delete_page: {slug}", [f"{slug}.md"]),
        ("write", f"save_page: team/{uid}", [f"team/{uid}.md"]),
        ("write", f"edit_page: {slug}", [f"{slug}.md"]),
        ("write", f"save_page: {slug}", [f"{slug}.md"]),
    ]
    for commit in commits:
        expect_message(commit["message"], commit["message"].split(":")[0], commit["message"].split(": ", 1)[1].split(" via ")[0], mode)
    times = [c["time"] for c in commits]
    assert times == sorted(times, reverse=True)


async def test_recent_changes_drop_commits_touching_namespaces_outside_access(server, mode, uid):
    team, ops = f"team/{uid}", f"ops/{uid}"
    async with mcp_session(server, server.tokens["admin"], mode) as c:
        h = ok(await c.call_tool("save_page", {"slug": team, "body": "starts in team\n"}))["hash"]
        created = log(server, 1)[0]["id"]
        ok(await c.call_tool("save_page", {"slug": f"ops/{uid}-only", "body": "ops only\n"}))
        ops_only = log(server, 1)[0]["id"]
        ok(await c.call_tool("move_page", {"slug": team, "new_slug": ops, "basehash": h}))
        move = log(server, 1)[0]["id"]
        admin_view = [c["id"] for c in ok(await c.call_tool("recent_changes", {"limit": 3}))["commits"]]
    assert admin_view == [move, ops_only, created]
    assert files_of(server, move) == {f"{team}.md": "D", f"{ops}.md": "A"}

    async with mcp_session(server, server.tokens["team_read"], mode) as c:
        seen = ok(await c.call_tool("recent_changes", {"limit": 200}))["commits"]
    ids = [c["id"] for c in seen]
    assert created in ids
    assert move not in ids and ops_only not in ids  # the move touches ops, so it is dropped whole
    assert all(f.startswith("team/") for c in seen for f in c["files"])

    async with mcp_session(server, server.tokens["team_ops_write"], mode) as c:
        both = [c["id"] for c in ok(await c.call_tool("recent_changes", {"limit": 3}))["commits"]]
    assert both == [move, ops_only, created]


async def test_page_history_hides_commits_touching_namespaces_outside_access(server, uid):
    """The rule of recent_changes holds for page_history too: a team-only token must not learn,
    from the history of a team page, that it was moved to ops and under which slug."""
    team, secret = f"team/{uid}", f"ops/{uid}-secret-plan"
    async with mcp_session(server, server.tokens["admin"]) as c:
        h = ok(await c.call_tool("save_page", {"slug": team, "body": "soon elsewhere\n"}))["hash"]
        ok(await c.call_tool("move_page", {"slug": team, "new_slug": secret, "basehash": h}))
    async with mcp_session(server, server.tokens["team_read"]) as c:
        history = ok(await c.call_tool("page_history", {"slug": team}))
    assert [c["message"].split(" via ")[0] for c in history["commits"]] == [f"save_page: {team}"]
    assert all(f.startswith("team/") for c in history["commits"] for f in c["files"])


async def test_health_is_no_oracle_for_pages_outside_access(server, uid):
    """A team-only token can link to ops pages from its own page; health must not then tell it
    which of those ops pages exist (a missing entry for one, none for the other)."""
    exists, absent = f"ops/{uid}-exists", f"ops/{uid}-absent"
    async with mcp_session(server, server.tokens["admin"]) as c:
        ok(await c.call_tool("save_page", {"slug": exists, "body": "hidden from team\n"}))
    async with mcp_session(server, server.tokens["team_write"]) as c:
        ok(await c.call_tool("save_page", {"slug": f"team/{uid}-probe", "body": f"[[{exists}]] [[{absent}]]\n"}))
        missing = ok(await c.call_tool("health", {"namespace": "team"}))["missing"]
    targets = {m["to"] for m in missing if m["from"] == f"team/{uid}-probe"}
    assert targets in (set(), {exists, absent}), f"health separates {sorted(targets)} from the other ops page"


# --- page_history, read_page at a revision ----------------------------------------------------


async def test_page_history_pages_and_survives_delete(server, mode, uid):
    slug = f"notes/{uid}"
    async with mcp_session(server, server.tokens["write"], mode) as c:
        h = ok(await c.call_tool("save_page", {"slug": slug, "body": "v1\n"}))["hash"]
        ok(await c.call_tool("save_page", {"slug": f"notes/{uid}-other", "body": "not this page\n"}))
        h = ok(await c.call_tool("save_page", {"slug": slug, "basehash": h, "body": "v2\n"}))["hash"]
        h = ok(await c.call_tool("save_page", {"slug": slug, "basehash": h, "title": "Retitled"}))["hash"]
        ok(await c.call_tool("delete_page", {"slug": slug}))

        first = ok(await c.call_tool("page_history", {"slug": slug, "limit": 3}))
        assert first["slug"] == slug and first["more"] is True and first["next_offset"] == 3
        rest = ok(await c.call_tool("page_history", {"slug": slug, "offset": first["next_offset"], "limit": 3}))
        assert rest["more"] is False and rest["next_offset"] is None
        assert ok(await c.call_tool("page_history", {"slug": slug, "offset": 10}))["commits"] == []

    commits = first["commits"] + rest["commits"]
    assert [c["message"].split(" via ")[0] for c in commits] == [f"{t}: {slug}" for t in ("delete_page", "save_page", "save_page", "save_page")]
    assert [c["id"] for c in commits] == [e["id"] for e in log(server, 10, f"{slug}.md")]
    assert all(c["files"] == [f"{slug}.md"] and c["author"] == "write" for c in commits)


async def test_read_page_at_a_revision(server, mode, uid):
    slug = f"notes/{uid}"
    async with mcp_session(server, server.tokens["write"], mode) as c:
        ok(await c.call_tool("save_page", {"slug": f"notes/{uid}-before", "body": "earlier\n"}))
        before_page = log(server, 1)[0]["id"]
        h1 = ok(await c.call_tool("save_page", {"slug": slug, "body": "# Old\n\nold text\n\n## Part\n\nold part\n", "title": "One", "tags": ["x"]}))["hash"]
        h2 = ok(await c.call_tool("save_page", {"slug": slug, "basehash": h1, "body": "new text\n", "title": "Two", "tags": []}))["hash"]
        rev1, rev2 = (c_["id"] for c_ in reversed(ok(await c.call_tool("page_history", {"slug": slug}))["commits"]))

        old = ok(await c.call_tool("read_page", {"slug": slug, "revision": rev1}))
        assert (old["body"], old["hash"], old["title"], old["tags"], old["revision"]) == (
            "# Old\n\nold text\n\n## Part\n\nold part\n", h1, "One", ["x"], rev1,
        )  # fmt: skip
        part = ok(await c.call_tool("read_page", {"slug": slug, "revision": rev1, "section": "part"}))
        assert part["body"] == "## Part\n\nold part\n" and part["hash"] == h1
        window = ok(await c.call_tool("read_page", {"slug": slug, "revision": rev1, "offset": 2, "limit": 3}))
        assert window["body"] == "Old" and window["truncated"] is True and window["next_offset"] == 5
        current = ok(await c.call_tool("read_page", {"slug": slug}))
        assert (current["body"], current["hash"], current["title"]) == ("new text\n", h2, "Two")
        assert "revision" not in current
        assert ok(await c.call_tool("read_page", {"slug": slug, "revision": rev2}))["hash"] == h2

        # a commit that is not in the page's history, real or not, is refused the same way
        assert_refused(await c.call_tool("read_page", {"slug": slug, "revision": before_page}), "validation_error", "revision")
        assert_refused(await c.call_tool("read_page", {"slug": slug, "revision": "0" * 40}), "validation_error", "revision")

    assert blob_at(server, rev1, f"{slug}.md") == h1 and blob_at(server, rev2, f"{slug}.md") == h2
    assert git(server, "show", f"{rev1}:{slug}.md").endswith(old["body"])
    assert_head_holds(server, slug, current)


async def test_page_history_follows_moves_and_renames(server, mode, uid):
    """Moves keep history: after move_page and rename_page the page's history holds every commit
    of its earlier slugs (what git log finds over all its paths), older revisions read and restore."""
    first, second = f"notes/{uid}", f"team/{uid}-moved"
    async with mcp_session(server, server.tokens["admin"], mode) as c:
        h = ok(await c.call_tool("save_page", {"slug": first, "body": "first words\n"}))["hash"]
        h = ok(await c.call_tool("save_page", {"slug": first, "basehash": h, "body": "second words\n"}))["hash"]
        h = ok(await c.call_tool("move_page", {"slug": first, "new_slug": second, "basehash": h}))["hash"]
        renamed = ok(await c.call_tool("rename_page", {"slug": second, "title": f"Renamed {uid}", "basehash": h}))
        third = renamed["slug"]
        history = ok(await c.call_tool("page_history", {"slug": third, "limit": 10}))
        oldest = history["commits"][-1]["id"]
        old = ok(await c.call_tool("read_page", {"slug": third, "revision": oldest}))
        restored = ok(await c.call_tool("restore_page", {"slug": third, "revision": oldest, "basehash": renamed["hash"]}))
        now = ok(await c.call_tool("read_page", {"slug": third}))

    restore, *expected = log(server, 10, f"{first}.md", f"{second}.md", f"{third}.md")
    assert [c_["id"] for c_ in history["commits"]] == [e["id"] for e in expected] and len(expected) == 4
    assert restore["message"].startswith(f"restore_page: {third} from {oldest[:12]}")
    assert [c_["message"].split(" via ")[0] for c_ in history["commits"]] == [
        f"rename_page: {second} -> {third}", f"move_page: {first} -> {second}", f"save_page: {first}", f"save_page: {first}",
    ]  # fmt: skip
    assert history["commits"][0]["files"] == sorted([f"{second}.md", f"{third}.md"])
    assert old["body"] == "first words\n" and old["hash"] == blob_at(server, oldest, f"{first}.md")
    assert restored["restored_from"] == oldest and now["body"] == "first words\n"
    assert_head_holds(server, third, now)


# --- changes pushed into the repository from outside ------------------------------------------


async def test_pushes_from_outside_reach_search_and_links_on_the_next_read(server, uid):
    """A commit pushed into the bare repository reaches search, backlinks and health on the next
    call, in every worker, without a restart; so does its removal."""
    word = "pushed0" + re.sub(r"[^a-z0-9]", "", uid)[:30]  # a digit: a code, found by its words alone (never by meaning)
    source, target, nowhere = f"notes/{uid}-outside", f"notes/{uid}-target", f"notes/{uid}-nowhere"

    async def views() -> list[tuple[list[str], list[str], list[str]]]:
        seen = []
        for _ in range(6):  # separate connections, spread over both workers
            async with mcp_session(server, server.tokens["read"]) as c:
                hits = ok(await c.call_tool("search", {"query": word}))["hits"]
                backlinks = ok(await c.call_tool("backlinks", {"slug": target}))["backlinks"]
                missing = ok(await c.call_tool("health", {"namespace": "notes"}))["missing"]
            seen.append(([h["slug"] for h in hits], [b["slug"] for b in backlinks], [m["to"] for m in missing if m["from"] == source]))
        return seen

    assert set(map(repr, await views())) == {repr(([], [], []))}  # every worker has looked once
    server.plant({
        f"{source}.md": f"---\ntitle: Outside\n---\nA {word} links to [[{target}]] and [[{nowhere}]].\n",
        f"{target}.md": "---\ntitle: Target\n---\nlinked from outside\n",
    }, message="pushed from outside")
    assert await views() == [([source], [source], [nowhere])] * 6
    server.plant({f"{source}.md": None}, message="removed from outside")
    assert await views() == [([], [], [])] * 6
    assert server.stored(f"{target}.md") is not None and server.stored(f"{source}.md") is None


# --- restore_page and delete_page -------------------------------------------------------------


async def test_delete_page_stays_recoverable(server, mode, uid):
    slug = f"notes/{uid}"
    async with mcp_session(server, server.tokens["write"], mode) as c:
        h = ok(await c.call_tool("save_page", {"slug": slug, "body": "keep me\n", "title": "Kept", "tags": ["t"], "pin": True}))["hash"]
        stale = ok(await c.call_tool("save_page", {"slug": f"notes/{uid}-x", "body": "x\n"}))["hash"]
        err = assert_refused(await c.call_tool("delete_page", {"slug": slug, "basehash": stale}), "conflict")
        assert err["hash"] == h
        assert ok(await c.call_tool("delete_page", {"slug": slug, "basehash": h})) == {"slug": slug, "deleted": True, "hash": h}
        deleted_in = log(server, 1)[0]
        assert_refused(await c.call_tool("read_page", {"slug": slug}), "not_found")
        assert server.stored(f"{slug}.md") is None
        assert blob_at(server, f"{deleted_in['id']}~1", f"{slug}.md") == h  # still in history

        err = assert_refused(await c.call_tool("restore_page", {"slug": slug, "basehash": h}), "conflict")
        assert err["hash"] == ""
        created_in = log(server, 2, f"{slug}.md")[1]["id"]  # the last commit that held the page
        restored = ok(await c.call_tool("restore_page", {"slug": slug}))
        assert restored == {"slug": slug, "hash": h, "restored_from": created_in, "changed": True}
        page = ok(await c.call_tool("read_page", {"slug": slug}))
        assert (page["body"], page["title"], page["tags"], page["pin"], page["hash"]) == ("keep me\n", "Kept", ["t"], True, h)

    assert deleted_in["author"] == "write"
    expect_message(deleted_in["message"], "delete_page", slug, mode)
    assert files_of(server, deleted_in["id"]) == {f"{slug}.md": "D"}
    last = log(server, 1)[0]
    expect_message(last["message"], "restore_page", f"{slug} from {restored['restored_from'][:12]}", mode)
    assert files_of(server, "HEAD") == {f"{slug}.md": "A"}
    assert_head_holds(server, slug, page)


async def test_restore_an_older_revision_needs_the_current_hash(server, mode, uid):
    slug = f"notes/{uid}"
    async with mcp_session(server, server.tokens["write"], mode) as c:
        h1 = ok(await c.call_tool("save_page", {"slug": slug, "body": "version one\n", "title": "V1"}))["hash"]
        rev1 = log(server, 1)[0]["id"]
        h2 = ok(await c.call_tool("save_page", {"slug": slug, "basehash": h1, "body": "version two\n", "title": "V2"}))["hash"]
        start = head(server)

        err = assert_refused(await c.call_tool("restore_page", {"slug": slug, "revision": rev1}), "conflict", "basehash")
        assert err["hash"] == h2
        err = assert_refused(await c.call_tool("restore_page", {"slug": slug, "revision": rev1, "basehash": h1}), "conflict", "basehash")
        assert err["hash"] == h2
        assert_refused(await c.call_tool("restore_page", {"slug": slug, "revision": "f" * 40, "basehash": h2}), "validation_error", "revision")
        assert head(server) == start

        restored = ok(await c.call_tool("restore_page", {"slug": slug, "revision": rev1, "basehash": h2}))
        assert restored == {"slug": slug, "hash": h1, "restored_from": rev1, "changed": True}
        page = ok(await c.call_tool("read_page", {"slug": slug}))
        assert (page["body"], page["title"], page["hash"]) == ("version one\n", "V1", h1)
        after = head(server)
        # restoring what is already there changes nothing
        same = ok(await c.call_tool("restore_page", {"slug": slug, "revision": rev1, "basehash": h1}))
        assert same["changed"] is False and same["hash"] == h1
        history = ok(await c.call_tool("page_history", {"slug": slug}))["commits"]

    assert head(server) == after and git(server, "rev-parse", f"{after}~1").strip() == start
    assert [c["message"].split(":")[0] for c in history] == ["restore_page", "save_page", "save_page"]
    assert history[0]["id"] == after
    assert files_of(server, after) == {f"{slug}.md": "M"}
    assert_head_holds(server, slug, page)
