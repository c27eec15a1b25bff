"""CommitSignal: wakes readers of the log when this process commits, instead of making them poll.

Commits by other processes are not signalled (LMDB has no cross-process notification), so waiters
always pass a timeout and re-check the head themselves: the signal only makes same-process delivery
immediate.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading


class CommitSignal:
    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._head = 0
        self._waiters: set[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = set()

    def publish(self, head: int) -> None:
        """Called by the writer after each durable group (keep it cheap: it is on the write path)."""
        with self._cond:
            self._head = max(self._head, head)
            self._cond.notify_all()
            waiters = list(self._waiters)
        for loop, future in waiters:
            with contextlib.suppress(RuntimeError):  # that loop has closed; its waiter is gone
                loop.call_soon_threadsafe(_wake, future)

    def wait(self, after: int, timeout: float) -> None:
        """Block until this process commits past ``after``, or ``timeout`` seconds pass."""
        with self._cond:
            self._cond.wait_for(lambda: self._head > after, timeout)

    async def wait_async(self, after: int, timeout: float) -> None:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        entry = (loop, future)
        with self._cond:
            if self._head > after:
                return
            self._waiters.add(entry)
        try:
            await asyncio.wait_for(future, timeout)
        except TimeoutError:
            pass
        finally:
            with self._cond:
                self._waiters.discard(entry)


def _wake(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
