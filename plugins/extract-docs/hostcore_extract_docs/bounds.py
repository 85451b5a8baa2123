"""What every extractor here shares: a cap on the text it returns, a cap on what a zipped
document may unpack to, and one way of turning a parser's failure into a reason people can read.

The attachment runner also limits time and memory; these bounds stop the work earlier and say
which limit a file passed, so an operator can tell a bomb from a slow machine.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager

from hostcore import ExtractionFailed

MAX_CHARS = 10_000_000
"""The most text one file may give (about 5,000 pages of dense prose)."""
MAX_UNZIPPED_BYTES = 256 * 1024 * 1024
"""The most a DOCX or XLSX may unpack to, by the sizes its zip directory declares."""
OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"


class TextBudget:
    """Collects a file's text piece by piece and fails once it passes ``limit`` characters."""

    def __init__(self, what: str, limit: int) -> None:
        self.what = what
        self.limit = limit
        self.pieces: list[str] = []
        self.size = 0

    def add(self, part: str, *, line: bool = False) -> None:
        """Append ``part`` as a new paragraph, or as a new line of the last one when ``line``.

        Blank parts are dropped. Raises ExtractionFailed once the text passes the limit.
        """
        part = part.strip("\n")
        if not part.strip():
            return
        separator = ("\n" if line else "\n\n") if self.pieces else ""
        self.size += len(separator) + len(part)
        if self.size > self.limit:
            raise ExtractionFailed(f"{self.what} has more than {self.limit:,} characters of text, the most this wiki extracts")
        self.pieces += (separator, part)

    def text(self) -> str:
        """Everything added, paragraphs separated by blank lines."""
        return "".join(self.pieces)


def check_zip(what: str, data: bytes, limit: int) -> None:
    """Refuse an Office file that would unpack to more than ``limit`` bytes (call it inside
    :func:`reading`, which reports a file that is no zip as damaged).

    The declared sizes are a real bound: Python's zipfile stops reading a member at its declared
    size and fails its checksum if there was more.
    """
    if data.startswith(OLE_MAGIC):
        raise ExtractionFailed(
            f"{what} is encrypted (a password-protected Office file) or in the old binary format; "
            "save it without a password in the current format"
        )
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        unpacked = sum(member.file_size for member in archive.infolist())
    if unpacked > limit:
        raise ExtractionFailed(f"{what} unpacks to {unpacked:,} bytes, more than the {limit:,} this wiki reads")


@contextmanager
def reading(what: str) -> Iterator[None]:
    """Turn whatever a parser raises on a bad file into ExtractionFailed naming ``what``.

    Parsers fed hostile bytes raise almost anything (KeyError, struct.error, zlib.error, ...);
    all of it means the file cannot be read, so all of it becomes "damaged", except running out
    of stack (deep nesting) and memory, which say so.
    """
    try:
        yield
    except ExtractionFailed:
        raise
    except MemoryError:
        raise ExtractionFailed(f"{what} needs more memory than extraction may use") from None
    except Exception as exc:
        if _caused_by(exc, RecursionError):
            raise ExtractionFailed(f"{what} nests its contents too deeply to read") from None
        raise ExtractionFailed(f"{what} is damaged: {str(exc) or type(exc).__name__}") from exc


def _caused_by(exc: BaseException | None, kind: type[BaseException]) -> bool:
    seen = 0
    while exc is not None and seen < 20:
        if isinstance(exc, kind):
            return True
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return False
