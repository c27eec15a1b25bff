"""Small GitHub-flavoured Markdown writers shared by the converters (pure functions, no I/O)."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Sequence

_BLANK_RUNS = re.compile(r"\n{3,}")
_SPACES = re.compile(r"\s+")


def one_line(text: str) -> str:
    """Collapse all whitespace (newlines included) to single spaces."""
    return _SPACES.sub(" ", text).strip()


def heading(level: int, text: str) -> str:
    """An ATX heading (``#`` … ``######``); empty when the text is blank."""
    text = one_line(text)
    return f"{'#' * max(1, min(level, 6))} {text}" if text else ""


def bullet(text: str, level: int = 0, marker: str = "-") -> str:
    """A list item indented by nesting level (two spaces per level for ``-``, three for ``1.``)."""
    indent = " " * ((len(marker) + 1) * max(level, 0))
    return f"{indent}{marker} {one_line(text)}"


def cell_text(value: object) -> str:
    """A value rendered for a pipe-table cell: pipes escaped, line breaks as ``<br>``."""
    if value is None:
        return ""
    if isinstance(value, bool):
        text = "TRUE" if value else "FALSE"
    elif isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        text = str(int(value))
    elif isinstance(value, dt.datetime):
        text = value.date().isoformat() if value.time() == dt.time() else value.isoformat(sep=" ")
    elif isinstance(value, dt.date | dt.time):
        text = value.isoformat()
    else:
        text = str(value)
    lines = [_SPACES.sub(" ", line).strip() for line in text.replace("\r\n", "\n").split("\n")]
    return "<br>".join(line for line in lines if line).replace("|", "\\|")


def trim_table(rows: Sequence[Sequence[str]]) -> list[list[str]]:
    """Drop rows that are all blank and the blank columns at the right edge."""
    kept = [list(row) for row in rows if any(c.strip() for c in row)]
    width = max((max((i + 1 for i, c in enumerate(row) if c.strip()), default=0) for row in kept), default=0)
    return [(row + [""] * width)[:width] for row in kept]


def pipe_table(rows: Sequence[Sequence[str]]) -> str:
    """A pipe table whose first row is the header; cells must already be ``cell_text``-escaped."""
    table = trim_table(rows)
    if not table:
        return ""
    lines = ["| " + " | ".join(table[0]) + " |", "|" + " --- |" * len(table[0])]
    lines += ["| " + " | ".join(row) + " |" for row in table[1:]]
    return "\n".join(lines)


def blocks(parts: Iterable[str]) -> str:
    """Join Markdown blocks with one blank line, skipping empty ones."""
    return "\n\n".join(p.strip("\n") for p in parts if p and p.strip())


def tidy(markdown: str) -> str:
    """Normalise line endings, drop trailing spaces and blank-line runs, end with one newline."""
    lines = [line.rstrip() for line in markdown.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    text = _BLANK_RUNS.sub("\n\n", "\n".join(lines)).strip("\n")
    return text + "\n" if text else ""
