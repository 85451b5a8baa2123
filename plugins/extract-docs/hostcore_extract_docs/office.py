"""Office documents: DOCX with python-docx, XLSX with openpyxl (read-only, streaming).

A DOCX gives its paragraphs and tables in document order, a table's rows as lines of
tab-separated cells. An XLSX gives each sheet as a ``# name`` heading followed by its rows as
tab-separated values (formulas as their last computed value). Both are zips: one that would
unpack to more than ``max_unzipped_bytes`` is refused before it is opened, and a spreadsheet
stops at ``max_cells`` cells read (an empty row counts as one), so a sheet that declares a
million empty rows or a cell in its last column cannot make the reader walk them all.
"""

from __future__ import annotations

import datetime
import io
import warnings
from collections.abc import Iterable
from typing import TYPE_CHECKING, ClassVar

from hostcore import ExtractionFailed, Extractor
from hostcore_extract_docs.bounds import MAX_CHARS, MAX_UNZIPPED_BYTES, TextBudget, check_zip, reading

if TYPE_CHECKING:
    import openpyxl
    from docx.table import Table


class DocxExtractor(Extractor):
    name = "docx"
    media_types = ("application/vnd.openxmlformats-officedocument.wordprocessingml.document",)
    max_chars: ClassVar[int] = MAX_CHARS
    max_unzipped_bytes: ClassVar[int] = MAX_UNZIPPED_BYTES

    def prepare(self) -> None:
        import docx.table  # noqa: F401

    def extract(self, data: bytes, media_type: str) -> str:
        import docx  # here, not at import: loading the plugin must not load python-docx
        from docx.table import Table

        what = "the DOCX"
        with reading(what):
            check_zip(what, data, self.max_unzipped_bytes)
            budget = TextBudget(what, self.max_chars)
            for block in docx.Document(io.BytesIO(data)).iter_inner_content():
                if isinstance(block, Table):
                    for n, row in enumerate(_table_rows(block)):
                        budget.add(row, line=n > 0)
                else:
                    budget.add(block.text)
            return budget.text()


def _table_rows(table: Table) -> Iterable[str]:
    for row in table.rows:
        cells, previous = [], None
        for cell in row.cells:
            if cell._tc is not previous:  # a merged cell repeats across the columns it spans
                cells.append(cell.text)
            previous = cell._tc
        yield _row(cells)


class XlsxExtractor(Extractor):
    name = "xlsx"
    media_types = (
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        "application/vnd.ms-excel.sheet.macroEnabled.12",
    )
    max_chars: ClassVar[int] = MAX_CHARS
    max_unzipped_bytes: ClassVar[int] = MAX_UNZIPPED_BYTES
    max_cells: ClassVar[int] = 1_000_000

    def prepare(self) -> None:
        import openpyxl  # noqa: F401

    def extract(self, data: bytes, media_type: str) -> str:
        import openpyxl  # here, not at import: loading the plugin must not load openpyxl

        what = "the XLSX"
        with reading(what), warnings.catch_warnings():
            # openpyxl warns about features it drops (data validation, unknown extensions): not ours to report.
            warnings.simplefilter("ignore")
            check_zip(what, data, self.max_unzipped_bytes)
            workbook = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
            try:
                return self._read(workbook, what)
            finally:
                workbook.close()

    def _read(self, workbook: openpyxl.Workbook, what: str) -> str:
        budget = TextBudget(what, self.max_chars)
        cells = 0
        for sheet in workbook.worksheets:
            budget.add(f"# {sheet.title}")
            sheet.reset_dimensions()  # else every row is padded to the width the sheet declares
            for row in sheet.iter_rows(values_only=True):
                cells += max(1, len(row))
                if cells > self.max_cells:
                    raise ExtractionFailed(f"{what} has more than {self.max_cells:,} cells, the most this wiki reads")
                budget.add(_row(_cell_text(value) for value in row), line=True)
        return budget.text()


def _cell_text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, datetime.datetime) and value.time() == datetime.time():
        return value.date().isoformat()
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    return str(value)


def _row(cells: Iterable[str]) -> str:
    """Cells as one line, tab-separated; a cell's own line breaks and tabs become spaces."""
    return "\t".join(" ".join(cell.split()) for cell in cells).rstrip("\t")
