"""Sections in the service layer, on the git storage: edits checked against a section's rev land
whatever other sections do, appends always land, read_page's section takes a section_id, edit_page
rebases when asked, and apply_changes writes several pages as one commit or nothing."""

from __future__ import annotations

import threading

import pytest

from hostcore import SYSTEM, Conflict, Forbidden, InsufficientScope, NotFound, Principal, ValidationError, create_app
from hostcore.host.host import Host

from .conftest import principal

PAGE = "# Shared\n\nIntro.\n\n" + "".join(f"## Part {i}\n\nText of part {i}.\n\n" for i in range(1, 9))


@pytest.fixture
def ann(git_host: Host):
    return git_host.wiki(principal("write", name="ann"))


def commits(host: Host, slug: str) -> list[str]:
    return [r.message for r in host.storage.history(f"{slug}.md", limit=1000)]


def test_an_edit_to_one_section_lands_after_another_section_changed(git_host, ann):
    ann.save_page("notes/p", body=PAGE)
    rev2 = ann.read_section("notes/p", "part-2")["rev"]
    rev1 = ann.read_section("notes/p", "part-1")["rev"]
    first = ann.replace_text("notes/p", "part-1", rev1, "Text of part 1.", "Part one, changed.")
    second = ann.edit_blocks("notes/p", "part-2", rev2, 1, 0, "Added to part two.")
    assert second["changed"] and second["block_count"] == 2
    body = ann.read_page("notes/p")["body"]
    assert "Part one, changed." in body and "Text of part 2.\n\nAdded to part two.\n\n## Part 3" in body
    again = ann.replace_text("notes/p", "part-1", first["rev"], "one", "1")  # the returned rev: no read needed
    assert again["block"] == 1 and "Part 1, changed." in ann.read_page("notes/p", "part-1")["body"]
    assert commits(git_host, "notes/p")[:3] == ["replace_text: notes/p#part-1", "edit_blocks: notes/p#part-2",
                                                 "replace_text: notes/p#part-1"]  # fmt: skip


def test_a_stale_rev_is_a_conflict_with_the_current_rev_and_page_hash(ann):
    ann.save_page("notes/p", body=PAGE)
    rev = ann.read_section("notes/p", "part-3")["rev"]
    ann.replace_text("notes/p", "part-3", rev, "Text", "Words")
    before = ann.read_page("notes/p")
    with pytest.raises(Conflict) as err:
        ann.edit_blocks("notes/p", "part-3", rev, 0, 1, "")
    now = ann.read_section("notes/p", "part-3")
    assert err.value.field == "rev" and err.value.data["rev"] == now["rev"] and err.value.data["hash"] == before["hash"]
    assert str(err.value).startswith("rev: is stale") and ann.read_page("notes/p")["hash"] == before["hash"]
    with pytest.raises(NotFound) as missing:
        ann.edit_blocks("notes/p", "part-99", rev, 0, 0, "x")
    assert missing.value.field == "section_id" and "outline" in str(missing.value)


def test_eight_writers_on_eight_sections_never_conflict_and_lose_nothing(git_host, ann):
    """Real threads on one page, each editing its own section with the rev its last edit returned."""
    ann.save_page("notes/p", body=PAGE)
    start = len(commits(git_host, "notes/p"))
    rounds = 6
    barrier = threading.Barrier(8)
    last: dict[int, str] = {}
    errors: list[BaseException] = []

    def writer(i: int) -> None:
        wiki = git_host.wiki(principal("write", name=f"writer-{i}"))
        try:
            rev = wiki.read_section("notes/p", f"part-{i}")["rev"]
            barrier.wait()
            for n in range(rounds):
                text = wiki.read_section("notes/p", f"part-{i}")["blocks"][0]["text"] if n == 0 else last[i]
                new = f"Part {i}, edit {n}."
                rev = wiki.replace_text("notes/p", f"part-{i}", rev, text, new)["rev"]
                last[i] = new
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(1, 9)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for i in range(1, 9):
        assert [b["text"] for b in ann.read_section("notes/p", f"part-{i}")["blocks"]] == [last[i]]
    assert len(commits(git_host, "notes/p")) - start == 8 * rounds


def test_appends_need_no_hash_and_all_land(git_host, ann):
    ann.save_page("notes/p", body="# Log\n\nfirst\n")
    barrier = threading.Barrier(6)
    done: list[str] = []

    def append(i: int) -> None:
        barrier.wait()
        ann.append_to_page("notes/p", f"entry {i}")
        done.append(f"entry {i}")

    threads = [threading.Thread(target=append, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    blocks = [b["text"] for b in ann.read_section("notes/p", "log")["blocks"]]
    assert blocks == ["first", *done]  # every one, in the order they landed
    added = ann.append_to_page("notes/p", "## Later\n\ntext")
    assert added["added_sections"] == ["later"] and added["section_id"] == "log"
    start = ann.append_to_page("notes/p", "before everything", position="start")
    assert start["section_id"] == "_top" and ann.read_page("notes/p")["body"].startswith("before everything\n\n# Log")


def test_read_page_section_takes_a_section_id_and_heading_text_first(git_host, ann):
    body = "intro\n\n# Install on Linux\n\nsteps\n\n## Notes\n\nx\n\n# Install on Mac\n\n## Notes\n\ny\n"
    saved = ann.save_page("notes/p", body=body)
    assert ann.read_page("notes/p", "notes~2")["body"] == "## Notes\n\ny\n"
    assert ann.read_page("notes/p", "Notes")["body"] == "## Notes\n\nx\n\n"  # heading text, as always
    assert ann.read_page("notes/p", "install-on-linux")["body"] == "# Install on Linux\n\nsteps\n\n## Notes\n\nx\n\n"
    assert ann.read_page("notes/p", "_top")["body"] == "intro\n\n"
    ann.save_page("notes/p", basehash=saved["hash"], body="changed")
    revision = ann.page_history("notes/p")["commits"][-1]["id"]
    assert ann.read_page_at("notes/p", revision, "notes~2", 0, 100)["body"] == "## Notes\n\ny\n"
    with pytest.raises(NotFound) as err:
        ann.read_page("notes/p", "nowhere")
    assert err.value.field == "section" and "section_id from outline" in str(err.value)


def test_section_tools_check_scope_and_namespace(git_host, ann):
    ann.save_page("notes/p", body=PAGE)
    ann.save_page("team/t", body=PAGE)
    reader = git_host.wiki(principal("read"))
    rev = reader.outline("notes/p")["sections"][1]["rev"]
    with pytest.raises(InsufficientScope):
        reader.edit_blocks("notes/p", "shared", rev, 0, 0, "x")
    with pytest.raises(InsufficientScope):
        reader.append_to_page("notes/p", "x")
    team = git_host.wiki(principal("write", namespaces=["team"]))
    for call in (lambda: team.outline("notes/p"), lambda: team.read_section("notes/p", "shared"),
                 lambda: team.append_to_page("notes/p", "x"), lambda: team.replace_text("notes/p", "shared", rev, "a", "b")):  # fmt: skip
        with pytest.raises(Forbidden) as err:
            call()
        assert err.value.field == "slug"
    assert team.outline("team/t")["total"] == 9


def test_outline_pages_its_sections(ann):
    ann.save_page("notes/p", body=PAGE)
    first = ann.outline("notes/p", 0, 4)
    assert [s["section_id"] for s in first["sections"]] == ["shared", "part-1", "part-2", "part-3"]
    assert first["more"] and first["next_offset"] == 4 and first["total"] == 9
    assert first["sections"][1] == {"section_id": "part-1", "level": 2, "title": "Part 1", "parent": "shared",
                                    "rev": first["sections"][1]["rev"], "blocks": 1, "chars": len("## Part 1\n\nText of part 1.\n\n")}  # fmt: skip
    rest = ann.outline("notes/p", 4, 100)
    assert len(rest["sections"]) == 5 and not rest["more"] and rest["next_offset"] is None


# --- edit_page with rebase -----------------------------------------------------------------------


def test_edit_page_rebases_only_when_asked_and_safe(git_host, ann):
    base = ann.save_page("notes/p", body=PAGE)["hash"]
    other = ann.edit_page("notes/p", base, [{"oldText": "Text of part 1.", "newText": "Changed by another."}])["hash"]
    mine = [{"oldText": "Text of part 5.", "newText": "Mine."}]
    with pytest.raises(Conflict) as plain:
        ann.edit_page("notes/p", base, mine)  # the default stays the contract's
    assert plain.value.data == {"hash": other}
    done = ann.edit_page("notes/p", base, mine, rebase=True)
    assert done["rebased"] and done["basehash"] == base and done["current"] == other and done["changed"]
    body = ann.read_page("notes/p")["body"]
    assert "Changed by another." in body and "Mine." in body and done["hash"] == ann.read_page("notes/p")["hash"]
    with pytest.raises(Conflict) as touched:  # part 1 changed since base: same conflict as without rebase
        ann.edit_page("notes/p", base, [{"oldText": "Text of part 1.", "newText": "x"}], rebase=True)
    assert touched.value.field == "basehash" and touched.value.data == {"hash": done["hash"]}
    fresh = ann.edit_page("notes/p", done["hash"], [{"oldText": "Mine.", "newText": "Mine!"}], rebase=True)
    assert fresh["rebased"] is False and fresh["current"] == done["hash"]
    dry = ann.edit_page("notes/p", base, [{"oldText": "Text of part 6.", "newText": "x"}], dry_run=True, rebase=True)
    assert dry["rebased"] and dry["hash"] == fresh["hash"] and "+x" in dry["diff"]


def test_rebase_refuses_a_change_next_to_the_edit(ann):
    base = ann.save_page("notes/p", body="one\ntwo\nthree\nfour\n")["hash"]
    ann.edit_page("notes/p", base, [{"oldText": "one\ntwo\n", "newText": "one\ntwo, edited\n"}])
    with pytest.raises(Conflict):
        ann.edit_page("notes/p", base, [{"oldText": "two", "newText": "2"}], rebase=True)
    done = ann.edit_page("notes/p", base, [{"oldText": "four", "newText": "4"}], rebase=True)
    assert ann.read_page("notes/p")["body"] == "one\ntwo, edited\nthree\n4\n" and done["rebased"]


def test_rebase_needs_storage_that_keeps_versions(wiki):
    base = wiki.save_page("notes/p", body="a\n\nb\n")["hash"]
    other = wiki.edit_page("notes/p", base, [{"oldText": "a", "newText": "A"}])["hash"]
    with pytest.raises(Conflict) as err:  # fs storage keeps no older version to compare with
        wiki.edit_page("notes/p", base, [{"oldText": "b", "newText": "B"}], rebase=True)
    assert err.value.data == {"hash": other}


# --- apply_changes -----------------------------------------------------------------------


def test_apply_changes_is_one_commit_of_every_kind(git_host, ann):
    a = ann.save_page("notes/a", body="a\n")["hash"]
    b = ann.save_page("notes/b", body="b [[notes/a]]\n")["hash"]
    c = ann.save_page("notes/c", body="c\n")["hash"]
    before = len(git_host.storage.history(limit=1000))
    result = ann.apply_changes([
        {"op": "save", "slug": "notes/new", "body": "links [[notes/moved]]\n", "title": "New"},
        {"op": "edit", "slug": "notes/b", "basehash": b, "edits": [{"oldText": "b ", "newText": "bee "}]},
        {"op": "move", "slug": "notes/a", "new_slug": "notes/moved", "basehash": a},
        {"op": "delete", "slug": "notes/c", "basehash": c},
    ])  # fmt: skip
    assert [(x["op"], x["slug"], x["changed"]) for x in result["changes"]] == [
        ("save", "notes/new", True), ("edit", "notes/b", True), ("move", "notes/moved", True), ("delete", "notes/c", True),
    ]  # fmt: skip
    assert result["changes"][2]["old_slug"] == "notes/a" and result["changes"][3]["hash"] == ""
    history = git_host.storage.history(limit=1000)
    assert len(history) == before + 1
    assert history[0].message.startswith("apply_changes: 4 pages: notes/new, notes/b, notes/a, notes/c")
    assert sorted(history[0].paths) == ["notes/a.md", "notes/b.md", "notes/c.md", "notes/moved.md", "notes/new.md"]
    assert ann.page("notes/new").title == "New" and ann.page("notes/b").body == "bee [[notes/a]]\n"
    assert [x["slug"] for x in ann.backlinks("notes/moved")["backlinks"]] == ["notes/new"]  # the events reached the link graph
    assert [c["message"].split(":")[0] for c in ann.page_history("notes/moved")["commits"]] == ["apply_changes", "save_page"]


def test_apply_changes_writes_nothing_when_one_fails(git_host, ann):
    a = ann.save_page("notes/a", body="a\n")["hash"]
    b = ann.save_page("notes/b", body="b\n")["hash"]
    ann.save_page("notes/b", basehash=b, body="b changed\n")
    head = git_host.storage.version()
    with pytest.raises(Conflict) as err:
        ann.apply_changes([
            {"op": "save", "slug": "notes/a", "basehash": a, "body": "a2\n"},
            {"op": "save", "slug": "notes/b", "basehash": b, "body": "b2\n"},
        ])  # fmt: skip
    assert err.value.field == "changes[1].basehash" and err.value.data["hash"] == ann.page("notes/b").hash
    assert err.value.data["index"] == 1 and str(err.value).startswith("changes[1].basehash: is stale")
    cases = [
        ([{"op": "edit", "slug": "notes/a", "basehash": a}], "changes[0].edits", "is required for op 'edit'"),
        ([{"op": "save", "slug": "notes/a", "basehash": a, "new_slug": "notes/x"}], "changes[0].new_slug", "is not used by op 'save'"),
        ([{"op": "save", "slug": "notes/a", "basehash": a, "body": "x"}, {"op": "delete", "slug": "notes/a"}],
         "changes[1].slug", "changed by changes[0] already"),
        ([{"op": "save", "slug": "notes/n", "body": "x"}, {"op": "delete", "slug": "notes/n"}], "changes[1].slug", "changed by changes[0]"),
        ([{"op": "move", "slug": "notes/a", "new_slug": "notes/b", "basehash": a}], "changes[0].new_slug", "holds a page already"),
        ([{"op": "save", "slug": "nowhere/x", "body": "x"}], "changes[0].slug", "does not exist"),
        ([{"op": "edit", "slug": "notes/a", "basehash": a, "edits": [{"oldText": "zzz", "newText": "y"}]}],
         "changes[0].edits[0].oldText", "does not occur"),
        ([], "changes", "at least one"),
    ]  # fmt: skip
    for changes, field, words in cases:
        with pytest.raises(ValidationError) as bad:
            ann.apply_changes(changes)
        assert bad.value.field == field and words in str(bad.value) and str(bad.value).startswith(f"{field}: ")
    assert git_host.storage.version() == head and ann.page("notes/a").body == "a\n"
    with pytest.raises(Forbidden) as forbidden:
        git_host.wiki(principal("write", namespaces=["team"])).apply_changes([{"op": "delete", "slug": "notes/a"}])
    assert forbidden.value.field == "changes[0].slug"
    with pytest.raises(InsufficientScope):
        git_host.wiki(principal("read")).apply_changes([{"op": "delete", "slug": "notes/a"}])


def test_apply_changes_counts_each_page_against_the_writes_limit(tmp_path):
    app = create_app({"PLUGINS": ["fs", "tokens"], "STORAGE": "fs", "RATE_LIMITS": {"writes": "3/minute"}},
                     instance_path=tmp_path / "instance")  # fmt: skip
    host = app.extensions["hostcore"]
    host.wiki(SYSTEM).save_namespace("notes", title="Notes")
    wiki = host.wiki(Principal("limited", frozenset({"write"}), None))
    from hostcore import RateLimited

    with pytest.raises(RateLimited):
        wiki.apply_changes([{"op": "save", "slug": f"notes/p{i}", "body": "x"} for i in range(4)])
    assert wiki.list_pages("notes")["total"] == 0
    host.close()
