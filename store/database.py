"""The Database: the embedded store that the CLI, the server and the workers all stand on."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import structlog

from drsg.kernel import logs
from drsg.kernel.asof import AsOf, format_ms, parse_as_of
from drsg.kernel.errors import BadAsOf, CorruptRecord, DatabaseUnavailable
from drsg.store import keys
from drsg.store.environment import Environment, EnvOptions
from drsg.store.log import Commit, LogReader
from drsg.store.mutations import EdgePut, NodePut, PlaneCreate
from drsg.store.projection import rebuild
from drsg.store.records import Plane
from drsg.store.signal import CommitSignal
from drsg.store.snapshot import Snapshot
from drsg.store.transaction import DEFAULT_PLANE, IdCounters, WriteTx
from drsg.store.writer import META_FORMAT, CommitResult, Writer, read_head

T = TypeVar("T")
FORMAT_VERSION = 1
META_UUID = b"uuid"
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

    def to_json(self) -> dict[str, Any]:
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
        }


class Database:
    """One drsg database file. Thread-safe; open it once per process and share it."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        create: bool = True,
        readonly: bool = False,
        map_size: int = 64 << 20,
        max_map_size: int = 1 << 40,
        group_max: int = 1000,
    ) -> None:
        if not structlog.is_configured():
            logs.configure()  # quiet by default for library users; apps may configure structlog first
        self.path = os.fspath(path)
        self.env = Environment(
            path, EnvOptions(map_size=map_size, max_map_size=max_map_size, readonly=readonly, create=create)
        )
        self.writer = Writer(self.env, max_group=group_max)
        self.commits_signal = CommitSignal()
        self.writer.on_commit = self.commits_signal.publish
        self.readonly = readonly
        if not readonly:
            self._bootstrap()
        self._check_format()

    # ------------------------------------------------------------------ lifecycle

    def _bootstrap(self) -> None:
        """A new database starts with one commit: the `startup` plane (id 0)."""
        with self.env.read() as txn:
            if read_head(txn, self.env.dbs["meta"]) > 0:
                return

        def create_startup(tx: WriteTx) -> None:
            if tx.view.find_plane(DEFAULT_PLANE) is None and tx.seq == 1:
                tx.txn.put(META_FORMAT, keys.u32(FORMAT_VERSION), db=self.env.dbs["meta"])
                tx.txn.put(META_UUID, uuid.uuid4().hex.encode(), db=self.env.dbs["meta"])
                tx.create_plane(DEFAULT_PLANE)

        self.writer.write(create_startup, {"via": "bootstrap"})
        log.info("created database", path=self.path)

    def _check_format(self) -> None:
        with self.env.read() as txn:
            raw = txn.get(META_FORMAT, db=self.env.dbs["meta"])
        if raw is not None and keys.U32.unpack(raw)[0] > FORMAT_VERSION:
            raise DatabaseUnavailable(
                f"{self.path} uses format {keys.U32.unpack(raw)[0]}, newer than this drsg "
                f"(format {FORMAT_VERSION}); upgrade drsg"
            )

    @property
    def uuid(self) -> str:
        """This database's identity; sidecars record it so a foreign sidecar is never trusted."""
        with self.env.read() as txn:
            raw = txn.get(META_UUID, db=self.env.dbs["meta"])
        return "" if raw is None else bytes(raw).decode()

    def close(self) -> None:
        self.env.close()

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ writing

    def write(self, fn: Callable[[WriteTx], T], origin: dict[str, Any] | None = None) -> CommitResult[T]:
        """Run ``fn`` as one commit (group-committed with concurrent writers); durable on return."""
        if self.readonly:
            raise DatabaseUnavailable(f"{self.path} is open read-only; reopen it for writing")
        return self.writer.write(fn, origin)

    async def awrite(self, fn: Callable[[WriteTx], T], origin: dict[str, Any] | None = None) -> CommitResult[T]:
        """As :meth:`write`, for asyncio callers: waits without holding a thread."""
        if self.readonly:
            raise DatabaseUnavailable(f"{self.path} is open read-only; reopen it for writing")
        return await self.writer.awrite(fn, origin)

    # ------------------------------------------------------------------ reading

    def head(self) -> int:
        with self.env.read() as txn:
            return read_head(txn, self.env.dbs["meta"])

    @contextmanager
    def snapshot(self, as_of: AsOf | str | int | None = None) -> Iterator[Snapshot]:
        """The graph now, or as of a commit seq / time. Hold it briefly: it pins a read txn."""
        with self.env.read() as txn:
            head = read_head(txn, self.env.dbs["meta"])
            at = head if as_of is None else self._resolve(txn, head, as_of)
            yield Snapshot(txn, self.env.dbs, at, head)

    def resolve_as_of(self, as_of: AsOf | str | int) -> int:
        with self.env.read() as txn:
            return self._resolve(txn, read_head(txn, self.env.dbs["meta"]), as_of)

    def _resolve(self, txn: Any, head: int, as_of: AsOf | str | int) -> int:
        target = as_of if isinstance(as_of, AsOf) else parse_as_of(as_of)
        if target.seq is not None:
            if target.seq > head:
                raise BadAsOf(f"AS OF seq {target.seq} is beyond the head of the log ({head}); use 1..{head}")
            return target.seq
        reader = LogReader(txn, self.env.dbs["log"])
        seq = reader.last_seq_at_or_before(target.ms or 0, head)
        if seq == 0:
            first = reader.ts(1)
            first_text = format_ms(first) if first is not None else "never"
            raise BadAsOf(
                f"AS OF {format_ms(target.ms or 0)} is before the first commit ({first_text}); pick a later time"
            )
        return seq

    def plane(self, name: str) -> Plane:
        with self.snapshot() as snap:
            return snap.plane(name)

    def commits(self, from_seq: int = 1, to_seq: int | None = None) -> Iterator[Commit]:
        """Commits in seq order, read in batches so no read transaction is held for long."""
        next_seq = max(from_seq, 1)
        while True:
            batch: list[Commit] = []
            damage: CorruptRecord | None = None
            with self.env.read() as txn:
                try:
                    for commit in LogReader(txn, self.env.dbs["log"]).iter(next_seq, to_seq):
                        batch.append(commit)
                        if len(batch) >= 512:
                            break
                except CorruptRecord as exc:
                    damage = exc  # deliver every intact commit before it first
            yield from batch
            if damage is not None:
                raise damage
            if not batch:
                return
            next_seq = batch[-1].seq + 1

    def follow(self, from_seq: int = 1, poll: float = 0.05) -> Iterator[Commit]:
        """Commits from ``from_seq`` on, waiting for new ones (other processes' included)."""
        next_seq = max(from_seq, 1)
        while True:
            delivered = False
            for commit in self.commits(next_seq):
                delivered = True
                next_seq = commit.seq + 1
                yield commit
            if not delivered:
                time.sleep(poll)

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
            return Stats(len(planes), nodes, edges, len(labels), len(types), indexes, snap.at, self.env.file_size())

    # ------------------------------------------------------------------ maintenance

    def rebuild_projection(self) -> int:
        """Throw the projection away and rebuild it from the log alone; returns the head seq."""

        def replay(tx: WriteTx) -> int:
            head = rebuild(tx.txn, self.env.dbs)
            ids = IdCounters()
            for commit in LogReader(tx.txn, self.env.dbs["log"]).iter():
                for m in commit.mutations:
                    if isinstance(m, PlaneCreate):
                        ids.plane = max(ids.plane, m.plane + 1)
                    elif isinstance(m, NodePut):
                        ids.node = max(ids.node, m.id + 1)
                    elif isinstance(m, EdgePut):
                        ids.edge = max(ids.edge, m.id + 1)
            # Never move a counter backwards: ids are never reused, even those of aborted writes.
            tx.ids.plane = max(ids.plane, tx.ids.plane)
            tx.ids.node = max(ids.node, tx.ids.node)
            tx.ids.edge = max(ids.edge, tx.ids.edge)
            return head

        head = self.write(replay, {"via": "rebuild"}).value
        log.info("rebuilt projection", path=self.path, commits=head)
        return head
