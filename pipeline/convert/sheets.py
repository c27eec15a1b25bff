"""Tables: Excel ``.xlsx`` (``openpyxl``), legacy Excel ``.xls`` (``xlrd``) and ``.csv``/``.tsv``.

Every sheet becomes ``## Sheet: name`` and one pipe table whose first row is the header, with blank
rows and blank right-hand columns dropped. Formulas show the value Excel last calculated (files
written by tools that never calculate show them empty). A table stops after ``Limits.max_cells``
cells (rows count at least one each), with a note: declared sheet dimensions are ignored, so a
crafted "A1:XFD1048576" cannot make the reader pad billions of empty cells.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
from collections.abc import Iterable, Sequence
from typing import Any

import openpyxl
import xlrd

from drsg.pipeline.convert.base import Output, Source
from drsg.pipeline.convert.container import checked_zip
from drsg.pipeline.convert.markdown import blocks, cell_text, heading, pipe_table
from drsg.pipeline.convert.text import decode_text


def _table(rows: Iterable[Sequence[Any]], budget: int) -> tuple[list[list[str]], bool]:
    """Rows rendered as cell text, stopping once ``budget`` cells have been read; (rows, cut off?)."""
    out: list[list[str]] = []
    for row in rows:
        budget -= max(1, len(row))
        if budget < 0:
            return out, True
        out.append([cell_text(v) for v in row])
    return out, False


def _sheet(name: str, rows: list[list[str]], truncated: bool, notes: list[str]) -> str:
    table = pipe_table(rows)
    if truncated:
        notes.append(f"sheet {name!r} was cut off after {len(rows)} rows (the cell limit)")
    if not table:
        notes.append(f"sheet {name!r} is empty")
        return ""
    return blocks([heading(2, f"Sheet: {name}"), table])


def convert_xlsx(src: Source) -> Output:
    checked_zip(src, ".xlsx", xml_in_memory=False).close()  # openpyxl read-only mode streams sheets
    book = openpyxl.load_workbook(io.BytesIO(src.data), read_only=True, data_only=True, keep_links=False)
    parts: list[str] = []
    notes: list[str] = []
    try:
        for sheet in book.worksheets:
            if not hasattr(sheet, "iter_rows"):
                continue
            sheet.reset_dimensions()  # never trust the declared used range
            rows, truncated = _table(sheet.iter_rows(min_row=1, min_col=1, values_only=True), src.limits.max_cells)
            hidden = " (hidden)" if sheet.sheet_state != "visible" else ""
            parts.append(_sheet(f"{sheet.title}{hidden}", rows, truncated, notes))
    finally:
        book.close()
    return blocks(parts), notes


def _xls_value(book: Any, cell: Any) -> object:
    if cell.ctype == xlrd.XL_CELL_DATE:
        try:
            value: dt.datetime = xlrd.xldate.xldate_as_datetime(cell.value, book.datemode)
            return value
        except (ValueError, OverflowError, xlrd.xldate.XLDateError):
            return cell.value
    if cell.ctype == xlrd.XL_CELL_BOOLEAN:
        return bool(cell.value)
    if cell.ctype == xlrd.XL_CELL_ERROR:
        return xlrd.error_text_from_code.get(cell.value, "#ERROR")
    return cell.value


def convert_xls(src: Source) -> Output:
    book = xlrd.open_workbook(file_contents=src.data, on_demand=True, logfile=io.StringIO())
    parts: list[str] = []
    notes: list[str] = []
    try:
        for index in range(book.nsheets):
            sheet = book.sheet_by_index(index)
            rows_iter = ([_xls_value(book, c) for c in sheet.row(r)] for r in range(sheet.nrows))
            rows, truncated = _table(rows_iter, src.limits.max_cells)
            parts.append(_sheet(sheet.name, rows, truncated, notes))
            book.unload_sheet(index)
    finally:
        book.release_resources()
    return blocks(parts), notes


def convert_csv(src: Source) -> Output:
    text = decode_text(src)
    if src.name.lower().endswith(".tsv"):
        dialect: type[csv.Dialect] | csv.Dialect = csv.excel_tab
    else:
        try:
            dialect = csv.Sniffer().sniff(text[:16384], delimiters=",;\t|")
        except csv.Error:
            dialect = csv.excel
    try:
        rows, truncated = _table(csv.reader(io.StringIO(text), dialect), src.limits.max_cells)
    except csv.Error as exc:
        raise src.fail(f"not valid CSV ({exc})", "check the file, or re-export it as CSV") from None
    notes: list[str] = []
    table = pipe_table(rows)
    if truncated:
        notes.append(f"the table was cut off after {len(rows)} rows (the cell limit)")
    return table, notes
