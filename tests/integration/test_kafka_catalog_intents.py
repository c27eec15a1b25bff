"""A catalog index run on a Kafka node is an intent (drsg.pipeline.catalog.plane ``WRITE_OP``): the
nodes, edges and vectors it computed travel as data and are reconciled by key where the record
lands, alike on every node — a catalog node another node removed meanwhile is made again there.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

import drsg
from drsg.kernel.errors import BadValue
from drsg.models.testing import BagOfWordsEmbedder
from drsg.pipeline.catalog.model import Catalog, Column, ForeignKey, IndexInfo, Table
from drsg.pipeline.catalog.plane import WRITE_OP, CatalogRun, wanted_graph, write_catalog
from drsg.store.database import Database
from drsg.store.intents import Intent, decode_intent, is_intent
from drsg.store.jsonl import export_lines
from drsg.store.kafka.database import KafkaDatabase
from tests.support.kafka_broker import Broker
from tests.support.kafka_nodes import tables

PLANE = "catalog_app"


@pytest.fixture
def url(kafka_broker: Broker) -> str:
    return kafka_broker.url(f"catalog-intents-{uuid.uuid4().hex[:12]}")


def node_of(folder: Path, name: str, url: str) -> KafkaDatabase:
    db = drsg.open(folder / f"{name}.drsg", log=url)
    assert isinstance(db, KafkaDatabase)
    return db


def schema() -> Catalog:
    users = Table(
        "users",
        comment="people who sign in",
        columns=[Column("id", 1, "INTEGER", primary=True), Column("name", 2, "TEXT", comment="full name")],
        indexes=[IndexInfo("ix_users_name", ["name"], False)],
    )
    orders = Table(
        "orders",
        columns=[Column("id", 1, "INTEGER", primary=True), Column("user_id", 2, "INTEGER")],
        foreign_keys=[ForeignKey(["user_id"], "users", ["id"])],
    )
    return Catalog("sqlite", "app.db", "l1", [users, orders])


def canonical(db: Database) -> list[str]:
    return list(export_lines(db, PLANE, canonical=True))


def ops_in_topic(db: KafkaDatabase) -> list[str]:
    return [decode_intent(r.seq, r.value or b"")[2].op for r in db.kafka.records(1) if is_intent(r.value)]


def test_a_catalog_index_run_is_an_intent_reconciled_by_key_where_it_lands(tmp_path: Path, url: str) -> None:
    a, b = node_of(tmp_path, "a", url), node_of(tmp_path, "b", url)
    embedded = drsg.open(tmp_path / "embedded.drsg")
    try:
        out = write_catalog(a, PLANE, schema(), "app", [], l2_run=False, embedder=BagOfWordsEmbedder())
        assert out["created"] == 7 and out["embedded"] > 0  # 2 tables, 4 columns, 1 index; vectors with them
        assert ops_in_topic(a) == [WRITE_OP]  # produced as what it computed, not as a commit made on a copy
        # a run computed now, decided after another node removed one of the nodes it names
        nodes, edges = wanted_graph(schema(), [])
        run = CatalogRun(PLANE, "app", "sqlite", "app.db", "l1", nodes, edges, None, "2026-12-06T00:00:00+00:00", False)
        b.submit(Intent("node.remove", {"plane": PLANE, "node": "c:users.name"}))
        again = a.submit(Intent(WRITE_OP, run.to_json()), {"via": "catalog.index"})
        assert again.value == {"created": 1, "updated": 0, "deleted": 0, "edges_created": 2, "edges_deleted": 0}
        head = max(a.kafka.head(), b.kafka.head())
        a.catch_up(head)
        b.catch_up(head)
        assert tables(a) == tables(b)  # every copy decided it alike
        with b.snapshot() as snap:
            plane = snap.plane(PLANE)
            name = snap.node_by_key(plane.id, "c:users.name")
            assert name is not None and name.props["comment"] == "full name"
        for record in a.kafka.records(1):  # the topic's intents applied in its order to an embedded store
            if is_intent(record.value):
                _, origin, intent = decode_intent(record.seq, record.value or b"")
                embedded.submit(intent, origin)
        assert canonical(embedded) == canonical(a) == canonical(b)
    finally:
        embedded.close()
        a.close()
        b.close()


def test_a_malformed_catalog_intent_is_refused_alike_and_writes_nothing(tmp_path: Path, url: str) -> None:
    a = node_of(tmp_path, "a", url)
    try:
        head = a.head()
        with pytest.raises(BadValue, match=f"a {WRITE_OP} intent is not an index run's"):
            a.submit(Intent(WRITE_OP, {"plane": PLANE}))
        with a.snapshot() as snap:
            assert snap.find_plane(PLANE) is None and a.head() == head + 1  # an empty commit naming the refusal
    finally:
        a.close()
