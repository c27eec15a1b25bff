"""Writes on a Kafka log from several nodes (issue #38): intents decided in log order, against raw
kafka-python producing the same record bytes with the same acks from the same number of threads, on
a tansu broker on loopback started for the run.

Each writer writes nodes of a line of real text (``node.put`` by key, ``update`` mode), half on keys
of its own and half on keys every writer shares, so writers on different nodes name the same nodes.

Every node, and every raw producer, is a process of its own (as on a machine of its own), its
writers threads in it, all started at once.

- **2 nodes × 2 writers, back to back for ``--seconds``**: ``db.submit(intent)`` (store/intents.py:
  produced, decided by every node's materialiser where it lands, the caller's outcome read from its
  node's copy) — and, for the record, today's ``db.write(commit function)`` (run on the copy,
  produced with its base, run again when another node's commit landed first). Writes/s, writes
  refused for contention (Conflict: "other writers committed first"), stale records in the log (empty
  commits ``skipped: stale``). Raw: two processes with an idempotent ``KafkaProducer(acks="all")``, two threads each,
  ``send(…).get()`` back to back, of the intent records the writers produce.
- **1 node × 1 writer**: ``submit`` against raw ``send().get()`` of the same bytes.
- The ``submit`` rows run once per Kafka client a node may produce through (``--clients``, each
  node's ``log.kafka_client``: store/kafka/producer.py), their order swapped every pass; the raw
  rows are kafka-python's.
- With ``--flush-arm``, the ``submit`` and visibility rows again as a node was before session 21 —
  its copy flushed once per commit (store/kafka/copymark.py) and a lone writer's watcher reading its
  own records back (store/kafka/log.py ``LONE_FOR``) — alternated with them.
- **Raw confluent-kafka** (``--raw-confluent``): the raw rows again through confluent-kafka's
  ``Producer`` (a poller thread serving the delivery reports), beside the node's confluent-kafka arm.
- **Raw read-back**: ``send().get()`` and then the thread's own consumer reading the partition on
  up to the acknowledged offset — the least a write decided in log order needs (every record before
  its own must be read first), beside the same node counts.
- **Commit-to-visible on the other node at ``--rate`` writes/s** (and ``--visible-rates``): one
  node (a process) submits paced to the rate (each in a thread of a pool, so none waits for the one
  before); the other node (another process) reports when its local head passed each write, minus
  the moment it was handed to the pool: p50 / p99.

    .venv/bin/python -m tests.bench.bench_kafka_writes [--seconds 20] [--rate 1000] [--passes 2]
        [--visible-rates 300,600] [--clients confluent-kafka,kafka-python]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from kafka import KafkaConsumer, KafkaProducer, TopicPartition

import drsg
from drsg.kernel.errors import Conflict
from drsg.kernel.values import props_from_json
from drsg.store.intents import Intent, encode_intent
from drsg.store.kafka import log as kafka_log
from drsg.store.kafka.database import KafkaDatabase
from drsg.store.kafka.log import BUSY_WAIT_MS
from drsg.store.kafka.materialiser import Materialiser
from drsg.store.kafka.producer import CLIENTS
from tests.bench import common
from tests.bench.bench_kafka import first_reached
from tests.support.kafka_broker import Broker

SHARED = 64  # keys every writer names


def intents_for(writer: int, lines: list[str]) -> list[Intent]:
    out = []
    for i, line in enumerate(lines):
        key = f"shared{i % SHARED}" if i % 2 else f"w{writer}-{i}"
        args = {"plane": "startup", "key": key, "labels": ["Line"], "properties": {"text": line}, "mode": "update"}
        out.append(Intent("node.put", args))
    return out


def drive(writers: list[Callable[[int], None]], go: Any, seconds: float) -> tuple[int, float]:
    """Run each writer (called with 0, 1, 2, … until the time is up) in a thread of its own, all
    starting when ``go`` (a multiprocessing Event shared by every process of the round) is set;
    writes done and the seconds they took."""
    stop = threading.Event()
    done = [0] * len(writers)

    def run(n: int, write: Callable[[int], None]) -> None:
        go.wait()
        i = 0
        while not stop.is_set():
            write(i)
            i += 1
        done[n] = i

    threads = [threading.Thread(target=run, args=(n, w)) for n, w in enumerate(writers)]
    for thread in threads:
        thread.start()
    go.wait()
    began = time.perf_counter()
    stop.wait(seconds)
    stop.set()
    for thread in threads:
        thread.join(60)
    return sum(done), time.perf_counter() - began


def node_process(job: dict[str, Any], ready: Any, go: Any, out: Any) -> None:
    """One node (its own process, as on its own machine): ``job["writers"]`` writer threads,
    writing through ``submit`` (intents) or ``write`` (commit functions), or — ``how`` "raw" — one
    idempotent KafkaProducer shared by the threads, sending the same intent records."""
    lines, how, first = common.text_lines(5000), job["how"], job["first_writer"]
    writers: list[Callable[[int], None]] = []
    contention = [0]
    if how in ("raw", "rawread"):
        producer = KafkaProducer(bootstrap_servers=job["bootstrap"], acks="all", enable_idempotence=True, linger_ms=0)
        producer.send(job["topic"], b"warm", partition=0).get(10)  # connected, the producer id known
        for w in range(first, first + job["writers"]):
            records = [encode_intent(int(time.time() * 1000), {}, intent) for intent in intents_for(w, lines)]
            reader = read_up_to(job) if how == "rawread" else None

            def send(i: int, records: list[bytes] = records, reader: Callable[[int], None] | None = reader) -> None:
                acked = producer.send(job["topic"], records[i % len(records)], partition=0).get(10)
                if reader is not None:
                    reader(acked.offset)

            writers.append(send)
        ready.put(True)
        count, took = drive(writers, go, job["seconds"])
        producer.close()
        out.put({"writes": count, "seconds": took})
        return
    if how == "rawc":
        raw_confluent(job, lines, ready, go, out)
        return
    if job.get("flush_each"):
        flush_each_commit()
    client = {"log.kafka_client": job["client"]} if job.get("client") else None
    db = drsg.open(job["path"], log=job["url"], settings=client)
    assert isinstance(db, KafkaDatabase)
    for w in range(first, first + job["writers"]):
        script = intents_for(w, lines)

        def write(i: int, script: list[Intent] = script) -> None:
            intent = script[i % len(script)]
            if how == "submit":
                db.submit(intent)
                return
            key, props = str(intent.args["key"]), props_from_json(intent.args["properties"])
            try:  # today's path: the same write as a commit function
                db.write(lambda tx: tx.put_node(tx.plane("startup"), key, ["Line"], props, mode="update"))
            except Conflict:
                contention[0] += 1

        writers.append(write)
    ready.put(True)
    count, took = drive(writers, go, job["seconds"])
    db.catch_up()
    out.put({"writes": count, "seconds": took, "contention": contention[0], "head": db.kafka.head()})
    db.close()


def confluent_producer(bootstrap: str, topic: str) -> tuple[Any, threading.Event, threading.Thread]:
    """An idempotent confluent-kafka Producer (acks=all, linger 0, TCP_NODELAY) with a record of
    ``topic`` acknowledged (connected, its producer id known), a stop flag, and a poller thread (not
    started) serving its delivery reports until the flag is set."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                         "linger.ms": 0, "socket.nagle.disable": True})  # fmt: skip
    producer.produce(topic, b"warm", partition=0)
    if producer.flush(10):
        raise RuntimeError("confluent-kafka: the warm-up record was not acknowledged in 10 s")
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            producer.poll(0.1)

    return producer, stop, threading.Thread(target=serve, daemon=True)


def raw_confluent(job: dict[str, Any], lines: list[str], ready: Any, go: Any, out: Any) -> None:
    """The raw rows through confluent-kafka: one idempotent Producer shared by the threads, a poller
    thread serving its delivery reports (as bench_kafka_clients.py)."""
    producer, stop, poller = confluent_producer(job["bootstrap"], job["topic"])
    poller.start()
    writers: list[Callable[[int], None]] = []
    for w in range(job["first_writer"], job["first_writer"] + job["writers"]):
        records = [encode_intent(int(time.time() * 1000), {}, intent) for intent in intents_for(w, lines)]

        def send(i: int, records: list[bytes] = records) -> None:
            done, failed = threading.Event(), []

            def delivered(err: Any, msg: Any) -> None:
                if err is not None:
                    failed.append(err)
                done.set()

            producer.produce(job["topic"], records[i % len(records)], partition=0, on_delivery=delivered)
            if not done.wait(10) or failed:
                raise RuntimeError(f"confluent-kafka: a record was not acknowledged ({failed})")

        writers.append(send)
    ready.put(True)
    count, took = drive(writers, go, job["seconds"])
    stop.set()
    producer.flush(10)
    out.put({"writes": count, "seconds": took})


def flush_each_commit() -> None:
    """A node as before session 21: one flush after each LMDB commit of the materialiser (LMDB's own
    with MDB_NOMETASYNC flushed once per commit too), and a watcher that reads on while its node
    writes alone."""
    kafka_log.LONE_FOR = 0.0
    write = Materialiser._write

    def flushed(self: Materialiser) -> bool:
        done = write(self)
        if done:
            self.env.flush()
        return done

    Materialiser._write = flushed  # type: ignore[method-assign]  # this bench process's nodes only


def read_up_to(job: dict[str, Any]) -> Callable[[int], None]:
    """A consumer of the partition of its own (no group) and a call that reads it on until it has
    read the record at an offset: what deciding a write in log order needs after its ack, at least."""
    tp = TopicPartition(job["topic"], 0)
    consumer = KafkaConsumer(bootstrap_servers=job["bootstrap"], group_id=None, enable_auto_commit=False,
                             fetch_max_wait_ms=BUSY_WAIT_MS)  # fmt: skip
    consumer.assign([tp])
    consumer.seek_to_end(tp)

    def read(offset: int) -> None:
        while consumer.position(tp) <= offset:
            consumer.poll(timeout_ms=1000)

    return read


def run_round(
    broker: Broker,
    nodes: int,
    per_node: int,
    seconds: float,
    how: str,
    *,
    flush_each: bool = False,
    client: str | None = None,
) -> dict[str, Any]:
    """``nodes`` processes of ``per_node`` writers each, started together; the round's figures
    (``flush_each``: the copy flushed once per commit, the before arm of --flush-arm; ``client``:
    the nodes' log.kafka_client, else the default)."""
    topic = f"bench-{how}-{uuid.uuid4().hex[:8]}"
    folder = common.fresh_dir(f"kafka-writes-{topic}")
    context = multiprocessing.get_context("spawn")
    ready, out, go = context.Queue(), context.Queue(), context.Event()
    if not how.startswith("raw"):  # the topic and its startup plane, made before the nodes race for them
        drsg.open(folder / "seed.drsg", log=broker.url(topic)).close()
    jobs = [
        {"how": how, "writers": per_node, "first_writer": n * per_node, "seconds": seconds, "topic": topic,
         "bootstrap": broker.bootstrap, "url": broker.url(topic), "path": str(folder / f"node{n}.drsg"),
         "flush_each": flush_each, "client": client}
        for n in range(nodes)
    ]  # fmt: skip
    procs = [context.Process(target=node_process, args=(job, ready, go, out)) for job in jobs]
    for proc in procs:
        proc.start()
    for _ in procs:
        ready.get(timeout=120)
    go.set()
    results = [out.get(timeout=seconds + 180) for _ in procs]
    for proc in procs:
        proc.join(60)
    writes = sum(r["writes"] for r in results)
    took = max(r["seconds"] for r in results)
    figures: dict[str, Any] = {"rate": writes / took, "writes": writes, "load": os.getloadavg()[0]}
    if not how.startswith("raw"):
        figures["contention"] = sum(r["contention"] for r in results)
        db = drsg.open(folder / "seed.drsg", log=broker.url(topic))
        try:
            db.catch_up()
            figures["stale"] = sum(1 for c in db.commits() if str(c.origin.get("skipped", "")).startswith("stale"))
        finally:
            db.close()
    return figures


def visible_node(job: dict[str, Any], ready: Any, go: Any, stop: Any, out: Any) -> None:
    """One node of the visibility row, a process of its own: the writer submits paced to
    ``job["rate"]`` (each submit in a thread of a pool, so none waits for the one before) and reports
    when it handed each applied write over; the reader reports when its local head passed each seq
    (wall clock: the two share the machine's)."""
    if job.get("flush_each"):
        flush_each_commit()
    db = drsg.open(job["path"], log=job["url"])
    assert isinstance(db, KafkaDatabase)
    try:
        if job["role"] == "writer":
            script = intents_for(0, common.text_lines(5000))
            submitted: dict[int, float] = {}
            total = int(job["rate"] * job["seconds"])

            def one(i: int, at: float) -> None:
                done = db.submit(script[i % len(script)])
                if done.seq is not None:
                    submitted[done.seq] = at

            ready.put(True)
            go.wait()
            with ThreadPoolExecutor(max_workers=64) as pool:
                began = time.perf_counter()
                for i in range(total):
                    due = began + i / job["rate"]
                    while (wait := due - time.perf_counter()) > 0:
                        time.sleep(wait)
                    pool.submit(one, i, time.time())
            out.put({"submitted": submitted, "offered": total / (time.perf_counter() - began)})
            return
        seen: list[tuple[float, int]] = []
        head = db.head()
        ready.put(True)
        go.wait()
        while not stop.is_set():
            moved = db.log.wait(head, 0.2)
            if moved > head:
                seen.append((time.time(), moved))
                head = moved
        out.put({"seen": seen})
    finally:
        db.close()


def visible_run(broker: Broker, rate: float, seconds: float, *, flush_each: bool = False) -> dict[str, Any]:
    """Writes submitted on one node paced to ``rate``; when the other node's copy has each
    (``flush_each``: both copies flushed once per commit, the before arm of --flush-arm)."""
    topic = f"bench-visible-{uuid.uuid4().hex[:8]}"
    folder = common.fresh_dir(f"kafka-writes-{topic}")
    drsg.open(folder / "seed.drsg", log=broker.url(topic)).close()
    context = multiprocessing.get_context("spawn")
    ready, go, stop = context.Queue(), context.Event(), context.Event()
    outs = {role: context.Queue() for role in ("writer", "reader")}
    procs = [
        context.Process(target=visible_node, args=(
            {"role": role, "rate": rate, "seconds": seconds, "url": broker.url(topic),
             "path": str(folder / f"{role}.drsg"), "flush_each": flush_each}, ready, go, stop, outs[role]))
        for role in ("writer", "reader")
    ]  # fmt: skip
    for proc in procs:
        proc.start()
    for _ in procs:
        ready.get(timeout=120)
    go.set()
    wrote = outs["writer"].get(timeout=seconds + 180)
    time.sleep(2.0)  # the reader's copy catches up with the last writes
    stop.set()
    read = outs["reader"].get(timeout=60)
    for proc in procs:
        proc.join(60)
    lags = first_reached(wrote["submitted"], read["seen"])
    return {"offered": wrote["offered"], "lags": lags, "writes": len(wrote["submitted"])}


def median(values: list[float]) -> float:
    return common.pct(values, 50)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=20.0, help="length of each throughput round")
    ap.add_argument("--passes", type=int, default=2, help="interleaved passes of the throughput rows")
    ap.add_argument("--rate", type=float, default=1000.0, help="writes/s offered in the visibility row")
    ap.add_argument("--visible-seconds", type=float, default=10.0)
    ap.add_argument("--visible-rates", default="", help="more offered rates for the visibility row, comma-separated")
    ap.add_argument("--no-old-path", action="store_true", help="skip today's commit-function path")
    ap.add_argument("--flush-arm", action="store_true", help="submit rows also as before session 21")
    ap.add_argument("--no-visible", action="store_true", help="skip the visibility rows")
    ap.add_argument("--raw-confluent", action="store_true", help="raw rows through confluent-kafka too")
    ap.add_argument("--clients", default=",".join(CLIENTS), help="Kafka clients of the submit rows' nodes, an arm each")
    args = ap.parse_args()
    clients = [c for c in args.clients.split(",") if c]
    keys = ("submit22f", "write22", "raw22", "rawc22", "rawread22", "submit11f", "raw11", "rawc11", "rawread11")
    runs: dict[str, list[dict[str, Any]]] = {k: [] for k in keys}
    runs.update({f"{k}/{c}": [] for k in ("submit22", "submit11") for c in clients})
    with Broker() as broker:
        for p in range(args.passes):
            order = clients if p % 2 == 0 else clients[::-1]
            runs["raw22"].append(run_round(broker, 2, 2, args.seconds, "raw"))
            if args.raw_confluent:
                runs["rawc22"].append(run_round(broker, 2, 2, args.seconds, "rawc"))
            runs["rawread22"].append(run_round(broker, 2, 2, args.seconds, "rawread"))
            for client in order:
                runs[f"submit22/{client}"].append(run_round(broker, 2, 2, args.seconds, "submit", client=client))
            if args.flush_arm:
                runs["submit22f"].append(run_round(broker, 2, 2, args.seconds, "submit", flush_each=True))
            if not args.no_old_path:
                runs["write22"].append(run_round(broker, 2, 2, args.seconds, "write"))
            runs["raw11"].append(run_round(broker, 1, 1, args.seconds, "raw"))
            if args.raw_confluent:
                runs["rawc11"].append(run_round(broker, 1, 1, args.seconds, "rawc"))
            runs["rawread11"].append(run_round(broker, 1, 1, args.seconds, "rawread"))
            for client in order:
                runs[f"submit11/{client}"].append(run_round(broker, 1, 1, args.seconds, "submit", client=client))
            if args.flush_arm:
                runs["submit11f"].append(run_round(broker, 1, 1, args.seconds, "submit", flush_each=True))
        rates = [] if args.no_visible else [args.rate, *(float(r) for r in args.visible_rates.split(",") if r)]
        visibles, flushed = [], []
        for r in rates:  # with --flush-arm, each rate's two arms one after the other
            visibles.append(visible_run(broker, r, args.visible_seconds))
            if args.flush_arm:
                flushed.append(visible_run(broker, r, args.visible_seconds, flush_each=True))

    def rate(key: str) -> float:
        return median([r["rate"] for r in runs[key]]) if runs[key] else float("nan")

    def total(key: str, field: str) -> int:
        return sum(int(r[field]) for r in runs[key])

    def submit22(c: str) -> list[tuple[str, str, str, str]]:
        k = f"submit22/{c}"
        return [
            (f"2 nodes × 2 writers: `submit` (intents), {c}, writes/s", f"{rate(k):,.0f}", f"{rate('raw22'):,.0f}",
             f"{common.ratio(rate(k), rate('raw22')):.2f}x"),
            ("  refused for contention / stale records (all passes)",
             f"{total(k, 'contention')} / {total(k, 'stale')}", "-", "-"),
        ]  # fmt: skip

    def beside(label: str, key: str, peer: str) -> tuple[str, str, str, str]:  # two drsg arms, same run
        return (label, f"{rate(key):,.0f}", f"{rate(peer):,.0f} (drsg, the other arm)",
                f"{common.ratio(rate(key), rate(peer)):.2f}x")  # fmt: skip

    first, rest = (clients[0], clients[1:]) if clients else ("", [])
    rows = [
        *[row for c in clients for row in submit22(c)],
        *[row for row in (  # only when the optimistic path ran (not with --no-old-path)
            ("2 nodes × 2 writers: `write` (commit functions, the optimistic path), writes/s",
             f"{rate('write22'):,.0f}", f"{rate('raw22'):,.0f}",
             f"{common.ratio(rate('write22'), rate('raw22')):.2f}x"),
            ("  refused for contention / stale records (all passes)",
             f"{total('write22', 'contention')} / {total('write22', 'stale')}", "-", "-"),
        ) if runs["write22"]],
        *[(f"2 nodes × 2 writers: `submit`, {c}, against raw `send().get()` then reading the partition up to "
           "the ack (the least a write decided in log order needs), writes/s", f"{rate(f'submit22/{c}'):,.0f}",
           f"{rate('rawread22'):,.0f}", f"{common.ratio(rate(f'submit22/{c}'), rate('rawread22')):.2f}x")
          for c in clients],
        *[(f"1 node × 1 writer: `submit`, {c}, writes/s", f"{rate(f'submit11/{c}'):,.0f}", f"{rate('raw11'):,.0f}",
           f"{common.ratio(rate(f'submit11/{c}'), rate('raw11')):.2f}x") for c in clients],
        *[beside(f"`submit` through {first} against {c}: {n}, writes/s", f"{k}/{first}", f"{k}/{c}")
          for c in rest for n, k in (("2 nodes × 2 writers", "submit22"), ("1 node × 1 writer", "submit11"))],
        *[(f"{n}: `submit`, confluent-kafka, against raw confluent-kafka `produce()` and its delivery report, "
           "writes/s", f"{rate(f'{k}/confluent-kafka'):,.0f}", f"{rate(raw):,.0f} (raw confluent-kafka)",
           f"{common.ratio(rate(f'{k}/confluent-kafka'), rate(raw)):.2f}x")
          for n, k, raw in (("2 nodes × 2 writers", "submit22", "rawc22"), ("1 node × 1 writer", "submit11", "rawc11"))
          if runs[raw] and f"{k}/confluent-kafka" in runs],
        *[(f"{n}: raw confluent-kafka against raw kafka-python, writes/s", f"{rate(rc):,.0f} (raw confluent-kafka)",
           f"{rate(r):,.0f}", f"{common.ratio(rate(rc), rate(r)):.2f}x")
          for n, rc, r in (("2 nodes × 2 writers", "rawc22", "raw22"), ("1 node × 1 writer", "rawc11", "raw11"))
          if runs[rc]],
        *[(f"{n}: `submit` as before session 21 (a flush per commit, own records read back), writes/s",
           f"{rate(k):,.0f}",
           f"{rate(raw):,.0f}", f"{common.ratio(rate(k), rate(raw)):.2f}x")
          for n, k, raw in (("2 nodes × 2 writers", "submit22f", "raw22"), ("1 node × 1 writer", "submit11f", "raw11"))
          if runs[k]],
        *[(f"1 node × 1 writer: `submit`, {c}, against raw `send().get()` then reading up to the ack, writes/s",
           f"{rate(f'submit11/{c}'):,.0f}", f"{rate('rawread11'):,.0f}",
           f"{common.ratio(rate(f'submit11/{c}'), rate('rawread11')):.2f}x") for c in clients],
        *[(f"commit-to-visible on the other node at {v['offered']:,.0f} writes/s offered: p50 / p99 ms",
           f"{median(v['lags']):.1f} / {common.pct(v['lags'], 99):.1f}", "-", "-") for v in visibles],
        *[(f"commit-to-visible as before session 21, at {v['offered']:,.0f} writes/s offered: "
           "p50 / p99 ms", f"{median(v['lags']):.1f} / {common.pct(v['lags'], 99):.1f}", "-", "-") for v in flushed],
    ]  # fmt: skip
    loads = [r["load"] for v in runs.values() for r in v]
    notes = [
        f"{args.passes} interleaved passes of {args.seconds:g} s per throughput row (medians); per pass: "
        + "; ".join(f"{k} " + ", ".join(f"{r['rate']:,.0f}" for r in v) for k, v in runs.items() if v),
        f"load average (1 min) after each throughput round: {min(loads):.1f}–{max(loads):.1f}" if loads else "",
        f"the `submit` rows' arms: each node's log.kafka_client ({', '.join(clients)}), "
        "their order swapped every pass; "
        "the raw rows: kafka-python",
        (
            "visibility rows: " + ", ".join(f"{v['writes']}" for v in visibles) + f" applied writes over "
            f"{args.visible_seconds:g} s, each submitted from a pool of 64 threads so none waits for the one before; "
            "the writing and the reading node each a process of its own"
        )
        if visibles
        else "",
        f"the raw read-back rows: each thread's own consumer (no group, fetch wait {BUSY_WAIT_MS} ms) reads the "
        "partition on until it has read the record just acknowledged",
        f"writes are node.put by key (mode update), half on a writer's own keys and half on {SHARED} keys all "
        "writers share; raw producers send the same intent records (acks=all, idempotent, linger 0)",
        "broker: tansu (memory-only) on loopback, on the same 2-core machine as every producer and node",
    ]
    title = "Kafka writes from several nodes: intents vs raw kafka-python (#38)"
    common.record(title, rows, notes, raw="raw kafka-python")


if __name__ == "__main__":
    main()
