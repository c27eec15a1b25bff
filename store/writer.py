"""Group commit: many writers, one LMDB write transaction at a time, one fsync per group.

Callers hand a commit function to :meth:`Writer.write` (threads) or :meth:`Writer.awrite`
(asyncio) and wait. A caller that finds the writer idle and nothing queued commits its function at
once, past the queue; one that finds the writer idle with work queued becomes the *leader* and runs
the queue itself, so a lone writer pays no thread hand-off. Under load, whoever releases the writer
with work still queued starts a *drainer* thread that keeps leading until the queue is empty, giving
the callers of each group a moment to queue again before the next (:meth:`Writer._gather`); the
other callers just wait for their own request, each on a plain lock, and a durable group's callers
are woken one after another, each by the one before it. Each group runs inside one LMDB transaction:
its functions run in it directly, and when one fails the transaction is abandoned and the others
run again, each in its own nested transaction, so a failing function leaves no trace while the
others still commit. Each request keeps its own commit and seq, learned only once the group is
durable. The leader is always the thread that opened the transaction, as LMDB requires.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
import time
from _thread import allocate_lock as _allocate_lock
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

import lmdb

from drsg.kernel.errors import DrsgError, StoreFull, UsageError
from drsg.kernel.frozen import frozen
from drsg.kernel.values import Json
from drsg.store.environment import READ_DAMAGE, Environment, Txn, damaged, write_failed
from drsg.store.meta import LogState, StageMark, read_mark, read_state
from drsg.store.sink import LogSink, advance
from drsg.store.staging import settle
from drsg.store.transaction import WriteTx

T = TypeVar("T")

GATHER_WAIT = 0.0005  # seconds the drainer waits at most for the last group's callers to queue again
GATHER_SKIP = 8  # groups that start without waiting after a wait that ran out (see Writer._gather)


@frozen
class CommitResult(Generic[T]):
    """What a commit function returned, with the seqs it committed (none if it changed nothing)."""

    value: T
    seqs: tuple[int, ...]
    ts: int | None

    @property
    def seq(self) -> int | None:
        return self.seqs[-1] if self.seqs else None


class _Request:
    """One caller's commit function and, once its group is durable, its outcome. A thread waits on
    its own plain lock (``_baton``, taken at birth): the cheapest thing to block on and be woken from.
    The waiters of a group are woken one after the other, each by the one before it (:func:`_wake`),
    so they do not all wake at once to fight over the interpreter while the leader works."""

    __slots__ = (
        "_baton",
        "abandoned",
        "done",
        "error",
        "fn",
        "handed",
        "next",
        "on_finish",
        "origin",
        "seqs",
        "ts",
        "value",
    )

    def __init__(
        self, fn: Callable[[WriteTx], Any], origin: dict[str, Json], on_finish: Callable[[], None] | None = None
    ) -> None:
        self.fn = fn
        self.origin = origin
        self.on_finish = on_finish  # an asyncio caller's wake-up; None for a thread
        self.value: Any = None
        self.error: BaseException | None = None
        self.seqs: list[int] = []
        self.ts: int | None = None
        self.done = False  # the outcome is final (set by the leader before anyone is woken)
        self.next: _Request | None = None  # the waiter this one wakes once it is awake itself
        self.handed = False  # its baton was released (under _HAND_OFF)
        self.abandoned = False  # its thread stopped waiting (interrupted): skipped when waking
        self._baton = _allocate_lock()
        self._baton.acquire()

    def wait(self) -> None:
        """Block until the group is durable, then wake the next waiter of the group."""
        self._baton.acquire()
        _wake(self.next)

    def abandon(self) -> None:
        """Its caller stopped waiting (KeyboardInterrupt, say) before or while it waited: the wake-up
        it would have passed on is passed on anyway, now if it came already, else by whoever wakes
        it (:func:`_wake` skips it). Passing it on twice is harmless."""
        with _HAND_OFF:
            self.abandoned = True
            handed = self.handed
        if handed:
            _wake(self.next)

    def result(self) -> CommitResult[Any]:
        if self.error is not None:
            raise self.error
        return CommitResult(self.value, tuple(self.seqs), self.ts)


_HAND_OFF = threading.Lock()  # makes "wake the next waiter" and "stop waiting" exclusive


def _wake(request: _Request | None) -> None:
    """Release the first waiter from ``request`` on whose caller still waits; it wakes the rest in
    turn. A waiter is released once, however often it is woken."""
    with _HAND_OFF:
        while request is not None and request.abandoned:
            request = request.next
        if request is None or request.handed:
            return
        request.handed = True
    request._baton.release()


class Writer:
    def __init__(
        self,
        env: Environment,
        max_group: int = 1000,
        clock: Callable[[], float] = time.time,
        on_commit: Callable[[int], None] | None = None,
    ):
        self.env = env
        self.max_group = max_group
        self.clock = clock
        self._queue: deque[_Request] = deque()
        self._queue_lock = threading.Lock()
        self._leader = threading.Lock()
        self._drainer_running = False
        self._want = 0  # the drainer waits for this many queued requests (0: it does not wait)
        self._skip_gathers = 0  # groups to start without gathering (after a gather that ran out)
        self._filled = _allocate_lock()  # held; released by the submit that brings the queue to _want
        self._filled.acquire()
        self._local = threading.local()
        self.groups_committed = 0
        self.on_commit = on_commit  # told the new head after each durable group

    # ------------------------------------------------------------------ callers

    def write(self, fn: Callable[[WriteTx], T], origin: dict[str, Json] | None = None) -> CommitResult[T]:
        if not self._queue and self._leader.acquire(blocking=False):
            return self._write_alone(fn, origin)
        request = self._submit(fn, origin)
        try:
            if self._leader.acquire(blocking=False):
                try:
                    while not request.done:
                        self._lead_one_group(request)
                finally:
                    self._leader.release()
                self._hand_off()
            else:
                request.wait()
        except BaseException:  # interrupted: the waiters chained behind this one must still wake
            request.abandon()
            raise
        return request.result()

    def _write_alone(self, fn: Callable[[WriteTx], T], origin: dict[str, Json] | None) -> CommitResult[T]:
        """A caller that found the writer idle and nothing queued commits its function as a group of
        one, past the queue (the lone caller's every write: its locks and hand-offs were a tenth of
        such a commit's Python). Callers that come meanwhile queue and wait; it hands them on. (A
        commit function's own write never comes here: its thread holds the leader already.)"""
        try:
            request = _Request(fn, origin or {})
            self._run_group([request])
        finally:
            self._leader.release()
            self._hand_off()  # (interrupted too: whoever queued meanwhile still gets a leader)
        return request.result()

    async def awrite(self, fn: Callable[[WriteTx], T], origin: dict[str, Json] | None = None) -> CommitResult[T]:
        import asyncio  # loaded already: this runs in its event loop (a one-shot command never loads it)

        loop = asyncio.get_running_loop()
        done = loop.create_future()

        def resolve() -> None:
            if not done.done():
                done.set_result(None)

        def wake() -> None:
            loop.call_soon_threadsafe(resolve)

        request = self._submit(fn, origin, wake)
        self._hand_off()
        await done
        return request.result()

    @contextlib.contextmanager
    def exclusive(self) -> Iterator[None]:
        """Hold the writer for a block: no group commits in this process until it ends (a staged
        write, store/staging.py, runs its own transactions meanwhile). Writers that come meanwhile
        queue and wait, as behind one long commit."""
        if getattr(self._local, "inside", False):
            raise UsageError("a commit function cannot start another write; do both in one function")
        with self._leader:
            yield
        self._hand_off()

    def _submit(
        self, fn: Callable[[WriteTx], Any], origin: dict[str, Json] | None, on_finish: Callable[[], None] | None = None
    ) -> _Request:
        if getattr(self._local, "inside", False):
            raise UsageError("a commit function cannot start another write; do both in one function")
        request = _Request(fn, origin or {}, on_finish)
        with self._queue_lock:
            self._queue.append(request)
            if self._want and len(self._queue) >= self._want:
                self._want = 0
                self._filled.release()
        return request

    def _hand_off(self) -> None:
        """Make sure queued work has a leader: start a drainer unless one is running."""
        if not self._queue or self._drainer_running:  # read unlocked: each is rechecked under the lock
            return
        with self._queue_lock:
            if not self._queue or self._drainer_running:
                return
            self._drainer_running = True
        threading.Thread(target=self._drain, name="drsg-writer", daemon=True).start()

    def _drain(self) -> None:
        try:
            while True:
                with self._leader:
                    last = 0
                    while True:
                        self._gather(last)
                        if not self._queue:
                            break
                        last = self._lead_one_group()
                with self._queue_lock:
                    if not self._queue:
                        self._drainer_running = False
                        return
        except BaseException:
            with self._queue_lock:
                self._drainer_running = False
            raise

    def _gather(self, last: int) -> None:
        """Before the next group, give the callers of the last one a moment to queue again. Without
        it, T closed-loop callers split into two halves that take turns (one half is being woken
        while the other commits), so each fsync is shared by T/2 commits rather than T. The wait
        ends as soon as the last group's callers and those already queued are all in the queue, and
        lasts at most ``GATHER_WAIT``; after a group of one (a lone caller) there is none. Callers
        that do not come straight back (a server's, between requests) make the wait run out: when
        not one of them came, the next ``GATHER_SKIP`` groups start without one, so such callers
        pay for it at most once in ``GATHER_SKIP + 1`` groups. (Closed-loop callers on a loaded
        machine may come back late but do come: counting them as absent when only half came cost
        the 4-process run a fifth of its group size.)"""
        with self._queue_lock:
            want = min(last + len(self._queue), self.max_group)
            if last <= 1 or len(self._queue) >= want:
                return
            if self._skip_gathers:
                self._skip_gathers -= 1
                return
            self._want = want
            before = len(self._queue)
        filled = self._filled.acquire(timeout=GATHER_WAIT)
        with self._queue_lock:
            self._want = 0
            self._filled.acquire(blocking=False)  # held again whether or not a submit released it
            if not filled and len(self._queue) == before:  # not one of them came back in time
                self._skip_gathers = GATHER_SKIP

    # ------------------------------------------------------------------ the leader's work

    def _lead_one_group(self, own: _Request | None = None) -> int:
        """Commit the next group and wake its callers (``own``: the leading caller's request, which
        needs no waking); returns the group's size."""
        queue = self._queue
        with self._queue_lock:
            if len(queue) == 1:  # a lone caller's: no comprehension for it
                group = [queue.popleft()]
            else:
                group = [queue.popleft() for _ in range(min(self.max_group, len(queue)))]
        if not group:
            return 0
        try:
            self._run_group(group)
        finally:
            _finish(group, own)
        return len(group)

    def _run_group(self, group: list[_Request]) -> None:
        """Commit a group, growing the map as needed; errors land on the requests, never raise."""
        try:
            while True:
                try:
                    # Shared, like a reader: a map resize must wait for this transaction to end.
                    with self.env.gate.shared():
                        self._commit_group(group)
                    return
                except lmdb.MapFullError:
                    self.env.grow()  # then run the whole group again from a clean slate
                except lmdb.MapResizedError:
                    self.env.adopt()  # another process grew the file: take its size, run the group again
                except _Staged as busy:
                    settle(self.env, busy.mark)  # wait for its owner, or undo what a dead one left
        except StoreFull as exc:
            if len(group) > 1:  # one oversized commit must not sink the small ones grouped with it
                for request in group:
                    self._run_group([request])
                return
            _fail(group, exc)
        except DrsgError as exc:
            _fail(group, exc)
        except lmdb.Error as exc:
            _fail(group, write_failed(self.env.path, exc))

    def _commit_group(self, group: list[_Request]) -> None:
        """Run the group's functions in one transaction and commit it. Optimistically they all run
        in the group's own transaction (a nested one each costs ~5 µs, a sixth of a small commit);
        when one fails, the transaction is abandoned and the others run again from a clean slate,
        each in a nested transaction now, so a second failure cannot send them round again. A
        commit function may run more than once (as after a full map): only its last run counts."""
        env = self.env
        meta = env.dbs["meta"]
        todo = group
        nested = False
        while todo:
            txn = env.begin_write()
            try:
                mark = read_mark(txn, meta)
                if mark is not None:
                    raise _Staged(mark)
                state = read_state(txn, meta)
                failed: _Request | None = None
                succeeded = 0
                self._local.inside = True  # a commit function that starts a write is refused
                try:
                    for request in todo:
                        if self._run_request(txn, state, request, nested):
                            succeeded += 1
                        elif not nested:
                            failed = request
                            break
                finally:
                    self._local.inside = False
                if failed is None and succeeded:
                    head = advance(txn, env.dbs, state)
                    txn.commit()  # durable: the environment syncs on commit
                    self.groups_committed += 1
                    if self.on_commit is not None:
                        self.on_commit(head)
                    return
            except BaseException:
                txn.abort()
                raise
            txn.abort()  # nothing of this attempt stays
            if failed is None:
                return  # every function failed: nothing to commit
            todo = [request for request in todo if request is not failed]
            nested = True

    def _run_request(self, txn: Txn, state: LogState, request: _Request, nested: bool) -> bool:
        """Run one commit function, in ``txn`` itself or in a transaction nested in it; on its error
        undo what it did to the file and to ``state`` when nested (otherwise the caller abandons
        ``txn`` and ``state`` with it). Returns whether it succeeded."""
        request.error, request.value, request.seqs, request.ts = None, None, [], None
        if nested:
            child = self.env.env.begin(write=True, parent=txn, buffers=False)
            saved = (state.head, state.ts, state.ids.copy())
        else:
            child = txn
        sink = LogSink(child, self.env.dbs, state, request.origin, self.clock)
        request.seqs = sink.seqs  # the commits it seals, as it seals them
        try:
            tx = sink.begin()
            request.value = request.fn(tx)
            sink.seal(tx)
            request.ts = sink.ts
        except lmdb.MapFullError:
            if nested:
                child.abort()
            raise
        except BaseException as exc:  # the caller's error: undo only this request
            if nested:
                child.abort()
            if isinstance(exc, READ_DAMAGE):  # met while reading the file inside the write
                exc = damaged(self.env.path, exc)
            if nested:
                state.head, state.ts, state.ids = saved
            request.error, request.value, request.seqs, request.ts = exc, None, [], None
            return False
        if nested:
            child.commit()
        return True


def _finish(group: list[_Request], own: _Request | None) -> None:
    """The group's outcome is final: wake its callers. Asyncio callers are told at once; threads are
    chained (each wakes the next once awake), and the leading caller's own request needs no waking."""
    waiters: list[_Request] = []
    for request in group:
        request.done = True
        if request.on_finish is not None:
            # RuntimeError: the caller's event loop has closed; nobody is waiting any more.
            with contextlib.suppress(RuntimeError):
                request.on_finish()
        elif request is not own:
            waiters.append(request)
    for before, after in itertools.pairwise(waiters):
        before.next = after
    if waiters:
        _wake(waiters[0])


class _Staged(Exception):
    """A staged write (another process's, or a dead one's) holds the seqs past the head."""

    def __init__(self, mark: StageMark) -> None:
        self.mark = mark


def _fail(group: list[_Request], error: BaseException) -> None:
    """The group's transaction was abandoned: nothing of it was written."""
    for request in group:
        request.error, request.seqs, request.ts = error, [], None
