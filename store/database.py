"""The Database: the embedded store that the CLI, the server and the workers all stand on.

It is a log (store/lmdb_log.py: the commits, the group-commit writer, the commit notification)
and the graph projection written beside it in the same LMDB file; reads go through
:meth:`Database.read` (a :class:`~drsg.store.reader.Reader`) or :meth:`Database.snapshot`.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Generic, TypeVar, Unpack

import structlog

from drsg.kernel import logs
from drsg.kernel.asof import AsOf
from drsg.kernel.errors import ConfigError, DatabaseUnavailable, UsageError
from drsg.kernel.values import Json
from drsg.store import keys
from drsg.store.backends import open_log
from drsg.store.environment import Dbs, Environment, ReadTxn, Txn
from drsg.store.intent_ops import INTENT_OPS
from drsg.store.intents import Intent, IntentOps
from drsg.store.lmdb_log import LmdbLog, LmdbOptions
from drsg.store.log import Commit
from drsg.store.meta import META_FORMAT, read_head
from drsg.store.reader import HeadMemo, Reader, SnapshotRead
from drsg.store.readers import Pins
from drsg.store.records import Plane
from drsg.store.retention import HistoryCompacted, Retained, Retention, compact_history, read_retained
from drsg.store.snapshot import Snapshot
from drsg.store.staging import StagedWrite
from drsg.store.transaction import DEFAULT_PLANE, WriteTx
from drsg.store.writepath import GroupCommit, WritePath
from drsg.store.writer import CommitResult

T = TypeVar("T")
FORMAT_VERSION = 2  # 2: a staged import may leave commits past the head, which format 1 read as logged
META_UUID = b"uuid"


class _Following:
    """``Database.follow``'s place, as a long reader history compaction leaves."""

    def __init__(self, next_seq: int) -> None:
        self.next_seq = next_seq

    def needs(self) -> int:
        return self.next_seq - 1


FOLLOW_WAIT = 1.0  # seconds follow() waits between looks at the log (a commit wakes it at once)
log = structlog.get_logger("drsg.store")


@dataclass(frozen=True)
class Stats:
    planes: int
    nodes: int
    edges: int
    labels: int
    edge_types: int
    indexes: int  # declared search indexes, vector and keyword, over every plane
    commit_seq: int
    file_size: int
    oldest: int  # the oldest commit a read may name (store/retention.py)

    def to_json(self) -> dict[str, Json]:
        """Upstream's ``db.stats`` shape (DbStats), plus what this store knows."""
        return {
            "planes": self.planes,
            "nodes": self.nodes,
            "edges": self.edges,
            "labels": self.labels,
            "edge_types": self.edge_types,
            "indexes": self.indexes,
            "commit_seq": self.commit_seq,
            "commits": self.commit_seq,
            "persistent": True,
            "file_size": self.file_size,
            "history": {"oldest": self.oldest, "latest": self.commit_seq},
        }


class Database:
    """One drsg database file (a path, or an ``lmdb://`` URL). Thread-safe; open it once per process
    and share it."""

    #: Whether the file follows a log kept elsewhere (a Kafka node's copy), so that its head moves on
    #: by itself: a sidecar another process saved from further on is reached by waiting.
    follows_remote_log: ClassVar[bool] = False

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        bootstrap: Callable[[], None] | None = None,
        writes: Callable[[LmdbLog], WritePath] | None = None,
        ops: IntentOps = INTENT_OPS,
        **options: Unpack[LmdbOptions],
    ) -> None:
        """``options`` are the LMDB log's (store/lmdb_log.py): ``create``, ``readonly``, ``map_size``,
        ``max_map_size``, ``group_max``. The parts a database is composed of may be given: ``writes``
        makes its write path from the opened file's log (default: the group-commit writer,
        store/writepath.py); ``bootstrap`` readies a file opened for writing, before its format is
        checked (default: a new file's first commit, the `startup` plane). A Kafka node gives both.
        ``ops`` are the operations an intent may name (store/intents.py): the store's own table, or
        one a layer above extends (every node of a Kafka topic must be given the same)."""
        if not structlog.is_configured():
            logs.configure()  # quiet by default for library users; apps may configure structlog first
        opened = open_log(path, **options)
        if not isinstance(opened, LmdbLog):  # the graph is projected inside the LMDB file, beside its log
            opened.close()
            raise ConfigError(f"{path}: a database keeps its graph in an LMDB file; open it by its path")
        self.log = opened
        self._on_close: list[Callable[[], None]] = []
        self.path = opened.path
        self.env = opened.env
        self._head_memo = HeadMemo()  # the head each `with db.snapshot()` sees
        self.pins = Pins(Path(self.path))  # long readers (and other processes' leases) compaction leaves
        self._on_close.append(self.pins.close)
        self.writer = opened.writer
        self.readonly = opened.readonly
        self.ops = ops
        try:
            self.writes: WritePath = GroupCommit(opened, ops) if writes is None else writes(opened)
            if not self.readonly:
                (self._bootstrap if bootstrap is None else bootstrap)()
            self._check_format()
        except BaseException:
            opened.close()  # a refused file is closed again, its writer stopped
            raise

    # ------------------------------------------------------------------ lifecycle

    def _bootstrap(self) -> None:
        """A new database starts with one commit: the `startup` plane (id 0)."""
        if self.head() > 0:
            return

        def create_startup(tx: WriteTx) -> None:
            if tx.view.find_plane(DEFAULT_PLANE) is None and tx.seq == 1:
                tx.txn.put(META_FORMAT, keys.u32(FORMAT_VERSION), db=self.env.dbs["meta"])
                tx.txn.put(META_UUID, uuid.uuid4().hex.encode(), db=self.env.dbs["meta"])
                tx.create_plane(DEFAULT_PLANE)

        self.writer.write(create_startup, {"via": "bootstrap"})
        log.info("created database", path=self.path)

    def _check_format(self) -> None:
        """Refuse a file of any other format: this drsg reads and writes its own layout only. A file
        with commits but no format recorded is not one this drsg made either."""
        with self.env.read() as txn:
            raw = txn.get(META_FORMAT, db=self.env.dbs["meta"])
            head = read_head(txn, self.env.dbs["meta"])
        if raw is None and head == 0:
            return  # a new file opened read-only: nothing is in it yet
        found = keys.U32.unpack(raw)[0] if raw is not None and len(raw) == keys.U32.size else None
        if found == FORMAT_VERSION:
            return
        what = "records no format version" if found is None else f"is format {found}"
        raise DatabaseUnavailable(
            f"{self.path} {what}; this drsg reads format {FORMAT_VERSION} only: with the drsg that made it, "
            f"export each plane (`drsg --db {self.path} export --plane NAME -o NAME.jsonl`), then import them "
            "into a new database with this one (`drsg --db NEW import NAME.jsonl --plane NAME --create-plane`)"
        )

    @property
    def uuid(self) -> str:
        """This database's identity; sidecars record it so a foreign sidecar is never trusted."""
        with self.env.read() as txn:
            raw = txn.get(META_UUID, db=self.env.dbs["meta"])
        return "" if raw is None else bytes(raw).decode()

    def on_close(self, stop: Callable[[], None]) -> None:
        """Run ``stop`` when the database closes, before the file does. A consumer that reads in a
        thread of its own (the index workers under `serve`) registers its stop here: py-lmdb frees a
        transaction of a closed environment twice, so such a thread must end before the close."""
        self._on_close.append(stop)

    def close(self) -> None:
        while self._on_close:
            self._on_close.pop()()
        self.log.close()

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ writing

    def write(self, fn: Callable[[WriteTx], T], origin: dict[str, Json] | None = None) -> CommitResult[T]:
        """Run ``fn`` as one commit (group-committed with concurrent writers); durable on return."""
        return self.writes.write(fn, origin)

    async def awrite(self, fn: Callable[[WriteTx], T], origin: dict[str, Json] | None = None) -> CommitResult[T]:
        """As :meth:`write`, for asyncio callers: waits without holding a thread."""
        return await self.writes.awrite(fn, origin)

    def submit(self, intent: Intent, origin: dict[str, Json] | None = None) -> CommitResult[Json]:
        """Write what ``intent`` names (store/intents.py: by key, never by a copy's ids), decided
        where it lands in the log; its answer, or the error that refused it. On a Kafka log this is
        the write that never conflicts with other nodes' (a commit function may run again)."""
        return self.writes.submit(intent, origin)

    async def asubmit(self, intent: Intent, origin: dict[str, Json] | None = None) -> CommitResult[Json]:
        """As :meth:`submit`, for asyncio callers."""
        return await self.writes.asubmit(intent, origin)

    def staged(self, origin: dict[str, Json] | None = None) -> AbstractContextManager[StagedWrite]:
        """One large write as many transactions, all or nothing (store/staging.py): stage chunks
        with ``chunk(fn)``, then ``finish()``. Leaving the block unfinished, or on an error, removes
        everything staged. This process's other writers wait until the block ends; other processes'
        writers wait until it finishes."""
        return self.writes.staged(origin)

    # ------------------------------------------------------------------ reading

    def head(self) -> int:
        return self.log.head()

    def read(self) -> _ReadHold[Reader]:
        """One consistent read: the head, snapshots at any seq up to it, the commits. Hold it briefly."""
        return _ReadHold(self.env, Reader)

    def snapshot(self, as_of: AsOf | str | int | None = None) -> AbstractContextManager[Snapshot]:
        """The graph now, or as of a commit seq / time. Hold it briefly: it pins a read txn."""
        if as_of is None:
            return SnapshotRead(self.env, self._head_memo)
        # by seq, no Reader: an AsOf by seq, or a bare one (not a bool; parse_as_of refuses < 1)
        seq = as_of.seq if isinstance(as_of, AsOf) else as_of if type(as_of) is int and as_of >= 1 else None
        if seq is not None and seq >= 0:
            return SnapshotRead(self.env, self._head_memo, seq)
        return SnapshotRead(self.env, self._head_memo, as_of=as_of)  # a time, or what the parser refuses

    def retained(self) -> Retained:
        """Where the queryable history starts, and the settings that put it there."""
        with self.env.read() as txn:
            return read_retained(txn, self.env.dbs["meta"])

    def resolve_as_of(self, as_of: AsOf | str | int) -> int:
        with self.read() as reader:
            return reader.resolve(as_of)

    def plane(self, name: str) -> Plane:
        with self.snapshot() as snap:
            return snap.plane(name)

    def commits(self, from_seq: int = 1, to_seq: int | None = None) -> Iterator[Commit]:
        """Commits in seq order, read in batches so no read transaction is held for long."""
        return self.log.read(from_seq, to_seq)

    def follow(self, from_seq: int = 1) -> Iterator[Commit]:
        """Commits from ``from_seq`` on, waiting for new ones (other processes' included). History
        compaction, here or in another process, leaves what it has yet to read (store/readers.py)."""
        at = _Following(max(from_seq, 1))
        self.pins.add(at)
        try:
            for commit in self.commits(at.next_seq):  # (checks the horizon after the pin is in place)
                at.next_seq = commit.seq + 1
                yield commit
            while True:
                self.log.wait(at.next_seq - 1, FOLLOW_WAIT)
                for commit in self.commits(at.next_seq):
                    at.next_seq = commit.seq + 1
                    yield commit
        finally:
            self.pins.discard(at)

    def health(self) -> dict[str, Json]:
        """What ``/health`` says beyond "ok", which anyone may ask (no token): figures and flags
        only, never a path, a URL or an error's text. An embedded file has nothing to add."""
        return {}

    def stats(self) -> Stats:
        with self.snapshot() as snap:
            planes = snap.planes()
            nodes = edges = indexes = 0
            labels: set[str] = set()
            types: set[str] = set()
            for plane in planes:
                n, e = snap.counts(plane.id)
                nodes, edges = nodes + n, edges + e
                labels.update(snap.tally(plane.id, b"L"))
                types.update(snap.tally(plane.id, b"T"))
                indexes += len(snap.indexes(plane.id))
            oldest = read_retained(snap.txn, self.env.dbs["meta"]).oldest
            figures = (len(planes), nodes, edges, len(labels), len(types), indexes, snap.at)
            return Stats(*figures, self.env.file_size(), oldest)

    # ------------------------------------------------------------------ maintenance

    def rebuild_projection(self) -> int:
        """Throw the projection away and rebuild it from the log alone; returns the head seq.
        Refused once history was compacted: the log no longer starts at commit 1."""
        retained = self.retained()
        if retained.oldest > 1:
            raise UsageError(
                f"{self.path}: the log starts at commit {retained.oldest:,} ({retained.setting()}), so the graph "
                "cannot be rebuilt from it; restore a snapshot (`drsg restore`) instead"
            )
        return self.writes.rebuild_projection()

    def compact_history(self, retention: Retention) -> HistoryCompacted:
        """Move the retention horizon as ``retention`` asks and remove what lies before it, in short
        transactions that take the writer's turn like commits (store/retention.py)."""
        self.log.check_writable()
        if self.follows_remote_log:
            raise UsageError(
                f"{self.path} copies a Kafka log: its history is the topic's; bound it with the topic's retention"
            )
        return compact_history(self.env, self.writer.exclusive, retention, clock=self.writer.clock, pins=self.pins)


R = TypeVar("R")


class _ReadHold(ReadTxn, Generic[R]):
    """The environment's read transaction for a ``with`` block, seen as what ``view`` makes of it:
    ``db.read()``'s Reader (a snapshot is its own hold: store/reader.py's SnapshotRead). The
    environment's read itself rather than a wrapper round one: each layer costs a read half a µs."""

    __slots__ = ("view",)

    def __init__(self, env: Environment, view: Callable[[Txn, Dbs], R]) -> None:
        self.env = env
        self.view = view

    def __enter__(self) -> R:
        txn = ReadTxn.__enter__(self)
        try:
            return self.view(txn, self.env.dbs)
        except BaseException as exc:
            ReadTxn.__exit__(self, type(exc), exc, exc.__traceback__)  # raises damage as DamagedDatabase
            raise
