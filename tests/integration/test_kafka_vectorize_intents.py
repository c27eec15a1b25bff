"""vectorize on a Kafka node is intents (drsg.pipeline.vectorize ``WRITE_OP``): each batch's vectors
travel as data with the stamp of the text they were made from, and where the record lands a node
deleted since, or whose text changed since, is skipped — alike on every node (the next run embeds it).
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

import drsg
from drsg.kernel.values import Vector
from drsg.models.testing import BagOfWordsEmbedder
from drsg.pipeline.digest.sync import fact_text
from drsg.pipeline.vectorize import WRITE_OP, embed_nodes, vectorize
from drsg.pipeline.vectorize_plane import vectorize_plane
from drsg.store.database import Database
from drsg.store.intents import Intent, decode_intent, is_intent
from drsg.store.kafka.database import KafkaDatabase
from tests.support.kafka_broker import Broker
from tests.support.kafka_nodes import tables


@pytest.fixture
def url(kafka_broker: Broker) -> str:
    return kafka_broker.url(f"vectorize-intents-{uuid.uuid4().hex[:12]}")


def node_of(folder: Path, name: str, url: str) -> KafkaDatabase:
    db = drsg.open(folder / f"{name}.drsg", log=url)
    assert isinstance(db, KafkaDatabase)
    return db


class Meanwhile(BagOfWordsEmbedder):
    """An embedder during whose first call another node deletes one node and edits another's text."""

    def __init__(self, other: Database) -> None:
        super().__init__()
        self.other: Database | None = other

    def embed(self, texts: list[str]) -> list[Vector]:
        if self.other is not None:
            other, self.other = self.other, None
            other.submit(Intent("node.delete", {"plane": "startup", "node": "n1"}))
            other.submit(Intent("node.update", {"plane": "startup", "node": "n2", "set": {"text": "rewritten"}}))
        return super().embed(texts)


def vectors(db: Database) -> dict[str | None, bool]:
    with db.snapshot() as snap:
        return {n.key: isinstance(n.props.get("embedding"), Vector) for n in snap.nodes(0)}


def test_vectorize_is_intents_and_skips_alike_what_changed_meanwhile(tmp_path: Path, url: str) -> None:
    a, b = node_of(tmp_path, "a", url), node_of(tmp_path, "b", url)
    embedded = drsg.open(tmp_path / "embedded.drsg")
    try:
        for i in range(6):
            a.submit(
                Intent(
                    "node.put",
                    {"plane": "startup", "key": f"n{i}", "labels": ["Doc"], "properties": {"text": f"doc {i}"}},
                )
            )
        report = vectorize(a, Meanwhile(b), "startup", "text", "embedding", batch=4)
        assert report.embedded == 4 and len(report.seqs) == 2  # n1 gone, n2 rewritten: skipped where they landed
        ops = [decode_intent(r.seq, r.value or b"")[2].op for r in a.kafka.records(1) if is_intent(r.value)]
        assert ops.count(WRITE_OP) == 2 and ops[-1] == "plane.set_props"  # produced as data, not commits
        head = max(a.kafka.head(), b.kafka.head())
        a.catch_up(head)
        b.catch_up(head)
        assert tables(a) == tables(b)
        assert vectors(a) == {"n0": True, "n2": False, "n3": True, "n4": True, "n5": True}
        for record in a.kafka.records(1):  # the intents in log order on an embedded store: the same graph
            if is_intent(record.value):
                _, origin, intent = decode_intent(record.seq, record.value or b"")
                embedded.submit(intent, origin)
        assert vectors(embedded) == vectors(a)
        # the next run embeds what was skipped (the plane-wide rule too: JSON-RPC's plane.vectorize)
        again, _ = vectorize_plane(a, BagOfWordsEmbedder(), "startup")
        assert again.embedded == 5  # its text rule differs from --from text's: every node once
        last = [r for r in a.kafka.records(1) if is_intent(r.value)][-1]
        assert decode_intent(last.seq, last.value or b"")[2].op == "batch"  # its index declarations, by label
        b.catch_up(a.kafka.head())
        assert tables(a) == tables(b)
        with b.snapshot() as snap:
            assert snap.index(0, "vector", "Doc", "embedding") is not None
        # serve watch's folds embed their facts by their own rule, as intents too
        folded = embed_nodes(a, BagOfWordsEmbedder(), "startup", fact_text, "fact_vec", keys=["n0"], rule="fact_text")
        assert folded.embedded == 1
        last = [r for r in a.kafka.records(1) if is_intent(r.value)][-2]  # then the plane's embedder record
        assert decode_intent(last.seq, last.value or b"")[2].args["rule"] == "fact_text"
        b.catch_up(a.kafka.head())
        assert tables(a) == tables(b)
    finally:
        embedded.close()
        a.close()
        b.close()
