"""Reader: one short read of a database — its head, the graph as of any seq up to it, and the log.

``with db.read() as reader:`` is the public way to read several things from one consistent state,
as the change feed does (a batch of commits, and the graph just before each). Hold it briefly: it
pins an LMDB read transaction, and never across an ``await`` or a ``yield`` to a consumer.
"""

from __future__ import annotations

from collections.abc import Iterator

from drsg.kernel.asof import AsOf, format_ms, parse_as_of
from drsg.kernel.errors import BadAsOf
from drsg.store.environment import Dbs, Environment, ReadHold, Txn
from drsg.store.gate import SharedHold
from drsg.store.log import Commit, LogReader
from drsg.store.meta import read_head
from drsg.store.retention import Retained, read_retained
from drsg.store.snapshot import Snapshot


class HeadMemo:
    """The head a read transaction sees, remembered by LMDB's transaction id: a read transaction
    sees the commits of the write whose id it bears, so one with the id of the last read sees the
    same head, and only a read after a new write looks it up again (0.3 µs of a 3 µs read). One per
    database, shared by its threads."""

    __slots__ = ("_seen",)

    def __init__(self) -> None:
        # (transaction id, head, retained history): replaced whole, so threads never see half of it
        self._seen: tuple[int, int, Retained] = (-1, 0, Retained())

    def look(self, txn: Txn, dbs: Dbs) -> tuple[int, int, Retained]:
        """``txn``'s id, the head it sees and the retained history then."""
        txn_id = txn.id()
        seen = self._seen
        if seen[0] != txn_id:
            seen = self._seen = (txn_id, read_head(txn, dbs["meta"]), read_retained(txn, dbs["meta"]))
        return seen


class SnapshotRead(Snapshot, ReadHold):
    """``with db.snapshot() as snap``: a read transaction and the snapshot it reads, one object
    made per read. A point lookup is the read users make most, and at ~5 µs a read every object it
    builds counts: this one begins its transaction when entered and is then the Snapshot of it,
    the head by the memo — as of a seq too; only an AS OF by time is resolved by a Reader (its log)."""

    __slots__ = ("_as_of", "_memo", "_seq", "env", "hold")
    hold: SharedHold

    def __init__(
        self, env: Environment, memo: HeadMemo, seq: int | None = None, *, as_of: AsOf | str | int | None = None
    ) -> None:
        self.env = env
        self._memo = memo
        self._seq = seq  # the commit to read, or (both None) the head
        self._as_of = as_of  # else an AS OF for Reader.resolve

    def __enter__(self) -> Snapshot:
        txn = ReadHold.__enter__(self)
        try:
            dbs = self.env.dbs
            _, head, retained = self._memo.look(txn, dbs)
            seq = self._seq
            if seq is None and self._as_of is not None:
                seq = Reader(txn, dbs).resolve(self._as_of)
            Snapshot.__init__(self, txn, dbs, head if seq is None else check_seq(seq, head, retained), head)
        except BaseException as exc:
            ReadHold.__exit__(self, type(exc), exc, exc.__traceback__)  # raises damage as DamagedDatabase
            raise
        return self


class Reader:
    def __init__(self, txn: Txn, dbs: Dbs) -> None:
        self._txn = txn
        self._dbs = dbs
        self.head = read_head(txn, dbs["meta"])  # the newest commit this read sees
        self.retained = read_retained(txn, dbs["meta"])  # where the queryable history starts

    @property
    def _log(self) -> LogReader:
        """The log, for the reads that look at it (most reads of the graph never do)."""
        return LogReader(self._txn, self._dbs["log"])

    def snapshot(self, at: int | None = None) -> Snapshot:
        """The graph as of commit ``at`` (0 … head; default: the head)."""
        if at is None:
            at = self.head
        elif not 0 <= at <= self.head:
            raise BadAsOf(f"seq {at} is beyond the head of the log ({self.head}); use 0..{self.head}")
        else:
            self.retained.check(at)
        return Snapshot(self._txn, self._dbs, at, self.head)

    def commits(self, from_seq: int = 1, to_seq: int | None = None) -> Iterator[Commit]:
        """Commits ``from_seq..to_seq`` (default: to the head) in order; CorruptRecord on a gap or
        a damaged record; refused before the retained history's start."""
        self.retained.check(from_seq)
        return self._log.iter(from_seq, self.head if to_seq is None else min(to_seq, self.head))

    def resolve(self, as_of: AsOf | str | int) -> int:
        """The commit an AS OF names: a seq up to the head, or the last commit at or before a time."""
        target = as_of if isinstance(as_of, AsOf) else parse_as_of(as_of)
        if target.seq is not None:
            return check_seq(target.seq, self.head, self.retained)
        seq = self._log.last_seq_at_or_before(target.ms or 0, self.head, self.retained.oldest)
        if seq == 0 and self.retained.oldest > 1:
            raise self.retained.refuse(0, f"AS OF {format_ms(target.ms or 0)}")
        if seq == 0:
            first = self._log.ts(1)
            first_text = format_ms(first) if first is not None else "never"
            raise BadAsOf(
                f"AS OF {format_ms(target.ms or 0)} is before the first commit ({first_text}); pick a later time"
            )
        return seq


def check_seq(seq: int, head: int, retained: Retained) -> int:
    """``seq`` when an AS OF may name it as of ``head`` and the ``retained`` history, else BadAsOf."""
    if seq > head:
        raise BadAsOf(f"AS OF seq {seq} is beyond the head of the log ({head}); use {retained.oldest}..{head}")
    return retained.check(seq)
