"""HeadWatcher (feed/watcher.py): another process's commits wake this process's subscriptions at once.

Each subscription here polls the head only every 5 s on its own, so a delivery within a second can
only come from the watcher — by inotify on the database file (Linux) or by its own fast polling.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import drsg
from drsg.feed import Subscription
from drsg.feed.watcher import HeadWatcher
from drsg.store.database import Database

WRITE = (
    "import sys, drsg; db = drsg.open(sys.argv[1]); "
    "db.write(lambda tx: tx.create_node(tx.plane('p'), sys.argv[2], ['X'], {}))"
)


def write_elsewhere(db: Path, key: str) -> float:
    """Commit one node from another process; when that commit was durable (the process had exited)."""
    subprocess.run([sys.executable, "-c", WRITE, str(db), key], check=True, timeout=60)
    return time.monotonic()


async def delays(db: Database, watcher: HeadWatcher, count: int) -> list[float]:
    """Seconds from each other-process commit to its delivery here."""
    subscription = Subscription(db, "p", None, resolved_every=None, poll=5.0)
    out: list[float] = []
    with watcher.watching():
        for i in range(count):
            waiting = asyncio.ensure_future(subscription.__anext__())
            await asyncio.sleep(0.2)  # the subscription is waiting when the commit lands
            assert not waiting.done()
            committed = await asyncio.to_thread(write_elsewhere, Path(db.path), f"k{i}")
            message = await asyncio.wait_for(waiting, 10)
            out.append(time.monotonic() - committed)
            assert message["changes"][0]["record"]["external_key"] == f"k{i}"
    return out


@pytest.mark.parametrize("notify", [True, False], ids=["inotify", "polling"])
def test_other_processes_commits_wake_subscriptions_at_once(tmp_path: Path, notify: bool) -> None:
    db = drsg.open(tmp_path / "g.drsg")
    db.write(lambda tx: tx.create_plane("p"))

    async def scenario() -> tuple[list[float], HeadWatcher, int]:
        watcher = HeadWatcher(db, notify=notify)
        watcher.start()
        try:
            got = await delays(db, watcher, 3)
            # Nobody watching: no more head reads, whatever is written.
            await asyncio.sleep(0.1)
            idle_reads = watcher.reads
            await asyncio.to_thread(write_elsewhere, tmp_path / "g.drsg", "unwatched")
            await asyncio.sleep(0.3)
            return got, watcher, watcher.reads - idle_reads
        finally:
            await watcher.stop()

    try:
        got, watcher, reads_while_idle = asyncio.run(scenario())
    finally:
        db.close()
    assert max(got) < 1.0, got  # the subscription's own poll would take up to 5 s
    assert watcher.published >= 3 and reads_while_idle == 0
    if notify and sys.platform.startswith("linux"):
        assert watcher.inotify


def test_a_plain_iterator_is_woken_by_the_thread_watcher(tmp_path: Path) -> None:
    """``drsg feed`` iterates without an event loop: HeadWatcher.in_thread() wakes it. One delivery
    without the watcher first (the subscription's own 5 s poll), so the check can tell them apart."""
    path = tmp_path / "g.drsg"
    db = drsg.open(path)
    db.write(lambda tx: tx.create_plane("p"))
    messages = iter(Subscription(db, "p", None, resolved_every=None, poll=5.0))

    def delivery(key: str) -> float:
        """Seconds from a commit by another process to its delivery by ``next(messages)``."""
        got: list[tuple[dict[str, Any], float]] = []
        waiting = threading.Thread(target=lambda: got.append((next(messages), time.monotonic())))
        waiting.start()
        time.sleep(0.3)  # the iterator is waiting when the commit lands
        assert not got
        committed = write_elsewhere(path, key)
        waiting.join(15)
        assert got and got[0][0]["changes"][0]["record"]["external_key"] == key
        return got[0][1] - committed

    try:
        unwatched = delivery("alone")
        watcher = HeadWatcher(db)
        with watcher.in_thread():
            watched = [delivery(f"k{i}") for i in range(3)]
    finally:
        db.close()
    assert unwatched > 1.0 and max(watched) < 1.0, (unwatched, watched)
    assert watcher.published >= 3
    if sys.platform.startswith("linux"):
        assert watcher.inotify
