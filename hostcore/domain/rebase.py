"""Exact-text edits made on an older version of a page, carried over to the current one when that
is safe: each edit's text still occurs exactly once, and nothing changed since that version
touches the lines the edits change. Pure: no I/O.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from typing import Any

from hostcore.domain.edits import Span, apply_edits
from hostcore.errors import ValidationError


def rebase(base: str, current: str, edits: Sequence[Mapping[str, Any]]) -> tuple[str, list[Span]] | None:
    """``current`` with ``edits`` (made on ``base``) applied, and their spans; None when it is not
    safe: an edit does not apply to ``base`` or to ``current`` exactly once, or a change from
    ``base`` to ``current`` touches a line an edit changes."""
    try:
        _, spans = apply_edits(base, edits)
    except ValidationError:
        return None
    touched = [(_line_start(base, s.old_start), _line_end(base, s.old_end)) for s in spans]
    for a, b in changed_ranges(base, current):
        if any(a <= hi and b >= lo for lo, hi in touched):
            return None
    try:
        return apply_edits(current, edits)
    except ValidationError:
        return None


def changed_ranges(old: str, new: str) -> list[tuple[int, int]]:
    """The ranges of ``old`` (character offsets, whole lines) that differ in ``new``; an insertion
    is an empty range where it goes. Only the part between the common prefix and suffix is diffed."""
    if old == new:
        return []
    limit = min(len(old), len(new))
    head = 0
    while head < limit and old[head] == new[head]:
        head += 1
    head = old.rfind("\n", 0, head) + 1  # whole lines
    tail = 0
    while tail < limit - head and old[-1 - tail] == new[-1 - tail]:
        tail += 1
    cut = old.find("\n", len(old) - tail)
    end_old = len(old) if cut == -1 else cut + 1
    end_new = len(new) - (len(old) - end_old)
    a, b = old[head:end_old].splitlines(keepends=True), new[head:end_new].splitlines(keepends=True)
    out: list[tuple[int, int]] = []
    offsets = [head]
    for line in a:
        offsets.append(offsets[-1] + len(line))
    for tag, i1, i2, _j1, _j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag != "equal":
            out.append((offsets[i1], offsets[i2]))
    return out


def _line_start(text: str, at: int) -> int:
    return text.rfind("\n", 0, at) + 1


def _line_end(text: str, at: int) -> int:
    end = text.find("\n", at)
    return len(text) if end == -1 else end
