"""OpenDocument ``.odt``, ``.ods``, ``.odp`` through ``odfpy`` (which parses with defusedxml).

Text documents keep their outline headings, paragraphs, bulleted and numbered lists (numbering read
from the list style) and tables; spreadsheets become one ``## Sheet: name`` table per sheet;
presentations one ``## Slide N: title`` section per page, with speaker notes. Tracked deletions,
annotations and form controls are left out. Repeated rows/columns (``number-rows-repeated`` can say
a million) are expanded only for cells that hold text, and a table stops at ``Limits.max_cells``.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

from odf.namespaces import DRAWNS, OFFICENS, PRESENTATIONNS, STYLENS, TABLENS, TEXTNS
from odf.opendocument import load

from drsg.pipeline.convert.base import Output, Source
from drsg.pipeline.convert.container import checked_zip
from drsg.pipeline.convert.markdown import blocks, cell_text, heading, one_line, pipe_table

_SKIP = {
    (TEXTNS, "tracked-changes"),
    (TEXTNS, "sequence-decls"),
    (TEXTNS, "variable-decls"),
    (TEXTNS, "user-field-decls"),
    (TEXTNS, "note-citation"),
    (OFFICENS, "annotation"),
    (OFFICENS, "annotation-end"),
    (OFFICENS, "forms"),
    (TABLENS, "named-expressions"),
    (PRESENTATIONNS, "notes"),
    (DRAWNS, "image"),
}
_ROW_GROUPS = {(TABLENS, n) for n in ("table-header-rows", "table-rows", "table-row-group")}
_CELLS = {(TABLENS, "table-cell"), (TABLENS, "covered-table-cell")}


def _elements(node: Any) -> Iterator[Any]:
    return (child for child in node.childNodes if child.nodeType == child.ELEMENT_NODE)


def _attr(node: Any, ns: str, name: str) -> str | None:
    value = node.attributes.get((ns, name))
    return None if value is None else str(value)


def _int_attr(node: Any, ns: str, name: str, default: int) -> int:
    value = _attr(node, ns, name)
    return int(value) if value is not None and value.isdigit() else default


def _inline(node: Any) -> str:
    """The text of a paragraph-like element: spaces, tabs and line breaks expanded, notes inline."""
    out: list[str] = []
    for child in node.childNodes:
        if child.nodeType == child.TEXT_NODE:
            out.append(str(child.data))
        elif child.nodeType != child.ELEMENT_NODE or child.qname in _SKIP:
            continue
        elif child.qname == (TEXTNS, "s"):
            out.append(" " * min(_int_attr(child, TEXTNS, "c", 1), 100))
        elif child.qname in ((TEXTNS, "tab"), (TEXTNS, "line-break")):
            out.append(" ")
        elif child.qname == (TEXTNS, "note"):
            out.append(f" (note: {one_line(_inline(child))})")
        elif child.qname in ((TEXTNS, "p"), (TEXTNS, "h")):
            out.append("\n" + _inline(child))
        else:
            out.append(_inline(child))
    return "".join(out)


class _Walker:
    def __init__(self, doc: Any, budget: int) -> None:
        self.doc = doc
        self.budget = budget
        self.truncated = 0
        self._numbered: dict[tuple[str, int], bool] = {}

    def blocks(self, node: Any) -> Iterator[str]:
        for child in _elements(node):
            name = child.qname
            if name in _SKIP:
                continue
            if name == (TEXTNS, "h"):
                yield heading(_int_attr(child, TEXTNS, "outline-level", 1), _inline(child))
            elif name == (TEXTNS, "p"):
                yield _inline(child).strip()
            elif name == (TEXTNS, "list"):
                yield "\n".join(self.list_items(child, _attr(child, TEXTNS, "style-name"), 0))
            elif name == (TABLENS, "table"):
                yield self.table(child)
            else:
                yield from self.blocks(child)

    def list_items(self, node: Any, style: str | None, level: int, indent: str = "") -> Iterator[str]:
        style = _attr(node, TEXTNS, "style-name") or style
        marker = "1." if style and self._is_numbered(style, level) else "-"
        inner = indent + " " * (len(marker) + 1)
        for item in _elements(node):
            if item.qname not in ((TEXTNS, "list-item"), (TEXTNS, "list-header")):
                continue
            first = True
            for part in _elements(item):
                if part.qname == (TEXTNS, "list"):
                    yield from self.list_items(part, style, level + 1, inner)
                elif part.qname in ((TEXTNS, "p"), (TEXTNS, "h")) and one_line(_inline(part)):
                    text = one_line(_inline(part))
                    yield f"{indent}{marker} {text}" if first else inner + text
                    first = False

    def _is_numbered(self, style: str, level: int) -> bool:
        key = (style, level)
        if key not in self._numbered:
            self._numbered[key] = False
            for container in (self.doc.automaticstyles, self.doc.styles):
                for st in _elements(container):
                    if st.qname == (TEXTNS, "list-style") and _attr(st, STYLENS, "name") == style:
                        for lvl in _elements(st):
                            if _int_attr(lvl, TEXTNS, "level", 1) == level + 1:
                                self._numbered[key] = lvl.qname == (TEXTNS, "list-level-style-number")
        return self._numbered[key]

    def table(self, node: Any) -> str:
        return pipe_table(self.table_rows(node))

    def table_rows(self, node: Any) -> list[list[str]]:
        rows: list[list[str]] = []
        for row, repeat in self._rows(node):
            cells = self._cells(row)
            if not any(cells):
                continue  # blank rows are dropped anyway; never expand their repeats
            for _ in range(repeat):
                self.budget -= max(1, len(cells))
                if self.budget < 0:
                    self.truncated += 1
                    return rows
                rows.append(cells)
        return rows

    def _rows(self, node: Any) -> Iterator[tuple[Any, int]]:
        for child in _elements(node):
            if child.qname == (TABLENS, "table-row"):
                yield child, _int_attr(child, TABLENS, "number-rows-repeated", 1)
            elif child.qname in _ROW_GROUPS:
                yield from self._rows(child)

    def _cells(self, row: Any) -> list[str]:
        cells: list[str] = []
        blank_run = 0
        for cell in _elements(row):
            if cell.qname not in _CELLS:
                continue
            repeat = _int_attr(cell, TABLENS, "number-columns-repeated", 1)
            text = cell_text("\n".join(one_line(_inline(p)) for p in _elements(cell) if p.qname == (TEXTNS, "p")))
            if not text:
                blank_run += repeat
                continue
            room = max(self.budget, 1)  # a crafted repeat count must not allocate billions of cells
            cells += [""] * min(blank_run, room) + [text] * min(repeat, room)
            blank_run = 0
        return cells


def _body(doc: Any, ns: str, kind: str) -> Any:
    for body in _elements(doc.topnode):
        if body.qname == (OFFICENS, "body"):
            for child in _elements(body):
                if child.qname == (ns, kind):
                    return child
    return None


def _open(src: Source, label: str, kind: str) -> tuple[_Walker, Any]:
    checked_zip(src, label).close()
    doc = load(io.BytesIO(src.data))
    root = _body(doc, OFFICENS, kind)
    if root is None:
        raise src.fail(f"not an OpenDocument {kind} (no office:{kind} body)", f"save it again as {label}")
    return _Walker(doc, src.limits.max_cells), root


def _cut_note(walker: _Walker) -> list[str]:
    return ["a table was cut off at the cell limit"] if walker.truncated else []


def convert_odt(src: Source) -> Output:
    walker, root = _open(src, ".odt", "text")
    return blocks(walker.blocks(root)), _cut_note(walker)


def convert_ods(src: Source) -> Output:
    walker, root = _open(src, ".ods", "spreadsheet")
    parts: list[str] = []
    notes: list[str] = []
    for sheet in _elements(root):
        if sheet.qname == (TABLENS, "table"):
            name = _attr(sheet, TABLENS, "name") or "?"
            table = walker.table(sheet)
            parts += [heading(2, f"Sheet: {name}"), table] if table else []
            notes += [] if table else [f"sheet {name!r} is empty"]
    return blocks(parts), notes + _cut_note(walker)


def convert_odp(src: Source) -> Output:
    walker, root = _open(src, ".odp", "presentation")
    parts: list[str] = []
    number = 0
    for page in _elements(root):
        if page.qname != (DRAWNS, "page"):
            continue
        number += 1
        title, body = "", []
        for frame in _elements(page):
            if _attr(frame, PRESENTATIONNS, "class") == "title" and not title:
                title = one_line(_deep_text(frame))
            else:
                body += list(walker.blocks(frame) if frame.qname not in _SKIP else [])
        parts.append(heading(2, f"Slide {number}: {title}" if title else f"Slide {number}"))
        parts += body
        for notes in _elements(page):
            if notes.qname == (PRESENTATIONNS, "notes"):
                speaker = blocks(walker.blocks(notes))
                parts += [heading(3, "Notes"), speaker] if speaker else []
    return blocks(parts), _cut_note(walker)


def _deep_text(node: Any) -> str:
    parts: list[str] = []
    for child in _elements(node):
        if child.qname in ((TEXTNS, "p"), (TEXTNS, "h")):
            parts.append(_inline(child))
        else:
            parts.append(_deep_text(child))
    return " ".join(p for p in parts if p.strip())
