"""The log on Kafka (store/kafka/log.py, store/kafka/database.py) against raw kafka-python, on a
tansu broker on loopback started for the run.

Every commit creates one node with a line of real text (``text``, label ``Line``).

- **Commits/s, one durable commit per call.** Raw: ``KafkaProducer(acks="all")`` (idempotent, as
  ours), ``send(…).get()`` one record at a time, of the very bytes our log produces (commit records
  encoded ahead). Then ``KafkaLog.append`` (the Log port: encode, send, wait for the ack) and
  ``KafkaDatabase.write`` (the whole write: run the function on the local copy, produce with its
  base, wait until the copy has materialised it). Rounds alternate raw / log / database so a load
  change hits all three.
- **Commit-to-materialised lag at an offered rate** (default 1,000 commits/s): a raw producer
  sends commit records (no base: resolved facts) paced to the rate, without waiting for each ack; a
  node's materialiser follows the topic into its LMDB copy. Lag per commit = the moment the node's
  local head passed it minus the moment it was sent (and minus its ack). That is what a read on the
  node waits for. Commit-to-searchable: the node's keyword index on ``text`` (an ``IndexSet``
  started as ``drsg serve`` starts it, on the copy) — the moment a background catch-up that reached
  the commit returned, minus its send. And through the consumer group: a ``drsg workers`` member
  (workers/index_group.py, in a thread) on a second node's copy, owning every shard — the moment
  its catch-up that reached the commit returned, minus its send.

    .venv/bin/python -m tests.bench.bench_kafka [--commits 2000] [--rate 1000] [--seconds 10]
"""

from __future__ import annotations

import argparse
import threading
import time
import uuid
from typing import Any

from kafka import KafkaProducer

import drsg
from drsg.store.backends import open_log
from drsg.store.kafka.database import KafkaDatabase
from drsg.store.log import encode
from drsg.store.mutations import NodePut
from drsg.workers.index_group import GroupOptions, IndexGroup
from drsg.workers.manager import IndexSet
from tests.bench import common
from tests.support.kafka_broker import Broker


def raw_round(broker: Broker, topic: str, records: list[bytes]) -> float:
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all", enable_idempotence=True, linger_ms=0)
    try:
        producer.send(topic, records[0], partition=0).get(10)  # connected, the producer id known
        began = time.perf_counter()
        for value in records:
            producer.send(topic, value, partition=0).get(10)
        return len(records) / (time.perf_counter() - began)
    finally:
        producer.close()


def pipelined_round(broker: Broker, topic: str, records: list[bytes]) -> float:
    """What one partition carries when nothing waits for each ack (the producer batches): the
    ceiling a single ordered log has on this broker, against what drsg's writers ask of it."""
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all", enable_idempotence=True, linger_ms=5)
    try:
        producer.send(topic, records[0], partition=0).get(10)
        began = time.perf_counter()
        for value in records:
            producer.send(topic, value, partition=0)
        producer.flush(60)
        return len(records) / (time.perf_counter() - began)
    finally:
        producer.close()


def log_round(broker: Broker, topic: str, lines: list[str]) -> float:
    log = open_log(broker.url(topic))
    try:
        log.append([NodePut(0, 0, "warm", ["Line"], {"text": "warm"})])
        began = time.perf_counter()
        for i, line in enumerate(lines):
            log.append([NodePut(0, i + 1, f"k{i}", ["Line"], {"text": line})])
        return len(lines) / (time.perf_counter() - began)
    finally:
        log.close()


def database_round(broker: Broker, topic: str, lines: list[str]) -> float:
    path = common.fresh_dir(f"kafka-{topic}") / "node.drsg"
    db = drsg.open(path, log=broker.url(topic))
    try:
        began = time.perf_counter()
        for i, line in enumerate(lines):
            db.write(lambda tx, i=i, line=line: tx.create_node(tx.plane("startup"), f"k{i}", ["Line"], {"text": line}))
        return len(lines) / (time.perf_counter() - began)
    finally:
        db.close()


def first_reached(sent: dict[int, float], moments: list[tuple[float, int]]) -> list[float]:
    """Per commit, ms from its send to the first catch-up that reached it."""
    found, reached = [], iter(moments)
    moment = next(reached, None)
    for seq in sorted(sent):
        while moment is not None and moment[1] < seq:
            moment = next(reached, None)
        if moment is None:
            break
        found.append((moment[0] - sent[seq]) * 1000)
    return found


def lag_run(broker: Broker, lines: list[str], rate: float, seconds: float) -> dict[str, Any]:
    topic = f"bench-lag-{uuid.uuid4().hex[:8]}"
    folder = common.fresh_dir(f"kafka-{topic}")
    db = drsg.open(folder / "node.drsg", log=broker.url(topic))
    assert isinstance(db, KafkaDatabase)
    db.write(lambda tx: tx.declare_index(tx.plane("startup"), "keyword", "Line", "text", {}))
    indexes = IndexSet(db)
    indexes.catch_up()
    searchable: list[tuple[float, int]] = []  # (when a background catch-up returned, the head it reached)
    common.timed_catch_ups(indexes, searchable, time.perf_counter)
    indexes.start()  # as `drsg serve` starts it on the node's copy
    worker_node = drsg.open(folder / "worker.drsg", log=broker.url(topic))  # a worker machine's own copy
    assert isinstance(worker_node, KafkaDatabase)
    member = IndexGroup(worker_node, worker_node.kafka, GroupOptions(index_dir=folder / "shared", shards=4))
    through_group: list[tuple[float, int]] = []
    common.timed_catch_ups(member.indexes, through_group, time.perf_counter)
    leave = threading.Event()
    member_thread = threading.Thread(target=member.run, args=(leave,), daemon=True)
    member_thread.start()
    joined = time.monotonic()
    while not member.owned and time.monotonic() < joined + 60:
        time.sleep(0.05)
    joined = time.monotonic() - joined
    base = db.head()  # the startup plane's and the index declaration's commits
    total = int(rate * seconds)
    sent: dict[int, float] = {}
    acked: dict[int, float] = {}
    seen: dict[int, float] = {}
    stop = threading.Event()

    def watch() -> None:  # when the node's local head passes each commit
        head = base
        while not stop.is_set() or head < base + total:
            moved = db.log.wait(head, 0.5)
            now = time.perf_counter()
            for seq in range(head + 1, moved + 1):
                seen[seq] = now
            head = max(head, moved)
            if stop.is_set() and moved <= head and len(seen) >= total:
                return

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all", enable_idempotence=True, linger_ms=0)
    records = [
        encode(int(time.time() * 1000), {}, [NodePut(0, i + 1, f"k{i}", ["Line"], {"text": lines[i % len(lines)]})])
        for i in range(total)
    ]
    began = time.perf_counter()
    for i, value in enumerate(records):
        due = began + i / rate
        while (wait := due - time.perf_counter()) > 0:
            time.sleep(wait)
        seq = base + i + 1
        sent[seq] = time.perf_counter()
        future = producer.send(db.kafka.topic, value, partition=0)
        future.add_callback(lambda _meta, seq=seq: acked.__setitem__(seq, time.perf_counter()))
    producer.flush(30)
    offered = total / (time.perf_counter() - began)
    deadline = time.monotonic() + 60

    def reached(moments: list[tuple[float, int]]) -> bool:
        return bool(moments) and moments[-1][1] >= base + total

    while (len(seen) < total or not reached(searchable) or not reached(through_group)) and time.monotonic() < deadline:
        time.sleep(0.05)
    stop.set()
    db.log.interrupt()
    watcher.join(5)
    producer.close()
    leave.set()
    member_thread.join(30)
    indexes.close()
    hits = indexes.get(0, "keyword", "Line", "text")
    indexed = hits.seq if hits is not None else 0
    grouped = member.indexes.get(0, "keyword", "Line", "text")
    db.close()
    worker_node.close()
    return {
        "offered": offered,
        "from_send": [(seen[s] - sent[s]) * 1000 for s in sent if s in seen],
        "from_ack": [(seen[s] - acked[s]) * 1000 for s in sent if s in seen and s in acked],
        "searchable": first_reached(sent, searchable),
        "group": first_reached(sent, through_group),
        "joined": joined,
        "missing": total - sum(1 for s in sent if s in seen),
        "indexed": indexed - base,
        "group_indexed": (grouped.seq if grouped is not None else 0) - base,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--commits", type=int, default=2000, help="commits per round of the throughput rows")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--rate", type=float, default=1000.0, help="offered commits/s of the lag row")
    ap.add_argument("--seconds", type=float, default=10.0, help="length of the lag row")
    args = ap.parse_args()
    lines = common.text_lines(args.commits)
    rates: dict[str, list[float]] = {"raw": [], "log": [], "db": [], "pipelined": []}
    with Broker() as broker:
        for _ in range(args.rounds):
            records = [
                encode(int(time.time() * 1000), {}, [NodePut(0, i + 1, f"k{i}", ["Line"], {"text": line})])
                for i, line in enumerate(lines)
            ]
            rates["raw"].append(raw_round(broker, f"bench-raw-{uuid.uuid4().hex[:8]}", records))
            rates["log"].append(log_round(broker, f"bench-log-{uuid.uuid4().hex[:8]}", lines))
            rates["db"].append(database_round(broker, f"bench-db-{uuid.uuid4().hex[:8]}", lines))
            rates["pipelined"].append(pipelined_round(broker, f"bench-pipe-{uuid.uuid4().hex[:8]}", records))
        lag = lag_run(broker, lines, args.rate, args.seconds)
    raw, log_rate, db_rate, pipelined = (sum(v) / len(v) for v in rates.values())
    p = common.pct
    rows = [
        ("commits/s, KafkaLog.append (one acked commit per call)", f"{log_rate:,.0f}", f"{raw:,.0f}",
         f"{common.ratio(log_rate, raw):.2f}x"),
        ("commits/s, KafkaDatabase.write (made on the copy, produced, materialised)", f"{db_rate:,.0f}",
         f"{raw:,.0f}", f"{common.ratio(db_rate, raw):.2f}x"),
        ("the one partition's ceiling: the same records pipelined (no wait per ack, linger 5 ms), records/s",
         "-", f"{pipelined:,.0f}", "-"),
        (f"commit-to-materialised lag at {lag['offered']:,.0f} commits/s offered, from send: p50 / p99 ms",
         f"{p(lag['from_send'], 50):.1f} / {p(lag['from_send'], 99):.1f}", "-", "-"),
        ("the same, from the producer's ack: p50 / p99 ms",
         f"{p(lag['from_ack'], 50):.1f} / {p(lag['from_ack'], 99):.1f}", "-", "-"),
        ("commit-to-searchable (the node's keyword index on its copy), from send: p50 / p99 ms",
         f"{p(lag['searchable'], 50):.1f} / {p(lag['searchable'], 99):.1f}", "-", "-"),
        ("commit-to-searchable through the consumer group (a `drsg workers` member on a second copy), "
         "from send: p50 / p99 ms", f"{p(lag['group'], 50):.1f} / {p(lag['group'], 99):.1f}", "-", "-"),
    ]  # fmt: skip
    notes = [
        f"{args.commits} commits per round, {args.rounds} rounds (raw {', '.join(f'{r:,.0f}' for r in rates['raw'])}; "
        f"log {', '.join(f'{r:,.0f}' for r in rates['log'])}; db {', '.join(f'{r:,.0f}' for r in rates['db'])})",
        f"lag rows: {len(lag['from_send'])} commits over {args.seconds:g} s, {lag['missing']} not materialised "
        f"in time; the keyword index (tantivy, IndexSet as `drsg serve` runs it) applied {lag['indexed']}, "
        f"the group member's {lag['group_indexed']} (it was given its shards {lag['joined']:.1f} s after joining)",
        "broker: tansu (memory-only) on loopback, on the same machine as producer and node",
    ]
    common.record(
        "Kafka log: commits/s, commit-to-materialised and -searchable lag", rows, notes, raw="raw kafka-python"
    )


if __name__ == "__main__":
    main()
