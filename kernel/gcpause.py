"""Pausing Python's cyclic garbage collector across a bulk stretch.

A catalog index run, the index workers' catch-up after it and a JSONL import allocate a few hundred
thousand container objects (mutations, records, node properties) that stay alive for the stretch. Each
full collection the allocations trigger walks every tracked object with the GIL held and cannot
be interrupted: with ~300k of them, 100-180 ms in which no other thread runs — the longest
blocks ``drsg serve``'s event loop saw while indexing a 10,000-column catalog (profiled; the
Python code around it yields the GIL every switch interval anyway). Those objects hold no
cycles worth finding (reference counting frees them when the stretch ends), so the collector is
paused while any stretch runs and resumed when the last one ends. Process-wide, as the
collector is; nested and concurrent stretches count, and a collector the program disabled
itself stays disabled.

A one-shot `drsg` command's start is such a stretch too (:func:`pause_for`, from
surfaces/cli/main.py): its imports, the Cypher parser's tables and numpy are objects that live to
the process's end, and the collections their allocation triggered walked them again and again
(~10 % of a one-shot Cypher read or vector search, 0.02-0.05 s). Its pause ends after a fixed time,
so a command that runs on (`serve`, an import) has its collector back.
"""

from __future__ import annotations

import _thread
import gc
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_depth = 0
_resume = False  # whether the collector was enabled when the first stretch began


@contextmanager
def collector_paused() -> Iterator[None]:
    """Run the ``with`` block with automatic garbage collection off (see the module's docstring)."""
    _begin()
    try:
        yield
    finally:
        _end()


def pause_for(seconds: float) -> None:
    """A stretch from now until ``seconds`` from now, ended by a thread of its own (see the docstring):
    a bare one, which the process's end does not wait for and whose start this does not wait for
    (threading.Timer's start waits until the new thread runs: 0.3-2 ms of a one-shot command)."""
    _begin()
    _thread.start_new_thread(_end_after, (seconds,))


def _end_after(seconds: float) -> None:
    time.sleep(seconds)
    _end()


def _begin() -> None:
    global _depth, _resume
    with _lock:
        if _depth == 0:
            _resume = gc.isenabled()
            gc.disable()
        _depth += 1


def _end() -> None:
    global _depth
    with _lock:
        _depth -= 1
        if _depth == 0 and _resume:
            gc.enable()
