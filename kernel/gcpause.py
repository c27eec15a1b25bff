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
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_depth = 0
_resume = False  # whether the collector was enabled when the first stretch began


@contextmanager
def collector_paused() -> Iterator[None]:
    """Run the ``with`` block with automatic garbage collection off (see the module's docstring)."""
    global _depth, _resume
    with _lock:
        if _depth == 0:
            _resume = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _resume:
                gc.enable()
