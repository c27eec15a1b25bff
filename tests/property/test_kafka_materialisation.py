"""A Kafka log's materialisation against an embedded replay (store/kafka/materialiser.py).

Random programs of graph writes (planes, nodes, edges, updates, deletes, drops, multi-commit
writes, writes that fail) run twice: once on an embedded database, once through a real tansu
broker by two nodes taking turns, each writing on its own copy. Then every copy — the two
writers' and a third node that only reads the topic — must hold byte for byte the embedded file's
projection (every version of every record: time travel included) and the same commits, and each
write must have had the same outcome (value or error) on both.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import hypothesis.strategies as st
import pytest
from hypothesis import HealthCheck, given, settings

import drsg
from drsg.kernel.errors import DrsgError
from drsg.store.database import Database
from drsg.store.kafka.database import KafkaDatabase
from drsg.store.transaction import WriteTx
from tests.support.kafka_broker import Broker
from tests.support.kafka_nodes import tables

PLANES = ["startup", "alpha", "beta"]
KEYS = ["ada", "bob", "cy", "dé"]
LABELS = ["Person", "Org"]
EXAMPLES = int(os.environ.get("DRSG_KAFKA_EXAMPLES", "12"))

Op = Callable[[WriteTx], Any]


def commits(db: Database) -> list[tuple[int, list[Any], dict[str, Any]]]:
    return [(c.seq, [m.to_json() for m in c.mutations], c.origin) for c in db.commits()]


def _node(plane: str, key: str, labels: list[str], n: int) -> Op:
    return lambda tx: tx.create_node(tx.plane(plane), key, labels, {"n": n})


def _update(plane: str, key: str, n: int) -> Op:
    return lambda tx: tx.update_node(tx.plane(plane), f"@{key}", {"n": n, "u": True})


def _delete(plane: str, key: str) -> Op:
    return lambda tx: tx.delete_node(tx.plane(plane), f"@{key}")


def _edge(plane: str, src: str, dst: str) -> Op:
    return lambda tx: tx.create_edge(tx.plane(plane), f"@{src}", f"@{dst}", "KNOWS", {"w": 1})


def _plane(name: str) -> Op:
    return lambda tx: tx.create_plane(name)


def _drop(name: str) -> Op:
    return lambda tx: tx.drop_plane(name)


def _several(plane: str, keys: list[str]) -> Op:
    """One write of several commits (as an import's): all of them or none."""

    def run(tx: WriteTx) -> None:
        for i, key in enumerate(keys):
            if i:
                tx.commit_point()
            tx.put_node(tx.plane(plane), key, ["Person"], {"i": i}, mode="update")

    return run


_p, _k = st.sampled_from(PLANES), st.sampled_from(KEYS)
ops = st.one_of(
    st.builds(_node, _p, _k, st.lists(st.sampled_from(LABELS), max_size=2), st.integers(0, 9)),
    st.builds(_update, _p, _k, st.integers(0, 9)),
    st.builds(_delete, _p, _k),
    st.builds(_edge, _p, _k, _k),
    st.builds(_plane, st.sampled_from(PLANES[1:])),
    st.builds(_drop, st.sampled_from(PLANES[1:])),
    st.builds(_several, _p, st.lists(_k, min_size=2, max_size=4)),
)


def outcome(db: Database, op: Op) -> tuple[str, Any]:
    try:
        return "ok", db.write(op, {"via": "test"}).value
    except DrsgError as exc:
        return type(exc).__name__, None


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    with Broker() as started:
        yield started


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(program=st.lists(ops, min_size=1, max_size=12))
def test_every_copy_of_a_kafka_log_equals_an_embedded_replay(
    broker: Broker, tmp_path_factory: pytest.TempPathFactory, program: list[Op]
) -> None:
    folder: Path = tmp_path_factory.mktemp("kafka")
    url = broker.url(f"prop-{uuid.uuid4().hex[:12]}")
    embedded = drsg.open(folder / "embedded.drsg")
    nodes = [drsg.open(folder / f"node{i}.drsg", log=url) for i in range(2)]
    try:
        for i, op in enumerate(program):
            writer = nodes[i % 2]
            # seen the other's commits first: a stale commit would take a seq the embedded run has not
            # (the race itself: tests/integration/test_kafka_database.py)
            writer.catch_up(embedded.head())
            assert outcome(writer, op) == outcome(embedded, op)
        reader = KafkaDatabase(folder / "reader.drsg", url)
        try:
            for copy in (*nodes, reader):
                assert isinstance(copy, KafkaDatabase)
                copy.catch_up(embedded.head())
                assert copy.head() == embedded.head()
                assert commits(copy) == commits(embedded)
                assert tables(copy) == tables(embedded)
                assert copy.poison_records == 0
        finally:
            reader.close()
    finally:
        embedded.close()
        for node in nodes:
            node.close()
