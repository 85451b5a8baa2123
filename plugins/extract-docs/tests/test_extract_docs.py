"""The document extractors on real files made here: fpdf2 and hand-written PDFs, pypdf's
encryption, python-docx documents, openpyxl workbooks, HTML strings; and the plugin loading
through its entry point, the hook and create_app."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import zipfile
from datetime import date
from importlib.metadata import entry_points
from pathlib import Path

import docx
import hostcore_extract_docs
import openpyxl
import pytest
from hostcore_extract_docs import EXTRACTORS, DocxExtractor, HtmlExtractor, PdfExtractor, XlsxExtractor
from pypdf import PdfReader, PdfWriter

from hostcore import ExtractionFailed, create_app
from hostcore.testing import plugin_manager
from hostcore.testing.documents import pdf_document

PDF = "application/pdf"
DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"


def raw_pdf(objects: list[bytes], trailer: bytes = b"") -> bytes:
    """A PDF written by hand: object i+1 is objects[i], object 1 the catalog, with a true xref."""
    out = bytearray(b"%PDF-1.7\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R %s >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, trailer, xref)
    return bytes(out)


def blank_pages(count: int, declared: int) -> bytes:
    """``count`` empty pages under one page node that declares ``declared`` pages."""
    kids = b" ".join(b"%d 0 R" % (3 + n) for n in range(count))
    page = b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>"
    return raw_pdf(
        [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, declared)] + [page] * count
    )


def one_page(content: bytes, extra: bytes = b"") -> bytes:
    """One Helvetica page drawing ``content``, its page dictionary carrying ``extra``."""
    return raw_pdf(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
            b"/Resources << /Font << /F1 5 0 R >> >> %s >>" % extra,
            b"<< /Length %d >>\nstream\n%s\nendstream" % (len(content), content),
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        ]
    )


def encrypted(data: bytes, user_password: str) -> bytes:
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(data)))
    writer.encrypt(user_password=user_password, owner_password="owner-secret", algorithm="AES-256")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def extract_pdf(data: bytes) -> str:
    return PdfExtractor().extract(data, PDF)


# The plugin


def test_entry_point_and_hook() -> None:
    (point,) = entry_points(group="hostcore", name="docs")
    assert point.load() is hostcore_extract_docs
    found: list[type] = []
    plugin_manager(hostcore_extract_docs).hook.register_extractors(register=found.append)
    assert found == list(EXTRACTORS)
    assert [cls.name for cls in found] == ["pdf", "html", "docx", "xlsx"]


def test_create_app_loads_the_extractors_named_in_plugins(tmp_path: Path) -> None:
    host = create_app({"PLUGINS": ["fs", "docs"], "STORAGE": "fs"}, instance_path=tmp_path).extensions["hostcore"]
    chosen = {kind: next(e for e in host.extractors if e.accepts(kind)) for kind in (PDF, "text/html", DOCX, XLSX)}
    assert {kind: e.name for kind, e in chosen.items()} == {PDF: "pdf", "text/html": "html", DOCX: "docx", XLSX: "xlsx"}
    assert not any(e.accepts("image/png") for e in host.extractors)


def test_a_server_with_the_plugin_loads_none_of_its_libraries_until_a_file_is_read(tmp_path: Path) -> None:
    """Every server registers the extractors at start-up, where pypdf, python-docx, openpyxl and
    lxml took most of a second to import; they load in the extraction subprocess, before its clock."""
    code = (
        "import sys; from pathlib import Path; from hostcore import create_app; "
        "create_app({'PLUGINS': ['fs', 'docs'], 'STORAGE': 'fs'}, instance_path=Path(sys.argv[1])); "
        "print(sorted(m for m in ('pypdf', 'docx', 'openpyxl', 'lxml') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, check=True)
    assert done.stdout.split("\n")[-2] == "[]"
    for extractor in EXTRACTORS:
        assert extractor().prepare() is None  # what the subprocess calls: the libraries import
    document = docx.Document()
    document.add_paragraph("read in a subprocess")
    data = io.BytesIO()
    document.save(data)
    child = [sys.executable, "-m", "hostcore.indexes.extract_child", "hostcore_extract_docs.office:DocxExtractor", DOCX, str(1 << 30), "30"]
    read = subprocess.run(child, input=data.getvalue(), capture_output=True, check=True).stdout
    assert read == b"\x06" + json.dumps({"text": "read in a subprocess"}).encode()  # ready (prepared), then the text


# PDF


def test_pdf_text_page_by_page() -> None:
    data = pdf_document(["First page: the quick brown fox.", "Second page: a café by the sea.", "Third page."])
    assert extract_pdf(data) == "First page: the quick brown fox.\n\nSecond page: a café by the sea.\n\nThird page."


def test_pdf_with_empty_pages_keeps_only_text() -> None:
    assert extract_pdf(pdf_document(["", "Only this.", ""])) == "Only this."


def test_pdf_needing_a_password_is_refused() -> None:
    with pytest.raises(ExtractionFailed, match="the PDF is encrypted: it needs a password"):
        extract_pdf(encrypted(pdf_document(["Secret plans."]), user_password="open-sesame"))


def test_pdf_protecting_only_its_permissions_is_read() -> None:
    assert extract_pdf(encrypted(pdf_document(["Printable, not editable."]), user_password="")) == "Printable, not editable."


def test_pdf_encrypted_for_a_certificate_is_refused() -> None:
    catalog, pages, page = (
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R >>",
    )
    data = raw_pdf([catalog, pages, page, b"<< /Filter /Adobe.PubSec /V 4 >>"], trailer=b"/Encrypt 4 0 R /ID [<00> <00>]")
    with pytest.raises(ExtractionFailed, match="the PDF is encrypted in a way this wiki cannot open"):
        extract_pdf(data)


@pytest.mark.parametrize("keep", [0.5, 0.9])
def test_truncated_pdf_is_damaged(keep: float) -> None:
    data = pdf_document(["Some text that will be cut off."] * 3)
    with pytest.raises(ExtractionFailed, match=r"^the PDF is damaged: "):
        extract_pdf(data[: int(len(data) * keep)])


def test_bytes_that_are_no_pdf_are_damaged() -> None:
    with pytest.raises(ExtractionFailed, match=r"^the PDF is damaged: "):
        extract_pdf(b"GIF89a this is not a PDF at all")


def test_hand_written_pdf_reads() -> None:
    assert extract_pdf(one_page(b"BT /F1 12 Tf 72 720 Td (Hello, hand-made PDF) Tj ET")) == "Hello, hand-made PDF"


def test_pdf_bomb_of_twenty_thousand_pages_fails_at_the_page_limit() -> None:
    with pytest.raises(ExtractionFailed, match="the PDF has 20,000 pages, more than the 5,000 this wiki extracts"):
        extract_pdf(blank_pages(20_000, declared=20_000))


def test_pdf_bomb_that_understates_its_pages_fails_while_its_tree_is_walked() -> None:
    with pytest.raises(ExtractionFailed, match=r"the PDF is too complex to read .*page tree entry limit"):
        extract_pdf(blank_pages(20_000, declared=1))


def test_pdf_within_the_page_limit_reads() -> None:
    assert extract_pdf(blank_pages(200, declared=200)) == ""


@pytest.mark.parametrize("where", ["page", "content"])
def test_pdf_bomb_of_deeply_nested_arrays_fails(where: str) -> None:
    nested = b"[" * 100_000 + b"]" * 100_000
    data = one_page(nested + b" pop BT (x) Tj ET", b"") if where == "content" else one_page(b"BT (x) Tj ET", b"/Deep " + nested)
    with pytest.raises(ExtractionFailed, match="the PDF nests its contents too deeply to read"):
        extract_pdf(data)


def test_pdf_text_over_the_character_limit_fails() -> None:
    class Small(PdfExtractor):
        max_chars = 100

    with pytest.raises(ExtractionFailed, match="more than 100 characters of text"):
        Small().extract(pdf_document(["forty characters of text on each page.."] * 4), PDF)


# HTML


def extract_html(markup: str | bytes) -> str:
    return HtmlExtractor().extract(markup.encode() if isinstance(markup, str) else markup, "text/html")


def test_html_keeps_paragraphs_and_drops_scripts_and_styles() -> None:
    markup = """<!doctype html><html><head><title>Notes</title><style>p { color: red }</style>
    <script>document.write("<p>not text</p>")</script></head>
    <body><h1>Tea</h1><p>Green   tea
       is <b>mild</b>.</p><div>Black tea&nbsp;is &lt;strong&gt;.</div><noscript>Enable scripts</noscript>
    <ul><li>one<li>two</ul><p>line<br>break</p><template><p>hidden</p></template></body></html>"""
    assert extract_html(markup) == "Notes\n\nTea\n\nGreen tea is mild.\n\nBlack tea is <strong>.\n\none\ntwo\n\nline\nbreak"


def test_html_tables_are_rows_of_tab_separated_cells_and_pre_keeps_its_spaces() -> None:
    markup = (
        "<table><tr><th>name</th><th> cost </th></tr><tr><td>tea</td><td>2</td></tr></table><pre>def f():\n    return 1</pre>"
    )
    assert extract_html(markup) == "name\tcost\ntea\t2\n\ndef f():\n    return 1"


def test_html_charset_from_meta_then_utf8_then_windows_1252() -> None:
    assert extract_html('<meta charset="iso-8859-1"><p>caf\xe9</p>'.encode("latin-1")) == "café"
    assert extract_html("<p>café ☕</p>") == "café ☕"
    assert extract_html("<p>\u201ccaf\xe9\u201d</p>".encode("cp1252")) == "\u201ccafé\u201d"


def test_broken_and_nested_html_still_reads() -> None:
    assert extract_html("<div>" * 1_000 + "deep" + "<p>unclosed <b>bold</i> <!-- open comment") == "deep\n\nunclosed bold"
    assert extract_html("<!--" * 200_000 + "<p>after") == ""


def test_html_bomb_of_deeply_nested_elements_fails() -> None:
    with pytest.raises(ExtractionFailed, match="the HTML file nests its contents too deeply to read"):
        extract_html("<div>" * 100_000 + "deep")


def test_html_over_the_character_limit_fails() -> None:
    class Small(HtmlExtractor):
        max_chars = 10

    with pytest.raises(ExtractionFailed, match="the HTML file has more than 10 characters"):
        Small().extract(b"<p>more than ten characters</p>", "text/html")


# DOCX


def docx_bytes(document: docx.document.Document) -> bytes:
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def test_docx_paragraphs_and_tables_in_order() -> None:
    document = docx.Document()
    document.add_heading("Quarterly report", level=1)
    document.add_paragraph("Sales rose in the north.")
    document.add_paragraph("")
    table = document.add_table(rows=3, cols=3)
    for row, values in zip(table.rows, [("region", "q1", "q2"), ("north", "10", "12"), ("total", "", "")], strict=True):
        for cell, value in zip(row.cells, values, strict=True):
            cell.text = value
    table.cell(2, 1).merge(table.cell(2, 2)).text = "22\nunits"
    document.add_paragraph("Thanks, the team.")
    text = DocxExtractor().extract(docx_bytes(document), DOCX)
    assert (
        text
        == "Quarterly report\n\nSales rose in the north.\n\nregion\tq1\tq2\nnorth\t10\t12\ntotal\t22 units\n\nThanks, the team."
    )


def test_damaged_docx() -> None:
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("[Content_Types].xml", "<not-closed")
    with pytest.raises(ExtractionFailed, match=r"^the DOCX is damaged: "):
        DocxExtractor().extract(archive.getvalue(), DOCX)
    with pytest.raises(ExtractionFailed, match=r"^the DOCX is damaged: File is not a zip file"):
        DocxExtractor().extract(docx_bytes(docx.Document())[:500], DOCX)


def test_password_protected_office_file_is_refused() -> None:
    ole_container = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(504)
    with pytest.raises(ExtractionFailed, match=r"the DOCX is encrypted .* or in the old binary format"):
        DocxExtractor().extract(ole_container, DOCX)


def test_docx_that_unpacks_past_the_limit_is_refused_before_it_is_opened() -> None:
    class Small(DocxExtractor):
        max_unzipped_bytes = 1_000_000

    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zipped:
        zipped.writestr("word/document.xml", b" " * 2_000_000)
    assert len(archive.getvalue()) < 10_000
    with pytest.raises(ExtractionFailed, match="the DOCX unpacks to 2,000,000 bytes, more than the 1,000,000"):
        Small().extract(archive.getvalue(), DOCX)


# XLSX


def xlsx_bytes(workbook: openpyxl.Workbook) -> bytes:
    out = io.BytesIO()
    workbook.save(out)
    return out.getvalue()


def test_xlsx_sheets_as_headings_and_rows_as_tab_separated_values() -> None:
    workbook = openpyxl.Workbook()
    budget = workbook.active
    budget.title = "Budget"
    budget.append(["item", "cost", "bought"])
    budget.append(["tea", 2.5, date(2026, 3, 1)])
    budget.append(["cups", 3.0, None])
    budget.append([])
    budget.append(["note\twith\ttabs", None, "line\nbreak"])
    workbook.create_sheet("Empty")
    sparse = workbook.create_sheet("Sparse")
    sparse["C2"] = "far"
    text = XlsxExtractor().extract(xlsx_bytes(workbook), XLSX)
    assert text == (
        "# Budget\nitem\tcost\tbought\ntea\t2.5\t2026-03-01\ncups\t3\nnote with tabs\t\tline break\n\n# Empty\n\n# Sparse\n\t\tfar"
    )


def test_xlsx_with_a_million_empty_rows_fails_at_the_cell_limit() -> None:
    workbook = openpyxl.Workbook()
    workbook.active["A1"] = "top"
    workbook.active["A1048576"] = "bottom"
    with pytest.raises(ExtractionFailed, match="the XLSX has more than 1,000,000 cells, the most this wiki reads"):
        XlsxExtractor().extract(xlsx_bytes(workbook), XLSX)


def test_xlsx_row_reaching_the_last_column_counts_every_cell() -> None:
    class Small(XlsxExtractor):
        max_cells = 10_000

    workbook = openpyxl.Workbook()
    workbook.active["XFD1"] = "far right"
    with pytest.raises(ExtractionFailed, match="more than 10,000 cells"):
        Small().extract(xlsx_bytes(workbook), XLSX)


def test_damaged_xlsx() -> None:
    with pytest.raises(ExtractionFailed, match=r"^the XLSX is damaged: "):
        XlsxExtractor().extract(docx_bytes(docx.Document()), XLSX)


def test_xlsx_whose_zip_directory_names_an_unknown_zip_version_is_damaged() -> None:
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("[Content_Types].xml", "<Types/>")
    data = bytearray(archive.getvalue())
    central = data.index(b"PK\x01\x02")
    data[central + 6 : central + 8] = (85).to_bytes(2, "little")  # "version needed to extract": 8.5
    with pytest.raises(ExtractionFailed, match=r"^the XLSX is damaged: zip file version 8.5"):
        XlsxExtractor().extract(bytes(data), XLSX)
