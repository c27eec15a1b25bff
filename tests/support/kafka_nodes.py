"""Kafka nodes for tests: a node's projection as raw tables (:func:`tables`, equal on every node that
followed the same topic), its keys, a record produced as another producer would, and `drsg serve` on a
Kafka log beside a node in this process (:func:`serve_on_kafka`)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from kafka import KafkaProducer

import drsg
from drsg.store.database import Database
from drsg.store.kafka.database import KafkaDatabase
from tests.support.kafka_broker import Broker
from tests.support.server import RunningServer, start_server

PROJECTION = ("planes", "plane_names", "nodes", "keys", "labels", "edges", "out", "in", "tally", "indexes")


def tables(db: Database) -> dict[str, list[tuple[bytes, bytes]]]:
    """Every key and value of the projection's tables."""
    with db.env.read() as txn:
        return {name: list(txn.cursor(db=db.env.dbs[name])) for name in PROJECTION}


def keys_in(db: Database, plane: str = "startup") -> list[str | None]:
    with db.snapshot() as snap:
        return sorted((n.key for n in snap.nodes(snap.plane(plane).id)), key=str)


def produce(broker: Broker, topic: str, value: bytes, headers: dict[str, bytes] | None = None) -> int:
    """One record on partition 0, as another producer would write it; its seq."""
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all")
    try:
        sent = producer.send(topic, value, partition=0, headers=list((headers or {}).items()) or None)
        return int(sent.get(10).offset) + 1
    finally:
        producer.close()


@contextmanager
def serve_on_kafka(tmp_path: Path, url: str) -> Iterator[tuple[RunningServer, KafkaDatabase]]:
    """`drsg serve` on the Kafka log ``url``, and another node on it in this process; both closed after."""
    server = start_server(tmp_path / "served.drsg", tmp_path, env={"DRSG_LOG_URL": url}, name="kafka")
    other = drsg.open(tmp_path / "other.drsg", log=url)
    assert isinstance(other, KafkaDatabase)
    try:
        yield server, other
    finally:
        other.close()
        assert server.stop() == 0
