"""Staged writes: one large write (an import) as many LMDB transactions, still all or nothing.

One LMDB transaction holds every page it dirties in memory until it commits, so a write of a whole
file in one would need memory in proportion to the file. A staged write commits in chunks instead,
each its own transaction, at seqs past the head where no reader looks: every read is as of the head
(store/snapshot.py) and log reads stop at it. Only :meth:`StagedWrite.finish` moves the head, with
the tallies (which are not versioned), in one last small transaction: the whole write appears at
once, or — on an error, or after ``kill -9`` at any point — not at all.

A mark in the meta table (store/meta.py) names the owner (pid and process start time) and the seqs
staged so far. A writer that finds it waits while the owner lives; once the owner is gone, the
writer first removes what it staged (:func:`undo_staged`), newest commit first, one per transaction.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TypeVar

import lmdb
import structlog

from drsg.kernel.errors import UsageError
from drsg.kernel.values import Json
from drsg.store import keys
from drsg.store.environment import READ_DAMAGE, Dbs, Environment, Txn, damaged, write_failed
from drsg.store.log import decode
from drsg.store.meta import LogState, StageMark, read_mark, read_state, write_mark
from drsg.store.mutations import EdgePut, IndexDeclare, Mutation, NodePut, PlaneCreate
from drsg.store.projection import Tallies
from drsg.store.sink import LogSink
from drsg.store.snapshot import Snapshot
from drsg.store.transaction import IdCounters, WriteTx

T = TypeVar("T")
WAIT = 0.05  # seconds between looks at another process's staged write
log = structlog.get_logger("drsg.store")

#: What a staged commit may hold: changes that touch only versioned records (and deferred tallies),
#: so that removing a staged commit's keys undoes it exactly.
STAGEABLE = (PlaneCreate, NodePut, EdgePut, IndexDeclare)


def _stageable(mutations: Sequence[Mutation]) -> None:
    for mutation in mutations:
        if not isinstance(mutation, STAGEABLE):
            raise UsageError(f"a staged write cannot hold {mutation.op}; commit it on its own")


def process_start(pid: int) -> int | None:
    """When process ``pid`` started (clock ticks since boot), or None if there is no such process:
    with the pid it names one process, never a later one that reused the number."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except OSError:
        return None
    fields = stat[stat.rindex(b")") + 2 :].split()  # after the command name, which may hold spaces
    return int(fields[19])  # field 22 of proc(5); fields[0] is field 3


#: Files this process is staging a write to right now (a second Database of the same file in this
#: process must not take our own mark for a dead process's).
_staging_here: set[str] = set()


def owner_alive(mark: StageMark, path: Path) -> bool:
    if mark.pid == os.getpid():
        return str(path) in _staging_here
    return process_start(mark.pid) == mark.started


def in_write(env: Environment, step: Callable[[Txn], T], *, keep: bool = True) -> T:
    """Run ``step`` in a write transaction of its own and commit it (``keep=False``: abandon it, a
    dry run's), growing the map (or adopting another process's growth) and running ``step`` again
    as the writer does."""
    while True:
        try:
            with env.gate.shared():
                txn = env.begin_write()
                try:
                    value = step(txn)
                    if keep:
                        txn.commit()
                    else:
                        txn.abort()
                    return value
                except BaseException:
                    txn.abort()
                    raise
        except lmdb.MapFullError:
            env.grow()
        except lmdb.MapResizedError:
            env.adopt()
        except READ_DAMAGE as exc:  # met while reading the file inside the write
            if isinstance(exc, lmdb.Error) and not isinstance(exc, lmdb.CorruptedError):
                raise write_failed(env.path, exc) from None
            raise damaged(env.path, exc) from None


def settle(env: Environment, mark: StageMark) -> None:
    """A writer met ``mark``: wait a moment while its owner lives, else remove what it staged."""
    if owner_alive(mark, env.path):
        time.sleep(WAIT)
        return
    removed = undo_staged(env, (mark.pid, mark.started))
    if not removed:
        return  # nothing of that owner's was left: it finished, or another writer cleaned up
    log.warning(
        "removed an unfinished staged write",
        path=str(env.path),
        pid=mark.pid,
        commits=removed,
        seqs=f"{mark.base + 1}..{mark.top}",
    )


def undo_staged(env: Environment, owner: tuple[int, int] | None = None) -> int:
    """Remove every commit the marked staged write left past the head, newest first and one per
    transaction (so undoing needs no more memory than staging did), then the mark; returns how many
    commits were removed. Safe to stop at any point and run again.

    ``owner`` (pid, start time): undo only that owner's write. A writer decides a mark's owner is
    dead outside the transaction that undoes it; meanwhile the owner may have finished and a live
    import claimed a new mark, whose commits must stay. None: whatever mark is there (a restored
    snapshot's, whose owner ran on another machine)."""
    removed = 0
    meta = env.dbs["meta"]

    def step(txn: Txn) -> bool:
        mark = read_mark(txn, meta)
        if mark is None or (owner is not None and (mark.pid, mark.started) != owner):
            return False
        if mark.top <= mark.base:
            write_mark(txn, meta, None)
            return False
        _undo_commit(txn, env.dbs, mark.top)
        write_mark(txn, meta, replace(mark, top=mark.top - 1))
        return True

    while in_write(env, step):
        removed += 1
    return removed


def _undo_commit(txn: Txn, dbs: Dbs, seq: int) -> None:
    record = txn.get(keys.u64(seq), db=dbs["log"])
    if record is not None:
        before = Snapshot(txn, dbs, seq - 1)  # commits before this one are all still in place
        doomed: set[tuple[str, bytes]] = set()
        for mutation in decode(seq, record).mutations:
            doomed.update(_groups(mutation, before))
        suffix = keys.inv(seq)
        for db, group in doomed:  # every key at this seq was written by this commit
            txn.delete(group + suffix, db=dbs[db])
        txn.delete(keys.u64(seq), db=dbs["log"])


def _groups(m: Mutation, before: Snapshot) -> Iterator[tuple[str, bytes]]:
    """Every record group the projection may have written for ``m`` (one of STAGEABLE) at its seq:
    those its own fields name and those the record's earlier version names (removing a key that is
    not there is harmless)."""
    if isinstance(m, PlaneCreate):
        yield "planes", keys.plane_group(m.plane)
        yield "plane_names", keys.plane_name_group(m.name)
    elif isinstance(m, NodePut):
        yield "nodes", keys.node_group(m.plane, m.id)
        prev = before.node(m.plane, m.id)
        names, labels = {m.key}, set(m.labels)
        if prev is not None:
            names.add(prev.key)
            labels.update(prev.labels)
        for key in names - {None}:
            yield "keys", keys.key_group(m.plane, key)  # type: ignore[arg-type]
        for label in labels:
            yield "labels", keys.label_group(m.plane, label, m.id)
    elif isinstance(m, EdgePut):
        yield "edges", keys.edge_group(m.plane, m.id)
        prev_edge = before.edge(m.plane, m.id)
        ends = {(m.src, m.dst, m.type)}
        if prev_edge is not None:
            ends.add((prev_edge.src, prev_edge.dst, prev_edge.type))
        for src, dst, edge_type in ends:
            yield "out", keys.adjacency_group(m.plane, src, edge_type, m.id)
            yield "in", keys.adjacency_group(m.plane, dst, edge_type, m.id)
    elif isinstance(m, IndexDeclare):
        yield "indexes", keys.index_group(m.plane, m.kind, m.label, m.property)


class StagedWrite:
    """One staged write (see the module). Use it through ``Database.staged()``, which holds this
    process's writer for it, so no group commit runs meanwhile."""

    def __init__(
        self,
        env: Environment,
        origin: dict[str, Json],
        clock: Callable[[], float],
        publish: Callable[[int], None] | None = None,
    ) -> None:
        self.env = env
        self.origin = origin
        self.clock = clock
        self.publish = publish  # told the new head once the write is in the graph
        self.seqs: list[int] = []
        self.finished = False
        self._tallies = Tallies()
        self._owner = (os.getpid(), process_start(os.getpid()) or 0)
        self._state = self._claim()
        self.before = self._state.copy()  # the head and id counters before anything was staged
        _staging_here.add(str(env.path))

    def _claim(self) -> LogState:
        """Put our mark in the meta table, once no other staged write holds it."""
        meta = self.env.dbs["meta"]

        def step(txn: Txn) -> LogState | StageMark:
            mark = read_mark(txn, meta)
            if mark is not None:
                return mark
            state = read_state(txn, meta)
            write_mark(txn, meta, StageMark(*self._owner, state.head, state.head))
            return state

        while True:
            found = in_write(self.env, step)
            if isinstance(found, LogState):
                return found
            settle(self.env, found)

    @property
    def top(self) -> int:
        """The last seq staged so far (the head before the write, while nothing is)."""
        return self._state.head

    @property
    def ids(self) -> IdCounters:
        """The id counters after what is staged so far (a copy)."""
        return self._state.ids.copy()

    def chunk(self, fn: Callable[[WriteTx], T]) -> T:
        """Run ``fn`` in a transaction of its own and stage its commits (``fn`` may seal several
        with ``tx.commit_point()``). If the map must grow, ``fn`` runs again from the same state:
        it must start over from the same input each time."""
        meta = self.env.dbs["meta"]

        def step(txn: Txn) -> tuple[T, LogState, Tallies, list[int]]:
            state, tallies = self._state.copy(), self._tallies.copy()
            # wired: nothing reads a staged commit's mutation objects, so an import's C loop makes none
            # (the check sees those made in Python; the loop makes only new nodes and edges)
            sink = LogSink(
                txn, self.env.dbs, state, self.origin, self.clock, defer_tallies=True, check=_stageable, wired=True
            )
            tx = sink.begin(tallies)
            value = fn(tx)
            sink.seal(tx)
            write_mark(txn, meta, StageMark(*self._owner, self.before.head, state.head))
            return value, state, tallies, sink.seqs

        value, self._state, self._tallies, seqs = in_write(self.env, step)
        self.seqs.extend(seqs)
        return value

    def finish(self) -> tuple[int, ...]:
        """Move the head past every staged commit and write the tallies: the write is in the graph,
        durable. Returns the seqs it committed."""
        meta = self.env.dbs["meta"]

        def step(txn: Txn) -> None:
            LogSink(txn, self.env.dbs, self._state, self.origin).advance(self._tallies)
            write_mark(txn, meta, None)

        in_write(self.env, step)
        self._done()
        if self.seqs and self.publish is not None:
            self.publish(self._state.head)
        return tuple(self.seqs)

    def abandon(self) -> None:
        """Remove everything staged so far: the database is as it was before the write began."""
        self._done()
        undo_staged(self.env, self._owner)

    def _done(self) -> None:
        self.finished = True
        _staging_here.discard(str(self.env.path))
