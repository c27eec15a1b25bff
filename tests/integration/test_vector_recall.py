"""A vector index calibrates its search breadth to `[index] recall_target`, on real data.

Upstream's fixed ef 64 finds about half the true neighbours on random 128-d vectors; the index
measures its recall@10 against exact search and widens its search until it reaches the target,
keeps the breadth with its sidecar, and measures again once it has doubled.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import drsg
from drsg import open as drsg_open
from drsg.kernel.values import Vector
from drsg.store.transaction import WriteTx
from drsg.workers import vector as vector_module
from drsg.workers.manager import IndexSet
from drsg.workers.recall import exact_top, recall_at
from drsg.workers.vector import VectorIndex
from tests.support.cli import Drsg
from tests.support.glove import rows

N = 3000
K = 10
TARGET = 0.95


def _insert(db: drsg.Database, vectors: np.ndarray, start: int, metric: str = "cosine") -> None:  # type: ignore[name-defined]
    plane = db.create_plane("p") if start == 0 else db.plane("p")
    if start == 0:
        db.write(lambda tx: tx.declare_index(plane, "vector", "V", "embedding", {"metric": metric}))

    def insert(tx: WriteTx) -> None:
        for i, row in enumerate(vectors, start):
            tx.create_node(plane, f"v{i}", ["V"], {"embedding": Vector.of(row)})

    db.write(insert)


def _worker(indexes: IndexSet) -> VectorIndex:
    (worker,) = indexes.workers.values()
    assert isinstance(worker, VectorIndex)
    return worker


def _fresh_recall(worker: VectorIndex, queries: np.ndarray, ef: int | None = None) -> float:
    """recall@10 of the worker's own search (at its breadth, or ``ef``) against exact search."""
    ids = np.array(sorted(worker.live), dtype=np.int64)
    index = worker.index
    assert index is not None
    truth = exact_top(ids, lambda b: index.get_items(b.astype(np.uint64)), queries, K, worker.metric)
    found = np.stack([worker.search_arrays(q, K, ef)[0] for q in queries])
    return recall_at(found, truth)


@pytest.fixture
def random_db(tmp_path: Path) -> Iterator[tuple[drsg.Database, np.ndarray]]:  # type: ignore[name-defined]
    data = np.random.default_rng(37).random((2 * N + 300, 128), dtype=np.float32)  # upstream's uniform set
    with drsg.open(tmp_path / "r.drsg") as db:
        _insert(db, data[:N], 0, "l2")
        yield db, data


def test_random_128d_reaches_the_target_on_fresh_queries_where_ef_64_does_not(random_db) -> None:  # type: ignore[no-untyped-def]
    db, data = random_db
    indexes = IndexSet(db, recall_target=TARGET)
    indexes.catch_up()
    worker = _worker(indexes)
    fresh = data[-300:]  # never indexed, never a calibration query
    done = worker.calibration
    assert done is not None and done.size == N and done.target == TARGET
    assert done.recall >= TARGET and worker.ef == done.ef > 64
    assert _fresh_recall(worker, fresh) >= TARGET - 0.01  # a sample of 200: within a point
    assert _fresh_recall(worker, fresh, ef=64) < TARGET - 0.03  # the old fixed breadth falls short


def test_glove_reaches_the_target_and_the_breadth_survives_a_reopen(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    words = rows(0, N + 300)
    with drsg.open(tmp_path / "g.drsg") as db:
        _insert(db, words[:N], 0)
        indexes = IndexSet(db, recall_target=0.99)
        indexes.catch_up()
        worker = _worker(indexes)
        done = worker.calibration
        assert done is not None and done.recall >= 0.99 and done.target == 0.99
        assert _fresh_recall(worker, words[N:]) >= 0.98
        indexes.close()

        measured: list[int] = []
        original = vector_module.calibrate
        monkeypatch.setattr(vector_module, "calibrate", lambda *a, **kw: measured.append(1) or original(*a, **kw))
        reopened = IndexSet(db, recall_target=0.99)
        reopened.catch_up()
        assert _worker(reopened).calibration == done and _worker(reopened).ef == worker.ef and not measured
        # another target: the loaded breadth is measured again
        other = IndexSet(db, recall_target=0.5)
        other.catch_up()
        assert measured == [1] and _worker(other).calibration.target == 0.5  # type: ignore[union-attr]
        assert _worker(other).ef == 64  # the floor: ef_search


def test_growth_recalibrates_once_the_index_doubles(random_db) -> None:  # type: ignore[no-untyped-def]
    db, data = random_db
    indexes = IndexSet(db, recall_target=TARGET)
    indexes.catch_up()
    first = _worker(indexes).calibration
    assert first is not None and first.size == N
    _insert(db, data[N : N + 100], N)
    indexes.catch_up()
    assert _worker(indexes).calibration == first  # grown by a third of a percent: not measured again
    _insert(db, data[N + 100 : 2 * N], N + 100)
    indexes.catch_up()
    grown = _worker(indexes).calibration
    assert grown is not None and grown.size == 2 * N and grown.recall >= TARGET
    assert _fresh_recall(_worker(indexes), data[-300:]) >= TARGET - 0.01


def test_the_setting_reaches_the_index_and_index_list_shows_the_breadth(db_path: Path, drsg: Drsg) -> None:
    with drsg_open(db_path, settings={"index.recall_target": 0.9}) as db:
        _insert(db, rows(0, 500), 0)
        db.searcher.indexes.catch_up(plane=db.plane("p").id)  # the API's set is lazy: a read names its plane
        done = _worker(db.searcher.indexes).calibration
        assert done is not None and done.target == 0.9
    drsg_cli = drsg
    listed = drsg_cli("index", "list", "-p", "p", "--json").json_lines()[0]
    (entry,) = listed["vector"]
    assert entry["label"] == "V" and entry["metric"] == "cosine" and entry["dims"] == 50
    assert entry["ef"] >= 64 and entry["recall"] >= 0.95  # the CLI's default target
    (line,) = drsg_cli("index", "list", "-p", "p").lines()
    assert line.split("\t")[:3] == ["vector", "V.embedding", "(cosine, 50 dims)"]
    assert line.split("\t")[3] == f"ef {entry['ef']}, recall@10 {entry['recall']:.3f}"
    assert json.loads(json.dumps(entry))  # plain JSON


def test_a_recall_target_outside_0_to_1_is_refused(drsg: Drsg, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("DRSG_INDEX_RECALL_TARGET", "1.5")
    ran = drsg("index", "list")
    assert ran.code == 2 and "index.recall_target" in ran.err and "at most 1" in ran.err
