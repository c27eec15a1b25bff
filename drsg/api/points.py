"""Points in the log a caller may name: ``as_of`` for a read, an end of a diff.

A module of its own, below :mod:`drsg.api.plane` and :mod:`drsg.api.database`, which both read them.
"""

from __future__ import annotations

from datetime import datetime
from functools import lru_cache
from typing import TYPE_CHECKING

from drsg.kernel.asof import AsOf, parse_as_of, parse_rfc3339_ms
from drsg.kernel.errors import BadAsOf

if TYPE_CHECKING:
    from drsg.store.reader import Reader

#: what a read's ``as_of`` may be
AsOfLike = AsOf | int | str | datetime


def as_of_of(value: AsOfLike | None) -> AsOf | None:
    """``as_of`` as the store reads it; a naive datetime is BadAsOf, as a string without an offset is."""
    if value is None:
        return None
    if type(value) is int:  # not bool: True is no seq (parse_as_of refuses it)
        return _at_seq(value)
    if isinstance(value, AsOf):
        return value
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise BadAsOf(f"the time {value.isoformat()} has no UTC offset; pass an aware datetime (tzinfo=UTC)")
        return AsOf(ms=parse_rfc3339_ms(value.isoformat()))
    return parse_as_of(value)


@lru_cache(maxsize=1024)
def _at_seq(seq: int) -> AsOf:
    """One AsOf per recent seq: an as-of read by seq is a current read's cost plus this (an AsOf is
    frozen, so reads may share it; making one each time was most of the as-of lookup's extra 1.2×)."""
    return parse_as_of(seq)


def seq_of(reader: Reader, end: AsOfLike) -> int:
    """A diff's end as a seq: a seq as it is (0 is the empty state before the first commit;
    diff_plane checks the range), else the commit the time names."""
    if isinstance(end, int) and not isinstance(end, bool):
        return end
    found = as_of_of(end)
    assert found is not None  # only None is None
    return reader.resolve(found)
