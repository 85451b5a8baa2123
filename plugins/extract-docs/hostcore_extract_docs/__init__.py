"""Text extractors for attachments: PDF, HTML, DOCX and XLSX.

Enable with ``PLUGINS = [..., "docs"]``. Each extractor bounds its own work (pages, cells, text
and unzipped size; see :mod:`hostcore_extract_docs.bounds`) and raises
:class:`hostcore.ExtractionFailed` with the reason a file cannot be read: damaged, encrypted,
nested too deeply, or over a limit.
"""

from __future__ import annotations

from collections.abc import Callable

from hostcore import hookimpl
from hostcore_extract_docs.markup import HtmlExtractor
from hostcore_extract_docs.office import DocxExtractor, XlsxExtractor
from hostcore_extract_docs.pdf import PdfExtractor

EXTRACTORS = (PdfExtractor, HtmlExtractor, DocxExtractor, XlsxExtractor)

__all__ = ["EXTRACTORS", "DocxExtractor", "HtmlExtractor", "PdfExtractor", "XlsxExtractor", "register_extractors"]


@hookimpl
def register_extractors(register: Callable[[type], None]) -> None:
    for extractor in EXTRACTORS:
        register(extractor)
