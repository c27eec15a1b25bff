"""The Log port's contract (store/logport.py), after eventsourcing's recorder test cases: every
backend's test class subclasses :class:`LogContract` and says how to name a fresh log and how to
damage one of its records; the tests themselves are the same for all.

Backends: ``TestLmdbLog`` (the LMDB file) and ``TestKafkaLog`` (partition 0 of a topic on a real
tansu broker on loopback, the session's ``kafka_broker``), once per Kafka client the log may produce
through (``TestKafkaLogOnKafkaPython``: store/kafka/producer.py).
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import lmdb
import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic

from drsg.kernel.errors import ConfigError, CorruptRecord, DrsgError, UsageError
from drsg.store import keys
from drsg.store.backends import open_log, split_url
from drsg.store.kafka.producer import CONFLUENT, KAFKA_PYTHON
from drsg.store.lmdb_log import LmdbLog
from drsg.store.log import Commit
from drsg.store.logport import Log
from drsg.store.mutations import Mutation, NodePut, PlaneCreate
from tests.support.kafka_broker import Broker
from tests.support.waiting import wait_until

PROMPT = 1.0  # seconds within which a wake-up must arrive (the waits themselves allow 10 s)
BEGIN = 10.0  # seconds a waiter has to begin waiting (a loaded machine may take long to start a thread)

APPEND_ELSEWHERE = (
    "import sys; from drsg.store.backends import open_log; from drsg.store.mutations import NodePut; "
    "log = open_log(sys.argv[1]); log.append([NodePut(1, int(sys.argv[2]), None, ['X'], {})], {'via': 'other'}); "
    "log.close()"
)


def node(i: int) -> list[Mutation]:
    return [NodePut(1, i, f"k{i}", ["X"], {"i": i})]


class LogContract:
    """The tests every Log backend passes. A subclass gives :meth:`url` and :meth:`corrupt`."""

    # ------------------------------------------------------------------ what a backend provides

    def url(self, folder: Path) -> str:
        """The URL of a fresh, empty log kept under ``folder``."""
        raise NotImplementedError

    def open(self, url: str, clock: Callable[[], float] | None = None) -> Log:
        """Open the log at ``url``; ``clock`` (seconds since the epoch) replaces the wall clock."""
        return open_log(url) if clock is None else open_log(url, clock=clock)

    def corrupt(self, url: str, seq: int) -> None:
        """Damage the record of commit ``seq`` in place, with the log closed."""
        raise NotImplementedError

    def drop(self, url: str, seq: int) -> None:
        """Remove the record of commit ``seq``, with the log closed (a gap)."""
        raise NotImplementedError

    # ------------------------------------------------------------------ fixtures

    @pytest.fixture
    def where(self, tmp_path: Path) -> str:
        return self.url(tmp_path)

    @pytest.fixture
    def log(self, where: str) -> Iterator[Log]:
        opened = self.open(where)
        yield opened
        opened.close()

    def fill(self, log: Log, count: int) -> list[Commit]:
        """A plane, then ``count`` one-node commits."""
        made = [log.append([PlaneCreate(1, "p", {})], {"via": "test"})]
        return made + [log.append(node(i), {"via": "test", "i": i}) for i in range(1, count + 1)]

    # ------------------------------------------------------------------ appending and reading

    def test_a_new_log_is_empty(self, log: Log) -> None:
        assert log.head() == 0
        assert list(log.read()) == []

    def test_appends_take_gap_free_seqs_and_read_back_in_order(self, log: Log) -> None:
        made = self.fill(log, 20)
        assert [c.seq for c in made] == list(range(1, 22))
        assert log.head() == 21
        read = list(log.read())
        assert [c.to_json() for c in read] == [c.to_json() for c in made]
        assert read[5].mutations == node(5) and read[5].origin == {"via": "test", "i": 5}

    def test_reading_starts_and_stops_at_any_seq(self, log: Log) -> None:
        self.fill(log, 10)
        assert [c.seq for c in log.read(7)] == [7, 8, 9, 10, 11]
        assert [c.seq for c in log.read(3, 5)] == [3, 4, 5]
        assert [c.seq for c in log.read(0, 2)] == [1, 2]
        assert [c.seq for c in log.read(11, 11)] == [11]
        assert list(log.read(12)) == [] and list(log.read(5, 4)) == []

    def test_a_long_log_reads_back_whole(self, log: Log) -> None:
        made = [log.append(node(i)).seq for i in range(1100)]  # more than a backend reads at once
        assert [c.seq for c in log.read()] == made == list(range(1, 1101))

    def test_timestamps_never_decrease_even_when_the_clock_goes_back(self, where: str) -> None:
        times = iter([1_000.0, 999.0, 998.5, 1_000.25, 1_002.0])
        log = self.open(where, clock=lambda: next(times))
        try:
            made = [log.append(node(i)) for i in range(5)]
        finally:
            log.close()
        assert [c.ts for c in made] == [1_000_000, 1_000_000, 1_000_000, 1_000_250, 1_002_000]
        assert [c.ts for c in self.reopened(where)] == [c.ts for c in made]

    def test_an_empty_commit_is_refused(self, log: Log) -> None:
        self.fill(log, 1)
        with pytest.raises(UsageError, match="at least one mutation"):
            log.append([])
        assert log.head() == 2

    # ------------------------------------------------------------------ waiting for the next commit

    def test_an_append_wakes_a_waiter_at_once(self, log: Log) -> None:
        self.fill(log, 1)
        woke: list[tuple[int, float]] = []
        waiter = threading.Thread(target=lambda: woke.append((log.wait(2, 10), time.monotonic())))
        waiter.start()
        assert log.await_waiters(1, BEGIN)  # it is waiting when the commit lands
        assert not woke
        appending = time.monotonic()
        appended = log.append(node(2))
        waiter.join(10)
        assert woke and woke[0][0] >= appended.seq == 3
        assert woke[0][1] - appending < PROMPT

    def test_an_append_wakes_an_async_waiter(self, log: Log) -> None:
        self.fill(log, 1)

        async def scenario() -> tuple[int, float]:
            waiting = asyncio.ensure_future(log.wait_async(2, 10))
            assert await asyncio.to_thread(log.await_waiters, 1, BEGIN)
            assert not waiting.done()
            await asyncio.to_thread(log.append, node(2))
            appended = time.monotonic()
            return await asyncio.wait_for(waiting, 10), appended

        head, appended = asyncio.run(scenario())
        assert head == 3 and time.monotonic() - appended < PROMPT

    def test_an_append_by_another_process_wakes_a_waiter(self, log: Log) -> None:
        self.fill(log, 1)
        woke: list[int] = []
        waiter = threading.Thread(target=lambda: woke.append(log.wait(2, 10)))
        waiter.start()
        assert log.await_waiters(1, BEGIN)
        subprocess.run([sys.executable, "-c", APPEND_ELSEWHERE, log.url, "2"], check=True, timeout=60)
        appended = time.monotonic()
        waiter.join(10)
        assert woke == [3] and time.monotonic() - appended < PROMPT
        (commit,) = log.read(3)
        assert commit.origin == {"via": "other"}

    def test_a_wait_with_nothing_coming_times_out_with_the_head(self, log: Log) -> None:
        self.fill(log, 1)
        began = time.monotonic()
        assert log.wait(2, 0.3) == 2
        assert time.monotonic() - began >= 0.25
        assert log.wait(1, 10) == 2  # a head already past `after` answers at once

    def test_interrupt_ends_every_wait(self, log: Log) -> None:
        self.fill(log, 1)
        ended: list[int] = []
        waiters = [threading.Thread(target=lambda: ended.append(log.wait(2, 30))) for _ in range(3)]
        for waiter in waiters:
            waiter.start()
        assert log.await_waiters(3, BEGIN)
        log.interrupt()
        for waiter in waiters:
            waiter.join(PROMPT)
        assert ended == [2, 2, 2]

    def test_await_waiters_counts_the_callers_inside_a_wait(self, log: Log) -> None:
        self.fill(log, 1)
        assert not log.await_waiters(1, 0.05)  # nobody waits: it says so when its time is up
        waiters = [threading.Thread(target=log.wait, args=(2, 30)) for _ in range(2)]
        waiters[0].start()
        assert log.await_waiters(1, BEGIN) and not log.await_waiters(2, 0.05)
        waiters[1].start()
        assert log.await_waiters(2, BEGIN)
        log.append(node(2))
        for waiter in waiters:
            waiter.join(PROMPT)
        assert not any(waiter.is_alive() for waiter in waiters)
        assert not log.await_waiters(1, 0.05)  # a wait that ended counts no more

    # ------------------------------------------------------------------ durability and damage

    def reopened(self, url: str) -> list[Commit]:
        log = self.open(url)
        try:
            return list(log.read())
        finally:
            log.close()

    def test_reopening_keeps_every_commit(self, where: str) -> None:
        log = self.open(where)
        made = self.fill(log, 30)
        url = log.url
        log.close()
        again = self.open(url)
        try:
            assert again.head() == 31
            assert [c.to_json() for c in again.read()] == [c.to_json() for c in made]
            assert again.append(node(31)).seq == 32  # and it goes on from there
        finally:
            again.close()

    @pytest.mark.parametrize(("damage", "seq", "reason"), [("corrupt", 4, "checksum"), ("drop", 3, "gap")])
    def test_a_damaged_or_missing_record_is_refused_after_every_intact_one(
        self, where: str, damage: str, seq: int, reason: str
    ) -> None:
        log = self.open(where)
        self.fill(log, 5)
        log.close()
        getattr(self, damage)(where, seq)
        got: list[int] = []
        with pytest.raises(CorruptRecord, match=reason) as refused:
            got.extend(c.seq for c in self.open_and_read(where))
        assert got == list(range(1, seq)) and refused.value.seq == seq

    def open_and_read(self, url: str) -> Iterator[Commit]:
        log = self.open(url)
        try:
            yield from log.read()
        finally:
            log.close()

    def test_after_close_waits_end_and_calls_fail(self, where: str) -> None:
        log = self.open(where)
        self.fill(log, 1)
        ended: list[int] = []
        waiter = threading.Thread(target=lambda: ended.append(log.wait(2, 30)))
        waiter.start()
        assert log.await_waiters(1, BEGIN)
        log.close()
        waiter.join(PROMPT)
        assert ended == [2]
        with pytest.raises(DrsgError, match="closed"):
            log.head()
        with pytest.raises(DrsgError, match="closed"):
            log.append(node(2))


class TestLmdbLog(LogContract):
    def url(self, folder: Path) -> str:
        return f"lmdb://{folder / 'log.drsg'}"

    def _edit(self, url: str, change: Callable[[Any, Any], None]) -> None:
        env = lmdb.open(split_url(url)[1], subdir=False, max_dbs=32)
        try:
            table = env.open_db(b"log")
            with env.begin(write=True) as txn:
                change(txn, table)
        finally:
            env.close()

    def corrupt(self, url: str, seq: int) -> None:
        def flip(txn: Any, table: Any) -> None:
            record = bytearray(txn.get(keys.u64(seq), db=table))
            record[-1] ^= 0xFF  # the body's last byte: the checksum no longer matches
            txn.put(keys.u64(seq), bytes(record), db=table)

        self._edit(url, flip)

    def drop(self, url: str, seq: int) -> None:
        self._edit(url, lambda txn, table: txn.delete(keys.u64(seq), db=table))


class TestKafkaLog(LogContract):
    """A Kafka record cannot be changed or removed in place, so :meth:`corrupt` and :meth:`drop`
    rebuild the test's own topic as the damage would leave it: the same records at the same offsets,
    with one record's bytes flipped, or with its offset taken by a transaction's commit marker (the
    way a real Kafka partition has offsets that no record holds). The log produces through
    confluent-kafka here, through kafka-python in :class:`TestKafkaLogOnKafkaPython`."""

    client = CONFLUENT

    @pytest.fixture(autouse=True)
    def _broker(self, kafka_broker: Broker) -> None:
        self.broker = kafka_broker

    def open(self, url: str, clock: Callable[[], float] | None = None) -> Log:
        return open_log(url, client=self.client) if clock is None else open_log(url, clock=clock, client=self.client)

    def url(self, folder: Path) -> str:
        return self.broker.url(f"drsg-{uuid.uuid4().hex[:16]}")

    def _records(self, topic: str) -> list[bytes]:
        consumer = KafkaConsumer(bootstrap_servers=self.broker.bootstrap, enable_auto_commit=False)
        part = TopicPartition(topic, 0)
        consumer.assign([part])
        consumer.seek(part, 0)
        values: list[bytes] = []
        try:
            while batch := consumer.poll(timeout_ms=500):
                values += [record.value for record in batch[part]]
        finally:
            consumer.close()
        return values

    def _rewrite(self, url: str, seq: int, *, flip: bool) -> None:
        topic = split_url(url)[1].rsplit("/", 1)[1]
        values = self._records(topic)
        admin = KafkaAdminClient(bootstrap_servers=self.broker.bootstrap)
        try:
            admin.delete_topics([topic])
            wait_until(lambda: topic not in admin.list_topics(), f"topic {topic} deleted", timeout=10)
            admin.create_topics([NewTopic(topic, 1, 1)])
        finally:
            admin.close()
        plain = KafkaProducer(bootstrap_servers=self.broker.bootstrap, acks="all")
        try:
            if flip:
                damaged = bytearray(values[seq - 1])
                damaged[-1] ^= 0xFF  # the body's last byte: the checksum no longer matches
                values[seq - 1] = bytes(damaged)
                for value in values:
                    plain.send(topic, value, partition=0).get(10)
                return
            assert seq >= 2, "a gap needs a record before it (the transaction's)"
            for value in values[: seq - 2]:
                plain.send(topic, value, partition=0).get(10)
            txn = KafkaProducer(bootstrap_servers=self.broker.bootstrap, transactional_id=f"drop-{topic}")
            try:
                txn.init_transactions()
                txn.begin_transaction()
                txn.send(topic, values[seq - 2], partition=0)
                txn.commit_transaction()  # its marker takes offset seq - 1: commit seq's place
            finally:
                txn.close()
            for value in values[seq:]:
                assert plain.send(topic, value, partition=0).get(10).offset >= seq
        finally:
            plain.close()

    def corrupt(self, url: str, seq: int) -> None:
        self._rewrite(url, seq, flip=True)

    def drop(self, url: str, seq: int) -> None:
        self._rewrite(url, seq, flip=False)


class TestKafkaLogOnKafkaPython(TestKafkaLog):
    """The Kafka log producing through kafka-python (``open_log(url, client="kafka-python")``)."""

    client = KAFKA_PYTHON


# --------------------------------------------------------------------------- choosing a backend by URL


def test_a_plain_path_is_an_lmdb_log(tmp_path: Path) -> None:
    path = tmp_path / "plain.drsg"
    log = open_log(path)
    try:
        assert isinstance(log, LmdbLog) and log.url == f"lmdb://{path}"
        log.append([PlaneCreate(1, "p", {})])
    finally:
        log.close()
    again = open_log(f"lmdb://{path}")
    try:
        assert again.head() == 1
    finally:
        again.close()
    assert split_url(str(path)) == split_url(f"lmdb://{path}") == ("lmdb", str(path))


@pytest.mark.parametrize(
    ("url", "message"),
    [
        (
            "s3://bucket/drsg",
            "unknown log URL scheme 's3' in 's3://bucket/drsg'; use lmdb://, kafka:// or a plain path",
        ),
        ("lmdb://", "'lmdb://' names no file; write lmdb:///path/to/graph.drsg or a plain path"),
        ("kafka://", "'kafka://' names no broker; write kafka://HOST:PORT/TOPIC"),
        ("kafka://host:9092", "'kafka://host:9092' is not a Kafka log URL; write kafka://HOST:PORT/TOPIC"),
        (
            "kafka://host:9092/bad topic",
            "'kafka://host:9092/bad topic': 'bad topic' is not a topic name; use 1-249 letters, digits, "
            "'.', '_' or '-' (kafka://HOST:PORT/TOPIC)",
        ),
    ],
)
def test_an_unknown_or_empty_url_is_one_config_error(url: str, message: str) -> None:
    with pytest.raises(ConfigError) as refused:
        open_log(url)
    assert str(refused.value) == message and refused.value.exit_code == 2


def test_an_option_of_another_backend_is_refused() -> None:
    with pytest.raises(ConfigError, match="the kafka log takes no option map_size"):
        open_log("kafka://127.0.0.1:9/t", map_size=1 << 20)
    with pytest.raises(ConfigError, match="the lmdb log takes no option timeout"):
        open_log("lmdb:///nowhere/graph.drsg", timeout=1.0)


def test_each_backend_takes_every_option_its_type_names() -> None:
    """open_log's list of the Kafka log's options is written out (importing KafkaOptions would load
    kafka-python for every LMDB open): it must stay the TypedDict's, or a typed call is refused."""
    from drsg.store.backends import _OWN_OPTIONS
    from drsg.store.kafka.log import KafkaOptions

    assert _OWN_OPTIONS["kafka"] == KafkaOptions.__required_keys__ | KafkaOptions.__optional_keys__
