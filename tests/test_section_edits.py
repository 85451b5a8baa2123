"""Sections in the service layer, on the git storage: edits checked against a section's rev land
whatever other sections do, appends always land, and read_page's section takes a section_id."""

from __future__ import annotations

import threading

import pytest

from hostcore import Conflict, Forbidden, InsufficientScope, NotFound
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
