"""Index workers as a Kafka consumer group: ``drsg workers`` on a node of a Kafka log (DESIGN.md §5).

The commit log stays one ordered partition (store/kafka/log.py): ids and the commit seq are global,
so one order is the log's meaning. What a group splits is the *index work*, by plane: the group's
members share the partitions of a second topic, ``<topic>.index`` (``shards`` partitions, created
when missing; it carries no records), and a member owns the indexes of every plane whose id modulo
the shard count is a partition assigned to it. Kafka's group protocol does the rest — a member that
joins, leaves or stops answering (``kill -9``, a paused machine) makes the group hand its shards to
the others within the session timeout.

Each member follows its own node's LMDB materialisation of the log (the commits in seq order, the
projection for rebuilds) and keeps its indexes' sidecars in one folder shared by the whole group
(``--index-dir``: a volume every worker machine mounts). The checkpoint is the seq saved with each
index's files, in the same atomic save (workers/sidecar.py); the broker's offsets are never read or
committed. Saves are fenced: a member saves an index only if the version in force is still the one it
loaded or saved last, so a member that lost a shard while paused cannot put an older state back, and
each index's lineage (in its manifest) is one unbroken chain of the commits each save applied. What a
member applied and had not saved when it died is applied again by the next owner, from the log: lost
work, never a lost or a doubled effect.

When the group hands shards out again, the member saves every index it holds first (the next owner
starts from there), then keeps only the indexes of the shards it was given. On SIGTERM it saves and
leaves the group, so the others take over at once rather than after the session timeout.

Why kafka-python's group, not faust-streaming agents: a faust agent gets its records in batches,
where a member here is woken by its node's own copy, and kafka-python's group protocol is the only
part of the group used (how long a hand-over takes, and faust's delivery lag: tests/bench/RESULTS.md,
"Kafka: what the broker and the client were measured to do"). kafka-python completes a rebalance
only inside a ``poll`` allowed to wait (``poll(0)`` in a busy loop never finishes a join), so the
group is followed by a thread of its own.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog

from drsg.kernel.errors import ConfigError, DatabaseUnavailable
from drsg.store.database import Database
from drsg.store.kafka.log import KafkaLog
from drsg.workers.base import DEFAULT_RECALL_TARGET
from drsg.workers.manager import IndexSet

try:
    import kafka
    import kafka.errors
    from kafka.admin import NewTopic
except ImportError:  # pragma: no cover - the optional dependency is missing
    kafka = None

log = structlog.get_logger("drsg.workers")
POLL_MS = 100  # the group's poll: membership changes are seen within about this
DEFAULT_SHARDS = 12


def shard_of(plane: int, shards: int) -> int:
    """The shard (a partition of the index topic) whose owner indexes ``plane``."""
    return plane % shards


def index_topic(topic: str) -> str:
    return f"{topic}.index"


@dataclass(frozen=True)
class GroupOptions:
    """How a member joins (``drsg workers``' flags, ``[log]`` in drsg.toml)."""

    index_dir: Path
    group: str = ""  # empty: drsg-index-<topic>
    shards: int = DEFAULT_SHARDS  # partitions of the index topic when this member creates it
    save_every: float = 30.0  # seconds between two saves of the indexes a member holds
    session_timeout: float = 10.0  # seconds of silence before the group gives a member's shards away
    ef_search: int = 64
    recall_target: float = DEFAULT_RECALL_TARGET  # what each vector index calibrates its ef to


class IndexGroup:
    """One member of the index workers' consumer group, on ``db`` (a node of the Kafka log ``kafka``)."""

    def __init__(self, db: Database, kafka_log: KafkaLog, options: GroupOptions) -> None:
        if kafka is None:  # pragma: no cover - KafkaLog needs it too
            raise ConfigError("index workers on Kafka need kafka-python; install drsg[kafka]")
        self.db = db
        self.kafka_log = kafka_log
        self.options = options
        self.topic = index_topic(kafka_log.topic)
        self.group = options.group or f"drsg-index-{kafka_log.topic}"
        self.owned: frozenset[int] = frozenset()  # the shards assigned to this member now
        self.shards = self._ensure_topic()
        options.index_dir.mkdir(parents=True, exist_ok=True)
        self.indexes = IndexSet(
            db,
            ef_search=options.ef_search,
            recall_target=options.recall_target,
            sidecars=options.index_dir / kafka_log.topic,
            keeps=self._keeps(self.owned),
            fenced=True,
        )
        self._holding = threading.Lock()  # the owned shards and what is applied for them

    # ------------------------------------------------------------------ the group

    def _ensure_topic(self) -> int:
        """The index topic's partition count, creating it with ``options.shards`` when missing."""
        admin = kafka.KafkaAdminClient(**self._client_config())
        try:
            if self.topic not in admin.list_topics():
                with contextlib.suppress(kafka.errors.TopicAlreadyExistsError):  # another member made it
                    admin.create_topics([NewTopic(self.topic, self.options.shards, 1)])
                    log.info("index_topic_created", topic=self.topic, shards=self.options.shards)
            (described,) = admin.describe_topics([self.topic])
        except kafka.errors.KafkaError as exc:
            raise DatabaseUnavailable(
                f"{self.kafka_log.url}: the broker refused the index topic {self.topic!r} ({type(exc).__name__}: {exc})"
            ) from None
        finally:
            admin.close()
        shards = len(described.get("partitions") or [])
        if shards < 1:
            raise ConfigError(f"{self.kafka_log.url}: the index topic {self.topic!r} has no partitions; delete it")
        return shards

    def _client_config(self) -> dict[str, Any]:
        """The log's own client settings (bootstrap bound, reconnect cap), under the workers' name."""
        return {
            **self.kafka_log.client_config(),
            "client_id": "drsg-workers",
            "request_timeout_ms": max(1, int(self.kafka_log.timeout * 1000)),
        }

    def _join(self) -> Any:
        session_ms = max(1000, int(self.options.session_timeout * 1000))
        consumer = kafka.KafkaConsumer(
            **self._client_config(),
            group_id=self.group,
            enable_auto_commit=False,  # the checkpoint is each sidecar's seq, never the broker's offsets
            session_timeout_ms=session_ms,
            heartbeat_interval_ms=max(100, session_ms // 3),
            allow_auto_create_topics=False,  # only _ensure_topic makes it, with the configured shards
        )
        consumer.subscribe([self.topic], listener=_Listener(self))
        return consumer

    def _keeps(self, owned: frozenset[int]) -> Callable[[int], bool]:
        shards = self.shards
        return lambda plane: shard_of(plane, shards) in owned

    def revoked(self) -> None:
        """The group takes the shards back: save what this member holds, for their next owners,
        and apply nothing until it is told which shards are its own now (what it holds stays in
        memory: the shards it gets back need no load)."""
        with self._holding:
            saved = self.indexes.save()
            if self.owned:
                log.info("shards_released", group=self.group, shards=sorted(self.owned), saved=saved)
            self.owned = frozenset()

    def assigned(self, shards: frozenset[int]) -> None:
        with self._holding:
            self.owned = shards
            self.indexes.keep(self._keeps(shards))
        log.info("shards_assigned", group=self.group, shards=sorted(shards), of=self.shards)

    # ------------------------------------------------------------------ running

    def run(self, stop: threading.Event) -> None:
        """Be a member until ``stop`` is set: this thread follows the group (kafka-python completes a
        rebalance only inside a poll that may wait), another keeps the owned indexes at the node's
        head and saves them every ``save_every`` seconds; on the way out both are saved and the
        member leaves the group."""
        consumer = self._join()
        log.info("group_joining", group=self.group, topic=self.topic, shards=self.shards)
        indexer = threading.Thread(target=self._index, args=(stop,), name="drsg-index-group", daemon=True)
        indexer.start()
        try:
            while not stop.is_set() and indexer.is_alive():
                consumer.poll(timeout_ms=POLL_MS)  # membership: the listener runs inside
        finally:
            stop.set()
            while indexer.is_alive():
                self.db.log.interrupt()  # out of its wait for the next commit
                indexer.join(0.05)
            try:
                with self._holding:
                    self.indexes.save()
            finally:
                with contextlib.suppress(Exception):
                    consumer.close()  # LeaveGroup: the others take the shards over at once
            log.info("group_left", group=self.group)

    def _index(self, stop: threading.Event) -> None:
        next_save = time.monotonic() + self.options.save_every
        while not stop.is_set():
            try:
                with self._holding:  # the owned shards do not change under a catch-up or a save
                    if self.owned:
                        self.indexes.catch_up()
                    if time.monotonic() >= next_save:
                        self.indexes.save()
                        next_save = time.monotonic() + self.options.save_every
            except Exception:  # a sidecar folder that failed, say: said, and tried again
                log.exception("index_group_step_failed", group=self.group)
                stop.wait(POLL_MS / 1000)
                continue
            # woken by the node's next materialised commit (a busy log: at once), else to look again
            self.db.log.wait(self.indexes.applied if self.owned else self.db.head(), POLL_MS / 1000)


class _Listener(kafka.ConsumerRebalanceListener if kafka is not None else object):  # type: ignore[misc]
    """kafka-python calls these inside ``poll``: before the group hands shards out again, and after."""

    def __init__(self, member: IndexGroup) -> None:
        self.member = member

    def on_partitions_revoked(self, revoked: Any) -> None:
        self.member.revoked()

    def on_partitions_assigned(self, assigned: Any) -> None:
        self.member.assigned(frozenset(int(tp.partition) for tp in assigned))
