"""The extractor seam: plugins that turn an attachment's bytes into plain text.

An extractor names the media types it reads. The host asks the extractors in plugin order and
the first that accepts a type is used, the way ``STORAGE`` and ``SEARCH`` pick one backend; an
attachment no extractor accepts is still stored and linkable, its text simply unavailable.
Extraction runs outside the request's worker thread with time and memory limits, so an
extractor may assume nothing about being fast on hostile input: it raises
:class:`ExtractionFailed` with a reason people can read (corrupt, encrypted, too large).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar


class Extractor(ABC):
    """Base class of text extractors. Registered via ``register_extractors``.

    ``media_types`` lists exact types (``application/pdf``) or a family ending in ``/*``
    (``text/*``). ``extract`` gets the whole file and returns its text, paragraphs separated by
    blank lines; it raises ExtractionFailed for a file it cannot read.
    """

    name: ClassVar[str] = ""
    media_types: ClassVar[tuple[str, ...]] = ()

    def accepts(self, media_type: str) -> bool:
        family = media_type.split("/", 1)[0] + "/*"
        return media_type in self.media_types or family in self.media_types

    def prepare(self) -> None:
        """Import what :meth:`extract` needs (its libraries). Called in the extraction subprocess
        before its time limit starts; a server that only registers the extractor never calls it,
        so a heavy library loads where files are read, not when every server starts."""

    @abstractmethod
    def extract(self, data: bytes, media_type: str) -> str:
        """The text of ``data`` (a file of ``media_type``). Raises ExtractionFailed."""


def choose(extractors: list[Extractor], media_type: str) -> Extractor | None:
    """The first extractor that accepts ``media_type``, or None."""
    return next((e for e in extractors if e.accepts(media_type)), None)
