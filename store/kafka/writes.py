"""A Kafka node's write path, a part its database (store/kafka/database.py) is composed of.

A write:

1. catches the copy up with the head this node knows;
2. runs the commit function on it into a :class:`~drsg.store.sink.DryRun`, in an LMDB write
   transaction that is then abandoned (the ids it allocates and the checks it makes are the copy's),
   keeping the mutations;
3. produces them (acks=all) with the head they were made on, and waits until the copy has
   materialised that record: applied (the write's seqs), or stale because another node's commit
   landed first — then it runs the function again on the newer state, up to ``ATTEMPTS`` times
   (commit functions may run more than once, as under the group-commit writer). Before each run
   again it waits a jittered, doubling pause: a record lands stale when anything came between its
   base and its seq, stale records too, so two nodes retrying in step can each land behind the
   other's last stale record run after run; the pause takes them out of step.

A function that seals several commits (``tx.commit_point()``) and a staged write (``db.staged()``;
``drsg import`` is intents instead, store/import_intents.py) are produced as one group, applied all
at once or not at all. Writes from this process are one at
a time; two processes (or nodes) writing at once cost each other retries, not correctness.
"""

from __future__ import annotations

import asyncio
import random
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Generic, TypeVar

import structlog

from drsg.kernel.backoff import backoff
from drsg.kernel.errors import Conflict, DatabaseUnavailable, DrsgError, QueryLimit, StoreError, UsageError
from drsg.kernel.values import Json
from drsg.store.environment import Environment, Txn
from drsg.store.intents import TIME_LIMIT, Intent, IntentOps, Refusal
from drsg.store.kafka.log import KafkaLog
from drsg.store.kafka.materialiser import (
    BASE,
    GROUP,
    PREV,
    REST,
    Materialiser,
    crc_at,
    crc_of,
    u64_header,
)
from drsg.store.kafka.outcomes import Decided, read_outcome
from drsg.store.log import LogReader
from drsg.store.meta import read_head, read_state
from drsg.store.mutations import Mutation
from drsg.store.projection import rebuild
from drsg.store.sink import DryRun
from drsg.store.staging import StagedWrite, in_write
from drsg.store.transaction import WriteTx
from drsg.store.writer import CommitResult

T = TypeVar("T")
ATTEMPTS = 20  # runs of one commit function before a write gives up on other writers
RETRY_FIRST, RETRY_CEILING = 0.01, 0.32  # seconds before a run again: about a produce-to-read round trip, doubling
log = structlog.get_logger("drsg.store")


@dataclass(frozen=True)
class _Run(Generic[T]):
    """A commit function's dry run on this node's copy: the head it was made on (and the CRC of that
    head's Kafka record, if known), what it returned, and the commits it made."""

    base: int
    crc: int | None
    value: T
    commits: list[list[Mutation]]


class KafkaWrites:
    """Writes through the topic ``kafka`` for the copy in ``env`` that ``materialiser`` (once the
    database has started it) follows the topic into; see the module."""

    queued = False  # an intent is produced at once; nothing waits for this process's writer

    def __init__(
        self,
        path: str,
        env: Environment,
        kafka: KafkaLog,
        file_lock: threading.Lock,
        clock: Callable[[], float],
        timeout: float,
    ) -> None:
        self.path = path  # the copy's, as its database names it
        self.env = env
        self.kafka = kafka
        # the file's write transactions in this process, the materialiser's among them: py-lmdb
        # refuses a second at once (the group-commit writer, unused here, is what guards them otherwise)
        self.file_lock = file_lock
        self.clock = clock
        self.timeout = timeout
        self.materialiser: Materialiser | None = None  # set once the database follows the topic
        self._write_lock = threading.Lock()  # this process's writes, one at a time
        self._stager: int | None = None  # the thread inside staged(), if one is

    def head(self) -> int:
        with self.env.read() as txn:
            return read_head(txn, self.env.dbs["meta"])

    def catch_up(self, seq: int | None = None, timeout: float | None = None) -> int:
        """Wait until the copy has materialised commit ``seq``, or by default until every record up
        to the topic's head as known now is judged (an unfinished group stays held back: a write
        made now lands after it and breaks it, as a dead writer's group must be broken); returns the
        copy's head. A node that makes no progress for ``timeout`` seconds (default twice the broker
        timeout) fails it with the reason."""
        materialiser = self.materialiser
        if materialiser is None:
            raise DatabaseUnavailable(f"{self.path} has been closed; open it again to use it")
        target = self.kafka.head() if seq is None else seq

        def done(wait: float) -> bool:
            if seq is not None:  # woken by the round that reaches it, not by every round
                return materialiser.wait_written(seq, wait)
            return materialiser.wait(lambda: materialiser.settled(target), wait)

        wait = self.timeout * 2 if timeout is None else timeout
        progress = (materialiser.judged, self.head())
        while not done(wait):
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
                run = self._on_copy(fn)
                if not run.commits:
                    return CommitResult(run.value, (), None)
                done = self.produce(run.base, run.crc, run.commits, dict(origin or {}))
                if done is not None:
                    return CommitResult(run.value, *done)
            raise Conflict(
                f"{self.kafka.url}: other writers committed first {ATTEMPTS} times running; nothing was written — retry"
            )

    async def awrite(self, fn: Callable[[WriteTx], T], origin: dict[str, Json] | None = None) -> CommitResult[T]:
        return await asyncio.to_thread(self.write, fn, origin)

    def submit(self, intent: Intent, origin: dict[str, Json] | None = None) -> CommitResult[Json]:
        """Produce ``intent``; every node decides it where it lands (the materialiser), and the
        caller's answer is what its own copy decided. Nothing is run here first, so nothing is stale:
        no lock, no retry, and writers in this process and on other nodes all go at once."""
        if self._stager == threading.get_ident():
            raise UsageError("a staged write is open in this thread; finish it (or leave its block) before writing")
        materialiser = self.materialiser
        if materialiser is None:  # nothing produced that this node could not read back
            raise DatabaseUnavailable(f"{self.path} has been closed; open it again to use it")
        materialiser.ops.check(intent)  # one this node could not decide is never produced
        if TIME_LIMIT in intent.args:
            self._rehearse(materialiser.ops, intent)
            intent = intent.unbounded()
        record = self.kafka.produce_intent(intent, dict(origin or {}))
        seq = record.seq
        materialiser.expect(seq)
        try:
            materialiser.offer(record)
            materialiser.help(lambda: materialiser.written >= seq)
            if materialiser.written < seq:  # (decided in this thread as a rule: no read of the head)
                self.catch_up(seq)
        finally:
            decided = materialiser.decided(seq)  # (the reads of the copy below spared)
        if decided is None:  # decided by another thread's round before this one looked, or poison
            decided = self._landed(seq)
        if "refused" in decided.outcome:
            raise Refusal.from_json(decided.outcome["refused"]).exception()
        value = decided.outcome.get("value")
        return CommitResult(value, (seq,), decided.ts) if decided.applied else CommitResult(value, (), None)

    def _landed(self, seq: int) -> Decided:
        """Intent ``seq`` as the copy holds it."""
        with self.env.read() as txn:
            outcome = read_outcome(txn, self.env, seq)
            landed = LogReader(txn, self.env.dbs["log"]).get(seq)
        if outcome is None:  # kept as a poison record: its origin says why
            why = None if landed is None else landed.origin.get("skipped")
            raise StoreError(f"{self.kafka.url}: commit {seq} could not be applied ({why}); nothing was written")
        if landed is None or not landed.mutations:
            return Decided(outcome, 0, False)
        return Decided(outcome, landed.ts, True)

    async def asubmit(self, intent: Intent, origin: dict[str, Json] | None = None) -> CommitResult[Json]:
        return await asyncio.to_thread(self.submit, intent, origin)

    def _rehearse(self, ops: IntentOps, intent: Intent) -> None:
        """Run ``intent`` on the copy's head within its time limit, writing nothing: one that runs
        past it (QueryLimit) is refused here, before every node would run it without one. What it
        decides here is not its answer (the copy may be behind): that is decided where it lands."""
        try:
            self._on_copy(ops.commit_function(intent))
        except QueryLimit:
            raise
        except DrsgError as exc:
            if Refusal.of(exc) is None:
                raise

    def _on_copy(self, fn: Callable[[WriteTx], T]) -> _Run[T]:
        """``fn`` run on the copy's head, caught up first, in a transaction abandoned after."""
        self.catch_up()
        with self.file_lock:
            return in_write(self.env, lambda txn: self._dry_run(txn, fn), keep=False)

    def _dry_run(self, txn: Txn, fn: Callable[[WriteTx], T]) -> _Run[T]:
        """Run ``fn`` on the copy's head in ``txn`` (which the caller abandons), keeping its commits."""
        state = read_state(txn, self.env.dbs["meta"])
        sink = DryRun(txn, self.env.dbs, state)
        tx = sink.begin()
        value = fn(tx)
        sink.seal(tx)
        return _Run(state.head, crc_at(txn, self.env, state.head), value, sink.commits)

    def produce(
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
        """As the embedded store's: chunks are staged in the copy (memory stays flat), then produced
        as one group on ``finish()`` and applied at once. If another writer committed meanwhile,
        nothing is written and Conflict says so. Materialising waits while it stages."""
        with self._write_lock:
            self.catch_up()
            self.file_lock.acquire()
            try:
                stage = _KafkaStage(self, dict(origin or {}))
            except BaseException:
                self.file_lock.release()
                raise
            self._stager = threading.get_ident()
            try:
                yield stage
            finally:
                self._stager = None
                if not stage.finished:  # left unfinished, or an error: nothing of it stays
                    stage.abandon()
                stage.release()

    def rebuild_projection(self) -> int:
        """Rebuild this node's projection from its copy of the log (the topic is not touched)."""
        with self._write_lock, self.file_lock:
            head = in_write(self.env, lambda txn: rebuild(txn, self.env.dbs))
        log.info("rebuilt projection", path=self.path, commits=head)
        return head


class _KafkaStage(StagedWrite):
    """A staged write whose finish produces the staged commits to Kafka instead of moving the local
    head: the materialiser applies them from the topic, as every other node does. It holds the
    file's write lock from its start until its commits are read back (or it is abandoned)."""

    def __init__(self, writes: KafkaWrites, origin: dict[str, Json]) -> None:
        super().__init__(writes.env, origin, writes.clock)
        self.writes = writes
        self._holding = True

    def release(self) -> None:
        if self._holding:
            self._holding = False
            self.writes.file_lock.release()

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
        done = self.writes.produce(base, crc, commits, self.origin)
        if done is None:
            raise Conflict(
                f"{self.writes.kafka.url}: another writer committed while this write was staged; "
                "nothing was written — run it again (it lands only if no other node writes while it is "
                "staged: pause them, or split it into smaller writes)"
            )
        return done[0]
