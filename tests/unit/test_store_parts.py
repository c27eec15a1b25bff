"""A database is composed of parts given at construction (store/writepath.py, store/kafka/), and an
object that connects or starts threads does so in ``start()``, not when it is made."""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TypeVar

import pytest

from drsg.kernel.errors import DatabaseUnavailable, UsageError
from drsg.kernel.values import Json
from drsg.store.database import Database
from drsg.store.kafka.database import KafkaDatabase
from drsg.store.kafka.log import KafkaLog
from drsg.store.lmdb_log import LmdbLog
from drsg.store.staging import StagedWrite
from drsg.store.transaction import WriteTx
from drsg.store.writepath import GroupCommit, WritePath
from drsg.store.writer import CommitResult
from tests.support.kafka_broker import free_port

T = TypeVar("T")


class Counting:
    """A write path that counts what the database hands it, then does it the embedded way."""

    def __init__(self, log: LmdbLog) -> None:
        self.inner = GroupCommit(log)
        self.calls: list[str] = []

    def write(self, fn: Callable[[WriteTx], T], origin: dict[str, Json] | None = None) -> CommitResult[T]:
        self.calls.append("write")
        return self.inner.write(fn, origin)

    async def awrite(self, fn: Callable[[WriteTx], T], origin: dict[str, Json] | None = None) -> CommitResult[T]:
        self.calls.append("awrite")
        return await self.inner.awrite(fn, origin)

    def staged(self, origin: dict[str, Json] | None = None) -> AbstractContextManager[StagedWrite]:
        self.calls.append("staged")
        return self.inner.staged(origin)

    def rebuild_projection(self) -> int:
        self.calls.append("rebuild_projection")
        return self.inner.rebuild_projection()


def test_every_write_goes_through_the_write_path_the_database_was_given(tmp_path: Path) -> None:
    made: list[Counting] = []

    def counting(log: LmdbLog) -> WritePath:
        made.append(Counting(log))
        return made[0]

    db = Database(tmp_path / "g.drsg", writes=counting)
    try:
        (path,) = made
        assert db.writes is path
        done = db.write(lambda tx: tx.create_plane("p"), {"via": "test"})
        with db.staged({"via": "test"}) as stage:
            stage.chunk(lambda tx: tx.create_node(tx.plane("p"), "a", [], {}))
            stage.finish()
        assert db.rebuild_projection() == db.head() == 3  # the bootstrap's commit, the plane, the node
        assert path.calls == ["write", "staged", "rebuild_projection"]
        assert done.seq == 2
        with db.snapshot() as snap:
            assert snap.node_by_key(snap.plane("p").id, "a") is not None
    finally:
        db.close()


def test_a_kafka_database_writes_through_its_part_and_overrides_no_write() -> None:
    """Its write path is a part (store/kafka/writes.py) handed to Database, not methods overridden."""
    overridden = {"write", "awrite", "staged", "rebuild_projection", "close", "_bootstrap"} & set(vars(KafkaDatabase))
    assert overridden == set()


def ours() -> list[str]:
    """This process's drsg threads (kafka-python keeps an I/O thread of its own once used)."""
    return sorted(t.name for t in threading.enumerate() if t.name.startswith("drsg-"))


def test_a_kafka_log_connects_in_start_not_when_made() -> None:
    before = ours()
    url = f"127.0.0.1:{free_port()}/t"  # nothing listens there
    kafka = KafkaLog(url, timeout=0.5)  # made: no broker asked, no thread started
    assert ours() == before
    with pytest.raises(UsageError, match="is not started; call start"):
        kafka.head()
    with pytest.raises(DatabaseUnavailable, match="no Kafka broker answered"):
        kafka.start()
    assert ours() == before  # a failed start leaves nothing of ours running
    with pytest.raises(DatabaseUnavailable, match="has been closed"):
        kafka.start()
