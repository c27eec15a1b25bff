"""Handing the GIL over more often across a stretch where two threads take turns with it.

An import of records in memory makes its commits on the caller's thread and writes them on a
thread of its own (store/importahead.py), whose puts, sorts and sync run without the GIL but which
takes it back between them, dozens of times a transaction. A thread that wants the GIL waits for
the switch interval (5 ms by default) before it asks the holder to let go, and the making never
lets go of its own accord: no file is read (a file's import reads one, and each read hands the
GIL over), so the writer waited out most of those intervals — its writing took twice as long
(0.4-0.5 s of upstream's 600k records against a file's 0.2 s; 0.23 s at a 0.5 ms interval), and
the whole import 0.89 s against 0.79 s (medians of six alternating runs, tests/bench/RESULTS.md).
Across such a stretch the interval is made shorter, and set back when the last stretch ends.
Process-wide, as the interval is; nested and concurrent stretches count.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

#: The switch interval across a stretch, in seconds
SHORT_INTERVAL = 0.0005

_lock = threading.Lock()
_depth = 0
_before = 0.0  # the interval when the first stretch began


@contextmanager
def switching_often() -> Iterator[None]:
    """Run the ``with`` block with a switch interval of at most :data:`SHORT_INTERVAL`."""
    global _depth, _before
    with _lock:
        if _depth == 0:
            _before = sys.getswitchinterval()
            sys.setswitchinterval(min(_before, SHORT_INTERVAL))
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                sys.setswitchinterval(_before)
