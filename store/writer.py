"""Group commit: many writers, one LMDB write transaction at a time, one fsync per group.

Callers hand a commit function to :meth:`Writer.write` and wait. Whichever waiting thread finds the
writer free becomes the *leader*: it drains the queue, runs every queued function inside one LMDB
transaction (each in a nested transaction, so a failing function leaves no trace and the others
still commit), commits durably, and wakes the callers. Each function keeps its own commit and seq;
a caller learns its seq only after the transaction is on disk. The leader is always the thread that
opened the transaction, as LMDB requires, and a lone writer pays no thread hand-off at all.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import lmdb

from drsg.errors import DrsgError, StoreError, UsageError
from drsg.store import keys
from drsg.store.environment import Environment, Txn
from drsg.store.log import encode
from drsg.store.transaction import IdCounters, WriteTx

T = TypeVar("T")

META_HEAD = b"head"
META_TS = b"ts"
META_IDS = b"ids"
META_FORMAT = b"format"


@dataclass(frozen=True, slots=True)
class CommitResult(Generic[T]):
    """What a commit function returned, with the seqs it committed (none if it changed nothing)."""

    value: T
    seqs: tuple[int, ...]
    ts: int | None

    @property
    def seq(self) -> int | None:
        return self.seqs[-1] if self.seqs else None


@dataclass(slots=True)
class _Request:
    fn: Callable[[WriteTx], Any]
    origin: dict[str, Any]
    done: bool = False
    value: Any = None
    error: BaseException | None = None
    seqs: list[int] = field(default_factory=list)
    ts: int | None = None


def read_ids(txn: Txn, meta: Any) -> IdCounters:
    raw = txn.get(META_IDS, db=meta)
    if raw is None:
        return IdCounters()
    return IdCounters(*(keys.read_u64(raw, i * 8) for i in range(3)))


def write_ids(txn: Txn, meta: Any, ids: IdCounters) -> None:
    txn.put(META_IDS, keys.u64(ids.plane) + keys.u64(ids.node) + keys.u64(ids.edge), db=meta)


def read_head(txn: Txn, meta: Any) -> int:
    raw = txn.get(META_HEAD, db=meta)
    return 0 if raw is None else keys.read_u64(raw)


class Writer:
    def __init__(self, env: Environment, max_group: int = 1000, clock: Callable[[], float] = time.time):
        self.env = env
        self.max_group = max_group
        self.clock = clock
        self._queue: deque[_Request] = deque()
        self._queue_lock = threading.Lock()
        self._leader = threading.Lock()
        self._wake = threading.Condition()
        self._local = threading.local()
        self.groups_committed = 0

    def write(self, fn: Callable[[WriteTx], T], origin: dict[str, Any] | None = None) -> CommitResult[T]:
        if getattr(self._local, "inside", False):
            raise UsageError("a commit function cannot start another write; do both in one function")
        request = _Request(fn, origin or {})
        with self._queue_lock:
            self._queue.append(request)
        while not request.done:
            if self._leader.acquire(blocking=False):
                try:
                    while not request.done:
                        self._lead_one_group()
                finally:
                    self._leader.release()
                    with self._wake:
                        self._wake.notify_all()
            else:
                with self._wake:
                    self._wake.wait_for(lambda: request.done or not self._leader.locked(), timeout=1.0)
        if request.error is not None:
            raise request.error
        return CommitResult(request.value, tuple(request.seqs), request.ts)

    # ------------------------------------------------------------------ the leader's work

    def _lead_one_group(self) -> None:
        with self._queue_lock:
            group = [self._queue.popleft() for _ in range(min(self.max_group, len(self._queue)))]
        if not group:
            return
        try:
            while True:
                try:
                    # Shared, like a reader: a map resize must wait for this transaction to end.
                    with self.env.gate.shared():
                        self._commit_group(group)
                    break
                except lmdb.MapFullError:
                    self.env.grow()  # then run the whole group again from a clean slate
        except DrsgError as exc:
            for request in group:
                request.error = exc
        except lmdb.Error as exc:
            error = StoreError(f"{self.env.path}: write failed ({exc}); nothing was written")
            for request in group:
                request.error = error
        finally:
            for request in group:
                request.done = True
            with self._wake:
                self._wake.notify_all()

    def _commit_group(self, group: list[_Request]) -> None:
        env = self.env
        meta, log_db = env.dbs["meta"], env.dbs["log"]
        txn = env.begin_write()
        try:
            head = read_head(txn, meta)
            raw_ts = txn.get(META_TS, db=meta)
            last_ts = 0 if raw_ts is None else keys.read_u64(raw_ts)
            ids = read_ids(txn, meta)
            for request in group:
                request.error, request.value, request.seqs, request.ts = None, None, [], None
                child = env.env.begin(write=True, parent=txn, buffers=False)
                saved_ids = ids.copy()
                state = {"head": head, "ts": last_ts}

                def seal(tx: WriteTx, request: _Request = request, state: dict[str, int] = state) -> int:
                    if tx.mutations:
                        ts = max(int(self.clock() * 1000), state["ts"])
                        tx.txn.put(keys.u64(tx.seq), encode(ts, request.origin, tx.mutations), db=log_db, append=True)
                        state["head"], state["ts"] = tx.seq, ts
                        request.seqs.append(tx.seq)
                        request.ts = ts
                    return state["head"] + 1

                self._local.inside = True
                try:
                    tx = WriteTx(child, env.dbs, head + 1, ids, seal)
                    request.value = request.fn(tx)
                    seal(tx)
                except lmdb.MapFullError:
                    child.abort()
                    raise
                except BaseException as exc:  # the caller's error: undo only this request
                    child.abort()
                    ids = saved_ids
                    request.error = exc
                    request.seqs = []
                    continue
                finally:
                    self._local.inside = False
                child.commit()
                head, last_ts = state["head"], state["ts"]
            txn.put(META_HEAD, keys.u64(head), db=meta)
            txn.put(META_TS, keys.u64(last_ts), db=meta)
            write_ids(txn, meta, ids)
            txn.commit()  # durable: the environment syncs on commit
            self.groups_committed += 1
        except BaseException:
            txn.abort()
            raise
