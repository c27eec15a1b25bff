"""The vector index adds what it applies in batches, on every core, and calibrates from memory.

Upserts wait in the worker until a flush (or a full chunk) and go to hnswlib in one multi-threaded
``add_items`` call for the nodes it holds and one for the new ones; removals drop a waiting upsert.
A history applied in one batch must leave the index exactly as applying it commit by commit does
(real GloVe vectors, a real database), and the first calibration after a build reads the vectors it
has just added instead of asking hnswlib for them back.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import hnswlib
import numpy as np
import pytest

import drsg
from drsg.kernel.cpus import cores
from drsg.kernel.values import Json, Vector
from drsg.store.database import Database
from drsg.store.records import IndexDecl
from drsg.store.transaction import WriteTx
from drsg.workers import vector as vector_module
from drsg.workers.recall import exact_top, smallest
from drsg.workers.vector import VectorIndex
from tests.support.glove import rows

LABEL, PROP = "Word", "embedding"


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    database = drsg.open(tmp_path / "g.drsg")
    yield database
    database.close()


def _history(db: Database, nodes: int, churns: int) -> tuple[IndexDecl, dict[int, np.ndarray]]:
    """Nodes created, then commits that update, delete, relabel away and back, unset and set again:
    what the log says each live node's vector is."""
    vectors = rows(0, 2 * nodes)
    options: dict[str, Json] = {"metric": "cosine", "dims": 50}
    decl = db.write(lambda tx: tx.declare_index(tx.plane("startup"), "vector", LABEL, PROP, options)).value

    def create(tx: WriteTx) -> list[int]:
        plane = tx.plane("startup")
        return [tx.create_node(plane, None, [LABEL], {PROP: Vector.of(v)}).id for v in vectors[:nodes]]

    ids = db.write(create).value
    held = dict(zip(ids, vectors[:nodes], strict=True))
    rng = random.Random(37)
    for _ in range(churns):

        def churn(tx: WriteTx) -> None:
            plane = tx.plane("startup")
            for _ in range(25):
                node_id = rng.choice(ids)
                if tx.view.node(plane.id, node_id) is None:
                    continue
                action, fresh = rng.random(), vectors[nodes + rng.randrange(nodes)]
                if action < 0.3:
                    tx.update_node(plane, node_id, {PROP: Vector.of(fresh)})
                    held[node_id] = fresh
                elif action < 0.5:
                    tx.delete_node(plane, node_id)
                    held.pop(node_id, None)
                elif action < 0.7:  # away and back in one commit: removed, then upserted again
                    tx.update_node(plane, node_id, labels=["Other"])
                    tx.update_node(plane, node_id, {PROP: Vector.of(fresh)}, labels=[LABEL])
                    held[node_id] = fresh
                elif action < 0.85:
                    tx.update_node(plane, node_id, unset=[PROP])
                    held.pop(node_id, None)
                else:  # set (again, if it was unset): a node whose slot may have been reused
                    tx.update_node(plane, node_id, {PROP: Vector.of(fresh)})
                    held[node_id] = fresh

        db.write(churn)
    return decl, held


def _worker(db: Database, decl: IndexDecl) -> VectorIndex:
    return VectorIndex(decl, db.path, db.uuid, ef_search=256)


def _stored(worker: VectorIndex) -> dict[int, np.ndarray]:
    assert worker.index is not None
    ids = sorted(worker.node_ids())
    found = worker.index.get_items(np.array(ids, dtype=np.uint64), return_type="numpy")
    return dict(zip(ids, found, strict=True))


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v)


@pytest.mark.parametrize("chunk", [7, 4096])
def test_one_batch_holds_what_commit_by_commit_holds(db: Database, chunk: int, monkeypatch: Any) -> None:
    decl, held = _history(db, 300, 12)
    monkeypatch.setattr(vector_module, "CHUNK", chunk)  # 7: chunks fill in the middle of commits
    stepwise, batched = _worker(db, decl), _worker(db, decl)
    for commit in db.commits(1, db.head()):
        stepwise.apply(commit.seq, commit.mutations)
        stepwise.flush()
        batched.apply(commit.seq, commit.mutations)
    batched.flush()
    assert batched.node_ids() == stepwise.node_ids() == set(held) and len(batched) == len(held)
    assert not batched.pending and not batched.deleted & batched.live
    for worker in (stepwise, batched):  # every live node holds the log's last value, in one slot
        stored = _stored(worker)
        for node_id, vector in held.items():
            assert np.allclose(stored[node_id], _unit(vector), atol=1e-6)
        assert worker.index is not None and worker.index.element_count <= len(held) + len(worker.deleted)
        for node_id, vector in list(held.items())[::10]:
            assert worker.search_arrays(Vector.of(vector), 1)[0].tolist() == [node_id]


class _Counting(hnswlib.Index):  # type: ignore[misc]  # hnswlib is untyped
    """hnswlib's index, recording each add_items call (its rows and threads) and get_items call."""

    added: ClassVar[list[tuple[int, int]]] = []
    fetched: ClassVar[list[int]] = []

    def add_items(self, data: Any, ids: Any = None, num_threads: int = -1, replace_deleted: bool = False) -> None:
        _Counting.added.append((len(data), num_threads))
        super().add_items(data, ids, num_threads=num_threads, replace_deleted=replace_deleted)

    def get_items(self, ids: Any, return_type: str = "numpy") -> Any:
        _Counting.fetched.append(len(ids))
        return super().get_items(ids, return_type=return_type)


def test_a_build_adds_in_batches_on_every_core_and_calibrates_from_memory(db: Database, monkeypatch: Any) -> None:
    decl, held = _history(db, 3000, 0)
    monkeypatch.setattr(vector_module.hnswlib, "Index", _Counting)
    _Counting.added, _Counting.fetched = [], []
    built = _worker(db, decl)
    with db.snapshot() as snap:
        built.rebuild(snap)
    assert built.node_ids() == set(held)
    assert _Counting.added == [(3000, cores())]  # one call for 3,000 nodes, not 3,000 calls of one
    assert _Counting.fetched == []  # the calibration read the vectors it had just added
    assert built.calibration is not None and built.calibration.size == 3000
    # the same measurement with the vectors read back from hnswlib
    built.calibration = None
    built.flush()
    assert _Counting.fetched and built.calibration == _worker_calibration(db, decl)


def _worker_calibration(db: Database, decl: IndexDecl) -> Any:
    again = _worker(db, decl)
    with db.snapshot() as snap:
        again.rebuild(snap)
    return again.calibration


@pytest.mark.parametrize("metric", ["cosine", "dot", "l2"])
def test_exact_top_over_blocks_is_brute_force(metric: str, monkeypatch: Any) -> None:
    data = rows(0, 2500)
    queries = rows(5000, 40)
    ids = np.arange(10, 2510, dtype=np.int64)
    monkeypatch.setattr("drsg.workers.recall._BLOCK", 700)  # several blocks, the last one short
    found = exact_top(ids, lambda block: data[block - 10], queries, 10, metric)
    if metric == "cosine":
        d = (
            -(queries / np.linalg.norm(queries, axis=1, keepdims=True))
            @ (data / np.linalg.norm(data, axis=1, keepdims=True)).T
        )
    elif metric == "dot":
        d = -(queries @ data.T)
    else:
        d = ((queries[:, None, :] - data[None, :, :]) ** 2).sum(axis=2)
    want = np.sort(d, axis=1)[:, :10]
    got = np.sort(np.take_along_axis(d, found - 10, axis=1), axis=1)
    assert np.allclose(got, want, rtol=1e-5, atol=1e-5)


def test_smallest_picks_each_rows_k_smallest() -> None:
    rng = np.random.default_rng(37)
    for cols in (11, 127, 128, 129, 1000, 4097):
        for k in (1, 2, 10):
            d = rng.standard_normal((30, cols)).astype(np.float32)
            d[:, ::50] = 0.5  # ties too
            got = smallest(d, k)
            assert got.shape == (30, k) and all(len(set(row)) == k for row in got.tolist())
            assert np.array_equal(np.sort(np.take_along_axis(d, got, axis=1), axis=1), np.sort(d, axis=1)[:, :k])
