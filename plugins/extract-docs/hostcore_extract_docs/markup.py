"""HTML as text, with the standard library's parser: what a reader sees, in paragraphs.

Scripts, styles, templates and ``noscript`` fallbacks are dropped; block elements (paragraphs,
headings, list items, table rows, ...) start new paragraphs or lines; table cells are separated by
tabs; whitespace collapses as a browser collapses it, except inside ``pre``. The parser is
forgiving and never recurses, so deeply nested or broken markup costs time linear in its size.
"""

from __future__ import annotations

import codecs
import re
from html.parser import HTMLParser
from typing import ClassVar

from hostcore import Extractor
from hostcore_extract_docs.bounds import MAX_CHARS, TextBudget, reading

WHAT = "the HTML file"
HIDDEN = frozenset({"script", "style", "template", "noscript"})
PARAGRAPHS = frozenset(
    "address article aside blockquote body caption details dialog div dl fieldset figcaption figure footer "
    "form h1 h2 h3 h4 h5 h6 header hr html main nav ol p pre section summary table title ul".split()
)
LINES = frozenset({"br", "li", "tr", "dt", "dd"})
CELLS = frozenset({"td", "th"})
META_CHARSET = re.compile(rb"""<meta[^>]*?charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.IGNORECASE)
NBSP = "\u00a0"
SPACES = re.compile(r"\s+")
BLANK_LINES = re.compile(r"\n{3,}")


class HtmlExtractor(Extractor):
    name = "html"
    media_types = ("text/html", "application/xhtml+xml")
    max_chars: ClassVar[int] = MAX_CHARS

    def extract(self, data: bytes, media_type: str) -> str:
        with reading(WHAT):
            parser = _TextParser()
            parser.feed(decode(data))
            parser.close()
            budget = TextBudget(WHAT, self.max_chars)
            for paragraph in parser.text().split("\n\n"):
                budget.add(paragraph)
            return budget.text()


def decode(data: bytes) -> str:
    """The document as text: by its byte-order mark, else its ``<meta charset>``, else UTF-8,
    else windows-1252 (what browsers assume of an unlabelled page)."""
    for bom, encoding in ((codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16")):
        if data.startswith(bom):
            return data.decode(encoding, errors="replace")
    declared = META_CHARSET.search(data[:4096])
    if declared:
        try:
            return data.decode(codecs.lookup(declared.group(1).decode("ascii")).name, errors="replace")
        except LookupError:
            pass
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("cp1252", errors="replace")


class _TextParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self.hidden = 0
        self.pre = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in HIDDEN:
            self.hidden += 1
        elif tag == "pre":
            self.pre += 1
        self._break(tag, opening=True)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._break(tag, opening=True)

    def handle_endtag(self, tag: str) -> None:
        if tag in HIDDEN:
            self.hidden = max(0, self.hidden - 1)
        elif tag == "pre":
            self.pre = max(0, self.pre - 1)
        self._break(tag, opening=False)

    def handle_data(self, data: str) -> None:
        if not self.hidden:
            # Spaces in pre are kept as no-break spaces, so trimming lines leaves them; text() turns them back.
            self.out.append(data.replace(" ", NBSP) if self.pre else SPACES.sub(" ", data))

    def _break(self, tag: str, *, opening: bool) -> None:
        if tag in PARAGRAPHS:
            self.out.append("\n\n")
        elif tag in LINES and opening:
            self.out.append("\n")
        elif tag in CELLS and opening:
            self.out.append("\t")

    def text(self) -> str:
        """What was seen: lines and cells trimmed, a blank line between paragraphs."""
        lines = ("\t".join(cell.strip(" ") for cell in line.strip(" \t").split("\t")) for line in "".join(self.out).split("\n"))
        return BLANK_LINES.sub("\n\n", "\n".join(lines)).strip("\n").replace(NBSP, " ")
