"""The HNSW vector index against the exact scan, on real embeddings, through a history of writes."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import numpy as np
import pytest

import drsg
from drsg.kernel.errors import BadValue
from drsg.kernel.values import Vector
from drsg.store.transaction import WriteTx
from drsg.workers.exact import exact_vector_search
from drsg.workers.manager import IndexSet
from drsg.workers.search import Searcher
from tests.support.glove import rows

N = 4000
K = 10


def _build_history(path: Path, metric: str = "cosine") -> tuple[drsg.Database, np.ndarray]:  # type: ignore[name-defined]
    """Inserts, then updates (new vectors), deletes and relabels, in many commits."""
    db = drsg.open(path)
    plane = db.plane("startup")
    vectors = rows(0, N + 1000)
    db.write(lambda tx: tx.declare_index(plane, "vector", "Word", "embedding", {"metric": metric}))

    def insert(tx: WriteTx) -> None:
        for i in range(N):
            tx.create_node(plane, f"w{i}", ["Word"], {"embedding": Vector.of(vectors[i])})
            if i % 500 == 499:
                tx.commit_point()

    db.write(insert)
    rng = random.Random(7)
    for _ in range(10):

        def churn(tx: WriteTx) -> None:
            for _ in range(40):
                i = rng.randrange(N)
                node = tx.view.node_by_key(plane.id, f"w{i}")
                if node is None:
                    continue
                action = rng.random()
                if action < 0.5:
                    tx.update_node(plane, node.id, {"embedding": Vector.of(vectors[N + rng.randrange(1000)])})
                elif action < 0.8:
                    tx.delete_node(plane, node.id)
                else:
                    tx.update_node(plane, node.id, labels=["Retired"])  # leaves the index, stays a node

        db.write(churn)
    return db, vectors


def _recall(db, searcher: Searcher, queries: np.ndarray, metric: str = "cosine") -> float:  # type: ignore[no-untyped-def]
    found = total = 0
    for q in queries:
        query = Vector.of(q)
        got = {h.node.id for h in searcher.vector("startup", "Word", "embedding", query, metric, K)}
        with db.snapshot() as snap:
            exact = {i for i, _ in exact_vector_search(snap, 0, "Word", "embedding", query, metric, K)}
        found += len(got & exact)
        total += len(exact)
    return found / total


@pytest.mark.parametrize("metric", ["cosine", "dot", "l2"])
def test_recall_after_inserts_updates_and_deletes(tmp_path: Path, metric: str) -> None:
    db, _ = _build_history(tmp_path / "g.drsg", metric)
    searcher = Searcher(db)
    queries = rows(20000, 100)
    recall = _recall(db, searcher, queries, metric)
    assert recall >= 0.95, f"recall@10 {recall:.3f} with {metric}"
    # The index holds exactly the live Word nodes with a vector.
    worker = searcher.indexes.get(0, "vector", "Word", "embedding")
    with db.snapshot() as snap:
        live = {n.id for n in snap.nodes(0, "Word")}
    assert worker is not None and worker.live == live  # type: ignore[attr-defined]


def test_same_results_after_restart_and_after_rebuild(tmp_path: Path) -> None:
    path = tmp_path / "g.drsg"
    db, _ = _build_history(path)
    queries = [Vector.of(q) for q in rows(30000, 50)]
    indexes = IndexSet(db)
    first = [
        [
            (h.node.id, round(h.score or 0, 5))
            for h in Searcher(db, indexes).vector("startup", "Word", "embedding", q, k=K)
        ]
        for q in queries
    ]
    assert indexes.save() == 1
    db.close()

    db = drsg.open(path)
    reopened = IndexSet(db)
    reopened.catch_up()
    worker = reopened.get(0, "vector", "Word", "embedding")
    assert worker is not None and not worker.dirty  # loaded from the sidecar, not rebuilt
    again = [
        [
            (h.node.id, round(h.score or 0, 5))
            for h in Searcher(db, reopened).vector("startup", "Word", "embedding", q, k=K)
        ]
        for q in queries
    ]
    assert again == first

    shutil.rmtree(f"{path}.hnsw")
    rebuilt_set = IndexSet(db, ef_search=400)  # a rebuild inserts in another order: compare near-exactly
    rebuilt = [
        [h.node.id for h in Searcher(db, rebuilt_set).vector("startup", "Word", "embedding", q, k=K)] for q in queries
    ]
    with db.snapshot() as snap:
        exact = [[i for i, _ in exact_vector_search(snap, 0, "Word", "embedding", q, "cosine", K)] for q in queries]
    assert rebuilt == exact


def test_incremental_catch_up_sees_every_write(tmp_path: Path) -> None:
    db = drsg.open(tmp_path / "g.drsg")
    plane = db.plane("startup")
    vectors = rows(0, 300)
    db.write(lambda tx: tx.declare_index(plane, "vector", "Word", "embedding", {"metric": "cosine"}))
    searcher = Searcher(db)
    for i in range(300):
        db.write(lambda tx, i=i: tx.create_node(plane, f"w{i}", ["Word"], {"embedding": Vector.of(vectors[i])}))
        if i % 50 == 0:  # read-your-writes: the node just written is its own nearest neighbour
            top = searcher.vector("startup", "Word", "embedding", Vector.of(vectors[i]), k=1)
            assert top[0].node.key == f"w{i}"
    db.write(lambda tx: tx.delete_node(plane, "w0"))
    top = searcher.vector("startup", "Word", "embedding", Vector.of(vectors[0]), k=3)
    assert "w0" not in [h.node.key for h in top]


def test_wrong_dimension_is_rejected_at_write_time(tmp_path: Path) -> None:
    db = drsg.open(tmp_path / "g.drsg")
    plane = db.plane("startup")
    db.write(lambda tx: tx.declare_index(plane, "vector", "Word", "embedding", {"metric": "cosine"}))
    db.write(lambda tx: tx.create_node(plane, "a", ["Word"], {"embedding": Vector.of(rows(0, 1)[0])}))
    head = db.head()
    with pytest.raises(BadValue, match=r"has 3 dims, but the vector index on Word\.embedding holds 50-dim"):
        db.write(lambda tx: tx.create_node(plane, "b", ["Word"], {"embedding": Vector.of([1, 2, 3])}))
    assert db.head() == head
    # Other labels are not bound by Word's index.
    db.write(lambda tx: tx.create_node(plane, "c", ["Other"], {"embedding": Vector.of([1, 2, 3])}))


def test_as_of_searches_the_snapshot_exactly(tmp_path: Path) -> None:
    db = drsg.open(tmp_path / "g.drsg")
    plane = db.plane("startup")
    v = rows(0, 20)
    db.write(lambda tx: tx.declare_index(plane, "vector", "Word", "embedding", {"metric": "cosine"}))
    first = db.write(
        lambda tx: [tx.create_node(plane, f"w{i}", ["Word"], {"embedding": Vector.of(v[i])}) for i in range(10)]
    )
    db.write(lambda tx: tx.delete_node(plane, "w3"))
    searcher = Searcher(db)
    now = [h.node.key for h in searcher.vector("startup", "Word", "embedding", Vector.of(v[3]), k=3)]
    then = [h.node.key for h in searcher.vector("startup", "Word", "embedding", Vector.of(v[3]), k=3, as_of=first.seq)]
    assert "w3" not in now and then[0] == "w3"


def test_no_declared_index_falls_back_to_the_exact_scan(tmp_path: Path) -> None:
    db = drsg.open(tmp_path / "g.drsg")
    plane = db.plane("startup")
    v = rows(0, 200)
    db.write(lambda tx: [tx.create_node(plane, f"w{i}", ["Word"], {"e": Vector.of(v[i])}) for i in range(200)])
    hits = Searcher(db).vector("startup", None, "e", Vector.of(v[5]), "cosine", 5)
    with db.snapshot() as snap:
        exact = exact_vector_search(snap, 0, None, "e", Vector.of(v[5]), "cosine", 5)
    assert [(h.node.id, pytest.approx(h.score)) for h in hits] == [(i, pytest.approx(s)) for i, s in exact]
    assert hits[0].node.key == "w5" and hits[0].score == pytest.approx(1.0, abs=1e-6)
