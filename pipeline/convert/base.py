"""Shared pieces of the converters: limits, the input handed to a converter, library warnings, and the
marker that opens each source's Markdown in a document of many.

A converter is a function ``(Source) -> Output``: it receives the whole document as bytes (already
checked against ``Limits.max_bytes``) and returns the Markdown body and a list of notes. It raises
``ConversionError`` through ``Source.fail`` for problems it recognises; anything else a library raises
is converted by the dispatcher in ``__init__``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from drsg.kernel.errors import ConversionError

MiB = 1024 * 1024

#: (markdown, notes) as returned by one converter.
Output = tuple[str, list[str]]

#: opens each source's text in a document of many (a tree's files, a crawl's pages); chunking splits on it
SOURCE_MARKER = "<!-- drsg:source"


def source_marker(name: str) -> str:
    """The paragraph that introduces one source's text in a multi-source document."""
    return f"{SOURCE_MARKER} {name} -->"


@dataclass(frozen=True)
class Limits:
    """Caps that keep a hostile document from eating memory or time."""

    #: the document itself (bytes on disk / in memory)
    max_bytes: int = 64 * MiB
    #: ZIP containers (docx, pptx, xlsx, odt, ods, odp, epub): the sum of the entries' unpacked sizes
    max_unpacked_bytes: int = 256 * MiB
    #: ZIP containers: number of entries
    max_entries: int = 10_000
    #: ZIP containers whose XML is parsed into a tree in memory (all but xlsx, which streams): one XML entry
    max_xml_entry_bytes: int = 32 * MiB
    #: one table (a sheet, a CSV file): cells read before the rest is cut off with a note
    max_cells: int = 1_000_000


DEFAULT_LIMITS = Limits()


def human_size(n: int) -> str:
    """A byte count for messages: ``1.5 MiB`` from one MiB up, ``2,048 bytes`` below."""
    return f"{n / MiB:.1f} MiB" if n >= MiB else f"{n:,} bytes"


@dataclass(frozen=True)
class Source:
    """One document to convert: its bytes, the name used in messages, and the limits."""

    data: bytes
    name: str
    limits: Limits = DEFAULT_LIMITS

    def fail(self, problem: str, fix: str) -> ConversionError:
        """An error whose one-line message names the file, says what is wrong and how to fix it."""
        return ConversionError(f"{self.name}: {problem}; {fix}")


_library_notes: ContextVar[list[str] | None] = ContextVar("_library_notes", default=None)


class _NoteHandler(logging.Handler):
    """Turns warnings logged by a document library into notes of the conversion that caused them."""

    def emit(self, record: logging.LogRecord) -> None:
        notes = _library_notes.get()
        if notes is not None and len(notes) < 20:
            message = " ".join(record.getMessage().split())
            if message and message not in notes:
                notes.append(message)


# Libraries that log their complaints about malformed input instead of raising.
for _name in ("pypdf",):
    _logger = logging.getLogger(_name)
    _logger.addHandler(_NoteHandler(logging.WARNING))
    _logger.propagate = False


@contextmanager
def library_warnings() -> Iterator[list[str]]:
    """Collect what the document libraries log while the block runs (per thread/task)."""
    notes: list[str] = []
    token = _library_notes.set(notes)
    try:
        yield notes
    finally:
        _library_notes.reset(token)
