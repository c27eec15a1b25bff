"""A vector index's recall, measured: the search breadth (ef) that reaches a recall target.

An HNSW search at a fixed ef finds only part of the true neighbours, and how much depends on the
data (upstream's random 128-d vectors at ef 64: recall@10 0.465). So the index measures itself:
recall@k of its own search against exact search (numpy, blockwise over every live vector) for
queries made from a seeded sample of its own vectors (see _near_queries), at growing breadths
from its floor up to a cap, and keeps the first that reaches the target — or the cap, with the recall it reached there.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

#: (queries, k, ef) -> the labels of each query's k nearest, searched at ef
Search = Callable[[NDArray[np.float32], int, int], NDArray[np.uint64]]
#: node ids -> their vectors as the index holds them
Fetch = Callable[[NDArray[np.int64]], NDArray[np.float32]]
_BLOCK = 1 << 15  # vectors compared per step of the exact search (bounds its memory)
_RUN = 128  # columns per run when picking each row's smallest distances (see smallest)
HOLD = 256 << 20  # bytes of vectors a calibration holds in memory rather than fetching them per pass
#: queries a breadth is tried on first: one whose recall there is short of the target by more than
#: SHORT standard errors moves on to the next breadth without the rest (most of a calibration's
#: searches ran at breadths far below the one it chose); a breadth is only ever accepted on them all
FIRST = 64
SHORT = 3.0


@dataclass(frozen=True)
class Calibration:
    ef: int  # the breadth searches use
    recall: float  # recall@k measured at that breadth
    size: int  # live vectors when measured
    target: float  # the recall it aimed for

    def to_json(self) -> dict[str, Any]:
        return {"ef": self.ef, "recall": self.recall, "size": self.size, "target": self.target}

    @classmethod
    def from_json(cls, raw: object) -> Calibration | None:
        if not isinstance(raw, dict):
            return None
        try:
            return cls(int(raw["ef"]), float(raw["recall"]), int(raw["size"]), float(raw["target"]))
        except (KeyError, TypeError, ValueError):
            return None  # measured again


def exact_top(
    ids: NDArray[np.int64], fetch: Fetch, queries: NDArray[np.float32], k: int, metric: str
) -> NDArray[np.int64]:
    """Each query's ``k`` nearest node ids by brute force over ``ids`` (any order within the k)."""
    best_d = np.full((len(queries), 0), np.inf, dtype=np.float32)
    best_i = np.empty((len(queries), 0), dtype=np.int64)
    q = _normalised(queries) if metric == "cosine" else queries
    q_norms = (q * q).sum(axis=1)[:, None]
    for start in range(0, len(ids), _BLOCK):
        block = ids[start : start + _BLOCK]
        x = fetch(block)
        if metric == "cosine":
            x = _normalised(x)
        dots = q @ x.T
        d = q_norms - 2 * dots + (x * x).sum(axis=1)[None, :] if metric == "l2" else -dots
        # the block's own best k first, then those merged with the best so far: selecting over
        # queries × (k + block) at once copied every distance and id of the block twice
        top = smallest(d, k) if d.shape[1] > k else np.argsort(d, axis=1)
        all_d = np.concatenate([best_d, np.take_along_axis(d, top, axis=1)], axis=1)
        all_i = np.concatenate([best_i, block[top]], axis=1)
        keep = np.argpartition(all_d, k - 1, axis=1)[:, :k] if all_d.shape[1] > k else np.argsort(all_d, axis=1)
        best_d = np.take_along_axis(all_d, keep, axis=1)
        best_i = np.take_along_axis(all_i, keep, axis=1)
    return best_i


def smallest(d: NDArray[np.float32], k: int) -> NDArray[np.intp]:
    """The columns of each row's ``k`` smallest values (any order; ``0 < k <`` the row length).

    Each row is cut in runs of ``_RUN`` columns; the ``k`` runs with the smallest minima hold the
    ``k`` smallest values (a value outside them has ``k`` run minima below it), so only those are
    selected from: np.argpartition over whole rows cost ~20 ns a value, most of the exact search."""
    rows, cols = d.shape
    runs = -(-cols // _RUN)
    if runs <= k:
        return np.argpartition(d, k - 1, axis=1)[:, :k]
    whole = cols // _RUN * _RUN
    mins = d[:, :whole].reshape(rows, whole // _RUN, _RUN).min(axis=2)
    if whole < cols:
        mins = np.concatenate([mins, d[:, whole:].min(axis=1, keepdims=True)], axis=1)
    chosen = np.argpartition(mins, k - 1, axis=1)[:, :k]
    columns = (chosen[:, :, None] * _RUN + np.arange(_RUN)).reshape(rows, k * _RUN)
    past = columns >= cols  # the last run may be short
    values = np.take_along_axis(d, np.minimum(columns, cols - 1), axis=1)
    values[past] = np.inf
    picked: NDArray[np.intp] = np.take_along_axis(columns, np.argpartition(values, k - 1, axis=1)[:, :k], axis=1)
    return picked


def recall_at(found: NDArray[Any], truth: NDArray[np.int64]) -> float:
    """The share of the true neighbours found, over every query."""
    hits = sum(len(set(f.tolist()) & set(t.tolist())) for f, t in zip(found, truth, strict=True))
    return hits / truth.size if truth.size else 1.0


def calibrate(
    ids: NDArray[np.int64],
    fetch: Fetch,
    search: Search,
    metric: str,
    *,
    target: float,
    steps: Sequence[int],
    floor: int,
    k: int,
    sample: int,
    seed: int,
) -> Calibration:
    """The first breadth of ``steps`` (from ``floor`` on) whose recall@k reaches ``target``, else the
    last, with the recall it reached. ``ids`` ascending."""
    if len(ids) <= k:  # every search returns every vector
        return Calibration(floor, 1.0, len(ids), target)
    fetch = _held(ids, fetch)
    rng = np.random.default_rng(seed)
    queries = _near_queries(ids, fetch, rng.choice(ids, size=min(sample, len(ids)), replace=False), metric, rng)
    truth = exact_top(ids, fetch, queries, k, metric)
    breadths = [floor, *(ef for ef in steps if ef > floor)]
    ef, recall = floor, 0.0
    first = min(FIRST, len(queries))
    for ef in breadths:
        try:
            found = search(queries[:first], k, ef).astype(np.int64)
            if ef != breadths[-1] and clearly_short(found, truth[:first], target):
                continue
            if first < len(queries):
                found = np.concatenate([found, search(queries[first:], k, ef).astype(np.int64)])
            recall = recall_at(found, truth)
        except RuntimeError:  # hnswlib found fewer than k reachable: a wider search may
            recall = 0.0
        if recall >= target:
            break
    return Calibration(ef, recall, len(ids), target)


def clearly_short(found: NDArray[np.int64], truth: NDArray[np.int64], target: float) -> bool:
    """Whether the recall of these queries is below ``target`` by more than SHORT standard errors of
    their mean (each query's own recall the sample; its spread taken as at least one neighbour in k,
    so a few uniform queries never decide alone)."""
    k = int(truth.shape[1])
    each = [len(set(f.tolist()) & set(t.tolist())) / k for f, t in zip(found, truth, strict=True)]
    mean = sum(each) / len(each)
    spread = (sum((x - mean) ** 2 for x in each) / len(each)) ** 0.5
    error: float = max(spread, 1 / k) / len(each) ** 0.5
    return mean + SHORT * error < target


def _held(ids: NDArray[np.int64], fetch: Fetch) -> Fetch:
    """``fetch`` over ``ids`` (ascending), served from memory when their vectors fit in ``HOLD``
    bytes: the calibration reads them all twice and a few again, and an index's own fetch costs
    microseconds a vector (hnswlib's get_items: 0.28 s of a 10,000-vector calibration's 0.8 s)."""
    first = fetch(ids[:_BLOCK])
    if len(ids) * first[:1].nbytes > HOLD:
        return fetch
    held = np.concatenate([first, *(fetch(ids[s : s + _BLOCK]) for s in range(_BLOCK, len(ids), _BLOCK))])

    def from_memory(block: NDArray[np.int64]) -> NDArray[np.float32]:
        found: NDArray[np.float32] = held[np.searchsorted(ids, block)]
        return found

    return from_memory


def _near_queries(
    ids: NDArray[np.int64], fetch: Fetch, chosen: NDArray[np.int64], metric: str, rng: np.random.Generator
) -> NDArray[np.float32]:
    """Queries like a user's: each chosen vector moved, in a random direction, by its distance to its
    nearest other vector. (A vector the index holds is too easy a query: the search walks straight
    to it, and its graph links are its neighbours — on random 128-d data ef 64 measures 0.98 so,
    0.82 on fresh queries. Moved so, it measures within a point of fresh queries, on the low side.)"""

    def space(block: NDArray[np.int64]) -> NDArray[np.float32]:
        x = fetch(block)
        return _normalised(x) if metric == "cosine" else x

    chosen = np.sort(chosen)
    own = space(chosen)
    pairs = exact_top(ids, space, own, 2, "l2")  # itself and its nearest other (or two at distance 0)
    nearest = np.array(
        [[j for j in row if j != i][:1] or [i] for row, i in zip(pairs.tolist(), chosen.tolist(), strict=True)]
    )
    reach = np.linalg.norm(space(nearest[:, 0]) - own, axis=1, keepdims=True)
    direction = rng.normal(size=own.shape)
    direction /= np.maximum(np.linalg.norm(direction, axis=1, keepdims=True), 1e-12)
    moved: NDArray[np.float32] = np.ascontiguousarray(own + reach * direction, dtype=np.float32)
    return moved


def _normalised(x: NDArray[np.float32]) -> NDArray[np.float32]:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    out: NDArray[np.float32] = (x / np.where(norms == 0, 1, norms)).astype(np.float32)
    return out
