"""Gate: a shared/exclusive lock for threads of one process.

The environment passes every read through one (a map resize takes it alone: LMDB may resize only
while this process has no transaction open); the index workers and the searcher use their own (a
query shares it, applying commits takes it alone; at most N queries at once).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager


class Gate:
    """A shared/exclusive lock: readers share it (at most ``max_readers`` threads at once, when
    given); one holder takes it alone (here a map resize)."""

    def __init__(self, max_readers: int | None = None) -> None:
        self._lock = threading.Lock()  # readers take it directly: cheaper than the condition's wrapper
        self._cond = threading.Condition(self._lock)  # the exclusive holder and readers waiting on it
        self._slot = threading.Condition(self._lock)  # readers waiting for a free slot: woken one by one
        # One entry per thread reading. A list's append and pop are each one step under the GIL,
        # so an unlimited gate's readers count themselves without the lock (see SharedHold).
        self._active: list[None] = []
        self._limit = max_readers
        self._queued = 0  # readers waiting for a slot
        self._exclusive = False
        self._held = threading.local()  # this thread's depth of shared holds
        self._shared = SharedHold(self)

    def shared(self) -> SharedHold:
        """Hold the gate shared for a ``with`` block (re-entrant within a thread)."""
        return self._shared

    @property
    def readers(self) -> int:
        """Threads holding the gate shared now."""
        return len(self._active)

    def held_here(self) -> bool:
        """Whether this thread is inside a read (it could never see the gate empty)."""
        return bool(getattr(self._held, "depth", 0))

    @contextmanager
    def exclusive(self, timeout: float | None = None) -> Iterator[bool]:
        """Hold the gate alone: yields whether the readers drained within ``timeout`` seconds (None:
        wait as long as it takes). New readers wait from the start, so a stream of them cannot
        starve it. False at once when this thread is itself reading (it would wait for itself)."""
        if self.held_here():
            yield False
            return
        deadline = None if timeout is None else time.monotonic() + timeout

        def left() -> float | None:
            return None if deadline is None else max(0.0, deadline - time.monotonic())

        with self._cond:
            while self._exclusive:
                self._cond.wait(left())
            self._exclusive = True
        try:  # from here on, however it ends (an interrupted wait too), the gate opens again
            with self._cond:
                while self._active and (deadline is None or time.monotonic() < deadline):
                    self._cond.wait(left())
                acquired = not self._active
            yield acquired
        finally:
            with self._cond:
                self._exclusive = False
                self._cond.notify_all()
                self._slot.notify_all()


class SharedHold:
    """The shared side of a :class:`Gate`, one per gate: what a thread holds lives in the thread's
    own depth, so a hold builds no object (every read takes one). A thread that already reads
    re-enters without waiting (nor taking a second slot), so it never queues behind a pending
    resize that waits for it.

    On a gate without a reader limit a reader takes no lock: it counts itself in, then looks for an
    exclusive holder (and steps back to wait for it if there is one); the holder sets its flag, then
    waits for the count to drain, both under the lock. Whichever of the two comes second sees the
    other. A leaving reader wakes the holder only when one waits. A limited gate counts its readers
    under the lock, and a leaving one wakes a reader waiting for its slot."""

    __slots__ = ("gate",)

    def __init__(self, gate: Gate) -> None:
        self.gate = gate

    def __enter__(self) -> None:
        gate = self.gate
        held = gate._held
        depth = getattr(held, "depth", 0)
        if not depth:
            if gate._limit is None:
                gate._active.append(None)
                if gate._exclusive:  # someone wants the gate alone: step back, and wait for it
                    _leave(gate)
                    _enter_locked(gate)
            else:
                _enter_locked(gate)
        held.depth = depth + 1

    def __exit__(self, *exc: object) -> None:
        gate = self.gate
        held = gate._held
        held.depth = depth = held.depth - 1
        if not depth:
            _leave(gate)


def _enter_locked(gate: Gate) -> None:
    with gate._lock:
        while gate._exclusive or (gate._limit is not None and len(gate._active) >= gate._limit):
            if gate._exclusive:
                gate._cond.wait()
            else:
                gate._queued += 1
                try:
                    gate._slot.wait()
                finally:
                    gate._queued -= 1
        gate._active.append(None)


def _leave(gate: Gate) -> None:
    if gate._limit is None:
        gate._active.pop()
        if gate._exclusive:
            with gate._lock:
                if not gate._active:
                    gate._cond.notify_all()
        return
    with gate._lock:
        gate._active.pop()
        if not gate._active and gate._exclusive:
            gate._cond.notify_all()
        if gate._queued:
            gate._slot.notify()  # one slot came free: one reader (no herd of wakeups)
