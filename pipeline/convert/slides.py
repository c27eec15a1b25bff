"""PowerPoint ``.pptx`` through ``python-pptx``: one ``## Slide N: title`` section per slide.

Within a slide, shapes come in their stacking (authoring) order, groups flattened: text frames as
paragraphs — or list items where the placeholder or the paragraph says bullets/numbering — tables
as pipe tables, charts as a title plus a table of their series, speaker notes as a ``### Notes``
subsection. Pictures are counted in a note. python-pptx parses with lxml and ``resolve_entities``
off; it never runs macros.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator
from typing import Any

from pptx import Presentation
from pptx.enum.shapes import MSO_SHAPE_TYPE, PP_PLACEHOLDER
from pptx.oxml.ns import qn

from drsg.pipeline.convert.base import Output, Source
from drsg.pipeline.convert.container import checked_zip
from drsg.pipeline.convert.markdown import blocks, bullet, cell_text, heading, one_line, pipe_table

_LIST_PLACEHOLDERS = {PP_PLACEHOLDER.BODY, PP_PLACEHOLDER.OBJECT}
_SKIPPED_PLACEHOLDERS = {PP_PLACEHOLDER.DATE, PP_PLACEHOLDER.FOOTER, PP_PLACEHOLDER.SLIDE_NUMBER}


class _Slide:
    def __init__(self, number: int) -> None:
        self.number = number
        self.pictures = 0
        self.notes: list[str] = []


def convert_pptx(src: Source) -> Output:
    checked_zip(src, ".pptx").close()
    presentation = Presentation(io.BytesIO(src.data))
    parts: list[str] = []
    notes: list[str] = []
    pictures = 0
    for number, slide in enumerate(presentation.slides, 1):
        state = _Slide(number)
        title_shape = slide.shapes.title
        title = one_line(title_shape.text_frame.text) if title_shape is not None else ""
        parts.append(heading(2, f"Slide {number}: {title}" if title else f"Slide {number}"))
        for shape in slide.shapes:
            if title_shape is None or shape.shape_id != title_shape.shape_id:
                parts.extend(_shape(shape, state))
        if slide.has_notes_slide and slide.notes_slide.notes_text_frame is not None:
            speaker = _text_frame(slide.notes_slide.notes_text_frame, as_list=False)
            if speaker:
                parts += [heading(3, "Notes"), speaker]
        pictures += state.pictures
        notes += state.notes
    if pictures:
        notes.append(f"{pictures} picture(s) left out (slides are converted as text)")
    return blocks(parts), notes


def _shape(shape: Any, state: _Slide) -> Iterator[str]:
    if shape.shape_type == MSO_SHAPE_TYPE.GROUP:
        for inner in shape.shapes:
            yield from _shape(inner, state)
    elif shape.shape_type == MSO_SHAPE_TYPE.PICTURE:
        state.pictures += 1
    elif getattr(shape, "has_table", False):
        yield pipe_table([[cell_text(cell.text) for cell in row.cells] for row in shape.table.rows])
    elif getattr(shape, "has_chart", False):
        yield from _chart(shape.chart, state)
    elif shape.has_text_frame:
        kind = shape.placeholder_format.type if shape.is_placeholder else None
        if kind not in _SKIPPED_PLACEHOLDERS:
            yield _text_frame(shape.text_frame, as_list=kind in _LIST_PLACEHOLDERS)


def _text_frame(frame: Any, as_list: bool) -> str:
    lines: list[str] = []
    for paragraph in frame.paragraphs:
        text = one_line(paragraph.text)
        if not text:
            continue
        marker = _bullet_marker(paragraph, as_list)
        if marker:
            lines.append(bullet(text, paragraph.level, marker))
        else:
            lines.append(("\n" if lines else "") + text)
    return "\n".join(lines)


def _bullet_marker(paragraph: Any, as_list: bool) -> str:
    ppr = paragraph._p.pPr
    if ppr is not None:
        if ppr.find(qn("a:buNone")) is not None:
            return ""
        if ppr.find(qn("a:buAutoNum")) is not None:
            return "1."
        if ppr.find(qn("a:buChar")) is not None:
            return "-"
    return "-" if as_list or paragraph.level > 0 else ""


def _chart(chart: Any, state: _Slide) -> Iterable[str]:
    try:
        title = one_line(chart.chart_title.text_frame.text) if chart.has_title else ""
        plot = chart.plots[0]
        categories = [cell_text(c) for c in plot.categories]
        series = list(plot.series)
        header = ["", *(cell_text(s.name) for s in series)]
        rows = [[c, *(cell_text(s.values[i]) for s in series)] for i, c in enumerate(categories)]
    except Exception:  # a chart part that python-pptx cannot read must not sink the slide
        state.notes.append(f"a chart on slide {state.number} could not be read")
        return []
    return [f"Chart: {title}" if title else "Chart:", pipe_table([header, *rows])]
