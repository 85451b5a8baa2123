"""Differences between two texts as a person reads them: changed lines, and within a changed line
the words that changed (as GitHub and Wiki.js mark them), in one column (inline) or side by side
(split). The history's diff page and the conflict pages share them.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field

CONTEXT = 3
WORDS = re.compile(r"\w+|\s+|[^\w\s]")
SIMILAR = 0.3  # below this share of words in common a line was rewritten: marking its words says nothing
LONGEST_WORD_DIFF = 4000  # characters of a line pair whose words are compared (a minified blob is not read word by word)

Parts = list[tuple[str, bool]]
"""A line as (text, changed) runs."""


@dataclass
class Line:
    kind: str  # head, hunk, add, del, ctx
    sign: str  # "+", "-", " ", or "" (head and hunk lines carry their own text)
    parts: Parts
    number: int | None = None  # its line number in its text (1-based), None for head and hunk lines

    @property
    def text(self) -> str:
        return self.sign + "".join(t for t, _ in self.parts)


@dataclass
class Row:
    """One row of the split view: the old line on the left, the new on the right (either may be None)."""

    old: Line | None
    new: Line | None
    hunk: str = ""  # a hunk's header row: its text, and no lines


@dataclass
class Diff:
    inline: list[Line] = field(default_factory=list)
    split: list[Row] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.split)


def _merge(parts: Parts) -> Parts:
    out: Parts = []
    for text, changed in parts:
        if out and out[-1][1] == changed:
            out[-1] = (out[-1][0] + text, changed)
        elif text:
            out.append((text, changed))
    return out


def word_parts(old: str, new: str) -> tuple[Parts, Parts]:
    """The two lines as runs, the words that differ marked; nothing marked when the lines have too
    little in common (a rewritten line is marked whole by its colour already)."""
    plain = ([(old, False)], [(new, False)])
    if len(old) + len(new) > LONGEST_WORD_DIFF:
        return plain
    a, b = WORDS.findall(old), WORDS.findall(new)
    matcher = difflib.SequenceMatcher(None, a, b)  # long lines: spaces and frequent words are junk, as for lines
    if matcher.ratio() < SIMILAR:
        return plain
    left: Parts = []
    right: Parts = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        left.append(("".join(a[i1:i2]), tag != "equal"))
        right.append(("".join(b[j1:j2]), tag != "equal"))
    return _merge(left), _merge(right)


def diff(old: str, new: str, old_name: str, new_name: str) -> Diff:
    """The changes from ``old`` to ``new`` with three lines of context around each, inline (a
    unified diff with its ``---``/``+++`` head) and split."""
    a, b = old.splitlines(), new.splitlines()
    out = Diff()
    groups = list(difflib.SequenceMatcher(None, a, b).get_grouped_opcodes(CONTEXT))  # as unified_diff does: blank lines, frequent in Markdown, are junk
    if not groups or (len(groups) == 1 and all(tag == "equal" for tag, *_ in groups[0])):
        return out
    out.inline += [Line("head", "", [(f"--- {old_name}", False)]), Line("head", "", [(f"+++ {new_name}", False)])]
    for group in groups:
        hunk = _hunk_header(group)
        out.inline.append(Line("hunk", "", [(hunk, False)]))
        out.split.append(Row(None, None, hunk))
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                for k in range(i2 - i1):
                    ctx_old = Line("ctx", " ", [(a[i1 + k], False)], i1 + k + 1)
                    out.inline.append(ctx_old)
                    out.split.append(Row(ctx_old, Line("ctx", " ", [(b[j1 + k], False)], j1 + k + 1)))
                continue
            olds = [Line("del", "-", [(a[i], False)], i + 1) for i in range(i1, i2)]
            news = [Line("add", "+", [(b[j], False)], j + 1) for j in range(j1, j2)]
            for left, right in zip(olds, news, strict=False):  # a replaced block: its lines paired in order
                left.parts, right.parts = word_parts(a[left.number - 1], b[right.number - 1])  # type: ignore[operator]
            out.inline += olds + news
            for k in range(max(len(olds), len(news))):
                out.split.append(Row(olds[k] if k < len(olds) else None, news[k] if k < len(news) else None))
    return out


def _hunk_header(group: list[tuple[str, int, int, int, int]]) -> str:
    first, last = group[0], group[-1]
    i1, i2, j1, j2 = first[1], last[2], first[3], last[4]

    def span(start: int, end: int) -> str:
        length = end - start
        return f"{start + 1 if length else start},{length}" if length != 1 else f"{start + 1}"

    return f"@@ -{span(i1, i2)} +{span(j1, j2)} @@"
