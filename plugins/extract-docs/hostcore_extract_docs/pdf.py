"""PDF text with pypdf: each page's text, pages separated by blank lines.

Bounds beyond pypdf's own (stream sizes, parsing work, page-tree depth): at most ``max_pages``
pages, checked against the declared page count before the page tree is walked and enforced while
it is walked (a tree whose count lies), and at most ``max_chars`` characters of text. A PDF that
opens with an empty password (only its permissions are protected) is read; one that needs a
password is refused.
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING, ClassVar

from hostcore import ExtractionFailed, Extractor
from hostcore_extract_docs.bounds import MAX_CHARS, TextBudget, reading

if TYPE_CHECKING:
    from pypdf import PdfReader

WHAT = "the PDF"


class PdfExtractor(Extractor):
    name = "pdf"
    media_types = ("application/pdf",)
    max_pages: ClassVar[int] = 5_000
    max_chars: ClassVar[int] = MAX_CHARS

    def prepare(self) -> None:
        import pypdf.generic  # noqa: F401

    def extract(self, data: bytes, media_type: str) -> str:
        from pypdf import apply_configuration  # here, not at import: loading the plugin must not load pypdf
        from pypdf.errors import LimitReachedError

        # A page tree has a node per page plus its inner nodes: twice the pages is ample.
        with reading(WHAT), apply_configuration(page_tree_maximum_entries=2 * self.max_pages, jbig2dec_binary=None):
            try:
                reader = _open(data)
                if reader.is_encrypted and not reader.decrypt(""):
                    raise ExtractionFailed(f"{WHAT} is encrypted: it needs a password to open; upload it without one")
                self._check_pages(_declared_pages(reader))
                pages = reader.pages
                self._check_pages(len(pages))
                budget = TextBudget(WHAT, self.max_chars)
                for page in pages:
                    budget.add(page.extract_text())
                return budget.text()
            except LimitReachedError as exc:
                raise ExtractionFailed(f"{WHAT} is too complex to read ({exc}); it may be built to exhaust a reader") from None

    def _check_pages(self, count: int) -> None:
        if count > self.max_pages:
            raise ExtractionFailed(f"{WHAT} has {count:,} pages, more than the {self.max_pages:,} this wiki extracts")


def _open(data: bytes) -> PdfReader:
    from pypdf import PdfReader

    try:
        return PdfReader(io.BytesIO(data))
    except NotImplementedError as exc:  # what pypdf raises opening an encryption other than by password
        raise ExtractionFailed(
            f"{WHAT} is encrypted in a way this wiki cannot open ({exc}); upload it without encryption"
        ) from None


def _declared_pages(reader: PdfReader) -> int:
    """The page count the root page node declares (0 when it declares none)."""
    from pypdf.generic import DictionaryObject

    pages = reader.root_object["/Pages"].get_object()
    count = pages.get("/Count", 0) if isinstance(pages, DictionaryObject) else 0
    return count if isinstance(count, int) else 0
