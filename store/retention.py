"""Bounded history: the retention horizon and the compaction that removes what lies before it.

``[log] retain_commits`` and ``[log] retain_days`` each promise a stretch of history stays
queryable: the last N commits, and the state as of any moment in the last N days. Both promises
hold: the horizon — the oldest commit a read may name — is the older of the two floors. It only
moves forward, and it is kept in ``meta`` (``retained``) so every process, and the file reopened,
knows it.

Compaction first moves the horizon ``H`` (from then on a read before it is refused), then, in
bounded transactions that each take the writer's turn like a commit (so writers interleave),
removes what no read at ``H`` or later can see: in every versioned table, each version older than
the one visible at ``H``, and that one too when it is a tombstone; and the log records before
``H`` (``H`` itself stays: its time stamp answers an AS OF time, and the log starts there). A plane
dropped at or before ``H`` goes whole: its id is never reused, so no read reaches its records.
"""

from __future__ import annotations

import functools
import struct
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass

import structlog

from drsg.kernel.errors import BadAsOf
from drsg.kernel.values import Json
from drsg.store import keys
from drsg.store.environment import DbHandle, Environment, Txn
from drsg.store.log import LogReader
from drsg.store.meta import read_head
from drsg.store.readers import Pins
from drsg.store.staging import in_write

META_RETAINED = b"retained"
_RETAINED = struct.Struct(">QQQ")  # the horizon, and the settings in force when it was last moved
DAY_MS = 86_400_000
BATCH = 2000  # keys a compaction transaction looks at: a few ms of the writer's time
#: the tables keyed ``group + ~seq`` (store/keys.py); the tallies are not versioned
#: (``planes`` last: a dropped plane's records are found by its tombstone there, so they go first)
VERSIONED = ("plane_names", "nodes", "keys", "labels", "edges", "out", "in", "indexes", "planes")
#: the tables whose keys begin with the plane's id (keys.plane_group)
PLANE_KEYED = frozenset({"nodes", "keys", "labels", "edges", "out", "in", "indexes"})
log = structlog.get_logger("drsg.store")


@dataclass(frozen=True, slots=True)
class Retained:
    """The queryable window's start, and the settings that put it there (0: not set)."""

    oldest: int = 1
    commits: int = 0
    days: int = 0

    def setting(self) -> str:
        parts = [f"[log] retain_commits = {self.commits}"] if self.commits else []
        parts += [f"[log] retain_days = {self.days}"] if self.days else []
        return " and ".join(parts) or "compacted earlier"

    def refuse(self, seq: int, what: str | None = None, first: int | None = None) -> BadAsOf:
        """The one line a read before the horizon gets (``first``: the least it may ask for, when
        that is not the horizon itself: a feed reads the state before its first commit)."""
        named = what or f"commit {seq:,}"
        return BadAsOf(
            f"{named} is older than the retained history (it starts at commit {self.oldest:,}: "
            f"{self.setting()}); ask for commit {first or self.oldest:,} or later"
        )

    def check(self, seq: int, what: str | None = None) -> int:
        """``seq`` when a read may name it, else the refusal."""
        if seq < self.oldest and self.oldest > 1:  # (0, the empty state, is a read's while nothing was removed)
            raise self.refuse(seq, what)
        return seq


def read_retained(txn: Txn, meta: DbHandle) -> Retained:
    raw = txn.get(META_RETAINED, db=meta)
    return Retained() if raw is None else Retained(*_RETAINED.unpack(raw))


def write_retained(txn: Txn, meta: DbHandle, retained: Retained) -> None:
    txn.put(META_RETAINED, _RETAINED.pack(retained.oldest, retained.commits, retained.days), db=meta)


@dataclass(frozen=True, slots=True)
class Retention:
    """The settings: how much history to keep (0: all of it)."""

    commits: int = 0
    days: int = 0

    @property
    def bounded(self) -> bool:
        return self.commits > 0 or self.days > 0

    def floor(self, txn: Txn, log_db: DbHandle, head: int, oldest: int, now_ms: int) -> int:
        """The horizon these settings ask for at ``head``: never before ``oldest`` (it only moves on)."""
        floors: list[int] = []
        if self.commits:
            floors.append(head - self.commits)
        if self.days:
            found = LogReader(txn, log_db).last_seq_at_or_before(now_ms - self.days * DAY_MS, head, oldest)
            floors.append(found)  # the state as of the cutoff; 0 when every retained commit is newer
        if not floors:
            return oldest
        return max(oldest, 1, min(floors))  # both promises hold: the older floor


@dataclass(frozen=True, slots=True)
class HistoryCompacted:
    """What one compaction did."""

    horizon: int
    versions: int  # superseded versions removed
    log_records: int  # log records removed
    asked: int = 0  # the horizon the settings asked for (later than ``horizon`` when readers held it)
    held_by: tuple[str, ...] = ()  # the readers that held it back (store/readers.py)

    def to_json(self) -> dict[str, Json]:
        return {
            "horizon": self.horizon,
            "versions": self.versions,
            "log_records": self.log_records,
            "asked": self.asked,
            "held_by": list(self.held_by),
        }


#: the writer's turn for one transaction (``Writer.exclusive``): no commit of this process runs in it
Turn = Callable[[], AbstractContextManager[None]]


def compact_history(
    env: Environment,
    turn: Turn,
    retention: Retention,
    *,
    clock: Callable[[], float] = time.time,
    batch: int = BATCH,
    pins: Pins | None = None,
) -> HistoryCompacted:
    """Move the horizon as ``retention`` asks (no further than ``pins`` allow), then remove what
    lies before it (see the module)."""
    meta = env.dbs["meta"]
    asked: list[int] = []
    held_by: list[str] = []

    def advance(txn: Txn) -> Retained:
        current = read_retained(txn, meta)
        if not retention.bounded:
            return current
        head = read_head(txn, meta)
        floor = retention.floor(txn, env.dbs["log"], head, current.oldest, int(clock() * 1000))
        asked[:] = [floor]
        # read in the write transaction: a reader's lease is written before it checks the horizon
        holders = [] if pins is None else [h for h in pins.holders() if h.seq < floor]
        if holders:
            held_by[:] = [holder.who for holder in holders]
            floor = max(current.oldest, min(holder.seq for holder in holders))
            log.info("history kept for readers", path=str(env.path), asked=asked[0], kept_from=floor, readers=held_by)
        if floor <= current.oldest:
            return current
        moved = Retained(floor, retention.commits, retention.days)
        write_retained(txn, meta, moved)
        return moved

    with turn():
        horizon = in_write(env, advance).oldest
    versions = records = 0
    if horizon > 1:
        with env.read() as txn:
            dead = _dropped(txn, env.dbs["planes"], horizon)
        for name in VERSIONED:
            gone = dead if name in PLANE_KEYED else frozenset()
            versions += _in_batches(env, turn, _VersionPruner(env.dbs[name], horizon, batch, gone))
        records = _in_batches(env, turn, _LogPruner(env.dbs["log"], horizon, batch))
    done = HistoryCompacted(horizon, versions, records, asked[0] if asked else horizon, tuple(held_by))
    log.info("history compacted", path=str(env.path), **done.to_json())
    return done


@dataclass(slots=True)
class _Position:
    key: bytes = b""  # the next key to look at
    group: bytes = b""  # the record group being read (versions of one record, newest first)
    kept: bool = False  # whether the group's version visible at the horizon was met already
    done: bool = False


def _dropped(txn: Txn, planes: DbHandle, horizon: int) -> frozenset[bytes]:
    """The planes (their key prefixes) dropped at or before the horizon: a plane id is never reused,
    so no read from the horizon on reaches any record of theirs."""
    dead: set[bytes] = set()
    seen = b""
    for key, value in txn.cursor(db=planes):
        group = key[: -keys.SEQ_WIDTH]
        if group != seen and keys.seq_of(key) <= horizon:  # the version in force at the horizon
            seen = group
            if not value:
                dead.add(group)
    return frozenset(dead)


class _VersionPruner:
    """Walks one versioned table, removing each version no read at the horizon or later sees (and
    every record of a plane in ``dead``)."""

    def __init__(self, db: DbHandle, horizon: int, batch: int, dead: frozenset[bytes] = frozenset()) -> None:
        self.db, self.horizon, self.batch, self.dead = db, horizon, batch, dead

    def step(self, txn: Txn, at: _Position) -> tuple[_Position, int]:
        cur = txn.cursor(db=self.db)
        if not cur.set_range(at.key):
            return _Position(done=True), 0
        group, kept, removed = at.group, at.kept, 0
        for _ in range(self.batch):
            key = cur.key()
            if not key:
                return _Position(done=True), removed
            head = key[: -keys.SEQ_WIDTH]
            if head != group:
                group, kept = head, False
            if self.dead and key[: keys.U32.size] in self.dead:
                cur.delete()
                removed += 1
                continue
            if keys.seq_of(key) <= self.horizon:
                if kept or not cur.value():  # older than the visible one, or a tombstone visible at it
                    kept = True
                    cur.delete()  # (moves to the next key)
                    removed += 1
                    continue
                kept = True
            if not cur.next():
                return _Position(done=True), removed
        return _Position(cur.key(), group, kept, not cur.key()), removed


class _LogPruner:
    """Removes the log records before the horizon, oldest first."""

    def __init__(self, db: DbHandle, horizon: int, batch: int) -> None:
        self.db, self.horizon, self.batch = db, horizon, batch

    def step(self, txn: Txn, at: _Position) -> tuple[_Position, int]:
        cur = txn.cursor(db=self.db)
        removed = 0
        if cur.set_range(keys.u64(1)):
            while removed < self.batch and cur.key() and keys.read_u64(cur.key()) < self.horizon:
                cur.delete()
                removed += 1
        more = removed == self.batch
        return _Position(done=not more), removed


def _in_batches(env: Environment, turn: Turn, pruner: _VersionPruner | _LogPruner) -> int:
    """Run ``pruner`` a transaction at a time, each in the writer's turn; returns what it removed."""
    total = 0
    position = _Position()
    while not position.done:
        at = position
        with turn():
            position, removed = in_write(env, functools.partial(pruner.step, at=at))
        total += removed
    return total
