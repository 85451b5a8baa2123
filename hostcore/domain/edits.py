"""Exact-once text edits and the unified diff of what they changed, in time proportional to the change.

:func:`apply_edits` replaces texts in order and keeps the stretches of the result that differ from
the original (``Span``). :func:`unified_diff` then runs difflib on those stretches alone, each
widened to whole lines and its context, and writes hunks as ``diff -u`` does, with
``\\ No newline at end of file`` after a last line that has none. Outside the spans the two texts are
the same characters, so the line numbers in between are counted, not diffed. Pure: no I/O.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, NamedTuple

from hostcore.errors import ValidationError

CONTEXT = 2
NO_NEWLINE = "\\ No newline at end of file\n"


class Span(NamedTuple):
    """``new[start:end]`` replaced ``old[old_start:old_end]``; the texts agree between spans."""

    start: int
    end: int
    old_start: int
    old_end: int


def apply_edits(body: str, edits: Sequence[Mapping[str, Any]]) -> tuple[str, list[Span]]:
    """Apply ``{oldText, newText}`` edits in order; each oldText must occur exactly once at its step.

    Returns the new body and the sorted, disjoint spans where it differs from ``body``. Raises
    ValidationError naming ``edits[i].oldText`` or ``edits[i].newText``. Each edit costs one search of
    the body; the body is UTF-8 in a bytearray, changed in place, so no edit copies all of it (UTF-8
    finds texts only at character boundaries, so the matches are those of the str).
    """
    original = body.encode("utf-8", "surrogatepass")
    data = bytearray(original)
    spans: list[Span] = []
    for i, edit in enumerate(edits):
        old, new = edit.get("oldText"), edit.get("newText")
        if not isinstance(old, str) or not old:
            raise ValidationError("must be non-empty text copied exactly from the page", field=f"edits[{i}].oldText")
        if not isinstance(new, str):
            raise ValidationError("must be a string (empty to delete the text)", field=f"edits[{i}].newText")
        needle, replacement = old.encode("utf-8", "surrogatepass"), new.encode("utf-8", "surrogatepass")
        at = data.find(needle)
        if at == -1:
            raise ValidationError(
                "does not occur in the body at this step; copy it exactly from read_page (edits apply in order)",
                field=f"edits[{i}].oldText",
            )
        if data.find(needle, at + len(needle)) != -1:
            raise ValidationError(
                f"occurs {data.count(needle)} times; include more surrounding text so it matches exactly once",
                field=f"edits[{i}].oldText",
            )
        data[at : at + len(needle)] = replacement
        spans = _track(spans, at, at + len(needle), len(replacement) - len(needle))
    edited = data.decode("utf-8", "surrogatepass")
    to_new = _characters(data, edited, [p for s in spans for p in (s.start, s.end)])
    to_old = _characters(original, body, [p for s in spans for p in (s.old_start, s.old_end)])
    return edited, [Span(to_new[s.start], to_new[s.end], to_old[s.old_start], to_old[s.old_end]) for s in spans]


def _characters(data: bytes | bytearray, text: str, positions: list[int]) -> dict[int, int]:
    """Character offsets in ``text`` of the ascending byte ``positions`` in ``data``, its UTF-8 form."""
    if len(data) == len(text):  # ASCII: a byte is a character
        return {p: p for p in positions}
    out: dict[int, int] = {}
    chars = previous = 0
    with memoryview(data) as view:
        for p in positions:
            chars += len(str(view[previous:p], "utf-8", "surrogatepass"))
            out[p] = chars
            previous = p
    return out


def _track(spans: list[Span], start: int, end: int, delta: int) -> list[Span]:
    """The spans after ``[start, end)`` of the current text became ``end - start + delta`` characters.

    Spans the edit overlaps or touches merge with it; those after it move by ``delta``. A span's
    ``end - old_end`` is how far the texts are shifted after it, which maps edges back to ``old``.
    """
    before = [s for s in spans if s.end < start]
    touched = [s for s in spans if s.end >= start and s.start <= end]
    after = [Span(s.start + delta, s.end + delta, s.old_start, s.old_end) for s in spans if s.start > end]
    shift_before = before[-1].end - before[-1].old_end if before else 0
    lo = min(start, touched[0].start) if touched else start
    hi = max(end, touched[-1].end) if touched else end
    shift_after = touched[-1].end - touched[-1].old_end if touched else shift_before
    return [*before, Span(lo, hi + delta, lo - shift_before, hi - shift_after), *after]


def unified_diff(old: str, new: str, spans: Sequence[Span], from_name: str, to_name: str, context: int = CONTEXT) -> str:
    """The unified diff of ``old`` to ``new`` (as ``diff -u`` writes it), given where they differ.

    Empty when nothing changed. ``spans`` are those :func:`apply_edits` returns.
    """
    hunks = "".join(_hunks(old, new, spans, context))
    return f"--- {from_name}\n+++ {to_name}\n{hunks}" if hunks else ""


def _lines(text: str) -> list[str]:
    """Lines split at ``\\n`` only (as diff does), each keeping its newline."""
    parts = text.split("\n")
    return [p + "\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def _up(text: str, at: int, lines: int) -> int:
    """The start of the line holding ``at``, then ``lines`` lines further up where there are lines."""
    start = text.rfind("\n", 0, at) + 1
    for _ in range(lines):
        if start == 0:
            break
        start = text.rfind("\n", 0, start - 1) + 1
    return start


def _down(text: str, at: int, lines: int) -> int:
    """``lines`` line ends further down from ``at`` (just past each newline), or the end of the text."""
    for _ in range(lines):
        newline = text.find("\n", at)
        if newline == -1:
            return len(text)
        at = newline + 1
    return at


def _cores(old: str, new: str, spans: Sequence[Span]) -> list[list[int]]:
    """[old_start, old_end, new_start, new_end]: the whole lines each span touches, merged where they meet.

    Between spans the texts agree, so the same lines around them line up on both sides.
    """
    cores: list[list[int]] = []
    for span in spans:
        core = [_up(old, span.old_start, 0), _down(old, span.old_end, 1), _up(new, span.start, 0), _down(new, span.end, 1)]
        if cores and core[0] <= cores[-1][1]:
            cores[-1][1], cores[-1][3] = core[1], core[3]
        else:
            cores.append(core)
    return cores


def _chunks(old: str, cores: list[list[int]], context: int) -> Iterator[list[list[int]]]:
    """Cores whose context lines meet, together: diff -u makes one hunk of changes at most twice the context apart."""
    chunk: list[list[int]] = []
    for core in cores:
        if chunk and _down(old, chunk[-1][1], context) < _up(old, core[0], context):
            yield chunk
            chunk = []
        chunk.append(core)
    if chunk:
        yield chunk


Opcode = tuple[str, int, int, int, int]


def _add(ops: list[Opcode], tag: str, i1: int, i2: int, j1: int, j2: int) -> None:
    """Append an opcode; runs of equal lines join, so context is measured over the whole run."""
    if tag == "equal" and ops and ops[-1][0] == "equal":
        ops[-1] = ("equal", ops[-1][1], i2, ops[-1][3], j2)
    elif i1 != i2 or j1 != j2:
        ops.append((tag, i1, i2, j1, j2))


def _groups(ops: list[Opcode], context: int) -> Iterator[list[Opcode]]:
    """Opcodes grouped into hunks with ``context`` equal lines around changes (difflib's grouping)."""
    if ops and ops[0][0] == "equal":
        _tag, i1, i2, j1, j2 = ops[0]
        ops[0] = ("equal", max(i1, i2 - context), i2, max(j1, j2 - context), j2)
    if ops and ops[-1][0] == "equal":
        _tag, i1, i2, j1, j2 = ops[-1]
        ops[-1] = ("equal", i1, min(i2, i1 + context), j1, min(j2, j1 + context))
    group: list[Opcode] = []
    for tag, i1, i2, j1, j2 in ops:
        if tag == "equal" and i2 - i1 > 2 * context:
            group.append((tag, i1, i1 + context, j1, j1 + context))
            yield group
            group = []
            i1, j1 = i2 - context, j2 - context
        group.append((tag, i1, i2, j1, j2))
    if any(op[0] != "equal" for op in group):
        yield group


def _range(start: int, length: int) -> str:
    """A hunk header's range: 1-based first line, length left out when 1 (``diff -u``'s form)."""
    first = start + 1 if length else start
    return str(first) if length == 1 else f"{first},{length}"


def _hunks(old: str, new: str, spans: Sequence[Span], context: int) -> Iterator[str]:
    """Each chunk's lines with their context; only each core goes through difflib, the rest is equal."""
    old_line = new_line = old_at = new_at = 0
    for chunk in _chunks(old, _cores(old, new, spans), context):
        old_start, new_start = _up(old, chunk[0][0], context), _up(new, chunk[0][2], context)
        old_line += old.count("\n", old_at, old_start)
        new_line += new.count("\n", new_at, new_start)
        old_at, new_at = old_start, new_start
        a = _lines(old[old_start : _down(old, chunk[-1][1], context)])
        b = _lines(new[new_start : _down(new, chunk[-1][3], context)])
        ops: list[Opcode] = []
        i = j = 0
        at = old_start
        for core_old, core_old_end, core_new, core_new_end in chunk:
            same = old.count("\n", at, core_old)
            _add(ops, "equal", i, i + same, j, j + same)
            i, j = i + same, j + same
            core_a, core_b = _lines(old[core_old:core_old_end]), _lines(new[core_new:core_new_end])
            for kind, i1, i2, j1, j2 in difflib.SequenceMatcher(None, core_a, core_b).get_opcodes():
                _add(ops, kind, i + i1, i + i2, j + j1, j + j2)
            i, j, at = i + len(core_a), j + len(core_b), core_old_end
        _add(ops, "equal", i, len(a), j, len(b))
        for group in _groups(ops, context):
            a1, a2, b1, b2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
            yield f"@@ -{_range(old_line + a1, a2 - a1)} +{_range(new_line + b1, b2 - b1)} @@\n"
            for tag, i1, i2, j1, j2 in group:
                if tag == "equal":
                    yield from _marked(" ", a[i1:i2])
                    continue
                yield from _marked("-", a[i1:i2])
                yield from _marked("+", b[j1:j2])


def _marked(prefix: str, lines: list[str]) -> Iterator[str]:
    for line in lines:
        yield prefix + line if line.endswith("\n") else f"{prefix}{line}\n{NO_NEWLINE}"


def text_diff(old: str, new: str, from_name: str, to_name: str) -> str:
    """The unified diff of any two texts: the stretch between their common prefix and suffix is diffed."""
    limit = min(len(old), len(new))
    head = 0
    while head < limit and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < limit - head and old[-1 - tail] == new[-1 - tail]:
        tail += 1
    return unified_diff(old, new, [Span(head, len(new) - tail, head, len(old) - tail)], from_name, to_name)
