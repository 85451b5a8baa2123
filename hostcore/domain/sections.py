"""A page's sections: its outline, each section's id and rev, its numbered blocks, and edits
addressed to one section that leave the rest of the page as it was.

A section is a top-level ATX heading (see :mod:`hostcore.domain.blocks`) and its own text: the
heading line and the blocks after it, up to the next heading of any level (its subsections are
sections of their own). The text before the first heading is the section :data:`TOP`, level 0.

- ``section_id``: the heading's text as a web anchor makes it (lower case, runs of anything but
  letters and digits as ``-``), ``~2``, ``~3`` ... for the second, third heading making the same
  id. So it stays the same while the heading's text and its place among the headings of the same
  text do not change. An id never names another heading for ``read_page``'s ``section`` (matched
  as heading text first): it takes the next ``~n`` instead.
- ``rev``: a hash of the section's own text, so it changes exactly when that text does.
- Blocks are numbered from 1 in each section; block 0 is the place right after the heading.

Edits (:func:`edit_blocks`, :func:`replace_text`, :func:`insert`, :func:`replace_section`) return
the new body and check it by parsing it again: every other section keeps its heading and blocks,
so an unclosed fence or a list that would swallow the next block is refused, never written.

Pure: no I/O.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, NamedTuple, NotRequired

from typing_extensions import TypedDict

from hostcore.domain.blocks import HEADING, Block, media, split_blocks
from hostcore.domain.pages import headings
from hostcore.errors import NotFound, ValidationError

TOP = "_top"
"""The section_id of the text before the first heading."""
POSITIONS = ("end", "start", "before", "after")
Position = Literal["end", "start", "before", "after"]

_NON_WORD = re.compile(r"[^\w]+")
_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")
_BLANK_START = re.compile(r"\n[ \t\r]*\n")
_TRAILING_BLANKS = re.compile(r"(?:\n[ \t\r]*)+$")


def rev_of(text: str) -> str:
    """The rev of a section's own text: 16 hex digits."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


def anchor(title: str) -> str:
    """A heading's text as an id: NFKC, case folded, runs of anything but letters, digits and _ as '-'."""
    folded = (title if title.isascii() else unicodedata.normalize("NFKC", title)).casefold()
    return _NON_WORD.sub("-", folded).strip("-_") or "section"


class Section(NamedTuple):
    """One section: ``body[start:end]`` is its own text, ``body[start:body_start]`` its heading line."""

    id: str
    level: int
    title: str
    start: int
    body_start: int
    end: int
    blocks: tuple[Block, ...]
    rev: str
    parent: str | None


@dataclass(frozen=True)
class Outline:
    """A body and its sections in order; ``sections[0]`` is always :data:`TOP`."""

    body: str
    sections: tuple[Section, ...]
    index: dict[str, int] = field(repr=False)

    def find(self, section_id: str, field_name: str = "section_id") -> int:
        """The index of ``section_id`` in :attr:`sections`. Raises NotFound naming the field."""
        at = self.index.get(section_id)
        if at is None:
            raise NotFound(
                f"no section {section_id[:200]!r} in this page; call outline for the section_ids it has now",
                field=field_name,
            )
        return at

    def text(self, block: Block) -> str:
        return self.body[block.start : block.end]

    def own_text(self, at: int) -> str:
        s = self.sections[at]
        return self.body[s.start : s.end]

    def subtree_end(self, at: int) -> int:
        """The index after ``at``'s last subsection: the next section of the same or a higher level
        (the text before the first heading has none)."""
        level = self.sections[at].level
        at += 1
        while at < len(self.sections) and level and self.sections[at].level > level:
            at += 1
        return at

    def shapes(self) -> list[tuple[int, str, tuple[str, ...]]]:
        """Each section's level, title and block texts: what an edit elsewhere must leave alone."""
        return [(s.level, s.title, tuple(self.text(b) for b in s.blocks)) for s in self.sections]


def outline(body: str) -> Outline:
    """The sections of ``body`` (see the module's docstring)."""
    parts: list[tuple[int, str, int, int, list[Block]]] = [(0, "", 0, 0, [])]
    for block in split_blocks(body):
        if block.kind == HEADING:
            parts.append((block.level, block.title, block.start, block.end, []))
        else:
            parts[-1][4].append(block)
    ids = _ids(body, parts)
    sections: list[Section] = []
    stack: list[Section] = []
    for i, (level, title, start, body_start, blocks) in enumerate(parts):
        end = parts[i + 1][2] if i + 1 < len(parts) else len(body)
        while stack and stack[-1].level >= level and level > 0:
            stack.pop()
        parent = stack[-1].id if stack and level > 0 and stack[-1].level > 0 else None
        section = Section(ids[i], level, title, start, body_start, end, tuple(blocks), rev_of(body[start:end]), parent)
        sections.append(section)
        if level > 0:
            stack.append(section)
    return Outline(body, tuple(sections), {s.id: i for i, s in enumerate(sections)})


def _ids(body: str, parts: Sequence[tuple[int, str, int, int, list[Block]]]) -> list[str]:
    """Each part's section_id: its anchor, then ``~2``, ``~3`` ... past any taken, or read as
    heading text by ``read_page`` for another heading (the first heading of that text, as
    :func:`hostcore.domain.pages.section` finds it)."""
    first_of_text: dict[str, int] = {}
    for _level, text, offset in headings(body):
        first_of_text.setdefault(text.casefold(), offset)
    taken: set[str] = set()
    out: list[str] = []
    for i, (_level, title, start, _end, _blocks) in enumerate(parts):
        base = anchor(title) if i else TOP
        candidate, n = base, 1
        while candidate in taken or first_of_text.get(candidate.casefold(), start) != start:
            n += 1
            candidate = f"{base}~{n}"
        taken.add(candidate)
        out.append(candidate)
    return out


def subtree_text(o: Outline, section_id: str) -> str | None:
    """What ``read_page`` gives for a section named by its id: its heading and everything under
    it, subsections included; None when no section has that id."""
    at = o.index.get(section_id)
    if at is None:
        return None
    end = o.subtree_end(at)
    return o.body[o.sections[at].start : o.sections[end].start if end < len(o.sections) else len(o.body)]


# --- reading one section ------------------------------------------------------------------


class BlockEntry(TypedDict):
    """One numbered block of a section read: ``partial`` when the window cuts it."""

    n: int
    kind: str
    text: str
    media: bool
    partial: NotRequired[bool]


class SectionWindow(TypedDict):
    heading: str
    blocks: list[BlockEntry]
    block_count: int
    offset: int
    total_chars: int
    truncated: bool
    next_offset: int | None


def window(o: Outline, at: int, offset: int, limit: int) -> SectionWindow:
    """Blocks of section ``at`` in a window of its own text: ``offset`` and ``limit`` count its
    characters (heading line included). Whole blocks, except a first block longer than ``limit``,
    which is cut (``partial``); ``next_offset`` is where the next window starts."""
    s = o.sections[at]
    total = s.end - s.start
    if offset > 0 and offset >= total:
        raise ValidationError(f"{offset} is past the end; the section has {total} characters", field="offset")
    stop = offset + limit
    entries: list[BlockEntry] = []
    next_offset: int | None = None
    for n, b in enumerate(s.blocks, 1):
        begin, end = b.start - s.start, b.end - s.start
        if end <= offset:
            continue
        frm = max(begin, offset)
        if end > stop:
            if entries:
                next_offset = begin
                break
            entries.append(_entry(o, n, b, frm, stop, s.start, partial=True))
            next_offset = stop
            break
        entries.append(_entry(o, n, b, frm, end, s.start, partial=frm > begin))
    return {
        "heading": o.body[s.start : s.body_start],
        "blocks": entries,
        "block_count": len(s.blocks),
        "offset": offset,
        "total_chars": total,
        "truncated": next_offset is not None,
        "next_offset": next_offset,
    }


def _entry(o: Outline, n: int, b: Block, frm: int, to: int, base: int, *, partial: bool) -> BlockEntry:
    entry: BlockEntry = {"n": n, "kind": b.kind, "text": o.body[base + frm : base + to], "media": bool(media(o.text(b), b.kind))}
    if partial:
        entry["partial"] = True
    return entry


# --- edits --------------------------------------------------------------------------------


def edit_blocks(o: Outline, at: int, after: int, remove: int, markdown: str) -> str:
    """The body with ``remove`` blocks after block ``after`` of section ``at`` replaced by
    ``markdown``. Refuses (ValidationError) removing a block's image, attachment link or embed
    that the Markdown does not carry again, and a heading that is not deeper than the section's
    or not at its end (it would take the blocks after it into a new subsection)."""
    s = o.sections[at]
    count = len(s.blocks)
    if after > count:
        raise ValidationError(f"is {after}, but the section has {count} blocks; use 0 to {count}", field="after_block")
    if remove > count - after:
        raise ValidationError(
            f"is {remove}, but only {count - after} blocks follow block {after}; use 0 to {count - after}",
            field="remove_blocks",
        )
    text = markdown.strip("\n")
    if not text.strip() and remove == 0:
        raise ValidationError("is empty and remove_blocks is 0: nothing to do; give Markdown to insert", field="markdown")
    removed = s.blocks[after : after + remove]
    _keep_media([o.text(b) for b in removed], [text], after, "markdown")
    lead, rest = _cut(text)
    if rest:
        if after + remove < count:
            raise ValidationError(
                "has a heading, which may go only at the end of the section (after_block + remove_blocks = "
                f"{count}): anywhere else it would take the blocks after it into a new subsection",
                field="markdown",
            )
        shallow = [lvl for lvl, _t, _b in rest if lvl <= s.level]
        if shallow:
            raise ValidationError(
                f"has a level-{shallow[0]} heading; new headings must be deeper than the section's (level {s.level}): "
                f"start them with {'#' * (s.level + 1)} or more",
                field="markdown",
            )
        _keep_parents(o, at, rest)
    a = o.sections[at].body_start if after == 0 else s.blocks[after - 1].end
    b = s.blocks[after + remove - 1].end if remove else a
    expected = [o.text(x) for x in s.blocks[:after]] + lead + [o.text(x) for x in s.blocks[after + remove :]]
    return _checked(o, at, a, b, text if text.strip() else "", expected, rest, "markdown")


def insert(o: Outline, markdown: str, at: int | None, position: Position) -> str:
    """The body with ``markdown`` added at ``position`` of section ``at`` (None: of the page):
    ``end`` after the section's own blocks (or at the page's end), ``start`` right after its
    heading (or at the page's start), ``before`` its heading, ``after`` its last subsection.
    A heading in the Markdown must not take existing blocks or headings under it."""
    text = markdown.strip("\n")
    if not text.strip():
        raise ValidationError("is empty; give the Markdown to add", field="markdown")
    if at is None:
        if position not in ("end", "start"):
            raise ValidationError(f"{position!r} needs a section_id; without one use 'end' or 'start'", field="position")
        target, after = (len(o.sections) - 1, None) if position == "end" else (0, 0)
    elif position == "end":
        target, after = at, None
    elif position == "start":
        target, after = at, 0
    elif position == "before":
        if at == 0:
            raise ValidationError("the text before the first heading has no heading to go before; use 'start'", field="position")
        target, after = at - 1, None
    else:
        target, after = o.subtree_end(at) - 1, None
    s = o.sections[target]
    after = len(s.blocks) if after is None else after
    lead, rest = _cut(text)
    if rest:
        following = len(s.blocks) - after
        if following:
            raise ValidationError(
                f"has a heading, which would take the {following} block(s) after this place into a new section; "
                "add headings only where no block follows (position 'end', 'after' or 'before')",
                field="markdown",
            )
        _keep_parents(o, target, rest)
    a = s.body_start if after == 0 else s.blocks[after - 1].end
    expected = [o.text(x) for x in s.blocks[:after]] + lead + [o.text(x) for x in s.blocks[after:]]
    return _checked(o, target, a, a, text, expected, rest, "markdown")


def replace_text(o: Outline, at: int, old_text: str, new_text: str) -> tuple[str, int]:
    """The body with ``old_text`` replaced by ``new_text`` in section ``at``, and the number of
    the block it was in. ``old_text`` must occur exactly once in the section's blocks (the heading
    never matches), within one block; when it does not occur at all, it is looked for once more
    with Markdown's backslash escapes removed. The block keeps its images, attachment links and
    embeds, and stays one block."""
    if not old_text:
        raise ValidationError("is empty; copy the exact text to change from read_section", field="old_text")
    s = o.sections[at]
    hits = _occurrences(o, s, old_text)
    if not hits:
        plain = _ESCAPE.sub(r"\1", old_text)
        if plain != old_text:
            hits, old_text = _occurrences(o, s, plain), plain
    if not hits:
        raise ValidationError(
            "does not occur in the section's blocks; copy it exactly from read_section (within one block, not the heading)",
            field="old_text",
        )
    if len(hits) > 1:
        blocks = sorted({n for n, _a in hits})
        where = f"block {blocks[0]}" if len(blocks) == 1 else f"blocks {', '.join(map(str, blocks))}"
        raise ValidationError(
            f"occurs {len(hits)} times (in {where}); include more of the text around it so it matches exactly once",
            field="old_text",
        )
    n, pos = hits[0]
    block = s.blocks[n - 1]
    before = o.text(block)
    after = before[: pos - block.start] + new_text + before[pos - block.start + len(old_text) :]
    _keep_media([before], [after], n - 1, "new_text")
    expected = [o.text(x) for x in s.blocks]
    expected[n - 1] = after
    body = o.body[:pos] + new_text + o.body[pos + len(old_text) :]
    shapes = o.shapes()
    if outline(body).shapes() != [*shapes[:at], (s.level, s.title, tuple(expected)), *shapes[at + 1 :]]:
        raise ValidationError(
            f"would change the shape of block {n} (split it, join it to another or add a heading); "
            "use edit_blocks to replace whole blocks",
            field="new_text",
        )
    return body, n


def replace_section(o: Outline, at: int, text: str) -> str:
    """The body with section ``at``'s own text (heading line and blocks) replaced by ``text``, as
    a person edits it in the browser: new headings are fine, but every other section must keep
    its heading and blocks (so the text starts with a heading, unless it is the top section, and
    closes what it opens)."""
    s = o.sections[at]
    new = text.strip("\n")
    if new:
        trailing = _TRAILING_BLANKS.search(o.own_text(at))
        gap = trailing.group(0) if trailing else "\n" if s.end < len(o.body) else ""
        body = o.body[: s.start] + new + gap + o.body[s.end :]
    else:
        body = o.body[: s.start] + o.body[s.end :]
    shapes, now = o.shapes(), outline(body).shapes()
    later = len(shapes) - at - 1
    if len(now) < at + later or now[:at] != shapes[:at] or now[len(now) - later :] != shapes[at + 1 :]:
        hint = "start it with a heading line, " if at else ""
        raise ValidationError(
            "would change other sections of the page (a removed heading line, an unclosed code fence or a list "
            f"that runs into the next section); {hint}close every code fence and end a last list with a blank line",
            field="text",
        )
    return body


def _keep_parents(o: Outline, at: int, added: list[tuple[int, str, tuple[str, ...]]]) -> None:
    """Refuse headings ``added`` at the end of section ``at`` that would take the heading after them under themselves."""
    nxt = o.sections[at + 1].level if at + 1 < len(o.sections) else 0
    low = min(lvl for lvl, _t, _b in added)
    if nxt and low < nxt:
        raise ValidationError(
            f"has a level-{low} heading, which would take the level-{nxt} heading after it under itself; "
            f"use level {nxt} or deeper here",
            field="markdown",
        )


def _occurrences(o: Outline, s: Section, needle: str) -> list[tuple[int, int]]:
    """(block number, offset in the body) of each occurrence of ``needle`` inside one block."""
    hits: list[tuple[int, int]] = []
    for n, b in enumerate(s.blocks, 1):
        text = o.text(b)
        at = text.find(needle)
        while at != -1:
            hits.append((n, b.start + at))
            at = text.find(needle, at + len(needle))
    return hits


def _keep_media(old: list[str], new: list[str], first: int, field_name: str) -> None:
    """Refuse when something ``old`` blocks show (see :func:`~hostcore.domain.blocks.media`) is not in ``new``."""
    kept = [m for text in new for m in media(text)]
    for i, text in enumerate(old):
        for target in media(text):
            if target in kept:
                kept.remove(target)
                continue
            raise ValidationError(
                f"would remove {target[:200]!r} from block {first + i + 1}: an image, attachment link or embed, which "
                "an assistant cannot bring back; keep it in the new text, or ask a person to remove it",
                field=field_name,
            )


def _cut(text: str) -> tuple[list[str], list[tuple[int, str, tuple[str, ...]]]]:
    """``text``'s blocks before its first heading, and the shape of each section it starts."""
    if not text.strip():
        return [], []
    o = outline(text)
    lead = [o.text(b) for b in o.sections[0].blocks]
    return lead, o.shapes()[1:]


def _checked(
    o: Outline, at: int, a: int, b: int, text: str, expected: list[str],
    added: list[tuple[int, str, tuple[str, ...]]], field_name: str,
) -> str:  # fmt: skip
    """``o.body`` with ``[a, b)`` replaced by ``text`` (set apart by blank lines), checked: section
    ``at`` then holds the ``expected`` blocks, followed by the ``added`` sections, and every other
    section is as it was."""
    body = _splice(o.body, a, b, text)
    s = o.sections[at]
    shapes = o.shapes()
    want = [*shapes[:at], (s.level, s.title, tuple(expected)), *added, *shapes[at + 1:]]
    if outline(body).shapes() != want:
        raise ValidationError(
            "would change blocks it does not replace: close every code fence it opens, and make sure a list or quote "
            "at its end does not run into the block after it",
            field=field_name,
        )
    return body


def _splice(body: str, a: int, b: int, text: str) -> str:
    """``body`` with ``[a, b)`` (from the end of one line's text) replaced by ``text``, with a
    blank line between it and the text around it."""
    head, tail = body[:a], body[b:]
    if not text:
        return head + tail if head else tail.lstrip("\n")
    lead = "\n\n" if head else ""
    if not tail.strip(" \t\r\n") or _BLANK_START.match(tail):
        trail = ""
    elif tail.startswith("\n"):
        trail = "\n"
    else:
        trail = "\n\n"
    return head + lead + text + trail + tail

