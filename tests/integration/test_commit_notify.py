"""The commit notification (store/notify.py): one per database, waking every consumer of its log —
feed subscriptions (async and plain) and the index workers — for other processes' commits too.

Each subscription here would look at the head on its own only every 5 s, so a delivery within a
second can only come from the notification: inotify on the database file (Linux), or the watcher's
own quick polling where that is switched off.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import drsg
from drsg.feed import Subscription
from drsg.kernel.errors import DatabaseUnavailable
from drsg.store.database import Database
from drsg.workers.manager import IndexSet

WRITE = (
    "import sys, drsg; db = drsg.open(sys.argv[1]); "
    "db.write(lambda tx: tx.create_node(tx.plane('p'), sys.argv[2], ['X'], {}))"
)
QUIET = 5.0  # the subscriptions' own backstop: far longer than any delivery the tests accept
BEGIN = 10.0  # seconds a waiter has to begin waiting (a loaded machine may take long to start a thread)


def write_elsewhere(db: Path, key: str) -> float:
    """Commit one node from another process; when that commit was durable (the process had exited)."""
    subprocess.run([sys.executable, "-c", WRITE, str(db), key], check=True, timeout=60)
    return time.monotonic()


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    database = drsg.open(tmp_path / "g.drsg")
    database.write(lambda tx: tx.create_plane("p"))
    yield database
    database.close()


@pytest.mark.parametrize("notify", [True, False], ids=["inotify", "polling"])
def test_other_processes_commits_wake_an_async_subscription_at_once(db: Database, notify: bool) -> None:
    db.log.notifier.notify = notify  # before anyone waits: the watcher reads it when it starts
    subscription = Subscription(db, "p", None, resolved_every=None, poll=QUIET)

    async def delays() -> list[float]:
        out = []
        for i in range(3):
            waiting = asyncio.ensure_future(subscription.__anext__())
            # the subscription is waiting when the commit lands
            assert await asyncio.to_thread(db.log.await_waiters, 1, BEGIN)
            assert not waiting.done()
            committed = await asyncio.to_thread(write_elsewhere, Path(db.path), f"k{i}")
            message = await asyncio.wait_for(waiting, 10)
            out.append(time.monotonic() - committed)
            assert message["changes"][0]["record"]["external_key"] == f"k{i}"
        return out

    got = asyncio.run(delays())
    assert max(got) < 1.0, got
    assert db.log.notifier.inotify == (notify and sys.platform.startswith("linux"))


def test_a_plain_iterator_is_woken_by_another_process_without_any_setup(db: Database) -> None:
    """``drsg feed`` and embedded ``for message in subscription`` need no watcher of their own."""
    messages = iter(Subscription(db, "p", None, resolved_every=None, poll=QUIET))
    for i in range(3):
        got: list[tuple[dict[str, Any], float]] = []
        waiting = threading.Thread(target=lambda got=got: got.append((next(messages), time.monotonic())))
        waiting.start()
        assert db.log.await_waiters(1, BEGIN)  # the iterator is waiting when the commit lands
        assert not got
        committed = write_elsewhere(Path(db.path), f"k{i}")
        waiting.join(15)
        assert got and got[0][0]["changes"][0]["record"]["external_key"] == f"k{i}"
        assert got[0][1] - committed < 1.0


def test_nobody_waiting_means_no_reads_of_the_head(db: Database) -> None:
    assert db.log.wait(db.head(), 0.3) == 2  # a wait starts the watcher; nothing came
    assert db.log.notifier.await_parked(BEGIN)  # the watcher has gone idle, its reads done
    reads = db.log.notifier.reads
    write_elsewhere(Path(db.path), "unwatched")
    time.sleep(0.6)  # longer than its backstop: a watcher still reading would have read by now
    assert db.log.notifier.reads == reads
    # The next waiter hears of the commit made while nobody waited.
    assert db.log.wait(2, 5.0) == 3


def test_stop_wakes_a_waiting_plain_iterator_at_once(db: Database) -> None:
    subscription = Subscription(db, "p", None, resolved_every=None, poll=QUIET)
    ended = threading.Event()
    reader = threading.Thread(target=lambda: (list(subscription), ended.set()))
    reader.start()
    assert db.log.await_waiters(1, BEGIN)
    assert not ended.is_set()
    stopped = time.monotonic()
    subscription.stop()
    assert ended.wait(QUIET / 2), "the iterator kept waiting for its own backstop"
    assert time.monotonic() - stopped < 1.0
    reader.join()


def test_the_indexer_is_woken_by_other_processes_commits_and_never_polls(db: Database) -> None:
    p = db.plane("p")
    db.write(lambda tx: tx.declare_index(p, "keyword", "X", "name", {}))
    indexes = IndexSet(db)
    indexes.catch_up()  # as `drsg serve` does on its first query; then only commits wake it
    rounds: list[int] = []
    plain = indexes.catch_up

    def counted(head: int | None = None) -> int:
        rounds.append(head or 0)
        return plain(head)

    indexes.catch_up = counted  # type: ignore[method-assign]  # what the background thread calls
    indexes.start()
    try:
        assert db.log.await_waiters(1, BEGIN)  # the indexer waits for a commit ...
        time.sleep(1.0)  # ... and goes on waiting: a window for a read of the head that must not come
        assert rounds == [], "the indexer read the head with no commit to wake it"
        committed = write_elsewhere(Path(db.path), "far")
        deadline = committed + 10
        while indexes.applied < 4 and time.monotonic() < deadline:
            time.sleep(0.005)
        assert indexes.applied == db.head() == 4
        assert time.monotonic() - committed < 1.0
        stopping = time.monotonic()
    finally:
        indexes.stop()
    assert time.monotonic() - stopping < 1.0  # stop wakes it from its wait


def test_closing_the_database_ends_the_waits(db: Database) -> None:
    ended: list[int] = []
    waiter = threading.Thread(target=lambda: ended.append(db.log.wait(db.head(), 30)))
    waiter.start()
    assert db.log.await_waiters(1, BEGIN)
    db.close()
    waiter.join(5)
    assert ended == [2]
    with pytest.raises(DatabaseUnavailable):
        db.head()
