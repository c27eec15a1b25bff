"""The meta table: the log's state (head seq, last timestamp, id counters), the format version, and
the mark of a staged write in progress (store/staging.py)."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from drsg.store import keys
from drsg.store.environment import DbHandle, Txn
from drsg.store.transaction import IdCounters

META_STATE = b"state"  # head seq, last timestamp, next plane/node/edge ids
META_FORMAT = b"format"
META_STAGED = b"staged"  # a staged write's owner and the seqs it has staged past the head
_STATE = struct.Struct(">QQQQQ")
_MARK = struct.Struct(">QQQQ")


@dataclass
class LogState:
    """The log's state as kept in meta; a commit sink (store/sink.py) moves it."""

    head: int = 0
    ts: int = 0
    ids: IdCounters = field(default_factory=IdCounters)

    def copy(self) -> LogState:
        return LogState(self.head, self.ts, self.ids.copy())


def read_state(txn: Txn, meta: DbHandle) -> LogState:
    raw = txn.get(META_STATE, db=meta)
    if raw is None:
        return LogState()
    head, ts, plane, node, edge = _STATE.unpack(raw)
    return LogState(head, ts, IdCounters(plane, node, edge))


def write_state(txn: Txn, meta: DbHandle, state: LogState) -> None:
    ids = state.ids
    txn.put(META_STATE, _STATE.pack(state.head, state.ts, ids.plane, ids.node, ids.edge), db=meta)


def read_head(txn: Txn, meta: DbHandle) -> int:
    raw = txn.get(META_STATE, db=meta)
    return 0 if raw is None else keys.read_u64(raw)


@dataclass(frozen=True)
class StageMark:
    """Who is staging a write (a process, told apart from a later one with its pid by its start
    time) and which seqs it has staged: ``base + 1 .. top``, all past the head ``base``."""

    pid: int
    started: int
    base: int
    top: int


def read_mark(txn: Txn, meta: DbHandle) -> StageMark | None:
    raw = txn.get(META_STAGED, db=meta)
    return None if raw is None else StageMark(*_MARK.unpack(raw))


def write_mark(txn: Txn, meta: DbHandle, mark: StageMark | None) -> None:
    if mark is None:
        txn.delete(META_STAGED, db=meta)
    else:
        txn.put(META_STAGED, _MARK.pack(mark.pid, mark.started, mark.base, mark.top), db=meta)
