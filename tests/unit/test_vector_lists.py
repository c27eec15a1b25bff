"""A top-k's hits ranked in lists (VectorIndex.search_lists, what Searcher.vector reads) are
search_arrays' exactly: the same ids in the same order and bit-for-bit the same scores, for every
metric, with tied vectors, and the scores converted on Python floats as numpy converts them."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from drsg.kernel.values import Vector
from drsg.store.records import IndexDecl
from drsg.workers.vector import VectorIndex, similarities, similarity_from_distance


def index(tmp_path: Path, metric: str) -> VectorIndex:
    worker = VectorIndex(IndexDecl(1, "vector", "V", "v", {"metric": metric, "dims": 8}), tmp_path / "db", "u")
    rng = np.random.default_rng(3)
    points = rng.normal(size=(300, 8)).astype(np.float32)
    points[100:140] = points[7]  # forty nodes tied with node 8 (ids from 1): ties cut at k by id
    for node, point in enumerate(points, 1):
        worker.upsert(node, Vector.of(point.tolist()))
    worker.flush()
    return worker


@pytest.mark.parametrize("metric", ["cosine", "dot", "l2"])
def test_the_lists_are_the_arrays(tmp_path: Path, metric: str) -> None:
    worker = index(tmp_path, metric)
    rng = np.random.default_rng(5)
    queries = [Vector.of(q.tolist()) for q in rng.normal(size=(40, 8)).astype(np.float32)]
    queries.append(worker_vector(worker, 8))  # a query on the tied point: the tie spans the cut
    for query in queries:
        for k in (1, 5, 10, 32, 500):
            ids, scores = worker.search_arrays(query, k)
            listed = worker.search_lists(query, k)
            assert listed == (ids.tolist(), scores.tolist()), (metric, k)
            assert [math.copysign(1, s) for s in listed[1]] == [math.copysign(1, s) for s in scores.tolist()]
    tied_ids, _ = worker.search_lists(worker_vector(worker, 8), 10)
    assert tied_ids[:10] == [8, *range(101, 110)]  # the lowest ids of the 41 tied, in order


def worker_vector(worker: VectorIndex, node: int) -> Vector:
    assert worker.index is not None
    return Vector.of(worker.index.get_items([node])[0])


@pytest.mark.parametrize("metric", ["cosine", "dot", "l2"])
def test_python_floats_convert_as_numpy_does(metric: str) -> None:
    distances = np.array([0.0, 1e-8, 0.25, 1.0, 2.0, 3.5, -1e-7], dtype=np.float32)  # (a rounding below 0 too)
    assert similarities(metric, distances.tolist()) == similarity_from_distance(metric, distances).tolist()


def test_an_empty_index_or_k_0_finds_nothing(tmp_path: Path) -> None:
    empty = VectorIndex(IndexDecl(1, "vector", "V", "v", {"metric": "cosine", "dims": 8}), tmp_path / "db", "u")
    assert empty.search_lists(Vector.of([1.0] * 8), 10) == ([], [])
    assert index(tmp_path, "cosine").search_lists(Vector.of([1.0] * 8), 0) == ([], [])
