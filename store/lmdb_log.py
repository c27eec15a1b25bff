"""LmdbLog: the log in the LMDB file — the one backend of the Log port (store/logport.py) today.

The log shares its file with the graph projection: each commit's record (the ``log`` table, seq →
record, store/log.py) is written in the same LMDB transaction as the projection it produces, by the
group-commit writer (store/writer.py), so an appended commit is in the graph the moment it is
durable. Waits are the file's :class:`~drsg.store.notify.CommitNotifier`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TypedDict

from drsg.kernel.errors import CorruptRecord, DatabaseUnavailable, UsageError
from drsg.kernel.values import Json
from drsg.store.environment import Environment, EnvOptions
from drsg.store.log import Commit, LogReader
from drsg.store.logport import Log
from drsg.store.meta import read_head
from drsg.store.mutations import Mutation
from drsg.store.notify import CommitNotifier
from drsg.store.retention import read_retained
from drsg.store.writer import Writer

READ_BATCH = 512  # commits per read transaction in read(): none is held for long


class LmdbOptions(TypedDict, total=False):
    """The LMDB log's options (drsg.store.lmdb_log.LmdbLog takes them as keywords)."""

    create: bool
    readonly: bool
    map_size: int
    max_map_size: int
    group_max: int
    clock: Callable[[], float]
    sync: bool


class LmdbLog(Log):
    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        create: bool = True,
        readonly: bool = False,
        map_size: int = 64 << 20,
        max_map_size: int = 1 << 40,
        group_max: int = 1000,
        clock: Callable[[], float] = time.time,
        sync: bool = True,
    ) -> None:
        """``sync=False`` is for a file that copies a log kept elsewhere (a Kafka node's): see
        :class:`~drsg.store.environment.EnvOptions`."""
        self.path = os.fspath(path)
        self.readonly = readonly
        options = EnvOptions(map_size=map_size, max_map_size=max_map_size, readonly=readonly, create=create)
        options.sync = sync
        self.env = Environment(path, options)
        self.notifier = CommitNotifier(self.path, self.head)
        self.writer = Writer(self.env, max_group=group_max, clock=clock, on_commit=self.notifier.publish)

    @property
    def url(self) -> str:
        return f"lmdb://{os.path.abspath(self.path)}"

    def head(self) -> int:
        with self.env.read() as txn:
            return read_head(txn, self.env.dbs["meta"])

    def publish(self, head: int) -> None:
        """Tell this process's waiters the file's head is now ``head``: the group-commit writer does
        after each group; a writer of its own (a Kafka node's materialiser) does so through this."""
        self.notifier.publish(head)

    def check_writable(self) -> None:
        """Refuse a write to a log opened read-only, before anything is queued."""
        if self.readonly:
            raise DatabaseUnavailable(f"{self.path} is open read-only; reopen it for writing")

    def append(self, mutations: Sequence[Mutation], origin: Mapping[str, Json] | None = None) -> Commit:
        self.check_writable()
        if not mutations:
            raise UsageError("a commit needs at least one mutation")
        done = self.writer.write(lambda tx: tx.apply(mutations), dict(origin or {}))
        assert done.seq is not None and done.ts is not None  # one commit was sealed
        return Commit(done.seq, done.ts, list(mutations), dict(origin or {}))

    def read(self, from_seq: int = 1, to_seq: int | None = None) -> Iterator[Commit]:
        next_seq = max(from_seq, 1)
        while True:
            batch: list[Commit] = []
            damage: CorruptRecord | None = None
            with self.env.read() as txn:
                head = read_head(txn, self.env.dbs["meta"])  # a staged write's commits lie past it
                read_retained(txn, self.env.dbs["meta"]).check(next_seq)  # none before the horizon
                last = head if to_seq is None else min(to_seq, head)
                try:
                    for commit in LogReader(txn, self.env.dbs["log"]).iter(next_seq, last):
                        batch.append(commit)
                        if len(batch) >= READ_BATCH:
                            break
                except CorruptRecord as exc:
                    damage = exc  # deliver every intact commit before it first
            yield from batch
            if damage is not None:
                raise damage
            if not batch:
                return
            next_seq = batch[-1].seq + 1

    def wait(self, after: int, timeout: float) -> int:
        return self.notifier.wait(after, timeout)

    async def wait_async(self, after: int, timeout: float) -> int:
        return await self.notifier.wait_async(after, timeout)

    def await_waiters(self, count: int, timeout: float) -> bool:
        return self.notifier.await_waiters(count, timeout)

    def interrupt(self) -> None:
        self.notifier.interrupt()

    def close(self) -> None:
        self.notifier.close()  # first: its watcher reads through the environment
        self.env.close()
