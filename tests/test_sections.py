"""A page's sections and blocks (hostcore.domain.blocks, hostcore.domain.sections): the outline,
section ids and revs, numbered blocks, and the edits that leave the rest of a page as it was.

That the blocks are the ones the web's renderer makes is checked against markdown-it itself in
plugins/web/tests/test_section_blocks.py."""

from __future__ import annotations

import pytest

from hostcore import ValidationError
from hostcore.domain.blocks import media, split_blocks
from hostcore.domain.pages import section
from hostcore.domain.sections import TOP, edit_blocks, insert, outline, replace_section, replace_text, subtree_text, window

PAGE = """Intro before any heading.

# Plan

The plan.

- one
- two

  still two

## Steps

```
# not a heading
```

step text

![diagram](/_/files/notes/p/d.png)

## Notes

> a quote
lazy line

| a | b |
|---|---|
| 1 | 2 |

### Deep

deep text
"""


def shape(body: str) -> list[tuple[str, int, str | None, list[str]]]:
    o = outline(body)
    return [(s.id, s.level, s.parent, [o.text(b) for b in s.blocks]) for s in o.sections]


def test_outline_lists_each_heading_with_its_own_blocks():
    assert shape(PAGE) == [
        (TOP, 0, None, ["Intro before any heading."]),
        ("plan", 1, None, ["The plan.", "- one\n- two\n\n  still two"]),
        ("steps", 2, "plan", ["```\n# not a heading\n```", "step text", "![diagram](/_/files/notes/p/d.png)"]),
        ("notes", 2, "plan", ["> a quote\nlazy line", "| a | b |\n|---|---|\n| 1 | 2 |"]),
        ("deep", 3, "notes", ["deep text"]),
    ]
    kinds = [b.kind for b in split_blocks(PAGE)]
    assert kinds == ["paragraph", "heading", "paragraph", "list", "heading", "code", "paragraph", "paragraph", "heading",
                     "quote", "table", "heading", "paragraph"]  # fmt: skip


def test_a_section_is_its_heading_line_and_its_own_text():
    o = outline(PAGE)
    steps = o.sections[o.find("steps")]
    assert o.own_text(o.find("steps")).startswith("## Steps\n\n```") and o.own_text(o.find("steps")).endswith("d.png)\n\n")
    assert o.body[steps.start : steps.body_start] == "## Steps"


def test_ids_survive_changes_elsewhere_and_revs_follow_the_own_text():
    before = outline(PAGE)
    changed = PAGE.replace("step text", "step text, longer").replace("# Plan", "# Plan\n\n## Added first")
    after = outline(changed)
    assert [s.id for s in after.sections] == [TOP, "plan", "added-first", "steps", "notes", "deep"]
    revs_before = {s.id: s.rev for s in before.sections}
    revs_after = {s.id: s.rev for s in after.sections}
    assert revs_after["steps"] != revs_before["steps"]
    assert revs_after["plan"] != revs_before["plan"]  # its own text now ends before the new heading
    assert {k: revs_after[k] for k in ("notes", "deep", TOP)} == {k: revs_before[k] for k in ("notes", "deep", TOP)}


def test_headings_of_the_same_text_are_numbered_in_order():
    body = "# Log\n\n## Notes\n\na\n\n## Notes\n\nb\n\n## NOTES!\n\nc\n"
    o = outline(body)
    assert [s.id for s in o.sections[1:]] == ["log", "notes", "notes~2", "notes~3"]
    assert o.sections[o.find("notes~2")].blocks and o.text(o.sections[o.find("notes~2")].blocks[0]) == "b"


def test_an_id_never_names_another_heading_for_read_page():
    """read_page's section finds heading text first; an id that another heading's text would
    match takes the next number instead, so each id reads its own section."""
    body = "# Setup!\n\nfirst\n\n# Other\n\n## setup\n\nsecond\n"
    o = outline(body)
    assert [s.id for s in o.sections[1:]] == ["setup~2", "other", "setup"]
    assert section(body, "setup") == "## setup\n\nsecond\n" == subtree_text(o, "setup")
    assert subtree_text(o, "setup~2") == "# Setup!\n\nfirst\n\n"
    assert subtree_text(o, "other") == "# Other\n\n## setup\n\nsecond\n"  # with its subsections, as read_page gives them
    assert subtree_text(o, "nowhere") is None


def test_atx_headings_as_commonmark_reads_them():
    o = outline("#\n\n## C#\n\n### closed ###\n\n    # code, not heading\n\n - # in a list\n\n#hashtag\n")
    assert [(s.level, s.title) for s in o.sections[1:]] == [(1, ""), (2, "C#"), (3, "closed")]
    assert o.sections[1].id == "section"


def test_window_gives_whole_blocks_and_cuts_only_a_first_block_too_long():
    body = "# S\n\n" + "\n\n".join(f"para {i} " + "x" * 20 for i in range(1, 6)) + "\n"
    o = outline(body)
    first = window(o, 1, 0, 70)
    assert [b["n"] for b in first["blocks"]] == [1, 2] and first["truncated"] and first["heading"] == "# S"
    assert all("partial" not in b for b in first["blocks"])
    rest = window(o, 1, first["next_offset"], 1000)
    assert [b["n"] for b in rest["blocks"]] == [3, 4, 5] and not rest["truncated"] and rest["next_offset"] is None
    cut = window(o, 1, 0, 10)  # the heading line and the blank line count too
    assert cut["blocks"] == [{"n": 1, "kind": "paragraph", "text": "para ", "media": False, "partial": True}]
    more = window(o, 1, cut["next_offset"], 10)
    assert more["blocks"][0]["n"] == 1 and more["blocks"][0]["partial"] and more["blocks"][0]["text"] == "1 " + "x" * 8
    with pytest.raises(ValidationError, match="past the end") as err:
        window(o, 1, 10_000, 10)
    assert err.value.field == "offset"


def test_media_is_what_the_text_cannot_bring_back():
    assert media("see ![a](x.png) and [r](/_/files/n/p/r.pdf) and [w](https://e.org)") == ["x.png", "/_/files/n/p/r.pdf"]
    assert media('<video src="v.mp4"></video>') == ['<video src="v.mp4">']
    assert media("`![not](x.png)` ![ref][logo]") == ["[logo]"]
    assert media("![a](x.png)", "code") == []


# --- edits ---------------------------------------------------------------------------------


def test_edit_blocks_inserts_replaces_and_removes_within_the_section():
    o = outline(PAGE)
    at = o.find("plan")
    inserted = edit_blocks(o, at, 0, 0, "Before the plan.")
    assert shape(inserted)[1][3] == ["Before the plan.", "The plan.", "- one\n- two\n\n  still two"]
    replaced = edit_blocks(o, at, 1, 1, "- three\n- four")
    assert shape(replaced)[1][3] == ["The plan.", "- three\n- four"]
    removed = edit_blocks(o, at, 0, 1, "")
    assert shape(removed)[1][3] == ["- one\n- two\n\n  still two"]
    for body in (inserted, replaced, removed):
        assert shape(body)[2:] == shape(PAGE)[2:] and shape(body)[0] == shape(PAGE)[0]
    top = edit_blocks(o, 0, 0, 1, "")
    assert top.startswith("# Plan") and shape(top)[0][3] == []


def test_edit_blocks_refuses_what_an_assistant_cannot_undo():
    o = outline(PAGE)
    steps = o.find("steps")
    with pytest.raises(ValidationError, match="d.png") as err:
        edit_blocks(o, steps, 2, 1, "")
    assert err.value.field == "markdown" and "block 3" in str(err.value)
    kept = edit_blocks(o, steps, 2, 1, "A caption.\n\n![diagram](/_/files/notes/p/d.png)")  # the picture comes back
    assert shape(kept)[2][3][-2:] == ["A caption.", "![diagram](/_/files/notes/p/d.png)"]
    with pytest.raises(ValidationError, match="only at the end") as err:
        edit_blocks(o, steps, 1, 0, "### Sub\n\ntext")
    with pytest.raises(ValidationError, match="deeper than the section") as err:
        edit_blocks(o, steps, 3, 0, "## Sibling")
    with pytest.raises(ValidationError, match="close every code fence"):
        edit_blocks(o, steps, 1, 0, "```\nunclosed")
    with pytest.raises(ValidationError, match="the section has 3 blocks") as err:
        edit_blocks(o, steps, 4, 0, "x")
    assert err.value.field == "after_block"
    with pytest.raises(ValidationError, match="only 1 blocks follow") as err:
        edit_blocks(o, steps, 2, 2, "")
    assert err.value.field == "remove_blocks"
    with pytest.raises(ValidationError, match="nothing to do"):
        edit_blocks(o, steps, 0, 0, "\n\n")


def test_a_new_heading_at_the_end_must_not_take_the_next_subsection():
    body = "# A\n\ntext\n\n### Deep child\n\nd\n"
    o = outline(body)
    with pytest.raises(ValidationError, match="would take the level-3 heading after it") as err:
        edit_blocks(o, 1, 1, 0, "## Between")  # would put "### Deep child" under it
    assert err.value.field == "markdown"
    added = edit_blocks(o, 1, 1, 0, "### Sibling of deep\n\nnew")
    assert [s[0] for s in shape(added)] == [TOP, "a", "sibling-of-deep", "deep-child"]
    assert shape(added)[2][2] == "a" and shape(added)[3][2] == "a"


def test_replace_text_within_one_block_exactly_once():
    o = outline(PAGE)
    plan = o.find("plan")
    body, block = replace_text(o, plan, "still two", "still 2")
    assert block == 2 and "still 2" in body and shape(body)[2:] == shape(PAGE)[2:]
    with pytest.raises(ValidationError, match="occurs 2 times \\(in block 2\\)") as err:
        replace_text(o, plan, "two", "2")
    assert err.value.field == "old_text"
    with pytest.raises(ValidationError, match="does not occur"):
        replace_text(o, plan, "Plan", "Scheme")  # the heading never matches
    with pytest.raises(ValidationError, match="does not occur"):
        replace_text(o, plan, "plan.\n\n- one", "x")  # across two blocks
    escaped = outline("# S\n\nsnake_case and a*b\n")
    body, _ = replace_text(escaped, 1, "snake\\_case and a\\*b", "camelCase")
    assert body == "# S\n\ncamelCase\n"


def test_replace_text_keeps_media_and_the_block_whole():
    o = outline(PAGE)
    steps = o.find("steps")
    with pytest.raises(ValidationError, match="d.png") as err:
        replace_text(o, steps, "![diagram](/_/files/notes/p/d.png)", "gone")
    assert err.value.field == "new_text"
    body, _ = replace_text(o, steps, "![diagram]", "![the diagram]")  # alt text changes, the picture stays
    assert "![the diagram](/_/files/notes/p/d.png)" in body
    with pytest.raises(ValidationError, match="split it") as err:
        replace_text(o, steps, "step text", "step\n\ntext")
    with pytest.raises(ValidationError, match="split it"):
        replace_text(o, steps, "step text", "step\n## heading")


def test_insert_at_each_position():
    o = outline(PAGE)
    notes = o.find("notes")
    end = insert(o, "appended", None, "end")
    assert end.endswith("deep text\n\nappended\n") and shape(end)[-1][3] == ["deep text", "appended"]
    start = insert(o, "first of all", None, "start")
    assert start.startswith("first of all\n\nIntro")
    sec_end = insert(o, "after the table", notes, "end")
    assert shape(sec_end)[3][3][-1] == "after the table" and shape(sec_end)[4] == shape(PAGE)[4]
    sec_start = insert(o, "right after heading", notes, "start")
    assert shape(sec_start)[3][3][0] == "right after heading"
    before = insert(o, "## Inserted\n\nbefore notes", notes, "before")
    assert [s[0] for s in shape(before)] == [TOP, "plan", "steps", "inserted", "notes", "deep"]
    after = insert(o, "## After notes\n\nsibling", notes, "after")
    assert [s[0] for s in shape(after)][-2:] == ["deep", "after-notes"] and shape(after)[-1][2] == "plan"
    new_section = insert(o, "# Appendix\n\nmore", None, "end")
    assert shape(new_section)[-1] == ("appendix", 1, None, ["more"])


def test_insert_refuses_headings_that_would_take_existing_text():
    o = outline(PAGE)
    with pytest.raises(ValidationError, match="block\\(s\\) after this place") as err:
        insert(o, "## Heading first", None, "start")  # the intro would fall under it
    assert err.value.field == "markdown"
    with pytest.raises(ValidationError, match="level-3 heading after it"):
        insert(o, "## Takes deep", o.find("notes"), "end")  # "### Deep" would move under it
    with pytest.raises(ValidationError, match="needs a section_id"):
        insert(o, "x", None, "before")
    with pytest.raises(ValidationError, match="is empty"):
        insert(o, "  \n", None, "end")


def test_replace_section_as_a_person_edits_it():
    o = outline(PAGE)
    notes = o.find("notes")
    body = replace_section(o, notes, "## Notes, renamed\n\nNew text.\n\n### New sub\n\nsub text\n")
    assert [s[0] for s in shape(body)] == [TOP, "plan", "steps", "notes-renamed", "new-sub", "deep"]
    assert shape(body)[-1] == ("deep", 3, "notes-renamed", ["deep text"])
    with pytest.raises(ValidationError, match="removed heading line") as err:
        replace_section(o, notes, "no heading any more")
    assert err.value.field == "text"
    with pytest.raises(ValidationError, match="close every code fence"):
        replace_section(o, notes, "## Notes\n\n```\nunclosed")
    gone = replace_section(o, notes, "")
    assert [s[0] for s in shape(gone)] == [TOP, "plan", "steps", "deep"]
