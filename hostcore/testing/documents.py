"""Real documents for tests: a PDF written by fpdf2 (a test extra of the ``docs`` plugin)."""

from __future__ import annotations


def pdf_document(pages: list[str]) -> bytes:
    """A PDF with one page per string of ``pages``, each written as plain text."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("Helvetica", size=11)
    for text in pages:
        pdf.add_page()
        pdf.multi_cell(0, 6, text)
    return bytes(pdf.output())
