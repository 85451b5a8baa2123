"""Text extractors for attachments: PDF, HTML, DOCX and XLSX.

Enable with ``PLUGINS = [..., "docs"]``. Each extractor bounds its own work (pages, cells, text
and unzipped size; see :mod:`hostcore_extract_docs.bounds`) and raises
:class:`hostcore.ExtractionFailed` with the reason a file cannot be read: damaged, encrypted,
nested too deeply, or over a limit.

Each extractor's module (and its library: pypdf, python-docx and openpyxl, lxml) is imported when
it is first asked for: the extraction subprocess reading a PDF loads pypdf alone, and a command
that only loads the plugin loads none of them.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from hostcore import hookimpl

if TYPE_CHECKING:
    from hostcore_extract_docs.markup import HtmlExtractor
    from hostcore_extract_docs.office import DocxExtractor, XlsxExtractor
    from hostcore_extract_docs.pdf import PdfExtractor

_MODULE_OF = {"PdfExtractor": "pdf", "HtmlExtractor": "markup", "DocxExtractor": "office", "XlsxExtractor": "office"}

__all__ = ["EXTRACTORS", "DocxExtractor", "HtmlExtractor", "PdfExtractor", "XlsxExtractor", "register_extractors"]


def __getattr__(name: str) -> Any:
    if name == "EXTRACTORS":
        return tuple(__getattr__(extractor) for extractor in _MODULE_OF)
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'hostcore_extract_docs' has no attribute {name!r}")
    return getattr(importlib.import_module(f"hostcore_extract_docs.{module}"), name)


@hookimpl
def register_extractors(register: Callable[[type], None]) -> None:
    for extractor in __getattr__("EXTRACTORS"):
        register(extractor)
