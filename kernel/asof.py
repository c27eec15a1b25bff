"""Parsing time-travel targets: ``AS OF <seq | "RFC3339" | TIME ms>`` and ``--as-of``.

Pure: resolving a target to a commit seq needs the log and happens in drsg.store.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from drsg.kernel.errors import BadAsOf


@dataclass(frozen=True, slots=True)
class AsOf:
    """Exactly one of ``seq`` (a commit) or ``ms`` (unix milliseconds, UTC) is set."""

    seq: int | None = None
    ms: int | None = None

    def __str__(self) -> str:
        return f"seq {self.seq}" if self.seq is not None else f"time {format_ms(self.ms or 0)}"


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_TIME_FORM = re.compile(r"^\s*TIME\s+(-?\d+)\s*$", re.IGNORECASE)
_HINT = 'use a commit seq (e.g. 42), an RFC 3339 time (e.g. 2026-01-31T12:00:00Z) or "TIME <unix-ms>"'


def parse_as_of(text: str | int) -> AsOf:
    if isinstance(text, int) and not isinstance(text, bool):
        return _seq(text)
    raw = str(text).strip().strip('"')
    if raw.isascii() and raw.isdigit():  # str.isdigit() alone accepts "²", which int() refuses
        return _seq(int(raw))
    match = _TIME_FORM.match(raw)
    if match:
        return AsOf(ms=int(match.group(1)))
    return AsOf(ms=parse_rfc3339_ms(raw))


def _seq(n: int) -> AsOf:
    if n < 1:
        raise BadAsOf(f"AS OF seq must be 1 or more, got {n}; {_HINT}")
    return AsOf(seq=n)


def parse_rfc3339_ms(raw: str) -> int:
    try:
        moment = datetime.fromisoformat(raw.replace("z", "Z"))
    except ValueError:
        raise BadAsOf(f"cannot read {raw!r} as a time travel target; {_HINT}") from None
    if moment.tzinfo is None:
        raise BadAsOf(f"the time {raw!r} has no UTC offset; add one, e.g. {raw}Z or {raw}+08:00")
    return (moment - _EPOCH) // timedelta(milliseconds=1)  # exact; float seconds * 1000 can lose 1 ms


def format_ms(ms: int) -> str:
    """RFC 3339 in UTC with millisecond precision (``TIME <ms>`` outside datetime's years 1-9999)."""
    try:
        moment = datetime.fromtimestamp(ms / 1000, tz=UTC)
    except (OverflowError, OSError, ValueError):
        return f"TIME {ms}"
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
