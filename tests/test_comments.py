"""Comments per heading on every storage backend: threads keep to their heading, move with their
page, are read page by page; who may post, edit and delete; limits name their field; two posts at
once both land."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from hostcore import SYSTEM, Conflict, Forbidden, InsufficientScope, NotFound, Principal, ValidationError, create_app
from hostcore.domain import comments as dom
from hostcore.host.host import Host
from hostcore.testing.s3 import s3_server  # noqa: F401  (the fixture)

from .test_change_requests import _config

BODY = "intro\n\n# Install\n\nrun it\n\n## Linux\n\napt\n\n# Usage\n\nuse it\n"


@pytest.fixture(params=["git", "fs", pytest.param("s3", marks=pytest.mark.s3)])
def host(request: pytest.FixtureRequest, tmp_path: Path):
    host: Host = create_app(_config(request.param, request, tmp_path), instance_path=tmp_path / "instance").extensions["hostcore"]
    w = host.wiki(SYSTEM)
    w.save_namespace("notes", title="Notes")
    w.save_namespace("team", title="Team")
    w.save_page("notes/guide", body=BODY, title="Guide")
    w.save_page("team/t", body="# T\n\nteam\n")
    yield host
    host.close()


def who(name: str, *scopes: str, namespaces: list[str] | None = None, client: str | None = None) -> Principal:
    return Principal(name, frozenset(scopes), frozenset(namespaces) if namespaces is not None else None, client=client)


READER = who("rita", "read", namespaces=["notes"], client="claude-code 2.1")
ANA = who("ana", "write")
ADMIN = who("root", "admin")


def test_a_post_lands_in_its_heading_thread_newest_last(host: Host) -> None:
    w = host.wiki(ANA)
    first = w.post_comment("notes/guide", "install", "  Which version?  ")
    w.post_comment("notes/guide", "install", "The latest.")
    w.post_comment("notes/guide", "usage", "Looks fine")
    assert first["text"] == "Which version?" and first["count"] == 1 and first["id"].startswith("c-")
    thread = host.wiki(READER).read_comment_thread("notes/guide", "install")
    assert [c["text"] for c in thread["comments"]] == ["Which version?", "The latest."]
    assert thread["heading"] == "Install" and not thread["orphaned"] and thread["total"] == 2
    assert thread["comments"][0]["author"] == "ana"
    listed = host.wiki(READER).list_comment_threads("notes/guide")
    assert [(t["section_id"], t["count"]) for t in listed["threads"]] == [("install", 2), ("usage", 1)]
    assert listed["total_comments"] == 3
    assert host.storage.exists(dom.record_path("notes/guide"))


def test_a_thread_reads_page_by_page(host: Host) -> None:
    w = host.wiki(ANA)
    for i in range(5):
        w.post_comment("notes/guide", "_top", f"comment {i}")
    first = w.read_comment_thread("notes/guide", "_top", 0, 2)
    assert [c["text"] for c in first["comments"]] == ["comment 0", "comment 1"] and first["more"]
    last = w.read_comment_thread("notes/guide", "_top", 4, 2)
    assert [c["text"] for c in last["comments"]] == ["comment 4"] and not last["more"] and last["next_offset"] is None
    assert w.read_comment_thread("notes/guide", "linux")["comments"] == []


def test_all_threads_at_once_keep_the_newest_of_each(host: Host) -> None:
    w = host.wiki(ANA)
    for i in range(3):
        w.post_comment("notes/guide", "usage", f"u{i}")
    w.post_comment("notes/guide", "install", "i0")
    threads = w.comment_threads("notes/guide", newest=2)
    assert [(t["section_id"], [c["text"] for c in t["comments"]], t["total"], t["more"]) for t in threads] == [
        ("install", ["i0"], 1, False), ("usage", ["u1", "u2"], 3, True)]  # fmt: skip
    with pytest.raises(Forbidden):
        host.wiki(READER).comment_threads("team/t")


def test_a_reader_posts_and_an_assistants_mentions_are_stripped(host: Host) -> None:
    posted = host.wiki(READER).post_comment("notes/guide", "usage", "@ana see ana@example.org, cc @bob", mentions=False)
    assert posted["text"] == "ana see ana@example.org, cc bob"
    kept = host.wiki(ANA).post_comment("notes/guide", "usage", "@rita thanks")
    assert kept["text"] == "@rita thanks"
    assert host.wiki(ANA).read_comment_thread("notes/guide", "usage")["comments"][0]["client"] == "claude-code 2.1"


def test_namespace_access_and_scope_are_the_pages(host: Host) -> None:
    with pytest.raises(Forbidden):
        host.wiki(READER).post_comment("team/t", "t", "hello")
    with pytest.raises(Forbidden):
        host.wiki(READER).list_comment_threads("team/t")
    with pytest.raises(InsufficientScope):
        host.wiki(who("nobody")).read_comment_thread("notes/guide", "install")
    assert not host.storage.exists(dom.record_path("team/t"))


@pytest.mark.parametrize(
    ("section", "text", "field"),
    [("install", "", "text"), ("install", "x" * (dom.MAX_TEXT + 1), "text"), ("install", "bell \x07", "text"),
     ("nowhere", "hi", "section_id"), ("install", 5, "text")],
)  # fmt: skip
def test_bad_posts_name_their_field_and_change_nothing(host: Host, section: str, text: Any, field: str) -> None:
    with pytest.raises((ValidationError, NotFound)) as caught:
        host.wiki(ANA).post_comment("notes/guide", section, text)
    assert caught.value.field == field
    assert not host.storage.exists(dom.record_path("notes/guide"))


def test_a_missing_page_is_not_found(host: Host) -> None:
    with pytest.raises(NotFound) as caught:
        host.wiki(ANA).post_comment("notes/none", "_top", "hi")
    assert caught.value.field == "slug"


def test_authors_edit_and_delete_their_own_admins_delete_any(host: Host) -> None:
    mine = host.wiki(ANA).post_comment("notes/guide", "install", "typo hre")
    theirs = host.wiki(READER).post_comment("notes/guide", "install", "mine")
    host.wiki(ANA).edit_comment("notes/guide", mine["id"], "typo here")
    with pytest.raises(Forbidden) as caught:
        host.wiki(ANA).edit_comment("notes/guide", theirs["id"], "changed")
    assert caught.value.field == "comment_id"
    with pytest.raises(Forbidden):
        host.wiki(ANA).delete_comment("notes/guide", theirs["id"])
    with pytest.raises(Forbidden):
        host.wiki(ADMIN).edit_comment("notes/guide", theirs["id"], "an admin may not put words in anyone's mouth")
    comments = host.wiki(ANA).read_comment_thread("notes/guide", "install")["comments"]
    assert [(c["text"], bool(c["edited"])) for c in comments] == [("typo here", True), ("mine", False)]
    host.wiki(ADMIN).delete_comment("notes/guide", theirs["id"])
    host.wiki(ANA).delete_comment("notes/guide", mine["id"])
    assert host.wiki(ANA).list_comment_threads("notes/guide")["threads"] == []
    with pytest.raises(NotFound) as gone:
        host.wiki(ANA).delete_comment("notes/guide", mine["id"])
    assert gone.value.field == "comment_id"


def test_a_move_and_a_rename_take_the_threads_along(host: Host) -> None:
    w = host.wiki(ANA)
    w.post_comment("notes/guide", "install", "kept")
    moved = w.move_page("notes/guide", "notes/manual", w.read_page("notes/guide")["hash"])
    assert w.read_comment_thread("notes/manual", "install")["comments"][0]["text"] == "kept"
    assert not host.storage.exists(dom.record_path("notes/guide"))
    renamed = w.rename_page("notes/manual", "Handbook", moved["hash"])
    assert renamed["slug"] == "notes/handbook"
    assert w.list_comment_threads("notes/handbook")["total_comments"] == 1


def test_a_move_among_other_changes_takes_the_threads_along(host: Host) -> None:
    w = host.wiki(ANA)
    w.post_comment("notes/guide", "usage", "along")
    h = w.read_page("notes/guide")["hash"]
    w.apply_changes([{"op": "move", "slug": "notes/guide", "new_slug": "notes/moved", "basehash": h},
                     {"op": "save", "slug": "notes/other", "body": "x"}])  # fmt: skip
    assert w.read_comment_thread("notes/moved", "usage")["comments"][0]["text"] == "along"
    assert not host.storage.exists(dom.record_path("notes/guide"))


def test_a_move_merges_with_comments_left_by_a_deleted_page(host: Host) -> None:
    w = host.wiki(ANA)
    w.save_page("notes/old", body="# Install\n\nx\n")
    w.post_comment("notes/old", "install", "left behind")
    w.delete_page("notes/old")
    w.post_comment("notes/guide", "install", "moving")
    w.move_page("notes/guide", "notes/old", w.read_page("notes/guide")["hash"])
    texts = [c["text"] for c in w.read_comment_thread("notes/old", "install")["comments"]]
    assert texts == ["left behind", "moving"]


def test_a_deleted_page_keeps_its_comments_for_its_restore(host: Host) -> None:
    w = host.wiki(ANA)
    w.post_comment("notes/guide", "usage", "still here")
    w.delete_page("notes/guide")
    with pytest.raises(NotFound):
        w.list_comment_threads("notes/guide")
    w.save_page("notes/guide", body=BODY)
    assert w.list_comment_threads("notes/guide")["total_comments"] == 1


def test_a_removed_heading_leaves_its_thread_orphaned_not_moved(host: Host) -> None:
    w = host.wiki(ANA)
    w.post_comment("notes/guide", "linux", "on linux")
    w.post_comment("notes/guide", "usage", "on usage")
    page = w.read_page("notes/guide")
    w.save_page("notes/guide", basehash=page["hash"], body=BODY.replace("## Linux\n\napt\n\n", ""))
    threads = w.list_comment_threads("notes/guide")["threads"]
    assert [(t["section_id"], t["heading"], t["orphaned"]) for t in threads] == [("usage", "Usage", False), ("linux", "Linux", True)]
    orphan = w.read_comment_thread("notes/guide", "linux")
    assert orphan["orphaned"] and orphan["heading"] == "Linux" and orphan["comments"][0]["text"] == "on linux"
    with pytest.raises(NotFound) as caught:
        w.post_comment("notes/guide", "linux", "more")
    assert caught.value.field == "section_id"
    page = w.read_page("notes/guide")
    w.save_page("notes/guide", basehash=page["hash"], body=BODY)
    assert not w.read_comment_thread("notes/guide", "linux")["orphaned"]


def test_a_page_holds_a_bounded_number_of_comments(host: Host, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dom, "MAX_PER_PAGE", 2)
    w = host.wiki(ANA)
    w.post_comment("notes/guide", "install", "one")
    w.post_comment("notes/guide", "usage", "two")
    with pytest.raises(Exception) as caught:
        w.post_comment("notes/guide", "install", "three")
    assert getattr(caught.value, "code", "") == "too_large" and caught.value.field == "slug"  # type: ignore[attr-defined]
    assert w.list_comment_threads("notes/guide")["total_comments"] == 2


def test_posts_at_once_all_land(host: Host) -> None:
    errors: list[BaseException] = []

    def post(i: int) -> None:
        try:
            host.wiki(who(f"p{i}", "read")).post_comment("notes/guide", "install", f"post {i}")
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=post, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    texts = {c["text"] for c in host.wiki(ANA).read_comment_thread("notes/guide", "install")["comments"]}
    assert texts == {f"post {i}" for i in range(6)}


def test_a_lost_race_every_round_changes_nothing(host: Host, monkeypatch: pytest.MonkeyPatch) -> None:
    w = host.wiki(ANA)

    def lose(*_args: Any, **_kwargs: Any) -> Any:
        raise Conflict("lost", hash="")

    monkeypatch.setattr(w, "_store", lose)
    with pytest.raises(Conflict):
        w.post_comment("notes/guide", "install", "never")
    assert not host.storage.exists(dom.record_path("notes/guide"))


def test_comments_stay_out_of_pages_search_and_history(host: Host) -> None:
    w = host.wiki(ANA)
    w.post_comment("notes/guide", "install", "zebracorn")
    assert ".comments" not in str(w.list_pages("notes")) and ".comments" not in str(w.list_namespaces())
    assert not w.search("zebracorn")["results"]
    if host.config["STORAGE"] == "git":
        assert all("post_comment" not in c["message"] for c in w.recent_changes(10)["commits"])
