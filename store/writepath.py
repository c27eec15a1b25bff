"""A database's write path: how its commits are made, a part the Database is composed of.

:class:`WritePath` says what a write path does — a commit, a staged write, a rebuild of the
projection — and the :class:`~drsg.store.database.Database` hands every write to the one it was
given at construction. The embedded one is :class:`GroupCommit`: the file's group-commit writer
(store/writer.py) and staged writes (store/staging.py). A Kafka node's goes through its topic
(store/kafka/writes.py). Either seals through the one commit sink (store/sink.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Protocol, TypeVar

import structlog

from drsg.kernel.errors import DrsgError
from drsg.kernel.values import Json
from drsg.store.intent_ops import INTENT_OPS
from drsg.store.intents import Intent, IntentOps
from drsg.store.lmdb_log import LmdbLog
from drsg.store.log import LogReader
from drsg.store.projection import rebuild
from drsg.store.staging import StagedWrite
from drsg.store.transaction import IdCounters, WriteTx
from drsg.store.writer import CommitResult

T = TypeVar("T")
log = structlog.get_logger("drsg.store")


class WritePath(Protocol):
    """How a database's commits are made (see the module)."""

    #: Whether a commit waits its turn for this process's writer (so that a server may abandon one
    #: that has not started by a deadline), rather than going out at once (a Kafka node's intents).
    queued: bool

    def write(self, fn: Callable[[WriteTx], T], origin: dict[str, Json] | None = None) -> CommitResult[T]:
        """Run ``fn`` as one commit (or several, with ``tx.commit_point()``); durable on return."""
        ...

    async def awrite(self, fn: Callable[[WriteTx], T], origin: dict[str, Json] | None = None) -> CommitResult[T]:
        """As :meth:`write`, for asyncio callers."""
        ...

    def submit(self, intent: Intent, origin: dict[str, Json] | None = None) -> CommitResult[Json]:
        """Decide ``intent`` (store/intents.py) where it lands in the log; its answer, or the error
        that refused it. Never refused for contention."""
        ...

    async def asubmit(self, intent: Intent, origin: dict[str, Json] | None = None) -> CommitResult[Json]:
        """As :meth:`submit`, for asyncio callers."""
        ...

    def staged(self, origin: dict[str, Json] | None = None) -> AbstractContextManager[StagedWrite]:
        """One large write as many transactions, all or nothing (store/staging.py)."""
        ...

    def rebuild_projection(self) -> int:
        """Rebuild the projection from the log; returns the head seq."""
        ...


class GroupCommit:
    """The embedded write path: the group-commit writer of the LMDB log ``log``, deciding intents
    by ``ops``."""

    queued = True

    def __init__(self, log: LmdbLog, ops: IntentOps = INTENT_OPS) -> None:
        self.log = log
        self.writer = log.writer
        self.ops = ops

    def write(self, fn: Callable[[WriteTx], T], origin: dict[str, Json] | None = None) -> CommitResult[T]:
        """Run ``fn`` as one commit (group-committed with concurrent writers); durable on return."""
        self.log.check_writable()
        return self.writer.write(fn, origin)

    async def awrite(self, fn: Callable[[WriteTx], T], origin: dict[str, Json] | None = None) -> CommitResult[T]:
        """As :meth:`write`, for asyncio callers: waits without holding a thread."""
        self.log.check_writable()
        return await self.writer.awrite(fn, origin)

    def submit(self, intent: Intent, origin: dict[str, Json] | None = None) -> CommitResult[Json]:
        """An intent is a commit function here: the writer decides it in log order already."""
        return self.write(self.ops.commit_function(intent), origin)

    async def asubmit(self, intent: Intent, origin: dict[str, Json] | None = None) -> CommitResult[Json]:
        return await self.awrite(self.ops.commit_function(intent), origin)

    @contextmanager
    def staged(self, origin: dict[str, Json] | None = None) -> Iterator[StagedWrite]:
        """One large write as many transactions, all or nothing (store/staging.py): stage chunks
        with ``chunk(fn)``, then ``finish()``. Leaving the block unfinished, or on an error, removes
        everything staged. This process's other writers wait until the block ends; other processes'
        writers wait until it finishes."""
        self.log.check_writable()
        with self.writer.exclusive():
            stage = StagedWrite(self.log.env, dict(origin or {}), self.writer.clock, self.writer.on_commit)
            try:
                yield stage
            except BaseException:
                if not stage.finished:
                    try:
                        stage.abandon()
                    except DrsgError as exc:  # e.g. the disk is still full: the next write removes it
                        log.warning(
                            "a failed staged write stays until the next write", path=self.log.path, error=str(exc)
                        )
                raise
            if not stage.finished:
                stage.abandon()

    def rebuild_projection(self) -> int:
        """Throw the projection away and rebuild it from the log alone; returns the head seq."""
        dbs = self.log.env.dbs

        def replay(tx: WriteTx) -> int:
            head = rebuild(tx.txn, dbs)
            ids = IdCounters()
            for commit in LogReader(tx.txn, dbs["log"]).iter():
                for m in commit.mutations:
                    ids.note(m)
            # Never move a counter backwards: ids are never reused, even those of aborted writes.
            tx.ids.plane = max(ids.plane, tx.ids.plane)
            tx.ids.node = max(ids.node, tx.ids.node)
            tx.ids.edge = max(ids.edge, tx.ids.edge)
            return head

        head = self.write(replay, {"via": "rebuild"}).value
        log.info("rebuilt projection", path=self.log.path, commits=head)
        return head
