"""Waiting on something a test can observe, never on the clock: on a loaded CI machine any fixed
sleep can be too short. Each wait has a generous deadline and fails with what it waited for."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from typing import IO, TypeVar

T = TypeVar("T")


def wait_until(condition: Callable[[], T], what: str, timeout: float = 60.0, poll: float = 0.01) -> T:
    """Call ``condition`` until it returns something true, and return that."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {timeout:g} s for {what}")
        time.sleep(poll)


class Lines:
    """A child process's text output read on a thread, so a test can wait for a line with a deadline
    (a blocking ``readline`` would hang the test on a process that never writes it)."""

    def __init__(self, stream: IO[str]) -> None:
        self._queue: queue.Queue[str | None] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._pump, args=(stream,), daemon=True).start()

    def _pump(self, stream: IO[str]) -> None:
        for line in stream:
            self._queue.put(line.rstrip("\n"))
        self._queue.put(None)  # the process closed its output

    def until(self, wanted: Callable[[str], bool], what: str, timeout: float = 60.0) -> str:
        """The first line from now on for which ``wanted`` is true (every line read is kept in ``seen``)."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"waited {timeout:g} s for {what}; got {self.seen[-5:]}") from None
            if line is None:
                self._queue.put(None)  # later calls see the end too
                raise AssertionError(f"the output ended before {what}; got {self.seen[-5:]}")
            self.seen.append(line)
            if wanted(line):
                return line
