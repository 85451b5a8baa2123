"""Benchmark of PDF text extraction: prints figures, never passes or fails.

Builds a text-heavy PDF of ``--pages`` pages with fpdf2 (prose of about 3,500 characters a page,
the plugin's test extra installs it), then measures, in the same run and on the same file:

- pages/s of ``PdfExtractor`` (the ``docs`` plugin: pypdf plus its bounds);
- pages/s of bare pypdf (``PdfReader`` and ``extract_text`` per page), to show what the bounds cost;
- pages/s of poppler's ``pdftotext``, the reference (a process per run, as a caller would run it);

each the median of ``--runs`` runs taken in turns after a warm-up, and the share of the source's words each gives back.

Usage: ``python bench/extraction.py [--pages 50] [--runs 5]``. Needs ``pdftotext`` for the
reference (Debian/Ubuntu: ``apt-get install poppler-utils``; macOS: ``brew install poppler``).
"""

from __future__ import annotations

import argparse
import io
import random
import re
import shutil
import statistics
import subprocess
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from fpdf import FPDF
from hostcore_extract_docs import PdfExtractor
from pypdf import PdfReader

WORDS = (
    "the wiki keeps every page in a repository where each change is one commit with its author and the tool "
    "that made it so a reader can follow how a document grew over months of careful work by people and "
    "assistants alike searching finds passages by exact words while meaning finds them by paraphrase tables "
    "figures appendices methods results discussion references measurement sample error variance protocol"
).split()


def build_pdf(pages: int) -> tuple[bytes, list[str]]:
    """A PDF of ``pages`` pages of prose, and the text written on each page."""
    rng = random.Random(11)
    pdf = FPDF()
    pdf.set_font("Helvetica", size=10)
    texts = []
    for number in range(1, pages + 1):
        paragraphs = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(90, 130))).capitalize() + "." for _ in range(5)]
        text = f"Section {number}\n\n" + "\n\n".join(paragraphs)
        pdf.add_page()
        pdf.multi_cell(0, 4.5, text)
        texts.append(text)
    if pdf.page_no() != pages:
        raise SystemExit(f"the text overflowed: {pdf.page_no()} pages instead of {pages}; shorten the paragraphs")
    return bytes(pdf.output()), texts


def recovered(source: list[str], extracted: str) -> float:
    """The share of the source's words (counted with repeats) found in the extracted text."""
    want = Counter(re.findall(r"\w+", " ".join(source).lower()))
    got = Counter(re.findall(r"\w+", extracted.lower()))
    return sum((want & got).values()) / sum(want.values())


def median_seconds(contenders: list[tuple[str, Callable[[], str]]], runs: int) -> list[tuple[str, float, str]]:
    """Each contender's median seconds and its text: one warm-up run each (imports, caches), then
    runs taken in turns, so a change in the machine's load falls on all of them alike."""
    texts = {name: run() for name, run in contenders}
    times: dict[str, list[float]] = {name: [] for name, _ in contenders}
    for _ in range(runs):
        for name, run in contenders:
            start = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - start)
    return [(name, statistics.median(times[name]), texts[name]) for name, _ in contenders]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=50)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    report(args.pages, args.runs)


def report(pages: int, runs: int) -> None:
    """Print the figures for a PDF of ``pages`` pages, medians of ``runs`` runs."""
    data, source = build_pdf(pages)
    print(f"PDF: {pages} pages, {sum(map(len, source)):,} characters of text, {len(data):,} bytes; median of {runs} runs")

    def plugin() -> str:
        return PdfExtractor().extract(data, "application/pdf")

    def bare_pypdf() -> str:
        return "\n\n".join(page.extract_text() for page in PdfReader(io.BytesIO(data)).pages)

    contenders: list[tuple[str, Callable[[], str]]] = [("docs plugin (pypdf)", plugin), ("bare pypdf", bare_pypdf)]
    pdftotext = shutil.which("pdftotext")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp, "bench.pdf")
        path.write_bytes(data)
        if pdftotext:

            def poppler() -> str:
                return subprocess.run([pdftotext, "-q", "-enc", "UTF-8", str(path), "-"], check=True, capture_output=True, text=True).stdout

            contenders.append(("pdftotext (poppler, reference)", poppler))
        figures = median_seconds(contenders, runs)

    reference = figures[-1][1] if pdftotext else None
    print(f"{'extractor':32} {'seconds':>8} {'pages/s':>9} {'words back':>11} {'time vs pdftotext':>18}")
    for name, seconds, text in figures:
        ratio = f"{seconds / reference:.1f}x" if reference else "-"
        print(f"{name:32} {seconds:8.3f} {pages / seconds:9.0f} {recovered(source, text):11.1%} {ratio:>18}")
    if not pdftotext:
        print("pdftotext not found, so no reference: install poppler-utils (apt-get install poppler-utils) and run again")


if __name__ == "__main__":
    main()
