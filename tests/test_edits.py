"""edit_page's edits and diff, judged by the real tools: GNU ``diff -u`` writes the same hunks, and
``patch`` and ``git apply`` turn the old text into the new one with the diff."""

import random
import subprocess
from pathlib import Path

import pytest

from hostcore import ValidationError
from hostcore.domain.edits import apply_edits, unified_diff

SLUG = "notes/page"


def edit(body: str, *pairs: tuple[str, str]) -> tuple[str, str]:
    new, spans = apply_edits(body, [{"oldText": o, "newText": n} for o, n in pairs])
    return new, unified_diff(body, new, spans, f"a/{SLUG}", f"b/{SLUG}")


def gnu_diff(tmp_path: Path, old: str, new: str) -> str:
    """What ``diff -U2`` prints for the same texts, headers left out (they carry file times)."""
    (tmp_path / "old").write_bytes(old.encode())
    (tmp_path / "new").write_bytes(new.encode())
    out = subprocess.run(["diff", "-U2", "old", "new"], cwd=tmp_path, capture_output=True, check=False).stdout.decode()
    return out.split("\n", 2)[2] if out else ""


def check_applies(tmp_path: Path, old: str, new: str, diff: str) -> None:
    """``patch`` and ``git apply`` both turn ``old`` into ``new`` with ``diff``."""
    (tmp_path / "d.patch").write_bytes(diff.encode())
    (tmp_path / "old").write_bytes(old.encode())
    subprocess.run(["patch", "-s", "-o", "patched", "old", "d.patch"], cwd=tmp_path, check=True)
    assert (tmp_path / "patched").read_bytes().decode() == new
    target = tmp_path / "tree" / SLUG
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(old.encode())
    subprocess.run(["git", "apply", "--whitespace=nowarn", str(tmp_path / "d.patch")], cwd=tmp_path / "tree", check=True)
    assert target.read_bytes().decode() == new


NUMBERED = "".join(f"line {i}\n" for i in range(1, 31))

CASES = {
    "no final newline": ("line one\nline two", [("two", "2")]),
    "final newline added": ("a\nb", [("b", "b\n")]),
    "final newline removed": ("a\nb\n", [("b\n", "b")]),
    "context line lacks final newline": ("a\nb\nc", [("a", "A")]),
    "edit at start": (NUMBERED, [("line 1\n", "first\n")]),
    "edit at end": (NUMBERED, [("line 30\n", "last\nmore\n")]),
    "insert before first line": (NUMBERED, [("line 1\n", "new\nline 1\n")]),
    "delete whole lines": (NUMBERED, [("line 10\nline 11\n", "")]),
    "far apart: two hunks": (NUMBERED, [("line 3\n", "three\n"), ("line 20\n", "twenty\n")]),
    "four equal lines between: one hunk": (NUMBERED, [("line 5\n", "five\n"), ("line 10\n", "ten\n")]),
    "five equal lines between: two hunks": (NUMBERED, [("line 5\n", "five\n"), ("line 11\n", "eleven\n")]),
    "adjacent lines: one block": (NUMBERED, [("line 4\n", "four\n"), ("line 5\n", "five\n")]),
    "same line twice": ("alpha beta\ngamma\n", [("alpha", "A"), ("beta", "B")]),
    "later edit rewrites an earlier one": (NUMBERED, [("line 7\n", "seven\n"), ("seven\nline 8", "7-8")]),
    "later edit before an earlier one": (NUMBERED, [("line 20\n", "x\n"), ("line 2\n", "y\n")]),
    "everything deleted": ("only\nlines\n", [("only\nlines\n", "")]),
    "carriage returns stay in their lines": ("a\r\nb\r\nc\r\n", [("b", "B")]),
    "lone carriage return is not a line break": ("a\rb\nc\n", [("c", "C")]),
    "no-op": ("same\n", [("same", "same")]),
    "characters of several bytes": ("é😀 ligne\nun\ndeux\n日本", [("deux", "2 😀"), ("日本", "本")]),
}


@pytest.mark.parametrize("name", CASES)
def test_diff_is_what_diff_u_writes_and_applies(tmp_path, name):
    old, pairs = CASES[name]
    new, diff = edit(old, *pairs)
    if old == new:
        assert diff == ""
        return
    assert diff.startswith(f"--- a/{SLUG}\n+++ b/{SLUG}\n@@ ")
    assert diff.split("\n", 2)[2] == gnu_diff(tmp_path, old, new)
    check_applies(tmp_path, old, new, diff)


def test_no_final_newline_keeps_lines_apart():
    _new, diff = edit("line one\nline two", ("two", "2"))
    assert diff.endswith("-line two\n\\ No newline at end of file\n+line 2\n\\ No newline at end of file\n")


def test_edit_page_diff_applies_to_the_stored_body(wiki, tmp_path):
    """Through the service: the diff of a dry run turns the page's body into the edited one."""
    old = "# Title\n\nline one\nline two"
    h = wiki.save_page(SLUG, body=old)["hash"]
    dry = wiki.edit_page(SLUG, h, [{"oldText": "# Title", "newText": "# Heading"}, {"oldText": "two", "newText": "2"}], dry_run=True)
    check_applies(tmp_path, old, "# Heading\n\nline one\nline 2", dry["diff"])
    assert dry["diff"].endswith("+line 2\n\\ No newline at end of file\n")


def test_random_edits_apply(tmp_path):
    rng = random.Random(7)
    words = ["a", "b", "c", "\n", "\n", "xy", "é", "日本", "😀"]
    for _ in range(60):
        old = "".join(rng.choice(words) for _ in range(rng.randint(1, 400)))
        body, pairs = old, []
        for _ in range(rng.randint(1, 12)):
            start = rng.randrange(len(body))
            for length in range(1, len(body) - start + 1):
                piece = body[start : start + length]
                if body.count(piece) == 1:
                    break
            else:
                continue
            replacement = "".join(rng.choice(words) for _ in range(rng.randint(0, 6)))
            pairs.append((piece, replacement))
            body = body.replace(piece, replacement, 1)
        if not pairs:
            continue
        new, diff = edit(old, *pairs)
        assert new == body
        if new != old:
            check_applies(tmp_path, old, new, diff)


def test_edit_errors_name_the_edit():
    with pytest.raises(ValidationError) as err:
        apply_edits("aa ab", [{"oldText": "ab", "newText": "x"}, {"oldText": "a", "newText": "b"}])
    assert err.value.field == "edits[1].oldText" and "occurs 2 times" in str(err.value)
    with pytest.raises(ValidationError) as err:
        apply_edits("x", [{"oldText": "x", "newText": None}])
    assert err.value.field == "edits[0].newText"
