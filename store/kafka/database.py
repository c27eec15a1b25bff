"""KafkaDatabase: a drsg database whose log is a Kafka topic — ``drsg.open(path, log="kafka://…")``,
``drsg --log kafka://HOST:PORT/TOPIC --db node.drsg …``, ``[log] url`` in drsg.toml.

Writes go through the broker; reads, time travel, the change feed and the index workers use the
local LMDB file at ``path``, which follows the topic. The database is composed of its parts: the
Kafka log (store/kafka/log.py), started before the file is touched; the copy, the embedded store's
file and reads; the materialiser (store/kafka/materialiser.py), which follows the topic into it; and
the write path (store/kafka/writes.py), which runs a commit function on the copy, produces what it
made and waits to read it back.
"""

from __future__ import annotations

import os
import threading
from dataclasses import asdict, dataclass
from typing import Unpack

import structlog

from drsg.kernel.errors import ConfigError, DatabaseUnavailable
from drsg.kernel.values import Json
from drsg.store.backends import split_url
from drsg.store.database import Database, Stats
from drsg.store.intent_ops import INTENT_OPS
from drsg.store.intents import IntentOps
from drsg.store.kafka.copymark import CopyMark
from drsg.store.kafka.log import TIMEOUT, KafkaLog, Record
from drsg.store.kafka.materialiser import Materialiser, check_pairing, poison_count
from drsg.store.kafka.producer import AUTO
from drsg.store.kafka.writes import KafkaWrites
from drsg.store.lmdb_log import LmdbLog, LmdbOptions
from drsg.store.transaction import DEFAULT_PLANE

log = structlog.get_logger("drsg.store")


@dataclass(frozen=True)
class KafkaStats(Stats):
    """A node's figures (its copy's, as the embedded store's) and how its copy stands against the
    topic: what an operator looks at when a node lags, refuses its topic or meets poison records."""

    log_url: str
    log_head: int  # the topic's head as this node knows it (commit_seq: how far its copy has got)
    poison_records: int  # kept as empty commits, each logged as kafka_record_skipped
    error: str | None  # why the materialiser's last round failed (None: the last one went well)
    rebuilt: dict[str, Json] | None  # the copy's last rebuild after a system crash: {"at", "reason"}

    def to_json(self) -> dict[str, Json]:
        log_state: dict[str, Json] = {
            "url": self.log_url,
            "head": self.log_head,
            "materialised": self.commit_seq,
            "poison_records": self.poison_records,
            "error": self.error,
            "rebuilt": self.rebuilt,
        }
        return {**super().to_json(), "log": log_state}


class KafkaDatabase(Database):
    """A database on a Kafka log, materialised in the LMDB file ``path`` (see the module)."""

    follows_remote_log = True

    def __init__(
        self,
        path: str | os.PathLike[str],
        log_url: str,
        *,
        timeout: float = TIMEOUT,
        began: float | None = None,
        client: str = AUTO,
        ops: IntentOps = INTENT_OPS,
        **options: Unpack[LmdbOptions],
    ) -> None:
        """``ops``: the operations intents may name (store/intent_ops.py); every node of a topic
        must be given the same table. ``timeout``, ``began`` and ``client`` (the producer's: the
        setting log.kafka_client): as KafkaLog's."""
        scheme, location = split_url(log_url)
        if scheme != "kafka":
            raise ConfigError(f"{log_url!r} is not a Kafka log URL; write kafka://HOST:PORT/TOPIC")
        # before the file: a bad URL or a broker that is down is one line, and leaves nothing behind
        self._writes: KafkaWrites | None = None  # the write path, once the copy is open
        self.kafka = KafkaLog(location, timeout=timeout, began=began, listener=self._heard, client=client).start()
        self.timeout = timeout
        # the file is this node's copy of the topic: made when missing, written whatever the command
        options.pop("readonly", None)
        options["create"] = True
        # the topic keeps the log durably (acks=all), so the copy flushes nothing per commit: a process
        # crash loses nothing (the page cache outlives it), and a copy a system crash may have left
        # corrupt is rebuilt from the topic, judged by its mark before it is opened (copymark.py)
        options["sync"] = False
        try:
            self.mark = CopyMark(path).open()
        except BaseException:
            self.kafka.close()
            raise
        try:
            super().__init__(path, bootstrap=self._follow, writes=self._write_path, ops=ops, **options)
        except BaseException:
            self._stop_following()
            self.kafka.close()
            self.mark.release()
            raise
        # closed before the file, and after what registers later (the index workers: they read it);
        # the mark once nothing of this process writes the copy any more
        self.on_close(lambda: self.mark.close(self.env.flush))
        self.on_close(self.kafka.close)
        self.on_close(self._stop_following)

    # ------------------------------------------------------------------ lifecycle

    def _write_path(self, copy: LmdbLog) -> KafkaWrites:
        """The database's write path: through the topic, read back from the copy."""
        # the file's write transactions in this process, the materialiser's and the write path's:
        # py-lmdb refuses a second at once (the group-commit writer, unused here, guards them otherwise)
        self._writes = KafkaWrites(copy.path, copy.env, self.kafka, threading.Lock(), copy.writer.clock, self.timeout)
        return self._writes

    def _follow(self) -> None:
        """Pair the file with the topic, start following it, catch up, and make the `startup` plane
        if the topic is new."""
        check_pairing(self.env, self.kafka)
        writes = self._kafka_writes()
        writes.materialiser = Materialiser(self.env, self.kafka, self.log.publish, writes.file_lock, self.ops).start()
        self.catch_up()
        with self.snapshot() as snap:
            has_startup = snap.find_plane(DEFAULT_PLANE) is not None
        if not has_startup and self.head() == 0:
            self.write(lambda tx: tx.ensure_plane(DEFAULT_PLANE), {"via": "bootstrap"})
            log.info("created database", path=self.path, log=self.kafka.url)

    @property
    def materialiser(self) -> Materialiser | None:
        """What follows the topic into the copy (None before the copy is open and once closed)."""
        return None if self._writes is None else self._writes.materialiser

    def _heard(self, record: Record) -> None:
        """The log's watcher read ``record``: the materialiser judges it from these bytes."""
        materialiser = self.materialiser
        if materialiser is not None:
            materialiser.offer(record)

    def _stop_following(self) -> None:
        writes = self._writes
        if writes is not None and writes.materialiser is not None:
            writes.materialiser.close()
            writes.materialiser = None

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
            rebuilt=self.mark.rebuilt,
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

    def _kafka_writes(self) -> KafkaWrites:
        if self._writes is None:
            raise DatabaseUnavailable(f"{self.path} is not open yet; open it again to use it")
        return self._writes

    def catch_up(self, seq: int | None = None, timeout: float | None = None) -> int:
        """Wait until the copy has materialised commit ``seq`` (default: every record up to the
        topic's head as known now); returns the copy's head (:meth:`KafkaWrites.catch_up`)."""
        return self._kafka_writes().catch_up(seq, timeout)
