"""RTF through ``striprtf``: the text, paragraph by paragraph (RTF styles do not say "heading").

striprtf is a small tokenizer, but three of its regular expressions backtrack badly on crafted
input (a 66 KB file held it for 46 s). Before it runs, the source is reshaped so that cannot happen,
without changing the text RTF describes (RTF ignores raw line breaks):

- a line break goes before every unescaped ``{``, so no line spans two groups. This also keeps the
  hyperlink rewrite from matching — link text stays, the URL is dropped;
- inside the font table a line break goes before every ``\\fN`` that does not open a group, and a
  font table that is still implausible (over 256 KB, or a line over 1,000 characters) is dropped
  with a note: only legacy non-Unicode text depends on it.

Table rows come out of striprtf as lines of ``cell|cell|``; runs of them become pipe tables.
"""

from __future__ import annotations

import re

from striprtf.striprtf import remove_pict_groups, rtf_to_text

from drsg.pipeline.convert.base import Output, Source
from drsg.pipeline.convert.markdown import blocks, cell_text, pipe_table

_GROUP = re.compile(r"(?<!\\)((?:\\\\)*)\{")
_FONT = re.compile(r"(?<![{\\])\\f(?=\d)")
_FONTTABLE = re.compile(r"\{[^{}]*\\fonttbl")
_BRACE = re.compile(r"(?<!\\)[{}]")
_CODEPAGE = re.compile(r"\\ansicpg(\d{3,5})")
_MAX_FONTTABLE = 256 * 1024
_MAX_FONT_LINE = 1000


def _font_table_span(text: str) -> tuple[int, int] | None:
    start = _FONTTABLE.search(text)
    if start is None:
        return None
    depth = 0
    for brace in _BRACE.finditer(text, start.start()):
        depth += 1 if brace.group() == "{" else -1
        if depth == 0:
            return start.start(), brace.end()
    return start.start(), len(text)


def _reshape(text: str, notes: list[str]) -> str:
    text = remove_pict_groups(text)
    span = _font_table_span(text)
    if span is not None:
        head, table, tail = text[: span[0]], text[span[0] : span[1]], text[span[1] :]
        table = _FONT.sub(lambda _: "\n\\f", table)
        if len(table) > _MAX_FONTTABLE or max(len(line) for line in table.split("\n")) > _MAX_FONT_LINE:
            notes.append("the font table was dropped (implausibly large); legacy non-Unicode text may be garbled")
            table = "{\\fonttbl}"
        text = head + table + tail
    return _GROUP.sub(lambda m: m.group(1) + "\n{", text)


def convert_rtf(src: Source) -> Output:
    source = src.data.decode("latin-1")  # RTF is 7-bit; \'hh escapes and \uN carry the rest
    if not source.lstrip("\ufeff\xef\xbb\xbf \t\r\n").startswith("{\\rtf"):
        raise src.fail(
            "not an RTF document (it does not start with {\\rtf)", "check the file, or save it again as .rtf"
        )
    codepage = _CODEPAGE.search(source[:4096])
    encoding = f"cp{codepage.group(1)}" if codepage else "cp1252"
    notes: list[str] = []
    try:
        text = rtf_to_text(_reshape(source, notes), encoding=encoding, errors="replace")
    except LookupError:  # a code page Python does not know
        text = rtf_to_text(_reshape(source, []), encoding="cp1252", errors="replace")
        notes.append(f"unknown code page {encoding}; read as cp1252")
    return _paragraphs(text), notes


def _paragraphs(text: str) -> str:
    """One paragraph per line; runs of table rows (striprtf ends every cell with ``|``) as pipe tables."""
    parts: list[str] = []
    rows: list[list[str]] = []
    for raw in text.split("\n"):
        line = " ".join(raw.split())
        if line.endswith("|"):
            rows.append([cell_text(cell) for cell in line[:-1].split("|")])
            continue
        if rows:
            parts.append(pipe_table(rows))
            rows = []
        parts.append(line)
    if rows:
        parts.append(pipe_table(rows))
    return blocks(parts)
