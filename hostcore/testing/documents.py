"""Real documents for tests: a PDF written by fpdf2 (a test extra of the ``docs`` plugin), a PNG image."""

from __future__ import annotations

import struct
import zlib


def pdf_document(pages: list[str]) -> bytes:
    """A PDF with one page per string of ``pages``, each written as plain text."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("Helvetica", size=11)
    for text in pages:
        pdf.add_page()
        pdf.multi_cell(0, 6, text)
    return bytes(pdf.output())


def png_image(width: int, height: int, start: tuple[int, int, int] = (40, 90, 200), end: tuple[int, int, int] = (250, 170, 60)) -> bytes:
    """A real RGB PNG of ``width`` x ``height``: a left-to-right gradient from ``start`` to ``end``."""
    row = bytearray([0])  # filter type 0 (none) for each row
    for x in range(width):
        t = x / max(width - 1, 1)
        row += bytes(round(a + (b - a) * t) for a, b in zip(start, end, strict=True))
    pixels = bytes(row) * height

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(pixels)) + chunk(b"IEND", b"")
