"""Exact vector search by scanning the projection: the oracle the HNSW index is held to, and the
path for planes without a declared index and for AS OF searches (which must see the snapshot)."""

from __future__ import annotations

import heapq

import numpy as np

from drsg.kernel.errors import BadValue
from drsg.kernel.values import Vector
from drsg.store.snapshot import Snapshot

_BATCH = 4096


def similarities(metric: str, matrix: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Similarity of each row to ``query`` (float64): cosine, dot, or negative Euclidean distance."""
    m = matrix.astype(np.float64)
    q = query.astype(np.float64)
    similar: np.ndarray  # numpy's operators are typed Any; this says what they give
    if metric == "dot":
        similar = m @ q
        return similar
    if metric == "l2":
        similar = -np.sqrt(np.maximum(((m - q) ** 2).sum(axis=1), 0.0))
        return similar
    norms = np.linalg.norm(m, axis=1) * np.linalg.norm(q)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(norms > 0, (m @ q) / np.where(norms > 0, norms, 1.0), 0.0)
    return np.asarray(out)


def exact_vector_search(
    snap: Snapshot, plane: int, label: str | None, prop: str, query: Vector, metric: str, k: int
) -> list[tuple[int, float]]:
    """Top-k ``(node id, similarity)`` over every node (of ``label``) with a same-size vector."""
    if k <= 0:
        return []  # TOPK 0 asks for nothing (the heap below needs room for one)
    q = np.frombuffer(query.data, dtype="<f4")
    best: list[tuple[float, int]] = []  # a min-heap of (score, -id): the k best seen so far
    ids: list[int] = []
    rows: list[bytes] = []

    def flush() -> None:
        if not rows:
            return
        matrix = np.frombuffer(b"".join(rows), dtype="<f4").reshape(len(rows), -1)
        for node_id, score in zip(ids, similarities(metric, matrix, q), strict=True):
            item = (float(score), -node_id)
            if len(best) < k:
                heapq.heappush(best, item)
            elif item > best[0]:
                heapq.heapreplace(best, item)
        ids.clear()
        rows.clear()

    other_sizes: set[int] = set()
    matched = 0
    for node in snap.nodes(plane, label):
        value = node.props.get(prop)
        if not isinstance(value, Vector):
            continue
        if value.dims != query.dims:
            other_sizes.add(value.dims)
            continue
        matched += 1
        ids.append(node.id)
        rows.append(value.data)
        if len(rows) >= _BATCH:
            flush()
    flush()
    if not matched and other_sizes:
        sizes = ", ".join(str(d) for d in sorted(other_sizes))
        raise BadValue(f"the query vector has {query.dims} dims; {prop!r} holds {sizes}-dim vectors")
    return [(-neg_id, score) for score, neg_id in sorted(best, reverse=True)]
