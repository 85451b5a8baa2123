"""Change requests on every storage backend: proposed, validated, dry-run, listed, read, applied as
one change or rejected; who may do which; drift; two appliers at once; a restart keeps them."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from hostcore import SYSTEM, Conflict, Forbidden, InsufficientScope, NotFound, Principal, TooLarge, ValidationError, create_app
from hostcore.domain.change_requests import FOLDER
from hostcore.host.host import Host
from hostcore.service import policy
from hostcore.testing.s3 import prefix_for, s3_server  # noqa: F401  (the fixture)


def _config(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, Any]:
    if backend == "s3":
        s3 = request.getfixturevalue("s3_server")
        config = {"bucket": s3.bucket, "endpoint_url": s3.url, "prefix": prefix_for(tmp_path)}
        return {"PLUGINS": ["s3", "tokens", "sqlite"], "STORAGE": "s3", "SEARCH": "sqlite", "PLUGIN_CONFIG": {"s3": config}}
    return {"PLUGINS": [backend, "tokens", "sqlite"], "STORAGE": backend, "SEARCH": "sqlite"}


@pytest.fixture(params=["git", "fs", pytest.param("s3", marks=pytest.mark.s3)])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def config(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, Any]:
    return _config(backend, request, tmp_path)


@pytest.fixture
def host(config: dict[str, Any], tmp_path: Path):
    host: Host = create_app(config, instance_path=tmp_path / "instance").extensions["hostcore"]
    host.wiki(SYSTEM).save_namespace("notes", title="Notes")
    host.wiki(SYSTEM).save_namespace("team", title="Team")
    yield host
    host.close()


def who(name: str, *scopes: str, namespaces: list[str] | None = None, client: str | None = None) -> Principal:
    return Principal(name, frozenset(scopes), frozenset(namespaces) if namespaces is not None else None, client=client)


BOT = who("bot", "propose", client="claude-code 2.1")
REVIEWER = who("ann", "review")
WRITER = who("wes", "write")


def _seed(host: Host) -> dict[str, str]:
    w = host.wiki(SYSTEM)
    hashes = {}
    for slug, body in {
        "notes/a": "# A\n\nfirst line\n\n## Keep\n\nkeep me\n\n## Tail\n\nold tail\n",
        "notes/b": "bee\n",
        "notes/gone": "to delete\n",
        "notes/linked": "target\n",
        "notes/links-in": "see [[notes/linked]]\n",
        "team/t": "team page\n",
    }.items():
        hashes[slug] = w.save_page(slug, body=body)["hash"]
    return hashes


def _tail_rev(host: Host) -> str:
    return next(s["rev"] for s in host.wiki(SYSTEM).outline("notes/a")["sections"] if s["title"] == "Tail")


def _every_op(host: Host, h: dict[str, str]) -> list[dict[str, Any]]:
    return [
        {"op": "save", "slug": "notes/new", "body": "brand new\n", "title": "New"},
        {"op": "edit", "slug": "notes/b", "basehash": h["notes/b"], "edits": [{"oldText": "bee", "newText": "BEE"}]},
        {"op": "append", "slug": "notes/links-in", "markdown": "appended"},
        {"op": "section", "slug": "notes/a", "section_id": "tail", "rev": _tail_rev(host), "text": "## Tail\n\nnew tail\n"},
        {"op": "move", "slug": "notes/linked", "new_slug": "notes/moved", "basehash": h["notes/linked"]},
        {"op": "delete", "slug": "notes/gone", "basehash": h["notes/gone"]},
    ]


def test_a_change_request_is_proposed_reviewed_and_applied_as_one_change(host: Host, config, tmp_path) -> None:
    h = _seed(host)
    bot = host.wiki(BOT)
    changes = _every_op(host, h)
    checked = bot.validate_change_request(changes, "Tidy notes", "the person asked to tidy notes")
    assert checked["valid"] and checked["errors"] == [] and checked["risk"] == "destructive"
    assert {w["code"] for w in checked["warnings"]} == {"deletes_page", "links_left"}
    made = bot.create_change_request(changes, "Tidy notes", "the person asked to tidy notes", source="https://chat.example/1")
    assert made["state"] == "open" and made["risk"] == "destructive" and made["namespaces"] == ["notes"]
    assert host.wiki(SYSTEM).page("notes/b").body == "bee\n"  # proposed, not written
    assert "notes/new" not in [p["slug"] for p in host.wiki(SYSTEM).list_pages("notes")["pages"]]

    listed = host.wiki(who("reader", "read")).list_change_requests()
    assert [r["id"] for r in listed["change_requests"]] == [made["id"]]
    assert listed["change_requests"][0]["author"] == "bot" and listed["change_requests"][0]["client"] == "claude-code 2.1"
    view = host.wiki(who("reader", "read")).read_change_request(made["id"])
    assert view["reason"] == "the person asked to tidy notes" and view["source"] == "https://chat.example/1"
    diffs = {p["slug"]: p["diff"] for p in view["pages"]}
    assert "-bee\n+BEE" in diffs["notes/b"] and "+new tail" in diffs["notes/a"] and "+brand new" in diffs["notes/new"]
    assert "-to delete" in diffs["notes/gone"] and "+appended" in diffs["notes/links-in"]
    assert all(p["outcome"] == "ok" for p in view["pages"])

    with pytest.raises(InsufficientScope):  # a proposer never writes
        bot.apply_change_request(made["id"])
    with pytest.raises(InsufficientScope, match="destructive"):  # a writer applies additive requests only
        host.wiki(WRITER).apply_change_request(made["id"])
    applied = host.wiki(REVIEWER).apply_change_request(made["id"], note="yes, go ahead")
    assert applied["state"] == "applied" and applied["decided_by"] == "ann" and applied["note"] == "yes, go ahead"
    w = host.wiki(SYSTEM)
    assert w.page("notes/b").body == "BEE\n" and w.page("notes/new").body == "brand new\n"
    assert "new tail" in w.page("notes/a").body and w.page("notes/links-in").body.endswith("appended\n")
    assert w.page("notes/moved").body == "target\n"
    for gone in ("notes/gone", "notes/linked"):
        with pytest.raises(NotFound):
            w.page(gone)
    if host.storage.has_history:
        commits = w.recent_changes(limit=3)["commits"]
        assert commits[0]["message"].startswith(f"apply_change_request: {made['id']}: Tidy notes")
        top = host.storage.history(limit=1)[0]
        assert "Reason: the person asked to tidy notes" in top.message and "Approved-by: ann" in top.message
        assert "Proposed-by: bot via claude-code 2.1" in top.message and top.author == "ann"
        assert set(top.paths) >= {"notes/b.md", "notes/new.md", "notes/gone.md", f"{FOLDER}/{made['id']}.json"}
        blamed = w.blame_page("notes/b")  # blame names the change request, its reason and its approver
        bee = next(c for c in blamed["changes"] if c["id"] == next(x["change"] for x in blamed["lines"] if x["text"] == "BEE"))
        assert bee["author"] == "ann" and "Reason: the person asked to tidy notes" in (bee["reason"] or "")

    with pytest.raises(Conflict, match="applied already"):
        host.wiki(REVIEWER).apply_change_request(made["id"])
    assert host.wiki(REVIEWER).list_change_requests()["total"] == 0
    assert host.wiki(REVIEWER).list_change_requests(state="applied")["change_requests"][0]["id"] == made["id"]
    assert host.wiki(REVIEWER).dry_run_change_request(made["id"])["ready"] is False

    # a restart (a new host on the same storage) keeps them
    host.close()
    again: Host = create_app(config, instance_path=tmp_path / "instance").extensions["hostcore"]
    try:
        kept = again.wiki(REVIEWER).read_change_request(made["id"])
        assert kept["state"] == "applied" and kept["decided_by"] == "ann" and kept["title"] == "Tidy notes"
        hashes = {c["slug"]: c["hash"] for c in kept["applied"]}
        assert hashes["notes/b"] == again.wiki(SYSTEM).page("notes/b").hash and hashes["notes/gone"] == ""
    finally:
        again.close()


def test_validation_lists_every_problem_and_create_saves_nothing(host: Host) -> None:
    h = _seed(host)
    bot = host.wiki(BOT)
    stale = h["notes/a"]
    host.wiki(SYSTEM).save_page("notes/b", basehash=h["notes/b"], body="changed\n")
    changes = [
        {"op": "save", "slug": "notes/b", "basehash": h["notes/b"], "body": "x\n"},
        {"op": "edit", "slug": "notes/nope", "basehash": stale, "edits": [{"oldText": "a", "newText": "b"}]},
        {"op": "delete", "slug": "notes/a"},
        {"op": "save", "slug": "notes/a", "basehash": stale, "body": "twice\n"},
        {"op": "save", "slug": "notes/a2", "body": "ok\n", "pin": True},
    ]
    checked = bot.validate_change_request(changes, "", "because")
    by_field = {e["field"]: e for e in checked["errors"]}
    assert not checked["valid"]
    assert by_field["title"]["code"] == "validation_error"
    assert by_field["changes[0].basehash"]["code"] == "conflict" and by_field["changes[0].basehash"]["fix"]
    assert by_field["changes[1].slug"]["code"] == "conflict"  # edit of a page that is not there
    assert by_field["changes[2].basehash"]["message"].endswith("is required for op 'delete'")
    assert by_field["changes[3].slug"]["message"].startswith("changes[3].slug: 'notes/a' is changed by changes[2] already")
    assert "changes[4]" not in str(by_field)
    with pytest.raises(ValidationError) as caught:
        bot.create_change_request(changes, "", "because")
    assert caught.value.field == "title" and len(caught.value.data["errors"]) == len(checked["errors"])
    assert host.storage.list(FOLDER) == []
    with pytest.raises(ValidationError, match="changes\\[0\\]"):
        bot.create_change_request([{"op": "save", "slug": ".changes/x", "body": "no"}], "t", "r")


def test_drifted_bases_need_refresh_and_nothing_is_written(host: Host) -> None:
    h = _seed(host)
    bot = host.wiki(BOT)
    made = bot.create_change_request(
        [
            {"op": "edit", "slug": "notes/a", "basehash": h["notes/a"], "edits": [{"oldText": "keep me", "newText": "kept"}]},
            {"op": "save", "slug": "notes/b", "basehash": h["notes/b"], "body": "saved\n"},
        ],
        "Two", "asked",
    )  # fmt: skip
    w = host.wiki(SYSTEM)
    w.edit_page("notes/a", h["notes/a"], [{"oldText": "old tail", "newText": "other tail"}])  # elsewhere: rebases
    run = w.dry_run_change_request(made["id"])
    assert [c["outcome"] for c in run["changes"]] == ["rebased", "ok"] and run["ready"] and not run["needs_refresh"]
    moved_on = w.save_page("notes/b", basehash=h["notes/b"], body="someone else\n")
    run = w.dry_run_change_request(made["id"])
    assert [c["outcome"] for c in run["changes"]] == ["rebased", "needs_refresh"] and run["needs_refresh"] and not run["ready"]
    assert run["changes"][1]["hash"] == moved_on["hash"] and run["changes"][1]["code"] == "conflict"
    a_before = w.page("notes/a").hash
    with pytest.raises(Conflict) as caught:
        host.wiki(REVIEWER).apply_change_request(made["id"])
    assert caught.value.data["needs_refresh"] is True and caught.value.data["changes"][0]["index"] == 1
    assert w.page("notes/a").hash == a_before and w.page("notes/b").body == "someone else\n"
    assert w.read_change_request(made["id"])["state"] == "open"
    diff = w.read_change_request(made["id"])["pages"][1]["diff"]
    assert "-bee\n+saved" in diff  # against the text it was made on
    w.edit_page("notes/a", w.page("notes/a").hash, [{"oldText": "keep me", "newText": "keep me too"}])  # the same line
    assert w.dry_run_change_request(made["id"])["changes"][0]["outcome"] == "needs_refresh"


def test_who_sees_applies_and_rejects(host: Host) -> None:
    h = _seed(host)
    bot = host.wiki(BOT)
    both = bot.create_change_request(
        [{"op": "save", "slug": "team/new", "body": "t\n"}, {"op": "save", "slug": "notes/new", "body": "n\n"}], "Both", "asked"
    )
    additive = bot.create_change_request([{"op": "append", "slug": "notes/b", "markdown": "more"}], "Append", "asked")
    structural = bot.create_change_request(
        [{"op": "save", "slug": "notes/b", "basehash": h["notes/b"], "body": "over\n"}], "Over", "asked"
    )
    assert (both["risk"], additive["risk"], structural["risk"]) == ("additive", "additive", "structural")
    notes_only = host.wiki(who("nora", "review", namespaces=["notes"]))
    assert {r["id"] for r in notes_only.list_change_requests()["change_requests"]} == {additive["id"], structural["id"]}
    with pytest.raises(NotFound):
        notes_only.read_change_request(both["id"])
    with pytest.raises(NotFound):
        notes_only.apply_change_request(both["id"])
    with pytest.raises(InsufficientScope):
        host.wiki(who("r", "read")).create_change_request([{"op": "save", "slug": "notes/x", "body": "x"}], "x", "y")
    outside = host.wiki(who("team-bot", "propose", namespaces=["team"]))
    with pytest.raises(ValidationError) as caught:
        outside.create_change_request([{"op": "save", "slug": "notes/x", "body": "x"}], "x", "y")
    assert caught.value.data["errors"][0]["code"] == "forbidden"
    assert host.wiki(WRITER).list_change_requests(namespace="team")["total"] == 1
    assert host.wiki(WRITER).list_change_requests(author="nobody")["total"] == 0

    assert host.wiki(WRITER).apply_change_request(additive["id"], note="ok")["state"] == "applied"
    assert host.wiki(SYSTEM).page("notes/b").body.endswith("more\n")
    with pytest.raises(InsufficientScope, match="review"):
        host.wiki(WRITER).reject_change_request(structural["id"])
    rejected = host.wiki(REVIEWER).reject_change_request(structural["id"], note="not now")
    assert rejected["state"] == "rejected" and rejected["note"] == "not now"
    with pytest.raises(Conflict, match="rejected already"):
        host.wiki(REVIEWER).apply_change_request(structural["id"])
    assert bot.reject_change_request(both["id"], note="withdrawn")["decided_by"] == "bot"  # its author withdraws it
    assert host.wiki(SYSTEM).list_change_requests()["total"] == 0
    assert host.wiki(SYSTEM).list_change_requests(state=None, limit=2)["next_offset"] == 2
    with pytest.raises(ValidationError):
        host.wiki(SYSTEM).read_change_request("../notes/a")


def test_two_appliers_at_once_one_wins_and_nothing_lands_twice(host: Host) -> None:
    _seed(host)
    made = host.wiki(BOT).create_change_request(
        [{"op": "append", "slug": "notes/b", "markdown": "once"}, {"op": "save", "slug": "notes/c", "body": "c\n"}],
        "Race",
        "asked",
    )
    barrier = threading.Barrier(2)
    results: list[object] = []

    def apply() -> None:
        wiki = host.wiki(REVIEWER)
        barrier.wait()
        try:
            results.append(wiki.apply_change_request(made["id"]))
        except Conflict as exc:
            results.append(exc)

    threads = [threading.Thread(target=apply) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wins = [r for r in results if isinstance(r, dict)]
    losses = [r for r in results if isinstance(r, Conflict)]
    assert len(wins) == 1 and len(losses) == 1, results
    assert "applied already" in str(losses[0])
    assert host.wiki(SYSTEM).page("notes/b").body.count("once") == 1


def test_change_requests_stay_out_of_pages_search_and_history(host: Host) -> None:
    _seed(host)
    host.wiki(BOT).create_change_request([{"op": "save", "slug": "notes/zz", "body": "secret words\n"}], "Hidden", "asked")
    w = host.wiki(SYSTEM)
    assert all(not p["slug"].startswith(".") for p in w.list_pages()["pages"])
    assert [n["name"] for n in w.list_namespaces()["namespaces"]] == ["notes", "team"]
    assert w.search("words")["hits"] == [] and w.search("team")["hits"]  # the index works, and holds no request
    if host.storage.has_history:
        assert all(".changes" not in f for c in w.recent_changes(limit=20)["commits"] for f in c["files"])


def test_a_namespace_under_review_turns_writes_into_change_requests(host: Host) -> None:
    h = _seed(host)
    admin = host.wiki(SYSTEM)
    admin.save_namespace("notes", basehash=admin.read_namespace("notes")["hash"], review=True)
    assert admin.read_namespace("notes")["review"] is True
    wes = host.wiki(who("wes", "write", client="cursor 1.0"))
    saved = wes.save_page("notes/b", basehash=h["notes/b"], body="changed\n")
    assert saved["changed"] is False and saved["proposed"].startswith("cr-") and "review scope" in saved["review"]
    edited = wes.edit_page("notes/a", h["notes/a"], [{"oldText": "keep me", "newText": "kept"}])
    rebasing = wes.edit_page("notes/a", h["notes/a"], [{"oldText": "first line", "newText": "line one"}], rebase=True)
    assert rebasing["proposed"] and rebasing["rebased"] is False and "line one" not in admin.page("notes/a").body
    deleted = wes.delete_page("notes/gone")
    appended = wes.append_to_page("notes/b", "more")
    several = wes.apply_changes([{"op": "save", "slug": "notes/n1", "body": "1"}, {"op": "delete", "slug": "notes/linked"}])
    assert all(r["proposed"] for r in (edited, deleted, appended, several)) and not several["changed"]
    assert admin.page("notes/b").body == "bee\n" and admin.page("notes/gone").body == "to delete\n"
    assert not admin.storage.exists("notes/n1.md")
    listed = admin.list_change_requests(author="wes")["change_requests"]
    assert len(listed) == 6 and listed[-1]["title"] == "save_page: notes/b" and listed[-1]["client"] == "cursor 1.0"
    with pytest.raises(Conflict):  # a stale write is refused as before, not proposed
        wes.save_page("notes/b", basehash="0" * 40, body="x")
    with pytest.raises(Forbidden, match="takes changes by review"):  # writes that cannot be proposed are refused
        wes.move_page("notes/b", "notes/b2", h["notes/b"])
    with pytest.raises(Forbidden, match="takes changes by review"):  # a writer applies no additive request here either
        wes.apply_change_request(appended["proposed"])
    assert wes.save_page("team/t", basehash=h["team/t"], body="lands\n")["changed"]  # other namespaces as before
    reviewer = host.wiki(REVIEWER)
    assert reviewer.save_page("notes/b", basehash=h["notes/b"], body="by a reviewer\n")["changed"]
    assert "proposed" not in reviewer.apply_changes([{"op": "save", "slug": "notes/n2", "body": "2"}])
    assert reviewer.apply_change_request(appended["proposed"])["state"] == "applied"
    assert admin.page("notes/b").body == "by a reviewer\n\nmore\n"
    with pytest.raises(Conflict) as caught:  # its base moved on: the reviewer's own save came first
        reviewer.apply_change_request(saved["proposed"])
    assert caught.value.data["needs_refresh"] is True


def test_a_request_too_large_to_store_is_refused_whole(host: Host, monkeypatch: pytest.MonkeyPatch) -> None:
    from hostcore.domain import change_requests

    _seed(host)
    monkeypatch.setattr(change_requests, "MAX_RECORD_BYTES", 2000)
    with pytest.raises(TooLarge) as caught:
        host.wiki(BOT).create_change_request([{"op": "save", "slug": "notes/big", "body": "x" * 3000}], "Big", "asked")
    assert caught.value.field == "changes" and "Split it" in caught.value.message
    assert host.storage.list(FOLDER) == []


def test_two_hosts_on_one_storage_share_change_requests(host: Host, config, tmp_path) -> None:
    h = _seed(host)
    other: Host = create_app(config, instance_path=tmp_path / "instance").extensions["hostcore"]
    try:
        made = host.wiki(BOT).create_change_request(
            [{"op": "save", "slug": "notes/b", "basehash": h["notes/b"], "body": "from host one\n"}], "Shared", "asked"
        )
        assert [r["id"] for r in other.wiki(REVIEWER).list_change_requests()["change_requests"]] == [made["id"]]
        other.wiki(REVIEWER).apply_change_request(made["id"])
        assert host.wiki(SYSTEM).page("notes/b").body == "from host one\n"
        with pytest.raises(Conflict, match="applied already"):
            host.wiki(REVIEWER).apply_change_request(made["id"])
    finally:
        other.close()


def test_export_and_import_carry_change_requests_to_another_backend(host: Host, backend: str, tmp_path) -> None:
    from hostcore.service.migration import export_wiki, import_wiki

    h = _seed(host)
    made = host.wiki(BOT).create_change_request(
        [{"op": "save", "slug": "notes/b", "basehash": h["notes/b"], "body": "moved with it\n"}], "Travels", "asked"
    )
    export_wiki(host.storage, tmp_path / "export")
    target_kind = "fs" if backend != "fs" else "git"
    target: Host = create_app(
        {"PLUGINS": [target_kind, "tokens"], "STORAGE": target_kind}, instance_path=tmp_path / "target"
    ).extensions["hostcore"]
    try:
        import_wiki(target.storage, tmp_path / "export", tmp_path / "state.json")
        assert target.wiki(REVIEWER).read_change_request(made["id"])["title"] == "Travels"
        target.wiki(REVIEWER).apply_change_request(made["id"])
        assert target.wiki(SYSTEM).page("notes/b").body == "moved with it\n"
    finally:
        target.close()


def test_a_reviewer_sees_both_sides_of_a_drifted_page_and_applies_the_resolved_text(host: Host, backend: str) -> None:
    h = _seed(host)
    made = host.wiki(BOT).create_change_request(
        [
            {"op": "edit", "slug": "notes/b", "basehash": h["notes/b"], "edits": [{"oldText": "bee", "newText": "BEE"}]},
            {"op": "append", "slug": "notes/links-in", "markdown": "appended"},
        ],
        "Shout", "asked", source="https://example.org/thread",
    )  # fmt: skip
    review = host.wiki(REVIEWER).review_change_request(made["id"])
    first = review["changes"][0]
    assert (first["outcome"], first["before"], first["after"]) == ("ok", "bee\n", "BEE\n")
    assert review["changes"][1]["after"].endswith("appended\n") and review["risk"] == "structural"
    assert review["request"]["source"] == "https://example.org/thread" and review["may_apply"] and review["may_reject"]
    theirs = host.wiki(SYSTEM).save_page("notes/b", basehash=h["notes/b"], body="bee and wasp\n")
    review = host.wiki(REVIEWER).review_change_request(made["id"])
    first = review["changes"][0]
    assert (first["outcome"], first["theirs"], first["proposed"], first["hash"]) == ("needs_refresh", "bee and wasp\n", "BEE\n", theirs["hash"])
    assert first["resolvable"] and not first["before"] and not first["after"]
    writer = host.wiki(WRITER).review_change_request(made["id"])
    assert not writer["may_apply"] and not writer["may_reject"]  # structural: the review scope decides
    assert host.wiki(BOT).review_change_request(made["id"])["may_reject"]  # its author may withdraw it
    with pytest.raises(ValidationError, match="basehash"):
        host.wiki(REVIEWER).apply_change_request(made["id"], resolutions=[{"index": 0, "basehash": "", "body": "x"}])  # type: ignore[typeddict-item]
    with pytest.raises(ValidationError, match="append"):
        host.wiki(REVIEWER).apply_change_request(made["id"], resolutions=[{"index": 1, "basehash": "h", "body": "x"}])
    with pytest.raises(ValidationError, match="0 to 1"):
        host.wiki(REVIEWER).apply_change_request(made["id"], resolutions=[{"index": 5, "basehash": "h", "body": "x"}])
    resolved = [{"index": 0, "basehash": theirs["hash"], "body": "BEE and wasp\n"}]
    host.wiki(SYSTEM).append_to_page("notes/b", "late")  # the page moves on after the reviewer resolved it
    with pytest.raises(Conflict) as caught:
        host.wiki(REVIEWER).apply_change_request(made["id"], resolutions=resolved)  # type: ignore[arg-type]
    assert caught.value.data["needs_refresh"] is True and host.wiki(SYSTEM).page("notes/links-in").body == "see [[notes/linked]]\n"
    now = host.wiki(SYSTEM).page("notes/b")
    resolved = [{"index": 0, "basehash": now.hash, "body": "BEE and wasp\n\nlate\n"}]
    done = host.wiki(REVIEWER).apply_change_request(made["id"], "merged by hand", resolved)  # type: ignore[arg-type]
    assert done["state"] == "applied" and [c["op"] for c in done["changes"]] == ["save", "append"]
    assert host.wiki(SYSTEM).page("notes/b").body == "BEE and wasp\n\nlate\n"
    assert host.wiki(SYSTEM).page("notes/links-in").body.endswith("appended\n")
    if backend != "fs":  # the fs storage keeps no history
        message = host.wiki(SYSTEM).page_history("notes/b", 0, 1)["commits"][0]["message"]
        assert "Resolved-by: ann (changes 0)" in message and "Approved-by: ann" in message
    assert host.wiki(SYSTEM).read_change_request(made["id"])["state"] == "applied"
    closed = host.wiki(REVIEWER).review_change_request(made["id"])
    assert not closed["may_apply"] and not closed["may_reject"] and closed["changes"][0]["outcome"] == "closed"


def test_a_token_that_may_only_propose_gets_its_writes_as_change_requests(host: Host) -> None:
    h = _seed(host)
    bot = host.wiki(BOT)
    saved = bot.save_page("notes/b", h["notes/b"], "over\n")
    assert saved["proposed"].startswith("cr-") and not saved["changed"] and saved["hash"] == h["notes/b"]
    assert saved["review_url"].endswith(f"/_/review/{saved['proposed']}") and "may only propose" in saved["review"]
    edited = bot.edit_page("notes/b", h["notes/b"], [{"oldText": "bee", "newText": "BEE"}])
    appended = bot.append_to_page("notes/b", "more")
    deleted = bot.delete_page("notes/gone", h["notes/gone"])
    several = bot.apply_changes([{"op": "save", "slug": "notes/fresh", "body": "new\n"}])
    dry = bot.edit_page("notes/b", h["notes/b"], [{"oldText": "bee", "newText": "BEE"}], dry_run=True)
    assert "proposed" not in dry and "+BEE" in dry["diff"]  # a dry run proposes nothing
    ids = [r["proposed"] for r in (saved, edited, appended, deleted, several)]
    w = host.wiki(SYSTEM)
    assert w.page("notes/b").body == "bee\n" and w.page("notes/gone") and not w.storage.exists("notes/fresh.md")
    records = {r["id"]: r for r in w.list_change_requests(author="bot")["change_requests"]}
    assert set(ids) == set(records) and records[ids[2]]["risk"] == "additive" and records[ids[3]]["risk"] == "destructive"
    assert w.read_change_request(ids[0])["reason"] == "save_page by bot via claude-code 2.1, with a token that may only propose"
    with pytest.raises(Forbidden):
        host.wiki(who("team-bot", "propose", namespaces=["team"])).save_page("notes/x", None, "x")
    with pytest.raises(InsufficientScope):
        host.wiki(who("r", "read")).save_page("notes/x", None, "x")
    with pytest.raises(InsufficientScope):
        bot.move_page("notes/b", "notes/c", h["notes/b"])  # a write tool that does not propose stays the writers'
    host.wiki(REVIEWER).apply_change_request(ids[1])
    assert w.page("notes/b").body == "BEE\n"


def test_the_propose_scope_admits_a_call_to_the_write_tools_that_propose(host: Host) -> None:
    admits = {name: t.admits for name, t in host.tools.items() if t.scope == "write"}
    assert {n for n, s in admits.items() if s == "propose"} == {"save_page", "edit_page", "delete_page", "append_to_page", "apply_changes"}
    assert admits["move_page"] == "write" and host.tools["read_page"].admits == "read"
    save = host.tools["save_page"]  # a reader is refused (or stepped up) with the scope that does the whole job
    assert policy.call_scope(who("r", "read"), save.scope, save.admits) == "write"
    assert policy.call_scope(BOT, save.scope, save.admits) == "propose"


def test_a_rename_rewrites_the_links_to_it_in_the_same_change(host: Host, backend: str) -> None:
    h = _seed(host)
    w = host.wiki(SYSTEM)
    w.save_page("team/far", body="see [[notes/linked]]\n")  # another namespace: left as written
    made = host.wiki(BOT).create_change_request(
        [{"op": "rename", "slug": "notes/linked", "basehash": h["notes/linked"], "title": "Linked Target"}], "Rename", "asked"
    )
    assert made["risk"] == "destructive"
    review = host.wiki(REVIEWER).review_change_request(made["id"])
    assert review["changes"][0]["new_slug"] == "notes/linked-target" and review["changes"][0]["outcome"] == "ok"
    assert review["changes"][0]["rewrites"] == ["notes/links-in"]  # what the reviewer is shown besides
    clash = host.wiki(BOT).validate_change_request([
        {"op": "rename", "slug": "notes/linked", "basehash": h["notes/linked"], "title": "Linked Target"},
        {"op": "append", "slug": "notes/links-in", "markdown": "more"},
    ], "Both", "asked")  # fmt: skip
    assert not clash["valid"] and "changes[0] writes too" in clash["errors"][0]["message"]
    with pytest.raises(InsufficientScope):
        host.wiki(WRITER).apply_change_request(made["id"])
    done = host.wiki(REVIEWER).apply_change_request(made["id"])
    assert done["changes"][0] == {"op": "rename", "slug": "notes/linked-target", "old_slug": "notes/linked",
                                  "hash": w.page("notes/linked-target").hash, "changed": True}  # fmt: skip
    assert w.page("notes/linked-target").title == "Linked Target" and not w.storage.exists("notes/linked.md")
    assert w.page("notes/links-in").body == "see [[notes/linked-target]]\n"
    assert w.page("team/far").body == "see [[notes/linked]]\n"
    assert w.backlinks("notes/linked-target")["backlinks"][0]["slug"] == "notes/links-in"
    if backend == "git":  # one change: the rename and the rewritten link
        files = w.recent_changes(1)["commits"][0]["files"]
        assert {"notes/linked-target.md", "notes/linked.md", "notes/links-in.md"} <= set(files)
