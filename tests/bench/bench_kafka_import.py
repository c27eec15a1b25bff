"""An import on a Kafka node (issue #38 item 1): as intents (its lines in chunk records, decided by
every node where its closing record lands, drsg/api/imports.py) against the staged group it replaced
(made on the node's copy, produced as one group, applied only if nothing landed in between: still
what the store-level ``drsg.store.jsonl.import_jsonl`` does on a Kafka node), and the embedded
import of the same file, on a tansu broker on loopback started for the run.

Each pass, interleaved, every load into a fresh topic and fresh copies: embedded; Kafka staged group
alone; Kafka intents alone; each Kafka one again while another node (the same process, a thread)
writes ``node.put`` back to back. Seconds until the import returns on node A, and until node B's
copy holds it; what happened to the import under the other writer, and how many writes B made.

    .venv/bin/python -m tests.bench.bench_kafka_import [--nodes 20000] [--passes 3]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import drsg
from drsg.kernel.errors import DrsgError
from drsg.store.intents import Intent
from drsg.store.jsonl import import_jsonl as staged_import
from drsg.store.kafka.database import KafkaDatabase
from tests.bench import common
from tests.support.kafka_broker import Broker


def graph_file(path: Path, nodes: int) -> Path:
    texts = common.text_lines(nodes)
    with path.open("w") as fh:
        for i in range(nodes):
            line = {"external_key": f"n{i}", "labels": ["Doc"], "properties": {"text": texts[i % len(texts)]}}
            fh.write(json.dumps(line) + "\n")
        for i in range(nodes - 1):
            fh.write(json.dumps({"src_key": f"n{i}", "dst_key": f"n{i + 1}", "type": "NEXT"}) + "\n")
    return path


def node(folder: Path, name: str, url: str) -> KafkaDatabase:
    db = drsg.open(folder / f"{name}.drsg", log=url)
    assert isinstance(db, KafkaDatabase)
    return db


def kafka_load(broker: Broker, folder: Path, source: Path, way: str, busy: bool) -> tuple[float, float, str, int]:
    """(seconds to return on A, seconds until B holds it, outcome, writes B made meanwhile)."""
    topic = f"bench-import-{uuid.uuid4().hex[:10]}"
    url = broker.url(topic)
    a, b = node(folder, f"a-{topic}", url), node(folder, f"b-{topic}", url)
    stop, writes = threading.Event(), [0]

    def write_steadily() -> None:
        while not stop.is_set():
            b.submit(Intent("node.put", {"plane": "startup", "key": f"w{writes[0]}", "labels": ["W"]}))
            writes[0] += 1

    writer = threading.Thread(target=write_steadily)
    load: Callable[[], object] = (
        (lambda: a.import_jsonl("startup", source))
        if way == "intents"
        else (lambda: staged_import(a, source, "startup"))
    )
    try:
        if busy:
            writer.start()
        began = time.perf_counter()
        try:
            load()
            outcome = "landed"
        except DrsgError as exc:
            outcome = f"refused ({type(exc).__name__})"
        returned = time.perf_counter() - began
        stop.set()
        if busy:
            writer.join()
        b.catch_up(a.kafka.head())
        visible = time.perf_counter() - began
        return returned, visible, outcome, writes[0]
    finally:
        stop.set()
        a.close()
        b.close()


def embedded_load(folder: Path, source: Path) -> float:
    with drsg.open(folder / f"embedded-{uuid.uuid4().hex[:6]}.drsg") as db:
        began = time.perf_counter()
        db.import_jsonl("startup", source)
        return time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=20_000)
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args()
    started = dt.datetime.now(dt.UTC)
    folder = common.fresh_dir("kafka_import")
    source = graph_file(folder / "in.jsonl", args.nodes)
    lines = 2 * args.nodes - 1
    runs: dict[str, list[tuple[float, float, str, int]]] = {}
    embedded: list[float] = []
    loads: list[float] = []
    with Broker() as broker:
        for _ in range(args.passes):
            loads.append(os.getloadavg()[0])
            embedded.append(embedded_load(folder, source))
            for way in ("staged", "intents"):
                for busy in (False, True):
                    runs.setdefault(f"{way}/{busy}", []).append(kafka_load(broker, folder, source, way, busy))
    med = statistics.median
    table = [
        f"{args.nodes:,} keyed nodes + {args.nodes - 1:,} edges ({lines:,} lines, "
        f"{source.stat().st_size / 1e6:.1f} MB), "
        f"{args.passes} interleaved passes, medians; load average {min(loads):.1f}–{max(loads):.1f} during the passes.",
        "",
        "| load | returns on A (s) | on B's copy (s) | lines/s (B) | outcome per pass | B's writes meanwhile |",
        "|---|---|---|---|---|---|",
        f"| embedded `import_jsonl` | {med(embedded):.2f} | — | {lines / med(embedded):,.0f} | "
        f"landed ×{args.passes} | — |",
    ]
    names = {"staged": "Kafka, staged group (before)", "intents": "Kafka, intents (after)"}
    for way in ("staged", "intents"):
        for busy in (False, True):
            got = runs[f"{way}/{busy}"]
            visible = med(r[1] for r in got)
            outcomes = ", ".join(r[2] for r in got)
            table.append(
                f"| {names[way]}{', B writing' if busy else ''} | {med(r[0] for r in got):.2f} | {visible:.2f} | "
                f"{lines / visible:,.0f} | {outcomes} | {'—' if not busy else ', '.join(str(r[3]) for r in got)} |"
            )
    quiet = {way: med(r[1] for r in runs[f"{way}/False"]) for way in ("staged", "intents")}
    table += [
        "",
        "- intents / staged group, alone (seconds until B holds it, < 1 is faster): "
        f"{quiet['intents'] / quiet['staged']:.2f}×",
        f"- intents alone / embedded (seconds): {quiet['intents'] / med(embedded):.2f}×",
        "- Both nodes and B's writer share this one process (its GIL), on a 2-core machine shared with other work.",
    ]
    common.append_section("Kafka: an import as intents (#38 item 1)", started, table, not args.no_record)


if __name__ == "__main__":
    main()
