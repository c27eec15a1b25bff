"""The commit sink: the one place a commit is sealed.

A commit function works on a :class:`~drsg.store.transaction.WriteTx`, which turns its operations
into mutations and projects them at once; the sink it was begun from seals them. Sealing is one
step in one LMDB transaction, as an event-sourcing recorder writes the events and the tracking
position in one call: the commit's tallies (store/projection.py) are flushed, its record is encoded
with its checksum (store/log.py) and appended to the ``log`` table, the head moves to it, and at the
end :func:`advance` writes the head, timestamp and id counters to ``meta`` and returns the head to
publish once the transaction is durable. Every writer of the file seals here:

- the group-commit writer (store/writer.py): one :class:`LogSink` per commit function;
- a staged write (store/staging.py): its chunks' commits past the head, tallies deferred to the
  last transaction, which advances the head over all of them; each sealed from its mutations' wires
  alone (``wired``: nothing reads the objects after, so an import's C line loop makes none);
- a Kafka node's materialiser (store/kafka/materialiser.py): each record of the topic as judged,
  with the record's own origin and timestamp;
- a Kafka node's run of a commit function on its copy (store/kafka/database.py): a :class:`DryRun`,
  which keeps the mutations to produce and writes nothing; its transaction is abandoned.

``tests/unit/test_commit_sink.py`` holds the rule: no other store module appends a record, flushes
tallies or writes the head.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence

from drsg.kernel.values import Json
from drsg.store import keys
from drsg.store.environment import Dbs, Txn
from drsg.store.log import encode
from drsg.store.meta import LogState, write_state
from drsg.store.mutations import Mutation
from drsg.store.projection import Tallies
from drsg.store.transaction import WriteTx


class CommitSink(ABC):
    """Where the commits of a :class:`WriteTx` go. A sink is made for one LMDB write transaction."""

    @abstractmethod
    def begin(self, tallies: Tallies | None = None) -> WriteTx:
        """A WriteTx for the next commit, sealed by this sink (``tallies``: shared across several
        transactions, as a staged write's, which flushes them once at its end)."""

    @abstractmethod
    def seal(self, tx: WriteTx) -> int:
        """Seal ``tx``'s mutations, if any, as commit ``tx.seq``; returns the seq of the next one."""


def advance(txn: Txn, dbs: Dbs, state: LogState) -> int:
    """Write the log's state (head, last timestamp, id counters) to ``meta`` in ``txn``; returns the
    head to publish once ``txn`` is committed."""
    write_state(txn, dbs["meta"], state)
    return state.head


class LogSink(CommitSink):
    """Seals into the file's own log in ``txn``, moving ``state`` (the caller's copy of the meta
    state) with each commit. The seqs sealed and the last timestamp are kept for the caller."""

    def __init__(
        self,
        txn: Txn,
        dbs: Dbs,
        state: LogState,
        origin: dict[str, Json] | None = None,
        clock: Callable[[], float] = time.time,
        *,
        defer_tallies: bool = False,
        check: Callable[[Sequence[Mutation]], None] | None = None,
        wired: bool = False,
    ) -> None:
        self.txn, self.dbs, self.state = txn, dbs, state
        self.origin = {} if origin is None else origin
        self.clock = clock
        self.defer_tallies = defer_tallies  # a staged write's: flushed by advance() at its end
        self.check = check  # refuses what this sink may not seal (a staged write's non-stageable)
        self.wired = wired  # its WriteTxs are sealed from their wires: no reader needs the objects
        self.seqs: list[int] = []
        self.ts: int | None = None

    def begin(self, tallies: Tallies | None = None) -> WriteTx:
        return WriteTx(self.txn, self.dbs, self.state.head + 1, self.state.ids, self.seal, tallies, wired=self.wired)

    def seal(self, tx: WriteTx) -> int:
        if tx.mutations or tx.wires:
            if self.check is not None:  # (a wired tx's objects: those the C loop made are new records)
                self.check(tx.mutations)
            tallies = None if self.defer_tallies else tx.tallies
            wires = (tx.wires, tx.wire_count) if tx.wired else None
            self.append(tx.seq, tx.mutations, self.origin, int(self.clock() * 1000), tallies, wires)
        return self.state.head + 1

    def append(
        self,
        seq: int,
        mutations: Sequence[Mutation],
        origin: dict[str, Json],
        now_ms: int,
        tallies: Tallies | None = None,
        wires: tuple[list[bytes], int] | None = None,
    ) -> int:
        """Seal commit ``seq`` (already projected; ``tallies``: its tally changes, None when there
        are none to write now; ``wires``: the mutations packed, when made already, and how many):
        flush the tallies, append its record and move the head to it.
        Returns its timestamp, never earlier than the last one. A commit with no mutations is sealed
        too (a Kafka record kept as an empty commit)."""
        if tallies is not None:
            tallies.flush(self.txn, self.dbs)
        ts = max(now_ms, self.state.ts)
        record = encode(ts, origin, list(mutations)) if wires is None else encode(ts, origin, [], *wires)
        self.txn.put(keys.u64(seq), record, db=self.dbs["log"], append=True)
        self.state.head, self.state.ts = seq, ts
        self.seqs.append(seq)
        self.ts = ts
        return ts

    def advance(self, tallies: Tallies | None = None) -> int:
        """Flush deferred ``tallies`` (a staged write's, at its end), then write the state to
        ``meta``; returns the head to publish once the transaction is committed."""
        if tallies is not None:
            tallies.flush(self.txn, self.dbs)
        return advance(self.txn, self.dbs, self.state)


class DryRun(CommitSink):
    """Keeps each commit's mutations and writes no record, no tally and no head: the transaction it
    runs in is abandoned (a Kafka node's run of a commit function on its copy, whose mutations are
    produced to the topic). The id counters are a copy: nothing allocated here stays."""

    def __init__(self, txn: Txn, dbs: Dbs, state: LogState) -> None:
        self.txn, self.dbs, self.state = txn, dbs, state
        self.commits: list[list[Mutation]] = []

    def begin(self, tallies: Tallies | None = None) -> WriteTx:
        return WriteTx(self.txn, self.dbs, self.state.head + 1, self.state.ids.copy(), self.seal, tallies)

    def seal(self, tx: WriteTx) -> int:
        if tx.mutations:
            self.commits.append(list(tx.mutations))
        return tx.seq + 1
