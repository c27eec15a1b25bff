"""Would a Kafka client that releases the GIL move a node's floor (issue #38)? kafka-python against
confluent-kafka (librdkafka: its network I/O in C threads, off the GIL), producing the same record
bytes (bench_kafka_writes' intent records) to a tansu broker on loopback started for the run, with
the same settings: acks=all, idempotent, linger 0, TCP_NODELAY (kafka-python's default; librdkafka's
``socket.nagle.disable``).

Rows, each a round in a process of its own, the two clients alternated (their order swapped every
pass), ``--passes`` passes of ``--seconds`` each:

- **send, 1 thread / 4 threads**: each thread sends a record and waits for its ack, back to back
  (kafka-python ``send().get()``; confluent-kafka ``produce()`` and a wait for the delivery report,
  which a poller thread of the process serves — one producer per process in both).
- **send then read back, 1 / 4 threads**: after its ack, each thread's own consumer (no group, fetch
  wait 5 ms, as bench_kafka_writes' raw read-back rows) reads the partition on until it has read the
  record just acknowledged — the least a write decided in log order needs.
- **send, 1 thread, beside a busy thread**: as the first row, while a second Python thread of the
  process computes without pause (a stand-in for a node's materialiser): the GIL's share.
- **send, 1 thread, no poller** (confluent-kafka only): ``produce()`` then ``flush()`` in the writing
  thread itself, no hand-over between threads.

Writes/s (median of the passes), latency p50 / p99 (every write of every pass), the ratio
confluent-kafka / kafka-python, and the load average over each row's rounds.

    .venv/bin/pip install -e '.[bench]'   # confluent-kafka (bench only)
    .venv/bin/python -m tests.bench.bench_kafka_clients [--seconds 5] [--passes 3]
"""

from __future__ import annotations

import argparse
import datetime as dt
import multiprocessing
import os
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any, NamedTuple

from tests.bench import common
from tests.bench.bench_kafka_writes import confluent_producer, drive, intents_for, read_up_to
from tests.support.kafka_broker import Broker

CLIENTS = ("kafka-python", "confluent-kafka")
FETCH_WAIT_MS = 5  # the read-back consumers' fetch wait, as bench_kafka_writes' raw read-back rows


class Row(NamedTuple):
    title: str
    threads: int
    read_back: bool = False
    busy: bool = False
    direct: bool = False  # confluent-kafka only: produce() then flush() in the writing thread


ROWS = {
    "send1": Row("send, wait for the ack: 1 thread", 1),
    "send4": Row("send, wait for the ack: 4 threads", 4),
    "read1": Row("send, wait for the ack, read the partition up to it: 1 thread", 1, read_back=True),
    "read4": Row("send, wait for the ack, read the partition up to it: 4 threads", 4, read_back=True),
    "busy1": Row("send, wait for the ack: 1 thread, beside a busy Python thread", 1, busy=True),
    "direct1": Row("send, wait for the ack: 1 thread, produce() then flush(), no poller thread", 1, direct=True),
}


def records_for(writer: int) -> list[bytes]:
    """The intent records bench_kafka_writes' writer ``writer`` produces."""
    from drsg.store.intents import encode_intent

    return [encode_intent(int(time.time() * 1000), {}, i) for i in intents_for(writer, common.text_lines(5000))]


def timed(write: Callable[[int], None], lats: list[float]) -> Callable[[int], None]:
    def run(i: int) -> None:
        began = time.perf_counter()
        write(i)
        lats.append((time.perf_counter() - began) * 1000)

    return run


def kafka_python(
    job: dict[str, Any], row: Row, lats: list[list[float]]
) -> tuple[list[Callable[[int], None]], Callable[[], None]]:
    """Writers on one idempotent KafkaProducer (as bench_kafka_writes' raw rows) and a closer."""
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=job["bootstrap"], acks="all", enable_idempotence=True, linger_ms=0)
    producer.send(job["topic"], b"warm", partition=0).get(10)  # connected, the producer id known
    writers = []
    for w in range(row.threads):
        records = records_for(w)
        reader = read_up_to(job) if row.read_back else None

        def send(i: int, records: list[bytes] = records, reader: Callable[[int], None] | None = reader) -> None:
            acked = producer.send(job["topic"], records[i % len(records)], partition=0).get(10)
            if reader is not None:
                reader(acked.offset)

        writers.append(timed(send, lats[w]))
    return writers, producer.close


def confluent_reader(job: dict[str, Any]) -> Callable[[int], None]:
    """A consumer of the partition of its own, from its end now, and a call that reads on until it has
    read the record at an offset (confluent-kafka's ``read_up_to``)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": job["bootstrap"], "group.id": f"bench-{uuid.uuid4().hex[:8]}",
                         "enable.auto.commit": False, "fetch.wait.max.ms": FETCH_WAIT_MS,
                         "socket.nagle.disable": True})  # fmt: skip
    _, end = consumer.get_watermark_offsets(TopicPartition(job["topic"], 0), timeout=10)
    consumer.assign([TopicPartition(job["topic"], 0, end)])  # an explicit offset: the end resolved now, not lazily
    read = [end - 1]

    def up_to(offset: int) -> None:
        while read[0] < offset:
            msg = consumer.poll(1.0)
            if msg is not None and msg.error() is None:
                read[0] = int(msg.offset() or 0)

    return up_to


def confluent(
    job: dict[str, Any], row: Row, lats: list[list[float]]
) -> tuple[list[Callable[[int], None]], Callable[[], None]]:
    """Writers on one idempotent confluent-kafka Producer; a poller thread serves the delivery
    reports (unless ``row.direct``: each writer flushes itself); and a closer."""
    producer, stop, poller = confluent_producer(job["bootstrap"], job["topic"])
    if not row.direct:
        poller.start()
    writers = []
    for w in range(row.threads):
        records = records_for(w)
        reader = confluent_reader(job) if row.read_back else None

        def send(i: int, records: list[bytes] = records, reader: Callable[[int], None] | None = reader) -> None:
            done, acked = threading.Event(), []

            def delivered(err: Any, msg: Any) -> None:
                acked.append(-1 if err is not None else int(msg.offset()))
                done.set()

            producer.produce(job["topic"], records[i % len(records)], partition=0, on_delivery=delivered)
            if row.direct:
                producer.flush(10)
            if not done.wait(10) or acked[0] < 0:
                raise RuntimeError("confluent-kafka: a record was not acknowledged")
            if reader is not None:
                reader(acked[0])

        writers.append(timed(send, lats[w]))

    def close() -> None:
        stop.set()
        if poller.is_alive():
            poller.join(5)
        producer.flush(10)

    return writers, close


def round_process(job: dict[str, Any], out: Any) -> None:
    """One round, a process of its own (as a node on a machine of its own)."""
    row = ROWS[job["row"]]
    lats: list[list[float]] = [[] for _ in range(row.threads)]
    make = kafka_python if job["client"] == "kafka-python" else confluent
    writers, close = make(job, row, lats)
    stop, spins = threading.Event(), [0]

    def busy() -> None:  # pure Python work, holding the GIL but for the interpreter's switch interval
        while not stop.is_set():
            sum(i * i for i in range(1000))
            spins[0] += 1

    burner = threading.Thread(target=busy, daemon=True)
    if row.busy:
        burner.start()
    go = threading.Event()
    go.set()
    count, took = drive(writers, go, job["seconds"])
    stop.set()
    if row.busy:
        burner.join(5)
    close()
    out.put({"writes": count, "seconds": took, "lats": [x for per in lats for x in per], "spins": spins[0]})


def run_round(broker: Broker, client: str, row: str, seconds: float) -> dict[str, Any]:
    context = multiprocessing.get_context("spawn")
    out = context.Queue()
    job = {"client": client, "row": row, "seconds": seconds, "bootstrap": broker.bootstrap,
           "topic": f"clients-{row}-{uuid.uuid4().hex[:8]}"}  # fmt: skip
    proc = context.Process(target=round_process, args=(job, out))
    proc.start()
    result: dict[str, Any] = out.get(timeout=seconds + 120)
    proc.join(60)
    result["rate"] = result["writes"] / result["seconds"]
    result["load"] = os.getloadavg()[0]
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=5.0, help="length of each round")
    ap.add_argument("--passes", type=int, default=3, help="alternated passes of every row")
    ap.add_argument("--rows", default=",".join(ROWS), help="rows to run, comma-separated: " + ", ".join(ROWS))
    args = ap.parse_args()
    started = dt.datetime.now(dt.UTC)
    keys = [k for k in args.rows.split(",") if k]
    runs: dict[tuple[str, str], list[dict[str, Any]]] = {(k, c): [] for k in keys for c in CLIENTS}
    with Broker() as broker:
        for p in range(args.passes):
            for key in keys:
                order = CLIENTS if p % 2 == 0 else CLIENTS[::-1]
                for client in order:
                    if ROWS[key].direct and client == "kafka-python":
                        continue  # send().get() already waits in the writing thread: the first row
                    runs[key, client].append(run_round(broker, client, key, args.seconds))
                    print(key, client, f"{runs[key, client][-1]['rate']:,.0f}/s", flush=True)

    def cell(key: str, client: str) -> str:
        rs = runs[key, client]
        if not rs:
            return "-"
        lats = [x for r in rs for x in r["lats"]]
        rate = common.pct([r["rate"] for r in rs], 50)
        return f"{rate:,.0f} ({common.pct(lats, 50):.2f} / {common.pct(lats, 99):.2f})"

    def rate(key: str, client: str) -> float:
        rs = runs[key, client]
        return common.pct([r["rate"] for r in rs], 50) if rs else float("nan")

    lines = [
        "| writes/s (latency p50 / p99 ms) | kafka-python | confluent-kafka | confluent / kafka-python "
        "| load average |",
        "|---|---|---|---|---|",
    ]
    for key in keys:
        loads = [r["load"] for c in CLIENTS for r in runs[key, c]]
        ratio = f"{common.ratio(rate(key, 'confluent-kafka'), rate(key, 'kafka-python')):.2f}x"
        if not runs[key, "kafka-python"]:
            ratio = f"{common.ratio(rate(key, 'confluent-kafka'), rate('send1', 'kafka-python')):.2f}x of row 1"
        lines.append(f"| {ROWS[key].title} | {cell(key, 'kafka-python')} | {cell(key, 'confluent-kafka')} | "
                     f"{ratio} | {min(loads):.1f}–{max(loads):.1f} |")  # fmt: skip
    lines += [
        "",
        f"- {args.passes} alternated passes of {args.seconds:g} s per row (writes/s: medians; latency: every write); "
        "per pass: "
        + "; ".join(f"{k} {c} " + ", ".join(f"{r['rate']:,.0f}" for r in v) for (k, c), v in runs.items() if v),
        "- same record bytes (bench_kafka_writes' intent records), acks=all, idempotent, linger 0, TCP_NODELAY; "
        f"one producer per process; read-back consumers: each thread's own, fetch wait {FETCH_WAIT_MS} ms",
        "- broker: tansu (memory-only) on loopback, on the same 2-core machine",
    ]
    title = "Kafka clients: kafka-python vs confluent-kafka (#38)"
    common.append_section(title, started, lines, write=True)


if __name__ == "__main__":
    main()
