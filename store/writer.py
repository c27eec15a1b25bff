"""Group commit: many writers, one LMDB write transaction at a time, one fsync per group.

Callers hand a commit function to :meth:`Writer.write` (threads) or :meth:`Writer.awrite`
(asyncio) and wait. A caller that finds the writer idle becomes the *leader* and runs the queue
itself, so a lone writer pays no thread hand-off. Under load, whoever releases the writer with work
still queued starts a *drainer* thread that keeps leading until the queue is empty; the other
callers just wait for their own request. Each group runs inside one LMDB transaction — every
request in its own nested transaction, so a failing function leaves no trace while the others still
commit — and each request keeps its own commit and seq, learned only once the group is durable.
The leader is always the thread that opened the transaction, as LMDB requires.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import lmdb

from drsg.kernel.errors import DrsgError, StoreFull, UsageError
from drsg.kernel.values import Json
from drsg.store.environment import READ_DAMAGE, Environment, Txn, damaged, write_failed
from drsg.store.meta import LogState, StageMark, read_mark, read_state, write_state
from drsg.store.staging import settle
from drsg.store.transaction import WriteTx

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class CommitResult(Generic[T]):
    """What a commit function returned, with the seqs it committed (none if it changed nothing)."""

    value: T
    seqs: tuple[int, ...]
    ts: int | None

    @property
    def seq(self) -> int | None:
        return self.seqs[-1] if self.seqs else None


@dataclass(slots=True, eq=False)
class _Request:
    fn: Callable[[WriteTx], Any]
    origin: dict[str, Json]
    finished: threading.Event = field(default_factory=threading.Event)
    on_finish: Callable[[], None] | None = None
    value: Any = None
    error: BaseException | None = None
    seqs: list[int] = field(default_factory=list)
    ts: int | None = None

    def finish(self) -> None:
        self.finished.set()
        if self.on_finish is not None:
            # RuntimeError: the caller's event loop has closed; nobody is waiting any more.
            with contextlib.suppress(RuntimeError):
                self.on_finish()

    def result(self) -> CommitResult[Any]:
        if self.error is not None:
            raise self.error
        return CommitResult(self.value, tuple(self.seqs), self.ts)


class Writer:
    def __init__(self, env: Environment, max_group: int = 1000, clock: Callable[[], float] = time.time):
        self.env = env
        self.max_group = max_group
        self.clock = clock
        self._queue: deque[_Request] = deque()
        self._queue_lock = threading.Lock()
        self._leader = threading.Lock()
        self._drainer_running = False
        self._local = threading.local()
        self.groups_committed = 0
        self.on_commit: Callable[[int], None] | None = None  # told the new head after each durable group

    # ------------------------------------------------------------------ callers

    def write(self, fn: Callable[[WriteTx], T], origin: dict[str, Json] | None = None) -> CommitResult[T]:
        request = self._submit(fn, origin)
        if self._leader.acquire(blocking=False):
            try:
                while not request.finished.is_set():
                    self._lead_one_group()
            finally:
                self._leader.release()
            self._hand_off()
        request.finished.wait()
        return request.result()

    async def awrite(self, fn: Callable[[WriteTx], T], origin: dict[str, Json] | None = None) -> CommitResult[T]:
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
        request = _Request(fn, origin or {}, on_finish=on_finish)
        with self._queue_lock:
            self._queue.append(request)
        return request

    def _hand_off(self) -> None:
        """Make sure queued work has a leader: start a drainer unless one is running."""
        with self._queue_lock:
            if not self._queue or self._drainer_running:
                return
            self._drainer_running = True
        threading.Thread(target=self._drain, name="drsg-writer", daemon=True).start()

    def _drain(self) -> None:
        try:
            while True:
                with self._leader:
                    while self._queue:
                        self._lead_one_group()
                with self._queue_lock:
                    if not self._queue:
                        self._drainer_running = False
                        return
        except BaseException:
            with self._queue_lock:
                self._drainer_running = False
            raise

    # ------------------------------------------------------------------ the leader's work

    def _lead_one_group(self) -> None:
        with self._queue_lock:
            group = [self._queue.popleft() for _ in range(min(self.max_group, len(self._queue)))]
        if not group:
            return
        try:
            self._run_group(group)
        finally:
            for request in group:
                request.finish()

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
        env = self.env
        meta = env.dbs["meta"]
        txn = env.begin_write()
        try:
            mark = read_mark(txn, meta)
            if mark is not None:
                raise _Staged(mark)
            state = read_state(txn, meta)
            for request in group:
                self._run_request(txn, state, request)
            write_state(txn, meta, state)
            txn.commit()  # durable: the environment syncs on commit
            self.groups_committed += 1
            if self.on_commit is not None:
                self.on_commit(state.head)
        except BaseException:
            txn.abort()
            raise

    def _run_request(self, txn: Txn, state: LogState, request: _Request) -> None:
        """Run one commit function in a nested transaction; on its error, undo only it."""
        request.error, request.value, request.seqs, request.ts = None, None, [], None
        child = self.env.env.begin(write=True, parent=txn, buffers=False)
        saved = LogState(state.head, state.ts, state.ids.copy())
        log_db = self.env.dbs["log"]

        def seal(tx: WriteTx) -> int:
            if tx.mutations:
                tx.tallies.flush(child, self.env.dbs)
                request.ts = state.append(child, log_db, tx.seq, request.origin, tx.mutations, int(self.clock() * 1000))
                request.seqs.append(tx.seq)
            return state.head + 1

        self._local.inside = True
        try:
            tx = WriteTx(child, self.env.dbs, state.head + 1, state.ids, seal)
            request.value = request.fn(tx)
            seal(tx)
        except lmdb.MapFullError:
            child.abort()
            raise
        except BaseException as exc:  # the caller's error: undo only this request
            child.abort()
            if isinstance(exc, READ_DAMAGE):  # met while reading the file inside the write
                exc = damaged(self.env.path, exc)
            state.head, state.ts, state.ids = saved.head, saved.ts, saved.ids
            request.error, request.seqs, request.ts = exc, [], None
            return
        finally:
            self._local.inside = False
        child.commit()


class _Staged(Exception):
    """A staged write (another process's, or a dead one's) holds the seqs past the head."""

    def __init__(self, mark: StageMark) -> None:
        self.mark = mark


def _fail(group: list[_Request], error: BaseException) -> None:
    """The group's transaction was abandoned: nothing of it was written."""
    for request in group:
        request.error, request.seqs, request.ts = error, [], None
