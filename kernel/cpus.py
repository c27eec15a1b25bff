"""How many CPU cores this process may run on (what a pool of native threads should size itself to)."""

from __future__ import annotations

import os


def cores() -> int:
    """CPU cores this process may run on (its affinity, not the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1
