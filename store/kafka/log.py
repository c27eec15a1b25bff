"""KafkaLog: the log on a Kafka-protocol broker — ``kafka://HOST:PORT/TOPIC`` (DESIGN.md §5).

This first slice keeps the whole log in partition 0 of one topic: commit ``seq`` is the record's
offset + 1, and each record is the commit record of store/log.py (``encode``/``decode``, with its
checksum), so a damaged record raises CorruptRecord like the LMDB log's. On its own it is a Log
port backend; a database on it (store/kafka/database.py) keeps the graph in an LMDB copy of it.

- **append** produces with ``acks=all`` (idempotent producer) and waits for the broker's
  acknowledgement; the seq comes from the acknowledged offset. The producer is confluent-kafka's
  (librdkafka, off the GIL) or kafka-python's, behind one port (store/kafka/producer.py; the
  ``client`` option, the setting ``[log] kafka_client``); every consumer here is kafka-python's.
  Appends in one process are serialised, so their timestamps never decrease (the clock is clamped
  to the newest timestamp seen: at open, by this process's appends and by the watcher). Two processes
  appending at once may still interleave a later timestamp before an earlier one; one writer per
  partition is the rule until the next slice.
- **head** is the last offset *read*: never the broker's end offset (see below). At open the broker's
  figure is only a place to start reading — the record just before it must be read back, or the log is
  read from offset 0 — and reading goes on until a fetch comes back empty or reaches the high
  watermark of the first fetch (another node writing steadily would never let a fetch come back empty).
- **read** uses a consumer assigned to partition 0 (no consumer group), seeking to ``from_seq - 1``;
  an offset that is skipped (a gap: a transaction marker, a compacted record) is a CorruptRecord.
- **a lost partition**: offsets only grow, so an acknowledged offset at or below the head known before
  the send means the topic lost commits (deleted and recreated, a memory-only broker restarted); that
  append and every later one raise DamagedDatabase. The watcher does not detect it; a database's
  materialiser does, by the CRC each of its writers' records names (store/kafka/materialiser.py).
  No client of this log asks the broker to create a topic (``allow_auto_create_topics=False``, which
  Kafka honours); tansu creates one with 4 partitions on any metadata request all the same, so a
  node running through a memory-only restart can make the topic that the next start then refuses.
- **wait** is served by a watcher thread that long-polls the partition from the head
  (``fetch_max_wait_ms``): commits by other processes wake waiters within about that wait. It hands
  each record it reads to :attr:`KafkaLog.listener`, if one is set, before the head moves past it;
  while this log writes alone (each ack the seq after the last) it reads nothing (``LONE_FOR``).

What tansu and kafka-python were measured to do, which the choices above rest on (end offsets
never trusted, a new producer after a failed append, reconnects capped at RECONNECT_MAX_MS):
tests/bench/RESULTS.md, "Kafka: what the broker and the client were measured to do".
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple, TypedDict

import structlog

from drsg.kernel.errors import ConfigError, CorruptRecord, DamagedDatabase, DatabaseUnavailable, UsageError
from drsg.kernel.values import Json
from drsg.store.intents import Intent, encode_intent
from drsg.store.kafka.location import parse_location
from drsg.store.kafka.producer import (
    AUTO,
    Producer,
    ProducerError,
    ProducerSettings,
    chosen_client,
    kafka_python_error,
    new_producer,
)
from drsg.store.log import Commit, decode, encode, header_ts
from drsg.store.logport import Log
from drsg.store.mutations import Mutation
from drsg.store.notify import HeadWaiters

try:
    import kafka
    import kafka.errors
    from kafka.admin import NewTopic
except ImportError:  # pragma: no cover - the optional dependency is missing
    kafka = None

log = structlog.get_logger("drsg.store")
# kafka-python logs every failed connection; its errors reach callers as DrsgErrors instead, so its
# records go only where an application sends them (without this, Python's last-resort handler would
# print them to stderr)
logging.getLogger("kafka").addHandler(logging.NullHandler())

PARTITION = 0
TIMEOUT = 5.0  # seconds a node waits for its broker unless told otherwise: the bound its refusal states
# seconds of a start-up wait kept back for saying the refusal and exiting (0.1-0.45 s measured; 0.83 s at load 4-5)
EXIT_ALLOWANCE = 1.0
MIN_CONTACT = 0.5  # seconds the first contact gets however late the start: a broker is tried at all
FETCH_WAIT_MS = 100  # how long the broker holds an empty fetch: the watcher's wake-up delay at worst
# tansu answers a held fetch only when its wait runs out, new records or not (the watcher heard another
# node's commit 49 ms late at 100 ms, 3-5 ms at 5 ms): while other nodes' commits flow the watcher asks
# with this wait, and back at FETCH_WAIT_MS once none has come for BUSY_FOR seconds (5 ms idle costs a
# core's 17 %). Not while this log writes itself: its fetches took the producer's turns at the GIL (a
# lone writer's node halved its writes/s, two writing nodes lost 8-33 %), and a writing node reads what
# came before each of its commits anyway (store/kafka/materialiser.py).
BUSY_WAIT_MS = 5
BUSY_FOR = 1.0
BUSY_POLL_MS = 50  # a short-wait poll that hears nothing for this long tries the long wait next
SETTLE_MS = 400  # an empty poll this long (several empty fetches) means the end of the partition
WATCH_POLL_MS = 250  # the watcher looks at its stop flag this often
# while this log writes alone (it sent within LONE_FOR seconds, every ack right after the one before)
# its watcher reads nothing: the acks say all there is, and reading its own records again cost a lone
# writer two thirds of its writes/s on the GIL (tests/bench/RESULTS.md, session 21); it looks again
# every LONE_STEP seconds, and reads on from the head once the writes stop or an ack skips a seq
LONE_FOR, LONE_STEP = 0.05, 0.01
READ_BATCH = 512
MAX_RECORD = 16 << 20  # bytes in one commit record (an import's chunk); the topic must allow as many
# a commit's own bytes at most: its record batch's framing and the headers take the rest of MAX_RECORD
MAX_COMMIT = MAX_RECORD - (4 << 10)
IDLE_READERS = 4  # consumers kept for later reads; more concurrent reads make (and then close) their own
# kafka-python doubles its wait between reconnects up to 30 s: after a 15 s outage a node's consumer
# saw the restarted broker 8.6 s late. Capped at 1 s, every client is back within about a second.
RECONNECT_MAX_MS = 1000
SENDER = "drsg-sender"  # header: which KafkaLog produced the record (its watcher knows its own)


class Record(NamedTuple):
    """One offset of the partition as the broker holds it: commit ``seq`` (offset + 1), its bytes
    (None: no record at that offset, a gap) and its headers."""

    seq: int
    value: bytes | None
    headers: Mapping[str, bytes]


class KafkaOptions(TypedDict, total=False):
    """The Kafka log's options (drsg.store.kafka.log.KafkaLog takes them as keywords)."""

    clock: Callable[[], float]
    timeout: float
    began: float | None
    client: str


def _seq_and_ts(record: Any) -> tuple[int, int]:
    """A record's commit seq and timestamp; a damaged record's timestamp is 0 (read() refuses the
    record in its turn; its seq is still the head)."""
    seq = int(record.offset) + 1
    try:
        return seq, header_ts(seq, record.value or b"")
    except CorruptRecord:
        return seq, 0


def _set_fetch_wait(consumer: Any, wait_ms: int) -> int:
    """Have ``consumer``'s next fetches held at most ``wait_ms``: kafka-python (3.0.12, pinned) reads
    its fetcher's config as it makes each fetch, and offers no public way to change it."""
    fetcher = getattr(consumer, "_fetcher", None)
    config = getattr(fetcher, "config", None)
    if isinstance(config, dict) and "fetch_max_wait_ms" in config:
        config["fetch_max_wait_ms"] = wait_ms
    return wait_ms


class KafkaLog(Log):
    """The log in partition 0 of a Kafka topic (see the module docstring)."""

    def __init__(
        self,
        location: str,
        *,
        clock: Callable[[], float] = time.time,
        timeout: float = TIMEOUT,
        began: float | None = None,
        listener: Callable[[Record], None] | None = None,
        client: str = AUTO,
    ) -> None:
        """Check the URL and the client; nothing connects until :meth:`start`. ``listener`` is told
        each record the watcher reads, before the head moves past it (a node's materialiser judges
        it from those bytes rather than fetching it a second time). ``began``: the
        ``time.monotonic()`` the start's wait for a broker counts from (default: the start) — a
        one-shot command passes its own start, so a refusal "within N s" arrives within N s of it.
        ``client``: the producer's, as the setting log.kafka_client (store/kafka/producer.py)."""
        self.host, self.port, self.topic = parse_location(location)
        self._url = f"kafka://{self.host}:{self.port}/{self.topic}"
        if kafka is None:
            raise ConfigError(f"{self._url}: a Kafka log needs kafka-python; install drsg[kafka]")
        self.client = chosen_client(client)  # the producer's (store/kafka/producer.py)
        self.clock = clock
        self.timeout = timeout
        self.began = began
        self.bootstrap = f"{self.host}:{self.port}"
        self._tp = kafka.TopicPartition(self.topic, PARTITION)
        self._heads = HeadWaiters()  # the head known here, and who waits for it to move
        self._lock = threading.Lock()  # the newest timestamp, the idle readers
        self._append_lock = threading.Lock()
        self._last_ts = 0
        self._busy_until = 0.0  # the watcher asks with BUSY_WAIT_MS until then (others' commits flow)
        self._sender = os.urandom(8)  # on each record this log produces (SENDER)
        self._writing_until = 0.0  # this log has sent a commit within BUSY_FOR of this
        self._sent_at = 0.0  # when this log last sent a commit
        self._others = False  # an ack skipped a seq since the watcher last read: another writer's
        self._readers: list[Any] = []  # idle consumers for read(); each read takes one
        self._closed = False
        self._lost: str | None = None  # why appends are refused for good, once the partition lost commits
        self._stop = threading.Event()
        self._producer: Producer | None = None
        self._watcher: Any = None
        self._thread: threading.Thread | None = None
        self.listener = listener
        self._started = False

    def start(self) -> KafkaLog:
        """Connect: create the topic when it is missing, find the head and start the watcher.
        Returns the log, ready; a broker that is down is one DatabaseUnavailable, and nothing stays
        open. Call :meth:`close` when done."""
        if self._closed:
            raise DatabaseUnavailable(f"{self._url} has been closed; open it again to use it")
        if self._started:
            raise UsageError(f"{self._url} is started already")
        self._started = True
        try:
            self._ensure_topic(self._first_contact())
            self._producer = self._new_producer()
            self._watcher = self._consumer()
            head, ts = self._find_head(self._watcher)
        except (kafka.errors.KafkaError, ProducerError) as exc:
            self._release()
            raise self._unavailable(exc) from None
        except BaseException:
            self._release()
            raise
        self._advance(head, ts)
        self._watcher.seek(self._tp, head)
        self._thread = threading.Thread(target=self._watch, name=f"drsg-kafka-watch-{self.topic}", daemon=True)
        self._thread.start()
        return self

    # ------------------------------------------------------------------ the broker

    @staticmethod
    def _ms(seconds: float) -> int:
        return max(1, int(seconds * 1000))

    def client_config(self) -> dict[str, Any]:
        """What every kafka-python client of this log is given (the index workers' group's too)."""
        return {
            "bootstrap_servers": self.bootstrap,
            "bootstrap_timeout_ms": self._ms(self.timeout),
            "reconnect_backoff_max_ms": RECONNECT_MAX_MS,
            "client_id": "drsg",
        }

    def _new_producer(self) -> Producer:
        return new_producer(self.client, ProducerSettings(self.client_config(), self.timeout, MAX_RECORD))

    def _consumer(self) -> Any:
        """A consumer outside any group, assigned to partition 0 (positions are set by seek)."""
        consumer = kafka.KafkaConsumer(
            **self.client_config(),
            group_id=None,
            enable_auto_commit=False,
            fetch_max_wait_ms=FETCH_WAIT_MS,
            request_timeout_ms=max(self._ms(self.timeout), FETCH_WAIT_MS + 1000),
            max_poll_records=READ_BATCH,
            allow_auto_create_topics=False,  # a lost topic must not come back with the broker's default count
        )
        consumer.assign([self._tp])
        return consumer

    def _unavailable(self, exc: Exception) -> DatabaseUnavailable:
        """A kafka-python error or the producer's, classified by the one rule (kafka_python_error)."""
        failed = exc if isinstance(exc, ProducerError) else kafka_python_error(exc)
        if failed.failure != "refused":
            return DatabaseUnavailable(
                f"{self._url}: no Kafka broker answered at {self.bootstrap} within {self.timeout:g} s; "
                f"start it or fix the URL"
            )
        return DatabaseUnavailable(f"{self._url}: the Kafka broker refused ({failed.detail})")

    def _first_contact(self) -> float:
        """Seconds the start's first contact may wait for a broker: what is left of ``timeout``
        since ``began``, less what saying the refusal takes (and never under MIN_CONTACT)."""
        if self.began is None:
            return self.timeout
        left = self.began + self.timeout - time.monotonic() - EXIT_ALLOWANCE
        return max(min(left, self.timeout), min(MIN_CONTACT, self.timeout))

    def _ensure_topic(self, wait: float) -> None:
        """Create the topic with one partition when it is missing; refuse one with several. The
        broker must answer within ``wait`` seconds (the start's first contact)."""
        config = {**self.client_config(), "bootstrap_timeout_ms": self._ms(wait)}
        admin = kafka.KafkaAdminClient(**config, request_timeout_ms=self._ms(self.timeout))
        try:
            if self.topic not in admin.list_topics():
                with contextlib.suppress(kafka.errors.TopicAlreadyExistsError):  # another process made it
                    admin.create_topics([NewTopic(self.topic, 1, 1)])
                    log.info("kafka_topic_created", url=self._url, partitions=1)
            (described,) = admin.describe_topics([self.topic])
            partitions = len(described.get("partitions") or [])
        finally:
            admin.close()
        if partitions != 1:
            raise ConfigError(
                f"{self._url}: topic {self.topic!r} has {partitions} partitions; this log keeps every commit "
                f"in one partition — name a new topic, or recreate this one with one partition"
            )

    def _find_head(self, consumer: Any) -> tuple[int, int]:
        """``(head, timestamp of the head commit)`` found by reading the partition to its end.

        The broker's end offset is only where to start: the record just before it must be read back
        (tansu's end offset can lag the real end; one too high would read nothing) — else from 0."""
        hint = int(consumer.end_offsets([self._tp]).get(self._tp) or 0)
        for start in (hint - 1, 0) if hint > 0 else (0,):
            consumer.seek(self._tp, start)
            newest, end = None, None
            while True:
                batch = consumer.poll(timeout_ms=SETTLE_MS)
                if not batch:
                    break
                for records in batch.values():
                    newest = records[-1]
                # a partition written steadily never answers empty: read to the end its first fetch
                # reported (the fetch's high watermark is right on tansu, unlike its end offsets)
                end = consumer.highwater(self._tp) if end is None else end
                if newest is not None and end is not None and int(newest.offset) + 1 >= end:
                    break
            if consumer.highwater(self._tp) is None:  # no fetch ever came back: the broker is not serving
                raise DatabaseUnavailable(f"{self._url}: the Kafka broker did not answer a fetch; is it up?")
            if newest is not None:
                return _seq_and_ts(newest)
        return 0, 0

    # ------------------------------------------------------------------ the port

    @property
    def url(self) -> str:
        return self._url

    def _check_open(self) -> None:
        if self._closed:
            raise DatabaseUnavailable(f"{self._url} has been closed; open it again to use it")
        if not self._started:
            raise UsageError(f"{self._url} is not started; call start() first (open_log starts it)")

    def head(self) -> int:
        self._check_open()
        return self._heads.head

    def append(
        self,
        mutations: Sequence[Mutation],
        origin: Mapping[str, Json] | None = None,
        *,
        headers: Mapping[str, bytes] | None = None,
    ) -> Commit:
        """As the port's; ``headers`` go on the Kafka record beside it (the materialiser's,
        store/kafka/database.py: what the commit was based on)."""
        return self.produce(mutations, origin, headers=headers)[0]

    def produce(
        self,
        mutations: Sequence[Mutation],
        origin: Mapping[str, Json] | None = None,
        *,
        headers: Mapping[str, bytes] | None = None,
    ) -> tuple[Commit, Record]:
        """As :meth:`append`, and the record as the broker acknowledged it (its bytes and headers:
        what a node's copy judges it by)."""
        self._check_open()
        if not mutations:
            raise UsageError("a commit needs at least one mutation")
        made_origin = dict(origin or {})
        record = self._send(lambda ts: encode(ts, made_origin, list(mutations)), headers)
        return Commit(record.seq, header_ts(record.seq, record.value or b""), list(mutations), made_origin), record

    def produce_intent(self, intent: Intent, origin: Mapping[str, Json] | None = None) -> Record:
        """Produce ``intent`` (store/intents.py) for every node to decide where it lands; the record
        as the broker acknowledged it."""
        self._check_open()
        made_origin = dict(origin or {})
        return self._send(lambda ts: encode_intent(ts, made_origin, intent), None)

    def _send(self, make: Callable[[int], bytes], headers: Mapping[str, bytes] | None) -> Record:
        """Send the record ``make(ts)`` makes (acks=all) and wait for its ack; the record at its seq.
        Sends are ordered (one at a time, timestamps never decreasing); their acks are awaited outside
        the lock, so many callers keep many records in flight on the one idempotent producer."""
        with self._append_lock:
            self._check_open()
            if self._lost is not None:
                raise DamagedDatabase(self._lost)
            known = self._heads.head  # before the send: the watcher may read this very commit before its ack
            self._sent_at = time.monotonic()
            self._writing_until = self._sent_at + BUSY_FOR
            with self._lock:
                ts = self._last_ts = max(int(self.clock() * 1000), self._last_ts)
            record = make(ts)
            if len(record) > MAX_COMMIT:  # said here, in words: the client's own refusal names no fix
                raise UsageError(
                    f"{self._url}: this write is {len(record):,} bytes, more than the {MAX_COMMIT:,} one commit "
                    f"on a Kafka log may hold; nothing was written — write it in smaller parts"
                )
            headers = {**(headers or {}), SENDER: self._sender}
            producer = self._producer_for_append()
            try:
                sent = producer.send(self.topic, PARTITION, record, list(headers.items()))
            except ProducerError as exc:
                raise self._send_failed(producer, exc) from None
        try:
            offset = sent.get(timeout=self.timeout + 2)
        except ProducerError as exc:
            with self._append_lock:
                raise self._send_failed(producer, exc) from None
        seq = offset + 1
        with self._append_lock:
            if seq <= known:  # offsets only grow: the partition lost commits (recreated, or a broker's memory)
                self._lost = (
                    f"{self._url}: the broker put a commit at seq {seq}, but the log had reached {known}: "
                    f"the topic lost commits (deleted, recreated or truncated); rebuild it from a copy of the log"
                )
            if self._lost is not None:  # and every later append too: its seq would name another history
                raise DamagedDatabase(self._lost)
            self._others = self._others or seq != known + 1
            self._advance(seq, ts)
        return Record(seq, record, headers)

    def _send_failed(self, producer: Producer, exc: ProducerError) -> DatabaseUnavailable:
        """What a failed send or ack is, for its caller; the producer is dropped (under the append lock).

        A failed send can leave the idempotent producer wedged for good: after a memory-only broker
        forgot its id every later send is refused, and after a batch in flight when the broker died
        expired, it waits for a producer id it never gets again. The next append starts a new one
        (unless another caller's failure already has)."""
        if self._producer is producer:
            self._producer = None
            with contextlib.suppress(Exception):
                producer.close(timeout=0)
        if exc.failure == "timeout":
            return DatabaseUnavailable(
                f"{self._url}: the broker did not acknowledge the commit within {self.timeout:g} s; "
                f"it may or may not be in the log — look at the head, then retry"
            )
        return DatabaseUnavailable(f"{self._url}: the broker refused the commit ({exc.detail}); nothing was written")

    def _producer_for_append(self) -> Producer:
        """This log's producer, made anew after a failed append or a fatal error of its client (the
        making of kafka-python's waits for the broker)."""
        if self._producer is not None and not self._producer.usable:
            with contextlib.suppress(Exception):
                self._producer.close(timeout=0)
            self._producer = None
        if self._producer is None:
            try:
                self._producer = self._new_producer()
            except ProducerError as exc:
                raise DatabaseUnavailable(f"{self._unavailable(exc).message}; nothing was written — retry") from None
        return self._producer

    def read(self, from_seq: int = 1, to_seq: int | None = None) -> Iterator[Commit]:
        for record in self.records(from_seq, to_seq):
            if record.value is None:
                raise CorruptRecord(record.seq, "missing from the log (gap)")
            if not record.value:
                raise CorruptRecord(record.seq, "empty record")
            yield decode(record.seq, record.value)

    def records(self, from_seq: int = 1, to_seq: int | None = None) -> Iterator[Record]:
        """The partition's records with ``from_seq <= seq <= to_seq`` (default: to the head), one per
        seq in order, undecoded: a skipped offset comes as a Record without a value."""
        self._check_open()
        expected = max(from_seq, 1)
        last = self.head() if to_seq is None else min(to_seq, self.head())
        if expected > last:
            return
        consumer = self._take_reader()
        try:
            consumer.seek(self._tp, expected - 1)
            deadline = time.monotonic() + self.timeout
            while expected <= last:
                self._check_open()
                batch = consumer.poll(timeout_ms=min(1000, self._ms(max(0.0, deadline - time.monotonic()))))
                records = batch.get(self._tp, [])
                if not records:
                    if time.monotonic() >= deadline:
                        raise DatabaseUnavailable(
                            f"{self._url}: the broker did not deliver commit {expected} (of {expected}..{last}) "
                            f"within {self.timeout:g} s; is it up, and is the topic intact?"
                        )
                    continue
                deadline = time.monotonic() + self.timeout
                for record in records:
                    seq = int(record.offset) + 1
                    while expected < min(seq, last + 1):  # offsets the broker skipped
                        yield Record(expected, None, {})
                        expected += 1
                    if seq < expected or seq > last:
                        continue
                    yield Record(seq, record.value or b"", dict(record.headers or ()))
                    expected += 1
                    if expected > last:
                        break
        finally:
            self._give_back(consumer)

    def _take_reader(self) -> Any:
        with self._lock:
            if self._readers:
                return self._readers.pop()
        try:
            return self._consumer()
        except kafka.errors.KafkaError as exc:
            raise self._unavailable(exc) from None

    def _give_back(self, consumer: Any) -> None:
        with self._lock:
            if not self._closed and len(self._readers) < IDLE_READERS:
                self._readers.append(consumer)
                return
        consumer.close()

    # ------------------------------------------------------------------ waiting

    def _advance(self, head: int, ts: int) -> None:
        """A commit up to ``head`` is known (acknowledged here, or read by the watcher)."""
        with self._lock:
            self._last_ts = max(self._last_ts, ts)
        self._heads.publish(head)

    def _watch(self) -> None:
        """Long-poll the partition from the head; every record read moves the head on."""
        consumer = self._watcher
        waiting, heard, lone = FETCH_WAIT_MS, True, False
        try:
            while not self._stop.is_set():
                if time.monotonic() < self._sent_at + LONE_FOR and not self._others:
                    lone = True
                    self._stop.wait(LONE_STEP)
                    continue
                if lone:
                    self._read_on(consumer)
                    lone = False
                # short while commits flow — unless the last short poll heard nothing: tansu answers
                # empty when its read of the partition outlasts the wait (after a restart, say), and
                # the long wait gives it the time (else the watcher stalled for good)
                now = time.monotonic()
                busy = self._writing_until <= now < self._busy_until and (heard or waiting != BUSY_WAIT_MS)
                wait = BUSY_WAIT_MS if busy else FETCH_WAIT_MS
                if wait != waiting:
                    waiting = _set_fetch_wait(consumer, wait)
                try:
                    batch = consumer.poll(timeout_ms=BUSY_POLL_MS if busy else WATCH_POLL_MS, max_records=READ_BATCH)
                except Exception as exc:  # kafka-python retries inside poll; anything else: back off, go on
                    log.warning("kafka_watch_failed", url=self._url, error=f"{type(exc).__name__}: {exc}")
                    self._stop.wait(1.0)
                    continue
                newest, own, heard = None, (SENDER, self._sender), False
                listener = self.listener
                for records in batch.values():
                    newest = records[-1]
                    heard = heard or any(own not in (record.headers or ()) for record in records)
                    if listener is not None:
                        for record in records:
                            listener(Record(int(record.offset) + 1, record.value or b"", dict(record.headers or ())))
                if heard:  # another's commits flow: ask with the short wait
                    self._busy_until = time.monotonic() + BUSY_FOR
                if newest is not None:
                    self._advance(*_seq_and_ts(newest))
                    with self._append_lock:  # read up to the head: the acks after it may tell again
                        self._others = self._others and int(newest.offset) + 1 < self._heads.head
        finally:
            with contextlib.suppress(Exception):
                consumer.close()

    def _read_on(self, consumer: Any) -> None:
        """The watcher reads again after this log wrote alone: from the head if every ack since was
        the one after the one before (all records up to it are this log's, had from their acks),
        else from where it stopped."""
        with self._append_lock:
            if not self._others:
                consumer.seek(self._tp, self._heads.head)
            self._others = False

    def wait(self, after: int, timeout: float) -> int:
        return self._heads.wait(after, timeout)

    async def wait_async(self, after: int, timeout: float) -> int:
        return await self._heads.wait_async(after, timeout)

    def await_waiters(self, count: int, timeout: float) -> bool:
        return self._heads.await_waiters(count, timeout)

    def interrupt(self) -> None:
        self._heads.interrupt()

    # ------------------------------------------------------------------ closing

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._heads.close()  # waits end first; the broker's clients close after
        self._release()

    def _release(self) -> None:
        self._closed = True
        self._heads.close()
        self._stop.set()
        if self._thread is not None:
            self._thread.join(self.timeout + 1)
        elif self._watcher is not None:
            with contextlib.suppress(Exception):
                self._watcher.close()
        with self._lock:
            readers, self._readers = self._readers, []
        for consumer in readers:
            with contextlib.suppress(Exception):
                consumer.close()
        if self._producer is not None:
            with contextlib.suppress(Exception):
                self._producer.close(timeout=self.timeout)
