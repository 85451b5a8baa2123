"""A Markdown body cut into its top-level blocks, as the web's renderer (markdown-it, CommonMark
with tables, raw HTML shown as text) reads them, by a line scanner cheap enough for a 1 MiB page.

A block is an ATX heading line, a paragraph (a setext heading is one too: it only ends with its
underline), a list (all its items), a quote, a code block (fenced or indented), a table or a
thematic break. Blank lines between blocks belong to none. Raw HTML is not a block of its own,
since the renderer shows it as text. What lies inside a list or a quote (a ``#`` line, a fence)
stays inside that block: only a heading at the top level starts a section.

:func:`media` lists what a block shows that an assistant could not put back from the text alone
once removed: images, links to attachments and embedded HTML media.

The scanner follows markdown-it's reading wherever pages are written as people write them (a test
of the web plugin compares the two on tricky and generated pages); a lazy continuation line after
content nested two levels deep in lists or quotes can still be read otherwise. Section edits are
checked against this reading alone, so such a difference can refuse an edit, never garble a page.

Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import NamedTuple

from hostcore.domain.attachments import URL_PREFIX

HEADING = "heading"
PARAGRAPH = "paragraph"
LIST = "list"
QUOTE = "quote"
CODE = "code"
TABLE = "table"
RULE = "rule"


class Block(NamedTuple):
    """``text[start:end]`` is one block: its lines, the last one without its newline.

    ``level`` and ``title`` are set for an ATX heading (the title without its ``#`` marks).
    """

    kind: str
    start: int
    end: int
    level: int = 0
    title: str = ""


_ATX = re.compile(r"(#{1,6})(?:[ \t]+|$)")
_CLOSING = re.compile(r"(?:^|[ \t]+)#+[ \t]*$")
_FENCE = re.compile(r"(`{3,}|~{3,})(.*)$")
_RULE = re.compile(r"(?:(?:\*[ \t]*){3,}|(?:-[ \t]*){3,}|(?:_[ \t]*){3,})$")
_BULLET = re.compile(r"([-+*])(?=[ \t]|$)")
_ORDERED = re.compile(r"(\d{1,9})([.)])(?=[ \t]|$)")
_SETEXT = re.compile(r"(?:=+|-+)[ \t]*$")
_DELIMITER_CELL = re.compile(r":?-+:?")
_TABLE_ROW_CHARS = frozenset("|-: \t")
_STARTERS = frozenset("#`~*-_+>0123456789")  # first characters of a line that may open a block other than a paragraph


def _width(line: str) -> int:
    """Columns of leading whitespace, a tab reaching the next multiple of 4 (CommonMark's rule)."""
    col = 0
    for ch in line:
        if ch == " ":
            col += 1
        elif ch == "\t":
            col += 4 - col % 4
        else:
            break
    return col


def _dedent(line: str, columns: int) -> str:
    """``line`` without its first ``columns`` columns of leading whitespace; the rest of that
    whitespace as spaces, so that a tab keeps the width its column gave it."""
    col = i = 0
    while i < len(line) and line[i] in " \t":
        col += 1 if line[i] == " " else 4 - col % 4
        i += 1
    return " " * max(0, col - columns) + line[i:]


def _blank(line: str) -> bool:
    return not line.strip(" \t\r")


class _Marker:
    """A list item's marker: its kind (the bullet character, or ``.``/``)`` for ordered lists),
    the column its content starts at, its number (ordered) and the text of its first line as it
    stands in the item (``""``: the item opens empty)."""

    __slots__ = ("content", "first", "kind", "number")

    def __init__(self, kind: str, content: int, number: int, first: str) -> None:
        self.kind, self.content, self.number, self.first = kind, content, number, first

    @property
    def empty(self) -> bool:
        return not self.first


def _marker(line: str, indent: int) -> _Marker | None:
    """The list marker ``line`` opens with (at ``indent`` columns), else None."""
    s = line.lstrip(" \t")
    if not s or s[0] not in "-+*0123456789":
        return None
    m = _BULLET.match(s) or _ORDERED.match(s)
    if m is None:
        return None
    ordered = m.re is _ORDERED
    kind = m.group(2) if ordered else m.group(1)
    width = indent + len(m.group(1)) + (1 if ordered else 0)
    after = s[m.end(2 if ordered else 1) :]
    if _blank(after):
        return _Marker(kind, width + 1, int(m.group(1)) if ordered else 0, "")
    gap = _width(" " * width + after) - width
    # CommonMark: 1-4 spaces after the marker belong to it; 5 or more mean indented code, which starts 1 after it
    content = width + (1 if gap > 4 else gap)
    return _Marker(kind, content, int(m.group(1)) if ordered else 0, _dedent(" " * width + after, content))


def _is_rule(s: str) -> bool:
    return s[0] in "*-_" and _RULE.match(s.rstrip("\r")) is not None


def _fence(s: str) -> tuple[str, int] | None:
    """(character, length) of the code fence ``s`` opens, else None."""
    if s[0] not in "`~":
        return None
    m = _FENCE.match(s)
    if m is None or (m.group(1)[0] == "`" and "`" in m.group(2)):
        return None
    return m.group(1)[0], len(m.group(1))


def _closes(line: str, fence: tuple[str, int]) -> bool:
    if _width(line) > 3:
        return False
    s = line.strip(" \t\r")
    return len(s) >= fence[1] and s[0] == fence[0] and s == fence[0] * len(s)


def _cells(row: str) -> list[str]:
    """A table row's cells, split at pipes that are not escaped, outer empty cells dropped."""
    cells = re.split(r"(?<!\\)\|", row.strip(" \t\r"))
    if cells and not cells[0].strip():
        cells.pop(0)
    if cells and not cells[-1].strip():
        cells.pop()
    return cells


def _table_head(line: str, following: str | None) -> bool:
    """Whether ``line`` and the one ``following`` it open a table (markdown-it's rule: a delimiter
    row with as many cells as the header row)."""
    if following is None or "|" not in line or _width(following) > 3 or _width(line) > 3:
        return False
    row = following.strip(" \t\r")
    if len(row) < 2 or row[0] not in "|-:" or not set(row) <= _TABLE_ROW_CHARS:
        return False
    if row[0] == "-" and row[1] in " \t":
        return False
    parts = row.split("|")
    aligns = 0
    for i, part in enumerate(parts):
        cell = part.strip(" \t")
        if not cell:
            if i in (0, len(parts) - 1):
                continue
            return False
        if not _DELIMITER_CELL.fullmatch(cell):
            return False
        aligns += 1
    return aligns > 0 and len(_cells(line)) == aligns


class _Lines:
    """The lines of a text with the offset each starts at."""

    def __init__(self, text: str) -> None:
        self.lines = text.split("\n")
        self.starts: list[int] = []
        at = 0
        for line in self.lines:
            self.starts.append(at)
            at += len(line) + 1
        if "\r" in text:  # a CRLF line ends before its CR, as the renderer reads it
            self.lines = [line[:-1] if line.endswith("\r") else line for line in self.lines]

    def end(self, i: int) -> int:
        """Offset just past line ``i``'s last character (its newline not included)."""
        return self.starts[i] + len(self.lines[i])


def _interrupts(line: str, following: str | None, *, top: bool) -> bool:
    """Whether ``line`` starts a block that ends a paragraph without a blank line: a top-level
    paragraph (``top``: ``line`` indented at most 3; a table may start, a list item only with
    text and numbered 1), or one in a list item or quote that ``line`` would continue lazily
    (markdown-it: any list item indented at most 3, and in a list item any heading, fence, quote
    or rule however far it is indented below the item's text)."""
    s = line.lstrip(" \t")
    c = s[0]
    if c == "#":
        return _ATX.match(s) is not None
    if c in "`~":
        return _fence(s) is not None
    if c == ">":
        return True
    if c in "*-_" and _is_rule(s):
        return True
    if c in "-+*0123456789" and (top or _width(line) < 4):
        m = _marker(line, _width(line))
        if m is not None and (not top or (not m.empty and (m.kind in "-+*" or m.number == 1))):
            return True
    return top and "|" in line and _table_head(line, following)


def split_blocks(text: str) -> list[Block]:
    """The top-level blocks of ``text`` in order (see the module's docstring)."""
    return list(_scan(_Lines(text)))


def _scan(src: _Lines) -> Iterator[Block]:
    lines, n = src.lines, len(src.lines)
    i = 0
    while i < n:
        line = lines[i]
        if _blank(line):
            i += 1
            continue
        indent = _width(line) if line[0] in " \t" else 0
        start = src.starts[i]
        if indent >= 4:
            last = i
            i += 1
            while i < n and (_blank(lines[i]) or _width(lines[i]) >= 4):
                if not _blank(lines[i]):
                    last = i
                i += 1
            i = last + 1
            yield Block(CODE, start, src.end(last))
            continue
        following = lines[i + 1] if i + 1 < n else None
        if "|" in line and _table_head(line, following):  # markdown-it tries a table first, even on "- a | b"
            i = _table_end(lines, i + 2)
            yield Block(TABLE, start, src.end(i - 1))
            continue
        s = line.lstrip(" \t") if indent else line
        c = s[0]
        if c in _STARTERS:
            if c == "#":
                m = _ATX.match(s)
                if m is not None:
                    title = s[m.end() :].rstrip(" \t\r")
                    title = (_CLOSING.sub("", title) if title.endswith("#") else title).strip(" \t")
                    yield Block(HEADING, start, src.end(i), len(m.group(1)), title)
                    i += 1
                    continue
            fence = _fence(s) if c in "`~" else None
            if fence is not None:
                i += 1
                while i < n and not _closes(lines[i], fence):
                    i += 1
                last = i
                if i == n:  # never closed: it runs to the end, whose blank lines are not its content
                    last = n - 1
                    while _blank(lines[last]):
                        last -= 1
                i = last + 1
                yield Block(CODE, start, src.end(last))
                continue
            if c in "*-_" and _is_rule(s):
                i += 1
                yield Block(RULE, start, src.end(i - 1))
                continue
            if c == ">":
                i = _quote_end(lines, i)
                yield Block(QUOTE, start, src.end(i - 1))
                continue
            marker = _marker(line, indent) if c in "-+*0123456789" else None
            if marker is not None:
                i = _list_end(lines, i, marker)
                yield Block(LIST, start, src.end(i - 1))
                continue
        i = _paragraph_end(lines, i + 1)
        yield Block(PARAGRAPH, start, src.end(i - 1))


def _paragraph_end(lines: list[str], i: int) -> int:
    """The line after a top-level paragraph whose second line is ``i``."""
    n = len(lines)
    while i < n:
        line = lines[i]
        if _blank(line):
            return i
        if _width(line) < 4 and line.lstrip(" \t")[0] in "=-" and _SETEXT.match(line.lstrip(" \t")):
            return i + 1  # the underline of a setext heading: the paragraph is that heading
        if _width(line) < 4 and _interrupts(line, lines[i + 1] if i + 1 < n else None, top=True):
            return i
        i += 1
    return i


def _table_end(lines: list[str], i: int) -> int:
    """The line after a table whose first body row may be ``i``."""
    n = len(lines)
    while i < n:
        line = lines[i]
        if _blank(line) or _width(line) >= 4 or _interrupts(line, None, top=False):
            return i
        i += 1
    return i


def _quote_end(lines: list[str], i: int) -> int:
    """The line after a block quote opening at line ``i``: its ``>`` lines and the lazy lines
    that continue a paragraph in it."""
    n = len(lines)
    lazy = False  # whether the last line was paragraph text, which a line without '>' may continue
    nested = False  # whether that text is in a quote in the quote: markdown-it then ends it at any block start
    fence: tuple[str, int] | None = None
    prev = ""
    while i < n:
        line = lines[i]
        if _blank(line):
            return i
        indent = _width(line)
        s = line.lstrip(" \t")
        if indent < 4 and s[0] == ">":
            inner = s[1:]
            inner = inner[1:] if inner[:1] == " " else inner
            was_nested = nested and lazy
            fence, lazy = _inner_line(inner, prev, fence, lazy, False)
            nested = lazy and (inner.lstrip(" \t")[0] == ">" or was_nested)
            prev = inner
            i += 1
            continue
        if not lazy or ((indent < 4 or nested) and _interrupts(s, None, top=False)):
            return i
        prev = ""
        i += 1
    return i


def _is_heading_or_rule(s: str) -> bool:
    return (s[0] == "#" and _ATX.match(s) is not None) or _is_rule(s)


def _list_end(lines: list[str], i: int, marker: _Marker) -> int:
    """The line after a list whose first item's marker is on line ``i``: every item of the same
    kind, with the lines indented into it, the blank lines between and lazy paragraph lines."""
    n = len(lines)
    content = marker.content
    empty = marker.empty  # an item opening with nothing and then a blank line is empty
    fence, lazy = _inner_line(marker.first, "", None, False, True)
    prev = marker.first
    i += 1
    blank_before = False
    while i < n:
        line = lines[i]
        if _blank(line):
            if empty:  # ... so the next line must be the next item, or the list ends
                nxt = lines[i + 1] if i + 1 < n else ""
                m = _marker(nxt, _width(nxt)) if not _blank(nxt) and _width(nxt) < 4 else None
                if m is None or m.kind != marker.kind:
                    break
                content = 10**9
            blank_before = True
            lazy = False
            i += 1
            continue
        indent = _width(line)
        if indent >= content:  # inside the current item
            inner = _dedent(line, content)
            fence, lazy = _inner_line(inner, prev, fence, lazy, blank_before)
            prev = inner
            empty = blank_before = False
            i += 1
            continue
        fence = None  # a line less indented closes the item and any fence in it
        if indent < 4:
            s = line.lstrip(" \t")
            if s[0] in "*-_" and _is_rule(s):
                break
            m = _marker(line, indent)
            if m is not None and m.kind == marker.kind:
                content, empty = m.content, m.empty
                fence, lazy = _inner_line(m.first, "", None, False, True)
                prev = m.first
                blank_before = False
                i += 1
                continue
        if blank_before or not lazy or _interrupts(line, None, top=False):
            break
        following = lines[i + 1] if i + 1 < n else None
        if following is not None and "|" in line and _width(following) >= content and _table_head(line, _dedent(following, content)):
            break  # a table under the item's paragraph: markdown-it ends the paragraph (and the list) there
        prev = ""
        i += 1  # lazy continuation of the item's paragraph
    while i > 0 and _blank(lines[i - 1]):
        i -= 1
    return i


def _inner_line(
    inner: str, prev: str, fence: tuple[str, int] | None, lazy: bool, blank_before: bool
) -> tuple[tuple[str, int] | None, bool]:
    """(the fence open after it, whether a lazy line may continue it) for ``inner``, a line of a
    list item's or a quote's text without their indentation or ``>``, given the line before it
    (``prev``, ``fence``, ``lazy``: whether it was paragraph text) and whether a blank line came between."""
    if not inner or _blank(inner):
        return fence, False
    if fence is not None:
        return (None if _closes(inner, fence) else fence), False
    if _width(inner) >= 4:
        return None, lazy and not blank_before  # indented code, unless it continues a paragraph
    s = inner.lstrip(" \t")
    if lazy and not blank_before and (_SETEXT.match(s) or (prev and _table_head(prev, inner))):
        return None, False  # the paragraph was a setext heading, or the head of a table
    opened = _fence(s)
    return opened, opened is None and _is_text(s)


def _is_text(s: str) -> bool:
    """Whether ``s``, a line's text at the start of a block, ends as paragraph text (that a lazy
    line may continue) once the quote marks and list markers opening it are read."""
    while True:
        if _blank(s) or _is_heading_or_rule(s) or _fence(s) is not None:
            return False
        if s[0] == ">":
            s = s[1:].lstrip(" \t")
            continue
        m = _marker(s, 0) if s[0] in "-+*0123456789" else None
        if m is None:
            return True
        s = m.first.lstrip(" \t")
        if _width(m.first) >= 4:
            return False  # indented code


# --- what a block shows ------------------------------------------------------------------

_CODE_SPAN = re.compile(r"(`+)(?!`).*?(?<!`)\1(?!`)", re.S)
_IMAGE = re.compile(r"!\[(?:[^\[\]\\]|\\.|\[[^\[\]]*\])*\]\s*(?:\(\s*<?([^)\s>]*)|\[([^\]]*)\])")
_ATTACHMENT_LINK = re.compile(r"\]\(\s*<?(" + re.escape(URL_PREFIX) + r"[^)\s>]+)")
_EMBED = re.compile(r"<(?:img|video|audio|iframe|embed|object|picture|source)\b[^>]*>", re.I)


def media(markdown: str, kind: str = PARAGRAPH) -> list[str]:
    """What a block of ``kind`` shows that its text alone cannot bring back once removed, in
    order: the target of each image (``![alt](url)``, ``![alt][ref]``), of each link to an
    attachment (``[name](/_/files/...)``) and each embedded HTML media tag. Code shows nothing."""
    if kind == CODE or not ("!" in markdown or "<" in markdown or URL_PREFIX in markdown):
        return []
    text = _CODE_SPAN.sub("", markdown) if "`" in markdown else markdown
    found: list[str] = []
    for m in _IMAGE.finditer(text):
        found.append(m.group(1) if m.group(1) is not None else f"[{m.group(2)}]")
    found += [m.group(1) for m in _ATTACHMENT_LINK.finditer(text) if m.group(1) not in found]
    found += [m.group(0) for m in _EMBED.finditer(text)]
    return found
