"""The Kafka log (store/kafka/log.py) beyond the Log contract: what the broker itself brings — a
broker that is not there, one that dies mid-run, a topic that is missing or has several partitions,
end offsets that cannot be trusted, a record another producer wrote — against a real tansu broker.
Every test runs once per Kafka client the log may produce through (store/kafka/producer.py).
"""

from __future__ import annotations

import asyncio
import resource
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic

from drsg.kernel.errors import ConfigError, CorruptRecord, DamagedDatabase, DatabaseUnavailable, UsageError
from drsg.store.backends import open_log
from drsg.store.kafka import log as kafka_log
from drsg.store.kafka.log import MAX_COMMIT, MAX_RECORD, SENDER, KafkaLog
from drsg.store.kafka.producer import CLIENTS, ConfluentProducer, KafkaPythonProducer
from drsg.store.log import encode
from drsg.store.logport import Log
from drsg.store.mutations import Mutation, NodePut
from tests.support.kafka_broker import Broker, free_port


def node(i: int) -> list[Mutation]:
    return [NodePut(1, i, f"k{i}", ["X"], {"i": i})]


def fresh_topic() -> str:
    return f"drsg-{uuid.uuid4().hex[:16]}"


@pytest.fixture(autouse=True, params=CLIENTS)
def client(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The Kafka client the test's logs produce through: KafkaLog's default for the test, as the setting
    log.kafka_client would give it (a process the test starts produces through the default)."""
    defaults = KafkaLog.__init__.__kwdefaults__
    assert defaults is not None and "client" in defaults
    monkeypatch.setitem(defaults, "client", request.param)
    return str(request.param)


@pytest.fixture
def topic() -> str:
    return fresh_topic()


@pytest.fixture
def own_broker() -> Iterator[Broker]:
    """A broker of the test's own, to kill."""
    with Broker() as broker:
        yield broker


def partitions_of(broker: Broker, topic: str) -> int:
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        (described,) = admin.describe_topics([topic])
        return len(described["partitions"])
    finally:
        admin.close()


def test_a_broker_that_is_not_there_is_one_error_naming_the_url() -> None:
    url = f"kafka://127.0.0.1:{free_port()}/drsg"
    began = time.monotonic()
    with pytest.raises(DatabaseUnavailable) as refused:
        open_log(url, timeout=2.0)
    took = time.monotonic() - began
    port = url.split(":")[2].split("/")[0]
    assert str(refused.value) == (
        f"{url}: no Kafka broker answered at 127.0.0.1:{port} within 2 s; start it or fix the URL"
    )
    assert took < 4.0, f"the refusal took {took:.1f} s"


def test_a_missing_topic_is_created_with_one_partition(kafka_broker: Broker, topic: str) -> None:
    log = open_log(kafka_broker.url(topic))
    try:
        assert isinstance(log, KafkaLog) and log.url == kafka_broker.url(topic)
        assert log.head() == 0
        assert partitions_of(kafka_broker, topic) == 1
    finally:
        log.close()


def test_a_topic_with_several_partitions_is_refused_with_the_fix(kafka_broker: Broker, topic: str) -> None:
    admin = KafkaAdminClient(bootstrap_servers=kafka_broker.bootstrap)
    try:
        admin.create_topics([NewTopic(topic, 3, 1)])
    finally:
        admin.close()
    with pytest.raises(ConfigError) as refused:
        open_log(kafka_broker.url(topic))
    assert str(refused.value) == (
        f"{kafka_broker.url(topic)}: topic {topic!r} has 3 partitions; this log keeps every commit in one "
        f"partition — name a new topic, or recreate this one with one partition"
    )


def test_the_head_is_found_by_reading_not_from_the_broker_end_offset(kafka_broker: Broker, topic: str) -> None:
    # ten commits in one record batch: tansu's end offset then names the batch's first record
    admin = KafkaAdminClient(bootstrap_servers=kafka_broker.bootstrap)
    try:
        admin.create_topics([NewTopic(topic, 1, 1)])  # producing alone would make 4 partitions
    finally:
        admin.close()
    producer = KafkaProducer(bootstrap_servers=kafka_broker.bootstrap, acks="all", linger_ms=200)
    try:
        sent = [producer.send(topic, encode(1_000 + i, {}, node(i)), partition=0) for i in range(10)]
        producer.flush(10)
        assert [f.get(10).offset for f in sent] == list(range(10))
    finally:
        producer.close()
    consumer = KafkaConsumer(bootstrap_servers=kafka_broker.bootstrap)
    try:
        reported = consumer.end_offsets([TopicPartition(topic, 0)])[TopicPartition(topic, 0)]
    finally:
        consumer.close()
    log = open_log(kafka_broker.url(topic))
    try:
        assert reported < 10, "tansu's end offset is right now: this test no longer shows the head is read"
        assert log.head() == 10
        assert [c.seq for c in log.read()] == list(range(1, 11))
        assert [c.ts for c in log.read()] == [1_000 + i for i in range(10)]
        appended = log.append(node(10))
        assert appended.seq == 11 and appended.ts >= 1_009
    finally:
        log.close()


def test_a_log_opens_while_another_process_appends_steadily(kafka_broker: Broker, topic: str) -> None:
    """Finding the head reads to the end the first fetch reported: under a steady writer no fetch
    ever comes back empty, and a node could not open until the writer paused."""
    writer = subprocess.Popen([sys.executable, "-c", STEADY_WRITER, kafka_broker.url(topic)], stdout=subprocess.PIPE)
    try:
        assert writer.stdout is not None
        assert b"appending" in iter(lambda: writer.stdout.readline().strip(), b"")  # (after its log lines)
        began = time.monotonic()
        log = open_log(kafka_broker.url(topic))
        try:
            opened_in = time.monotonic() - began
            assert writer.poll() is None  # it opened while the writer was still appending
            assert log.head() >= 20
            assert opened_in < 20, opened_in
        finally:
            log.close()
    finally:
        writer.kill()
        writer.wait(10)


STEADY_WRITER = """
import sys, time
from drsg.store.backends import open_log
from drsg.store.mutations import NodePut
log = open_log(sys.argv[1])
for i in range(20):
    log.append([NodePut(1, i, f"k{i}", ["X"], {"i": i})])
print("appending", flush=True)
i = 20
while i < 60_000:  # ~60 s at most: far beyond the test's bound on the open
    log.append([NodePut(1, i, f"k{i}", ["X"], {"i": i})])
    i += 1
    time.sleep(0.001)
"""


def test_a_record_that_is_not_a_commit_is_refused_after_the_ones_before_it(kafka_broker: Broker, topic: str) -> None:
    log = open_log(kafka_broker.url(topic))
    try:
        log.append(node(1))
        log.append(node(2))
        producer = KafkaProducer(bootstrap_servers=kafka_broker.bootstrap, acks="all")
        try:
            assert producer.send(topic, b"not a commit", partition=0).get(10).offset == 2
        finally:
            producer.close()
        assert log.wait(2, 10) == 3  # the watcher saw it
        got: list[int] = []
        with pytest.raises(CorruptRecord) as refused:
            got.extend(c.seq for c in log.read())
        assert got == [1, 2] and refused.value.seq == 3
    finally:
        log.close()


def test_a_broker_lost_mid_run_fails_the_append_within_its_timeout(own_broker: Broker, topic: str) -> None:
    log = open_log(own_broker.url(topic), timeout=2.0)
    try:
        assert log.append(node(1)).seq == 1
        own_broker.kill()
        began = time.monotonic()
        with pytest.raises(DatabaseUnavailable, match="did not acknowledge the commit within 2 s"):
            log.append(node(2))
        assert time.monotonic() - began < 8.0
        assert log.head() == 1  # nothing acknowledged, nothing counted
        began = time.monotonic()
        assert log.wait(1, 0.3) == 1
        assert time.monotonic() - began < 2.0
    finally:
        began = time.monotonic()
        log.close()
        assert time.monotonic() - began < 10.0


def test_a_partition_that_lost_its_commits_is_not_appended_to_silently(own_broker: Broker, topic: str) -> None:
    log = open_log(own_broker.url(topic), timeout=2.0)
    try:
        for i in range(3):
            log.append(node(i))
        own_broker.restart()  # memory-only: the topic is gone, its offsets start again
        refusals: list[str] = []
        for attempt in range(3):  # the idempotent producer's first send may be refused (an unknown id)
            try:
                log.append(node(10 + attempt))
            except DatabaseUnavailable as exc:
                refusals.append(str(exc))
                continue
            except DamagedDatabase as exc:
                assert "the log had reached 3" in str(exc) and "the topic lost commits" in str(exc)
                break
        else:
            raise AssertionError(f"appends went on after the loss: {refusals}")
        for _ in range(5):  # and for good: once the new offsets pass 3, a seq would name another history
            with pytest.raises(DamagedDatabase, match="the topic lost commits"):
                log.append(node(20))
        assert log.head() == 3
    finally:
        log.close()


def test_a_read_from_a_lost_broker_fails_within_its_timeout(own_broker: Broker, topic: str) -> None:
    log = open_log(own_broker.url(topic), timeout=2.0)
    try:
        log.append(node(1))
        assert len(list(log.read())) == 1  # a consumer that has talked to the broker
        own_broker.kill()
        began = time.monotonic()
        with pytest.raises(DatabaseUnavailable, match="did not deliver commit 1"):
            list(log.read())
        assert time.monotonic() - began < 6.0
    finally:
        log.close()


def test_a_read_that_needs_a_new_connection_to_a_lost_broker_names_it(own_broker: Broker, topic: str) -> None:
    log = open_log(own_broker.url(topic), timeout=2.0)
    try:
        log.append(node(1))
        own_broker.kill()
        began = time.monotonic()
        with pytest.raises(DatabaseUnavailable, match=r"no Kafka broker answered at 127\.0\.0\.1:\d+ within 2 s"):
            list(log.read())
        assert time.monotonic() - began < 4.0
    finally:
        log.close()


def test_an_idle_log_waits_without_burning_a_core(kafka_broker: Broker, topic: str) -> None:
    log = open_log(kafka_broker.url(topic))
    try:
        log.append(node(1))
        before = resource.getrusage(resource.RUSAGE_SELF)
        began = time.monotonic()
        assert log.wait(1, 2.0) == 1
        after = resource.getrusage(resource.RUSAGE_SELF)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        assert time.monotonic() - began >= 1.9
        assert cpu < 0.5, f"{cpu:.2f} s of CPU in a 2 s idle wait"  # a busy loop would spend ~2 s
    finally:
        log.close()


def test_while_commits_flow_another_log_hears_each_within_milliseconds(
    kafka_broker: Broker, topic: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """tansu answers a held fetch only when its wait runs out: at FETCH_WAIT_MS alone another node
    heard each commit ~49 ms late. While another's commits flow (and it writes none) the watcher asks
    with BUSY_WAIT_MS, and once they stop (BUSY_FOR) it is back at FETCH_WAIT_MS."""
    monkeypatch.setattr(kafka_log, "BUSY_FOR", 0.3)
    writing, other, hearing = (open_log(kafka_broker.url(topic)) for _ in range(3))
    assert isinstance(writing, KafkaLog) and isinstance(hearing, KafkaLog)
    try:
        lags = []
        for i in range(40):
            if i % 4 == 0:
                other.append(node(1000 + i))  # the writer hears another's commits too
            seq = writing.append(node(i)).seq
            sent = time.monotonic()
            assert hearing.wait(seq - 1, 10) >= seq
            lags.append(time.monotonic() - sent)
            time.sleep(0.005)
        # a log that writes keeps the long wait, hearing others' commits or not: its short fetches
        # would take its producer's turns at the GIL
        assert writing._watcher._fetcher.config["fetch_max_wait_ms"] == kafka_log.FETCH_WAIT_MS
        lags.sort()
        assert lags[len(lags) // 2] < kafka_log.FETCH_WAIT_MS / 1000 / 5, f"median {lags[len(lags) // 2]:.3f} s"
        time.sleep(0.3 + 2 * kafka_log.FETCH_WAIT_MS / 1000)  # nothing flows: back to the long wait
        assert hearing._watcher._fetcher.config["fetch_max_wait_ms"] == kafka_log.FETCH_WAIT_MS
    finally:
        for log in (writing, other, hearing):
            log.close()


def test_the_kafka_backend_is_loaded_only_when_its_scheme_is_asked_for(tmp_path: object) -> None:
    script = (
        "import sys; from drsg.store.backends import open_log; "
        f"log = open_log({str(tmp_path)!r} + '/g.drsg'); log.close(); "
        "print(sorted(m for m in sys.modules if m == 'kafka' or m.startswith('drsg.store.kafka')))"
    )
    ran = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60)
    assert ran.stdout.strip() == "[]"


def test_each_log_opened_alone_sees_the_others_commits(kafka_broker: Broker, topic: str) -> None:
    first: Log = open_log(kafka_broker.url(topic))
    second: Log = open_log(kafka_broker.url(topic))
    try:
        assert first.append(node(1)).seq == 1
        assert second.wait(0, 10) == 1
        assert second.append(node(2)).seq == 2
        assert first.wait(1, 10) == 2
        assert [c.mutations for c in first.read()] == [node(1), node(2)]
    finally:
        first.close()
        second.close()


def test_an_async_waiter_is_woken_by_a_commit_the_watcher_reads(kafka_broker: Broker, topic: str) -> None:
    waiting: Log = open_log(kafka_broker.url(topic))
    writing: Log = open_log(kafka_broker.url(topic))

    async def scenario() -> tuple[int, float, int]:
        woken = asyncio.ensure_future(waiting.wait_async(0, 10))
        later = asyncio.ensure_future(waiting.wait_async(5, 0.5))  # past any commit made here: times out
        assert await asyncio.to_thread(waiting.await_waiters, 2, 10)
        assert not woken.done()
        await asyncio.to_thread(writing.append, node(1))
        appended = time.monotonic()
        return await asyncio.wait_for(woken, 10), appended, await later

    try:
        head, appended, later = asyncio.run(scenario())
        assert head == 1 and time.monotonic() - appended < 1.0 and later == 1
    finally:
        waiting.close()
        writing.close()


def test_kafka_python_makes_and_checks_record_crcs_in_c() -> None:
    """Every record batch a node produces and fetches has its CRC-32C computed by kafka-python: in
    pure Python that is ~48 µs a 400-byte batch on the node's one GIL, several times a write (#38);
    the kafka extra's crc32c package does it in C, and kafka-python must be using it."""
    from kafka.record import _crc32c, default_records, util

    assert util.crc32c_c is not None, "install drsg[kafka]: kafka-python falls back to a pure-Python CRC-32C"
    assert util._crc32c is util.crc32c_c and util._crc32c is not _crc32c.crc
    assert default_records.calc_crc32c(memoryview(b"123456789")) == 0xE3069283  # the CRC-32C check value


def test_the_log_produces_through_the_client_chosen(kafka_broker: Broker, topic: str, client: str) -> None:
    log = open_log(kafka_broker.url(topic), client=client)
    try:
        assert isinstance(log, KafkaLog) and log.client == client
        log.append(node(1))
        kinds = {"confluent-kafka": ConfluentProducer, "kafka-python": KafkaPythonProducer}
        assert type(log._producer) is kinds[client]
    finally:
        log.close()


def test_a_record_keeps_its_headers_and_the_senders(kafka_broker: Broker, topic: str) -> None:
    """The materialiser judges a record by its headers (store/kafka/materialiser.py)."""
    log = open_log(kafka_broker.url(topic))
    try:
        assert isinstance(log, KafkaLog)
        commit, sent = log.produce(node(1), headers={"drsg-base": b"\x00\x07"})
        (read,) = log.records()
        assert read == sent and read.seq == commit.seq == 1
        assert dict(read.headers) == {"drsg-base": b"\x00\x07", SENDER: log._sender}
    finally:
        log.close()


def test_a_record_up_to_the_limit_is_produced_and_one_past_it_refused(kafka_broker: Broker, topic: str) -> None:
    """An import's chunk records run to several MiB (both clients' defaults stop at 1 MB); a commit
    past MAX_RECORD is refused before it is sent, in words that say its size, the limit and the fix,
    and the next one lands at the next seq."""
    log = open_log(kafka_broker.url(topic))
    try:
        big = [NodePut(1, 1, "big", ["X"], {"text": "x" * (MAX_RECORD // 2)})]
        assert log.append(big).seq == 1
        too_big = [NodePut(1, 2, "huge", ["X"], {"text": "x" * MAX_RECORD})]
        with pytest.raises(UsageError) as refused:
            log.append(too_big)
        size = len(encode(0, {}, too_big))
        assert refused.value.message == (
            f"{log.url}: this write is {size:,} bytes, more than the {MAX_COMMIT:,} one commit on a Kafka log "
            f"may hold; nothing was written — write it in smaller parts"
        )
        assert log.append(node(3)).seq == 2 and log.head() == 2
        assert [len(c.mutations) for c in log.read()] == [1, 1]
    finally:
        log.close()


def test_a_producer_its_client_calls_unusable_is_replaced_before_the_next_send(
    kafka_broker: Broker, topic: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """librdkafka's fatal errors leave its producer sending nothing more: the log starts a new one."""
    log = open_log(kafka_broker.url(topic))
    try:
        assert isinstance(log, KafkaLog)
        log.append(node(1))
        broken = log._producer
        assert broken is not None and broken.usable
        monkeypatch.setattr(type(broken), "usable", property(lambda self: self is not broken))  # as a fatal error
        assert log.append(node(2)).seq == 2
        assert log._producer is not broken and log._producer is not None and log._producer.usable
    finally:
        log.close()
