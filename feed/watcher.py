"""HeadWatcher: notices other processes' commits once, for every subscription of this process.

LMDB has no cross-process notification, so commits made by the CLI or another writer process are
only seen by reading the head. Left to themselves, subscriptions poll it each on its own (every
``Subscription.poll`` seconds), so such commits reach subscribers up to a poll late, and many
subscribers cost many polls. A watcher reads the head on their behalf and publishes what it sees on
the database's commit signal, which wakes the subscriptions at once (this process's own commits are
published by the writer itself). Subscriptions keep their own slow poll as a fallback.

When to read the head: on Linux, whenever the database file is written — LMDB writes its pages and
finally the meta page with ``pwrite`` (the environment does not use a writable map), so inotify's
IN_MODIFY arrives for every commit of every process, with a slow poll (``backstop``) in case a file
system does not report them. Elsewhere it polls every ``fast`` seconds while the head moves, backing
off to ``slow`` when it is still. Either way it does nothing while nobody is subscribed.

    watcher = HeadWatcher(db); watcher.start()        # in the event loop
    with watcher.watching(): async for m in subscription: ...
    await watcher.stop()

    with HeadWatcher(db).in_thread():                   # plain iteration (`drsg feed`)
        for m in subscription: ...
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import select
import sys
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING

import structlog

if TYPE_CHECKING:
    from drsg.store.database import Database

log = structlog.get_logger("drsg.feed")

FAST = 0.001  # polling: seconds between head reads while commits keep coming
SLOW = 0.01  # polling: seconds between head reads once the head has been still for a few polls
BACKSTOP = 0.05  # with inotify: seconds between head reads anyway
IN_MODIFY = 0x2


def file_writes(path: str) -> int | None:
    """A non-blocking inotify descriptor that becomes readable when ``path`` is written, or None."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fd = int(libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC))
    except (OSError, AttributeError):
        return None
    if fd < 0:
        return None
    if libc.inotify_add_watch(fd, os.fsencode(path), IN_MODIFY) < 0:
        os.close(fd)
        return None
    return fd


class HeadWatcher:
    """Publishes the head on ``db.commits_signal`` when it moves, while :meth:`watching` blocks run."""

    def __init__(
        self, db: Database, *, fast: float = FAST, slow: float = SLOW, backstop: float = BACKSTOP, notify: bool = True
    ) -> None:
        self.db = db
        self.fast = fast
        self.slow = slow
        self.backstop = backstop
        self.notify = notify  # use inotify where it works
        self.reads = 0  # head reads so far
        self.published = 0  # times it woke the subscriptions
        self.inotify = False  # whether file-write notification is in use
        self._seen = 0
        self._users = 0
        self._wanted = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._fd: int | None = None

    def start(self) -> None:
        """Start watching (in the running event loop) whenever someone is subscribed."""
        if self._task is not None:
            return
        self._fd = self._begin()
        if self._fd is not None:
            asyncio.get_running_loop().add_reader(self._fd, self._on_write)
        self._task = asyncio.create_task(self._run(), name="drsg-head-watcher")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if self._fd is not None:
            asyncio.get_running_loop().remove_reader(self._fd)
            os.close(self._fd)
            self._fd = None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    @contextlib.contextmanager
    def watching(self) -> Iterator[None]:
        """Keep the watcher going while the block runs (a subscription is being read)."""
        self._users += 1
        self._wanted.set()
        try:
            yield
        finally:
            self._users -= 1
            if self._users == 0:
                self._wanted.clear()

    def check(self) -> bool:
        """Read the head; if it moved, wake the subscriptions. Whether it moved."""
        head = self.db.head()  # one small read: a few microseconds, fine on the event loop
        self.reads += 1
        if head <= self._seen:
            return False
        self._seen = head
        self.published += 1
        self.db.commits_signal.publish(head)
        return True

    @contextlib.contextmanager
    def in_thread(self) -> Iterator[None]:
        """Watch from a daemon thread while the block runs, for a plain ``for`` over a subscription
        (no event loop): it reads the head whenever the file is written (and every ``backstop``
        seconds anyway), or every ``slow`` seconds where file-write notification is missing."""
        fd = self._begin()
        stop = threading.Event()

        def run() -> None:
            while not stop.is_set():
                if fd is None:
                    stop.wait(self.slow)
                elif select.select([fd], [], [], self.backstop)[0]:
                    _drain(fd)
                if not stop.is_set():
                    self._guarded_check()

        thread = threading.Thread(target=run, name="drsg-head-watcher", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join(max(self.backstop, self.slow) + 1.0)
            if fd is not None:
                os.close(fd)

    def _begin(self) -> int | None:
        """Note the head as seen, and open the file-write notification (None: poll instead)."""
        self._seen = self.db.head()
        fd = file_writes(self.db.path) if self.notify else None
        self.inotify = fd is not None
        return fd

    def _on_write(self) -> None:
        assert self._fd is not None
        _drain(self._fd)
        if self._users:
            self._guarded_check()

    def _guarded_check(self) -> bool:
        try:
            return self.check()
        except Exception as exc:  # the database is closing; subscriptions fall back to their own poll
            log.warning("head watcher check failed", reason=str(exc))
            return False

    async def _run(self) -> None:
        interval = self.fast
        while True:
            if self._users == 0:
                await self._wanted.wait()
                interval = self.fast
            await asyncio.sleep(self.backstop if self.inotify else interval)
            moved = bool(self._users) and self._guarded_check()
            interval = self.fast if moved else min(self.slow, interval * 2)  # back off while still


def _drain(fd: int) -> None:
    """Read every pending notification: one head read covers every write so far."""
    with contextlib.suppress(BlockingIOError):
        while os.read(fd, 65536):
            pass
