"""HTML as text, parsed by lxml (libxml2's HTML parser): what a reader sees, in paragraphs.

Scripts, styles, templates and ``noscript`` fallbacks are dropped; block elements (paragraphs,
headings, list items, table rows, ...) start new paragraphs or lines; table cells are separated by
tabs; whitespace collapses as a browser collapses it, except inside ``pre``. libxml2 parses broken
markup in time linear in its size (the standard library's parser is quadratic on some inputs,
such as a run of unclosed comments, in the Python versions hostcore supports) and stops at 2,048
levels of nesting, which fails the file as nested too deeply; the tree is walked without recursion.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, ClassVar

from hostcore import ExtractionFailed, Extractor
from hostcore_extract_docs.bounds import MAX_CHARS, TextBudget, reading

if TYPE_CHECKING:
    from lxml import etree

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

    def prepare(self) -> None:
        from lxml import etree  # noqa: F401

    def extract(self, data: bytes, media_type: str) -> str:
        from lxml import etree  # here, not at import: loading the plugin must not load lxml

        with reading(WHAT):
            # The text is decoded here (see decode), so the parser is told UTF-8 whatever the page declares.
            parser = etree.HTMLParser(encoding="utf-8", no_network=True, remove_comments=True, remove_pis=True, huge_tree=True)
            root = etree.fromstring(decode(data).encode("utf-8"), parser)
            for error in parser.error_log:
                if error.type_name == "ERR_RESOURCE_LIMIT":  # libxml2 stopped: what it parsed is not the page
                    reason = "nests its contents too deeply to read" if "depth" in error.message else "is too large to read"
                    raise ExtractionFailed(f"{WHAT} {reason}")
            budget = TextBudget(WHAT, self.max_chars)
            for paragraph in text(root).split("\n\n"):
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


def text(root: etree._Element | None) -> str:
    """What a reader sees of the tree: lines and cells trimmed, a blank line between paragraphs."""
    joined = "".join(_pieces(root)) if root is not None else ""
    lines = ("\t".join(cell.strip(" ") for cell in line.strip(" \t").split("\t")) for line in joined.split("\n"))
    return BLANK_LINES.sub("\n\n", "\n".join(lines)).strip("\n").replace(NBSP, " ")


def _pieces(root: etree._Element) -> Iterator[str]:
    """The tree's text and the breaks between its blocks, in document order."""
    from lxml import etree

    hidden = pre = 0
    for event, element in etree.iterwalk(root, events=("start", "end")):
        tag = element.tag.lower() if isinstance(element.tag, str) else ""
        opening = event == "start"
        step = 1 if opening else -1
        hidden += step if tag in HIDDEN else 0
        pre += step if tag == "pre" else 0
        if tag in PARAGRAPHS:
            yield "\n\n"
        elif tag in LINES and opening:
            yield "\n"
        elif tag in CELLS and opening:
            yield "\t"
        words = element.text if opening else element.tail
        if words and not hidden:
            # Spaces in pre are kept as no-break spaces, so trimming lines leaves them; text() turns them back.
            yield words.replace(" ", NBSP) if pre else SPACES.sub(" ", words)
