"""What ``/health`` says, which anyone may ask (no token): figures and flags only, never a path, a URL
or an error's text.

* ``ok`` (200): every part answers.
* ``degraded`` (200): a part is failing but reads still answer — the database's disk has less free
  space than ``min_free_disk`` (writes will fail), or a Kafka node's copy stopped following the topic.
* ``unavailable`` (503): the read pool did not run a no-op within :data:`PROBE_SECS` (every read
  thread is stuck, or the queue before them is): no read would be answered, so leave the rotation.
* ``stopping`` (503): SIGTERM was received.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from drsg import __version__
from drsg.surfaces.server.state import READ_THREADS, ServerState

PROBE_SECS = 2.0  # how long the read pool has to run a no-op before it counts as stuck


async def _reads(state: ServerState) -> dict[str, Any]:
    """A no-op through the same pool every read uses: queued behind whatever holds it."""
    probe = asyncio.get_running_loop().run_in_executor(state.reads, lambda: None)
    try:
        await asyncio.wait_for(probe, PROBE_SECS)  # on a timeout the queued no-op is cancelled
        answered = True
    except TimeoutError:
        answered = False
    return {"threads": READ_THREADS, "running": state.reading, "failing": not answered}


def _disk(state: ServerState) -> dict[str, Any]:
    """Free space where the database grows (its folder: the file, its lock and the sidecars)."""
    try:
        stats = os.statvfs(Path(state.db.path).parent)
    except OSError:
        return {"failing": True}
    free, floor = stats.f_bavail * stats.f_frsize, state.config.min_free_disk
    return {"free_bytes": free, "min_free_bytes": floor, "failing": free < floor}


async def health(state: ServerState) -> tuple[int, dict[str, Any]]:
    """The HTTP status and the body ``/health`` answers."""
    if state.stopping:
        return 503, {"status": "stopping", "version": __version__}
    reads = await _reads(state)
    parts: dict[str, Any] = {"reads": reads, "disk": _disk(state), **state.db.health()}
    if reads["failing"]:
        return 503, {"status": "unavailable", "version": __version__, **parts}
    failing = any(isinstance(part, dict) and part.get("failing") for part in parts.values())
    return 200, {"status": "degraded" if failing else "ok", "version": __version__, **parts}
