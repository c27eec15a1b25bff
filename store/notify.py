"""CommitNotifier: the one commit notification of a database, for every consumer of its log.

Index workers, feed subscriptions and `drsg log --follow` all wait the same way: for the head to pass
the last seq they have seen (:meth:`CommitNotifier.wait`, or :meth:`~CommitNotifier.wait_async` in an
event loop). Two sources wake them:

- this process's commits: the writer publishes each durable group's head, at once, without a read;
- other processes' commits: LMDB has no cross-process notification, so while anyone waits, one
  watcher thread per database reads the head whenever the file is written. On Linux inotify's
  IN_MODIFY arrives for every commit of every process (LMDB writes its pages, then its meta page,
  with ``pwrite``: the environment does not use a writable map). LMDB makes a commit visible to
  readers (the lock file's txnid) just after that last write, so a wake that finds the head unchanged
  reads it again soon (after ``FAST`` seconds, doubling). A slow backstop read every ``BACKSTOP``
  seconds covers a file system that does not report writes (a network mount). Without inotify the
  watcher polls: every ``FAST`` seconds while the head moves, backing off to ``SLOW`` while it is still.

While nobody waits, the watcher reads nothing.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import select
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

import structlog

from drsg.kernel.errors import DrsgError

if TYPE_CHECKING:
    import asyncio  # loaded by the event loop a wait_async runs in; a one-shot read never loads it

log = structlog.get_logger("drsg.store")

FAST = 0.001  # seconds: a re-read after a wake that found no new commit; polling while the head moves
SLOW = 0.01  # polling (no inotify): seconds between reads once the head has been still for a while
BACKSTOP = 0.25  # inotify: seconds between reads anyway, for a write the file system did not report
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


class HeadWaiters:
    """Callers waiting for a log's head to pass a seq, and the newest head known: whoever learns of
    a commit :meth:`publish`-es it, and every waiter past whose seq it is wakes, in a thread or in an
    event loop. A log backend holds one (the LMDB log's :class:`CommitNotifier`, the Kafka log's)."""

    def __init__(self) -> None:
        self._lock = lock = threading.RLock()
        self._cond = threading.Condition(lock)
        # notified as a wait begins (and as a watcher parks): await_waiters() blocks on it; a condition
        # of its own on the same lock, so a wait beginning wakes no other waiter
        self._watched = threading.Condition(lock)
        self._head = 0  # the newest head known here; never ahead of the log's
        self._waiting = 0  # callers inside wait() or wait_async()
        self._round = 0  # bumped by interrupt(): every wait returns
        self._futures: set[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = set()
        self._closed = False

    @property
    def head(self) -> int:
        with self._cond:
            return self._head

    def publish(self, head: int) -> None:
        """A commit up to ``head`` is known (the writer calls this on the write path: keep it cheap)."""
        with self._lock:  # the condition's own lock, taken without the condition's Python wrapper
            if head <= self._head:
                return
            self._head = head
            if not self._waiting:  # nobody to wake
                return
            self._cond.notify_all()
            futures = list(self._futures)
        _resolve(futures)

    def interrupt(self) -> None:
        """End every wait now; each caller looks again at why it waits (a stop, say)."""
        with self._cond:
            self._round += 1
            self._cond.notify_all()
            futures = list(self._futures)
        _resolve(futures)

    def wait(self, after: int, timeout: float) -> int:
        """Block until a commit past ``after`` is known, :meth:`interrupt` is called or ``timeout``
        seconds pass; returns the newest head known (``<= after`` when nothing came)."""
        with self._cond:
            if self._head > after or self._closed:
                return self._head
            began = self._round
            self._enter()
            try:
                self._cond.wait_for(lambda: self._head > after or self._round != began or self._closed, timeout)
                return self._head
            finally:
                self._waiting -= 1

    async def wait_async(self, after: int, timeout: float) -> int:
        """As :meth:`wait`, in an event loop: waits without holding a thread."""
        import asyncio  # loaded already: this runs in its event loop

        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        entry = (loop, future)
        with self._cond:
            if self._head > after or self._closed:
                return self._head
            self._futures.add(entry)
            self._enter()
        try:
            # asyncio.timeout, not wait_for: on Python 3.11 wait_for swallows a cancellation that
            # arrives as the future completes, and the caller's own deadline is lost with it
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout):
                    await future
        finally:
            with self._cond:
                self._futures.discard(entry)
                self._waiting -= 1
        return self._head

    def _enter(self) -> None:
        """A caller starts waiting (the condition is held)."""
        self._waiting += 1
        self._watched.notify_all()

    def await_waiters(self, count: int, timeout: float) -> bool:
        """Block until at least ``count`` callers are waiting, or ``timeout`` seconds pass; whether
        they are. A thread counts once it sleeps in :meth:`wait` (it holds the lock until then), a
        coroutine once :meth:`wait_async` has registered it: a commit published after this returns
        wakes them. For tests that must commit while someone waits, without guessing a sleep."""
        with self._cond:
            return self._watched.wait_for(lambda: self._waiting >= count, timeout)

    def close(self) -> bool:
        """Release every waiter; later waits return at once. Whether this call closed it."""
        with self._cond:
            if self._closed:
                return False
            self._closed = True
            self._cond.notify_all()
            futures = list(self._futures)
        _resolve(futures)
        return True


class CommitNotifier(HeadWaiters):
    """The LMDB log's :class:`HeadWaiters`, with the watcher thread that reads the head when another
    process writes the file (see the module docstring). ``read_head`` reads the head from the file;
    ``notify=False`` makes the watcher poll even where inotify works."""

    def __init__(self, path: str, read_head: Callable[[], int], *, notify: bool = True) -> None:
        super().__init__()
        self.path = path
        self.notify = notify
        self.reads = 0  # head reads by the watcher so far
        self.inotify = False  # whether the watcher is woken by file writes (else it polls)
        self._read_head = read_head
        self._thread: threading.Thread | None = None
        self._parked = False  # the watcher idles on the condition, no read of its under way
        self._wake_pipe: tuple[int, int] | None = None  # wakes the watcher's select() on close

    def _enter(self) -> None:
        """A caller starts waiting (the condition is held): make sure the watcher runs."""
        super()._enter()
        if self._thread is None:
            self._wake_pipe = os.pipe()
            os.set_blocking(self._wake_pipe[0], False)
            self._thread = threading.Thread(target=self._watch, name="drsg-commit-watcher", daemon=True)
            self._thread.start()
        elif self._waiting == 1:
            self._cond.notify_all()  # the watcher idles on the condition

    # ------------------------------------------------------------------ the watcher thread

    def _watch(self) -> None:
        fd = file_writes(self.path) if self.notify else None
        self.inotify = fd is not None
        delay = 0.0  # seconds until the next read without a wake; 0: read at once
        try:
            while True:
                with self._cond:
                    if not self._waiting:
                        delay = 0.0  # whatever came while nobody waited is read at once
                    while not self._waiting and not self._closed:
                        self._parked = True
                        self._watched.notify_all()
                        self._cond.wait()
                    self._parked = False
                    if self._closed:
                        return
                woke = self._sleep(fd, delay)
                with self._cond:
                    if self._closed or not self._waiting:
                        continue  # no reads for nobody
                moved = self._check()
                if fd is None:  # polling: quick while the head moves, backing off while it is still
                    delay = FAST if moved else min(SLOW, max(delay, FAST) * 2)
                elif moved:
                    delay = BACKSTOP  # the next commit's writes wake it
                elif woke:
                    delay = FAST  # the commit is written but not yet visible: look again soon
                else:
                    delay = BACKSTOP if delay == 0.0 else min(BACKSTOP, delay * 2)
        finally:
            if fd is not None:
                os.close(fd)

    def await_parked(self, timeout: float) -> bool:
        """Block until the watcher idles with nobody waiting (every read it began is done), or
        ``timeout`` seconds pass; whether it does. For tests that count its reads."""
        with self._cond:
            return self._watched.wait_for(lambda: self._parked and not self._waiting, timeout)

    def _sleep(self, fd: int | None, delay: float) -> bool:
        """Wait up to ``delay`` seconds for a write to the file (or close()); whether it was written."""
        assert self._wake_pipe is not None
        wake = self._wake_pipe[0]
        ready = select.select([wake] if fd is None else [fd, wake], [], [], delay)[0]
        if wake in ready:
            _drain(wake)
        if fd is not None and fd in ready:
            _drain(fd)  # one read of the head covers every write so far
            return True
        return False

    def _check(self) -> bool:
        """Read the head; publish it if it moved. Whether it moved."""
        try:
            head = self._read_head()
        except DrsgError as exc:  # the file is closing or being resized: the next read tells
            log.warning("commit watcher could not read the head", reason=str(exc))
            return False
        self.reads += 1
        moved = head > self._head
        self.publish(head)
        return moved

    # ------------------------------------------------------------------ lifecycle

    def close(self) -> bool:
        """Stop the watcher and release every waiter (they find the database closed)."""
        if not super().close():
            return False
        with self._cond:
            thread, pipe = self._thread, self._wake_pipe  # closed now: no wait starts another
        if thread is not None and pipe is not None:
            os.write(pipe[1], b"x")
            thread.join()
            for end in pipe:
                os.close(end)
        return True


def _resolve(futures: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]]) -> None:
    for loop, future in futures:
        with contextlib.suppress(RuntimeError):  # that loop has closed; its waiter is gone
            loop.call_soon_threadsafe(_wake, future)


def _wake(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _drain(fd: int) -> None:
    with contextlib.suppress(BlockingIOError):
        while os.read(fd, 65536):
            pass
