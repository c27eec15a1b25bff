"""KafkaDatabase: a drsg database whose log is a Kafka topic — ``drsg.open(path, log="kafka://…")``,
``drsg --log kafka://HOST:PORT/TOPIC --db node.drsg …``, ``[log] url`` in drsg.toml.

Writes go through the broker; reads, time travel, the change feed and the index workers use the
local LMDB file at ``path``, which follows the topic (store/kafka/materialiser.py). A write:

1. catches the materialisation up with the head this node knows;
2. runs the commit function against it, in an LMDB write transaction that is then abandoned (the
   ids it allocates and the checks it makes are the local state's), keeping the mutations;
3. produces them (acks=all) with the head they were made on, and waits until the local file has
   materialised that record: applied (the write's seqs), or stale because another node's commit
   landed first — then it runs the function again on the newer state, up to ``ATTEMPTS`` times
   (commit functions may run more than once, as under the group-commit writer). Before each run
   again it waits a jittered, doubling pause: a record lands stale when anything came between its
   base and its seq, stale records too, so two nodes retrying in step can each land behind the
   other's last stale record run after run; the pause takes them out of step.

A function that seals several commits (``tx.commit_point()``) and a staged write (``drsg import``)
are produced as one group, applied all at once or not at all. Writes from this process are one at
a time; two processes (or nodes) writing at once cost each other retries, not correctness.
"""

from __future__ import annotations

import asyncio
import os
import random
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Generic, TypeVar, Unpack

import structlog

from drsg.kernel.backoff import backoff
from drsg.kernel.errors import ConfigError, Conflict, DatabaseUnavailable, UsageError
from drsg.kernel.values import Json
from drsg.store.backends import split_url
from drsg.store.database import Database, Stats
from drsg.store.environment import Txn
from drsg.store.kafka.log import KafkaLog, Record
from drsg.store.kafka.materialiser import (
    BASE,
    GROUP,
    PREV,
    REST,
    Materialiser,
    check_pairing,
    crc_at,
    crc_of,
    poison_count,
    u64_header,
)
from drsg.store.lmdb_log import LmdbOptions
from drsg.store.log import LogReader
from drsg.store.meta import read_state
from drsg.store.mutations import Mutation
from drsg.store.projection import rebuild
from drsg.store.sink import DryRun
from drsg.store.staging import StagedWrite, in_write
from drsg.store.transaction import DEFAULT_PLANE, WriteTx
from drsg.store.writer import CommitResult

T = TypeVar("T")
ATTEMPTS = 20  # runs of one commit function before a write gives up on other writers
RETRY_FIRST, RETRY_CEILING = 0.01, 0.32  # seconds before a run again: about a produce-to-read round trip, doubling
log = structlog.get_logger("drsg.store")


@dataclass(frozen=True)
class KafkaStats(Stats):
    """A node's figures (its copy's, as the embedded store's) and how its copy stands against the
    topic: what an operator looks at when a node lags, refuses its topic or meets poison records."""

    log_url: str
    log_head: int  # the topic's head as this node knows it (commit_seq: how far its copy has got)
    poison_records: int  # kept as empty commits, each logged as kafka_record_skipped
    error: str | None  # why the materialiser's last round failed (None: the last one went well)

    def to_json(self) -> dict[str, Json]:
        log_state: dict[str, Json] = {
            "url": self.log_url,
            "head": self.log_head,
            "materialised": self.commit_seq,
            "poison_records": self.poison_records,
            "error": self.error,
        }
        return {**super().to_json(), "log": log_state}


@dataclass(frozen=True)
class _Run(Generic[T]):
    """A commit function's dry run on this node's copy: the head it was made on (and the CRC of that
    head's Kafka record, if known), what it returned, and the commits it made."""

    base: int
    crc: int | None
    value: T
    commits: list[list[Mutation]]


class KafkaDatabase(Database):
    """A database on a Kafka log, materialised in the LMDB file ``path`` (see the module)."""

    def __init__(
        self, path: str | os.PathLike[str], log_url: str, *, timeout: float = 5.0, **options: Unpack[LmdbOptions]
    ) -> None:
        scheme, location = split_url(log_url)
        if scheme != "kafka":
            raise ConfigError(f"{log_url!r} is not a Kafka log URL; write kafka://HOST:PORT/TOPIC")
        # before the file: a bad URL or a broker that is down is one line, and leaves nothing behind
        self.materialiser: Materialiser | None = None  # follows the topic into the file, once it is open
        self.kafka = KafkaLog(location, timeout=timeout, listener=self._heard).start()
        self.timeout = timeout
        self._write_lock = threading.Lock()  # this process's writes, one at a time
        # the file's write transactions in this process, the materialiser's among them: py-lmdb
        # refuses a second at once (the group-commit writer, unused here, is what guards them otherwise)
        self._file_lock = threading.Lock()
        self._stager: int | None = None  # the thread inside staged(), if one is
        # the file is this node's copy of the topic: made when missing, written whatever the command
        options.pop("readonly", None)
        options["create"] = True
        try:
            super().__init__(path, bootstrap=self._follow, **options)
        except BaseException:
            self._stop_following()
            self.kafka.close()
            raise
        # closed before the file, and after what registers later (the index workers: they read it)
        self.on_close(self.kafka.close)
        self.on_close(self._stop_following)

    # ------------------------------------------------------------------ lifecycle

    def _follow(self) -> None:
        """Pair the file with the topic, start following it, catch up, and make the `startup` plane
        if the topic is new."""
        check_pairing(self.env, self.kafka)
        self.materialiser = Materialiser(self.env, self.kafka, self.log.publish, self._file_lock).start()
        self.catch_up()
        with self.snapshot() as snap:
            has_startup = snap.find_plane(DEFAULT_PLANE) is not None
        if not has_startup and self.head() == 0:
            self.write(lambda tx: tx.ensure_plane(DEFAULT_PLANE), {"via": "bootstrap"})
            log.info("created database", path=self.path, log=self.kafka.url)

    def _heard(self, record: Record) -> None:
        """The log's watcher read ``record``: the materialiser judges it from these bytes."""
        materialiser = self.materialiser
        if materialiser is not None:
            materialiser.offer(record)

    def _stop_following(self) -> None:
        if self.materialiser is not None:
            self.materialiser.close()
            self.materialiser = None

    @property
    def log_url(self) -> str:
        return self.kafka.url

    def stats(self) -> KafkaStats:
        materialiser = self.materialiser
        return KafkaStats(
            **asdict(super().stats()),
            log_url=self.kafka.url,
            log_head=self.kafka.head(),
            poison_records=self.poison_records,
            error=None if materialiser is None else materialiser.error,
        )

    def health(self) -> dict[str, Json]:
        """How this node's copy stands against the topic, for ``/health``: how far behind the head it
        knows it is, and whether the materialiser's last round failed (``drsg stats`` says why)."""
        materialiser = self.materialiser
        topic, copy = self.kafka.head(), self.head()
        return {
            "log": {
                "head": topic,
                "materialised": copy,
                "behind": max(0, topic - copy),
                "poison_records": self.poison_records,
                "failing": materialiser is None or materialiser.error is not None,
            }
        }

    @property
    def poison_records(self) -> int:
        """Records of the topic this copy kept as empty commits because they were no good commit
        (their origins say why; stale commits, which their writers ran again, are not counted)."""
        with self.env.read() as txn:
            return poison_count(txn, self.env)

    def catch_up(self, seq: int | None = None, timeout: float | None = None) -> int:
        """Wait until the local file has materialised commit ``seq``, or by default until every
        record up to the topic's head as known now is judged (an unfinished group stays held back:
        a write made now lands after it and breaks it, as a dead writer's group must be broken);
        returns the local head. A node that makes no progress for ``timeout`` seconds (default
        twice the broker timeout) fails it with the reason."""
        materialiser = self.materialiser
        if materialiser is None:
            raise DatabaseUnavailable(f"{self.path} has been closed; open it again to use it")
        target = self.kafka.head() if seq is None else seq

        def done() -> bool:
            return materialiser.settled(target) if seq is None else self.head() >= target

        wait = self.timeout * 2 if timeout is None else timeout
        progress = (materialiser.judged, self.head())
        while not materialiser.wait(done, wait):
            if (materialiser.judged, self.head()) == progress:
                raise DatabaseUnavailable(
                    f"{self.kafka.url}: this node has materialised {self.head()} of {target} commits "
                    f"({materialiser.error or 'the broker is slow or gone'}); retry"
                )
            progress = (materialiser.judged, self.head())  # slow but moving: the bound is on a stall
        return self.head()

    # ------------------------------------------------------------------ writing

    def write(self, fn: Callable[[WriteTx], T], origin: dict[str, Json] | None = None) -> CommitResult[T]:
        if self._stager == threading.get_ident():  # it would wait for the file the stage holds
            raise UsageError("a staged write is open in this thread; finish it (or leave its block) before writing")
        with self._write_lock:
            for attempt in range(ATTEMPTS):
                if attempt:  # in step with another node, each lands behind the other's stale record
                    time.sleep(backoff(attempt, RETRY_FIRST, RETRY_CEILING, random.random))
                self.catch_up()
                with self._file_lock:
                    run = in_write(self.env, lambda txn: self._dry_run(txn, fn), keep=False)
                if not run.commits:
                    return CommitResult(run.value, (), None)
                done = self._produce(run.base, run.crc, run.commits, dict(origin or {}))
                if done is not None:
                    return CommitResult(run.value, *done)
            raise Conflict(
                f"{self.kafka.url}: other writers committed first {ATTEMPTS} times running; nothing was written — retry"
            )

    async def awrite(self, fn: Callable[[WriteTx], T], origin: dict[str, Json] | None = None) -> CommitResult[T]:
        return await asyncio.to_thread(self.write, fn, origin)

    def _dry_run(self, txn: Txn, fn: Callable[[WriteTx], T]) -> _Run[T]:
        """Run ``fn`` on the copy's head in ``txn`` (which the caller abandons), keeping its commits."""
        state = read_state(txn, self.env.dbs["meta"])
        sink = DryRun(txn, self.env.dbs, state)
        tx = sink.begin()
        value = fn(tx)
        sink.seal(tx)
        return _Run(state.head, crc_at(txn, self.env, state.head), value, sink.commits)

    def _produce(
        self, base: int, crc: int | None, commits: list[list[Mutation]], origin: dict[str, Json]
    ) -> tuple[tuple[int, ...], int] | None:
        """Produce ``commits`` (one group) made on the state at ``base`` (whose record's CRC is
        ``crc``); their seqs and last timestamp once materialised, or None when another writer's
        commit landed first."""
        seqs: list[int] = []
        ts = 0
        for i, mutations in enumerate(commits):
            headers = {BASE: u64_header(seqs[-1] if seqs else base)}
            if crc is not None:
                headers[PREV] = u64_header(crc)
            rest = len(commits) - 1 - i
            if len(commits) > 1:
                headers[GROUP] = u64_header(base)
            if rest:
                headers[REST] = u64_header(rest)
            commit, record = self.kafka.produce(mutations, origin, headers=headers)
            seqs.append(commit.seq)
            ts = commit.ts
            crc = crc_of(record)  # of the bytes sent: the next record's PREV, and judged as they are
            if self.materialiser is not None:
                self.materialiser.offer(record)
        self.catch_up(seqs[-1])
        with self.env.read() as txn:
            landed = LogReader(txn, self.env.dbs["log"]).get(seqs[-1])
        if landed is None or not landed.mutations:
            log.info("kafka_write_retried", url=self.kafka.url, seq=seqs[-1], why=landed and landed.origin)
            return None
        return tuple(seqs), ts

    @contextmanager
    def staged(self, origin: dict[str, Json] | None = None) -> Iterator[StagedWrite]:
        """As the embedded store's: chunks are staged in the local file (memory stays flat), then
        produced as one group on ``finish()`` and applied at once. If another writer committed
        meanwhile, nothing is written and Conflict says so. Materialising waits while it stages."""
        with self._write_lock:
            self.catch_up()
            self._file_lock.acquire()
            try:
                stage = _KafkaStage(self, dict(origin or {}))
            except BaseException:
                self._file_lock.release()
                raise
            self._stager = threading.get_ident()
            try:
                yield stage
            finally:
                self._stager = None
                if not stage.finished:  # left unfinished, or an error: nothing of it stays
                    stage.abandon()
                stage.release()

    # ------------------------------------------------------------------ maintenance

    def rebuild_projection(self) -> int:
        """Rebuild this node's projection from its copy of the log (the topic is not touched)."""
        with self._write_lock, self._file_lock:
            head = in_write(self.env, lambda txn: rebuild(txn, self.env.dbs))
        log.info("rebuilt projection", path=self.path, commits=head)
        return head


class _KafkaStage(StagedWrite):
    """A staged write whose finish produces the staged commits to Kafka instead of moving the local
    head: the materialiser applies them from the topic, as every other node does. It holds the
    file's write lock from its start until its commits are read back (or it is abandoned)."""

    def __init__(self, db: KafkaDatabase, origin: dict[str, Json]) -> None:
        super().__init__(db.env, origin, db.writer.clock)
        self.db = db
        self._holding = True

    def release(self) -> None:
        if self._holding:
            self._holding = False
            self.db._file_lock.release()

    def finish(self) -> tuple[int, ...]:
        base, top = self.before.head, self.top
        with self.env.read() as txn:  # past the head: staged, where no reader looks
            commits = [c.mutations for c in LogReader(txn, self.env.dbs["log"]).iter(base + 1, top)]
        self.abandon()  # the local file is as it was; what was staged comes back from the topic
        self.release()  # the materialiser may write again: it is to apply these
        if not commits:
            return ()
        with self.env.read() as txn:
            crc = crc_at(txn, self.env, base)
        done = self.db._produce(base, crc, commits, self.origin)
        if done is None:
            raise Conflict(
                f"{self.db.kafka.url}: another writer committed while this write was staged; "
                "nothing was written — run it again (it lands only if no other node writes while it is "
                "staged: pause them, or split the file into smaller imports)"
            )
        return done[0]
