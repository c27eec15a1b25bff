"""An import's lines read and parsed a commit at a time, before any of them is written; what an
import reads them from (:class:`Lines`: a file's, or records in memory).

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
from collections.abc import Iterable
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


class Scanner(Protocol):
    """What makes a :class:`Scan` of raw lines (store/_bulkscan.c's Scan type)."""

    def __call__(self, raws: list[bytes], /) -> Scan: ...
    def of_records(self, records: list[Any], /) -> Scan: ...  # records read as lines of the same shapes


@dataclass(frozen=True)
class Ahead:
    """A commit's lines as read (``raws``) and each parsed (``lines``; None: for the importer to
    parse — and refuse, or find blank, or take as the scan read it), and the scan of them, if any."""

    raws: list[bytes]
    lines: list[Any]
    scan: Scan | None = None
    records: list[Any] | None = None  # records in memory: each its line, parsed (None: a file's lines)

    def line(self, n: int) -> tuple[bytes, Any]:
        """Line ``n`` of the commit, raw and parsed; ``(b"", None)`` past the last (the file's end)."""
        if n >= len(self.raws):
            return b"", None
        return self.raws[n], self.lines[n] if self.records is None else self.records[n]

    def end_of(self, n: int) -> int:
        """Bytes (or records) from the commit's first line to the end of line ``n``: where a reader
        that stopped after it would be (summed only when asked: no tell() a line, each is a system call)."""
        return n + 1 if self.records is not None else sum(map(len, self.raws[: n + 1]))


NOTHING = Ahead([], [])


def read_ahead(fh: IO[bytes], count: int, scanner: Scanner | None = None) -> Ahead:
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


class Lines(Protocol):
    """What an import reads: a file's lines (:class:`FileLines`) or records in memory
    (:class:`RecordLines`). Where it is (``tell``, ``seek``) counts the file's bytes, or records."""

    what: str  # how the import's errors name one: "line" or "record"

    def tell(self) -> int: ...
    def seek(self, at: int) -> None: ...
    def readline(self) -> tuple[bytes, Any]:
        """The next line, raw and parsed (None: for the importer to parse); ``(b"", None)`` at the end."""
        ...

    def read_ahead(self, count: int, scanner: Scanner | None = None) -> Ahead: ...
    def forget(self) -> None:
        """Nothing before where it is now will be read again (a transaction begins here)."""
        ...


class FileLines:
    """A JSONL file's lines, read as :func:`read_ahead` reads them."""

    def __init__(self, fh: IO[bytes], what: str = "line") -> None:
        self.fh = fh
        self.what = what  # ("record": records in memory sent as lines, one each)

    def tell(self) -> int:
        return self.fh.tell()

    def seek(self, at: int) -> None:
        self.fh.seek(at)

    def readline(self) -> tuple[bytes, Any]:
        return self.fh.readline(), None

    def read_ahead(self, count: int, scanner: Scanner | None = None) -> Ahead:
        return read_ahead(self.fh, count, scanner)

    def forget(self) -> None:
        pass  # (the file is there to seek back in)


#: A record's raw line: never parsed (the record is its parsed line, whatever it is) and not blank
#: (a record is never skipped as a blank line)
RECORD = b"r"


class RecordLines:
    """Records in memory, each what a file's line parses to (a node's or an edge's dict, in the
    JSON dialect or holding values of the data model), read from any iterable once; those since the
    last :meth:`forget` are kept, so a transaction can be read again."""

    what = "record"

    def __init__(self, records: Iterable[Any]) -> None:
        self._records = iter(records)
        self._kept: list[Any] = []  # the records from self._base on, read so far
        self._base = 0
        self._at = 0

    def tell(self) -> int:
        return self._at

    def seek(self, at: int) -> None:
        if not self._base <= at <= self._base + len(self._kept):
            raise ValueError(f"record {at} is no longer kept (from {self._base} on)")
        self._at = at

    def _take(self, count: int) -> list[Any]:
        at = self._at - self._base
        short = at + count - len(self._kept)
        if short > 0:
            self._kept.extend(itertools.islice(self._records, short))
        taken = self._kept[at : at + count]
        self._at += len(taken)
        return taken

    def readline(self) -> tuple[bytes, Any]:
        taken = self._take(1)
        return (RECORD, taken[0]) if taken else (b"", None)

    def read_ahead(self, count: int, scanner: Scanner | None = None) -> Ahead:
        """The next ``count`` records as a commit's lines; with a ``scanner``, those of the common
        shapes read as a file's lines of them are (a record's dict on the dict path costs ~2.5 times
        as much: each key it names sought through Python dicts), the rest as they stand."""
        records = self._take(count)
        raws = [RECORD] * len(records)
        if scanner is None or not records:
            return Ahead(raws, records, records=records)
        scan = scanner.of_records(records)
        lines = [None if kind else record for kind, record in zip(scan.kinds(), records, strict=True)]
        return Ahead(raws, lines, scan, records)

    def forget(self) -> None:
        del self._kept[: self._at - self._base]
        self._base = self._at
