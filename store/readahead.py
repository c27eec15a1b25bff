"""An import's lines read and parsed a commit at a time, before any of them is written.

The bulk path (store/bulkwrite.py) reads a commit's lines first so that it can look up every key
they name at once and make the common shapes into records in C (store/_bulklines.c);
store/jsonl.py then reads each line from what :func:`read_ahead` kept. A line of the common shapes
is read by a scanner in C (store/_bulkscan.c: no dict for it) when the bulk path has one; any other
line's JSON is :func:`parse`'s, on this path and the line-by-line one alike, and so is a scanned
line's when the Python path is to handle it (its ``lines`` entry is None: parsed when read).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, Any, Protocol

import msgspec


def parse(raw: bytes) -> Any:
    """One line's JSON: msgspec's speed for a line it takes; the json module (its wording, and what it
    admits for our own checks to refuse by name: NaN, infinities, lone surrogates) for any other."""
    try:
        return msgspec.json.decode(raw)
    except msgspec.DecodeError:
        return json.loads(raw)


class Scan(Protocol):
    """A commit's raw lines, those of the common shapes read in C (store/_bulkscan.c's Scan)."""

    def kinds(self) -> bytes: ...  # a byte a line: 0 for parse(), else read by the scan


@dataclass(frozen=True)
class Ahead:
    """A commit's lines as read (``raws``) and each parsed (``lines``; None: for the importer to
    parse — and refuse, or find blank, or take as the scan read it), and the scan of them, if any."""

    raws: list[bytes]
    lines: list[Any]
    scan: Scan | None = None

    def line(self, n: int) -> tuple[bytes, Any]:
        """Line ``n`` of the commit, raw and parsed; ``(b"", None)`` past the last (the file's end)."""
        return (self.raws[n], self.lines[n]) if n < len(self.raws) else (b"", None)

    def end_of(self, n: int) -> int:
        """Bytes from the commit's first line to the end of line ``n``: where a reader that stopped
        after it would be (summed only when asked: no tell() a line, each is a system call)."""
        return sum(map(len, self.raws[: n + 1]))


NOTHING = Ahead([], [])


def read_ahead(fh: IO[bytes], count: int, scanner: Callable[[list[bytes]], Scan] | None = None) -> Ahead:
    """The next ``count`` lines of ``fh`` (fewer at its end), each parsed — those ``scanner`` reads
    left to it."""
    raws = list(itertools.islice(fh, count))
    scan = None if scanner is None else scanner(raws)
    kinds = bytes(len(raws)) if scan is None else scan.kinds()
    lines: list[Any] = [None] * len(raws)
    at = kinds.find(0)  # (the lines the scan left, found in C: mostly none, upstream's file)
    while at >= 0:
        lines[at] = _parsed(raws[at])
        at = kinds.find(0, at + 1)
    return Ahead(raws, lines, scan)


def _parsed(raw: bytes) -> Any:
    try:
        return parse(raw)
    except (ValueError, RecursionError):  # blank or no JSON: None, for the importer to read and refuse
        return None
