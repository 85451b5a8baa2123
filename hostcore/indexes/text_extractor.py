"""The built-in text extractor, a default plugin: plain text, Markdown and CSV as they are.

Decoding: UTF-8 (a byte-order mark is dropped), UTF-16 when the file starts with its byte-order
mark, and otherwise UTF-8 with each invalid byte replaced by U+FFFD. No guessing of legacy code
pages: a guess that is wrong garbles every accented letter, a replacement character garbles one.
"""

from __future__ import annotations

from collections.abc import Callable

from hostcore.seams.extract import Extractor
from hostcore.seams.hookspecs import hookimpl


def decode(data: bytes) -> str:
    """``data`` as text: UTF-8 or, with its byte-order mark, UTF-16; invalid bytes become U+FFFD."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16", "replace")
    return data.decode("utf-8-sig", "replace")


class PlainTextExtractor(Extractor):
    name = "text"
    media_types = ("text/plain", "text/markdown", "text/csv", "text/tab-separated-values")

    def extract(self, data: bytes, media_type: str) -> str:
        return decode(data)


@hookimpl
def register_extractors(register: Callable[[type], None]) -> None:
    register(PlainTextExtractor)
