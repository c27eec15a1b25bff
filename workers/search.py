"""Running searches and logical plans over a database and its indexes.

Every query first catches the indexes up with the log (read-your-writes), then reads nodes from a
snapshot at exactly the seq the indexes reached, so results and records always agree. ``AS OF`` an
earlier commit searches that snapshot exactly: a brute-force vector scan, or a keyword index built
in memory over the snapshot.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from drsg.kernel.asof import AsOf
from drsg.kernel.errors import NotFound, UsageError
from drsg.kernel.values import Vector
from drsg.plan.query import Plan
from drsg.store.database import Database
from drsg.store.gate import Gate
from drsg.store.records import Node
from drsg.store.snapshot import Snapshot
from drsg.workers.base import Pool, pairs
from drsg.workers.exact import exact_vector_search
from drsg.workers.manager import IndexSet, worker_class
from drsg.workers.vector import VectorIndex, check_metric

#: Turns query text into a vector for a (plane, label, property); supplied by the surface.
TextEmbedder = Callable[[str], Vector]
_METRIC_FROM_PLAN = {"Cosine": "cosine", "Dot": "dot", "L2": "l2"}


@dataclass(slots=True)
class Hit:
    node: Node
    score: float | None = None

    def to_json(self, vectors: bool | str = "lean") -> dict[str, Any]:
        out = self.node.to_json(vectors=vectors)
        out["key"] = self.node.key  # short for external_key, as search users expect
        if self.score is not None:
            out["score"] = self.score
        return out


def cores() -> int:
    """CPU cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


class Searcher:
    """Runs queries; from many threads at once, at most ``max_queries`` (default: one per CPU core)
    run at a time and the rest wait their turn. The searches release the GIL, so queries on two
    cores run side by side, but more of them than cores only thrash on the GIL (2 cores, 8 threads
    issuing hybrid queries: ~1.9k queries/s with none held back, ~2.3k/s at two at a time; 1.7k/s
    when every query was serialised, tests/bench/RESULTS.md)."""

    def __init__(self, db: Database, indexes: IndexSet | None = None, *, max_queries: int | None = None) -> None:
        self.db = db
        self.indexes = indexes or IndexSet(db)
        self._running = Gate(max_queries or cores())  # shared by the queries running, up to the limit
        self._planes: dict[str, tuple[int, int]] = {}  # plane name -> (seq, plane id) last looked up

    def plane_id(self, snap: Snapshot, name: str) -> int:
        """``snap.plane(name).id``, remembered per name while queries keep reading the same seq (the
        graph at a seq never changes, so the answer cannot go stale; a new commit is a new seq)."""
        seen = self._planes.get(name)
        if seen is not None and seen[0] == snap.at:
            return seen[1]
        plane_id = snap.plane(name).id
        self._planes[name] = (snap.at, plane_id)
        return plane_id

    # ------------------------------------------------------------------ plans

    def run(self, plane: str, plan: Plan, embed: TextEmbedder | None = None) -> list[Hit]:
        with self._snapshot(plan.as_of) as snap:
            hits = self._source(snap, self.plane_id(snap, plane), plan.source, snap.at == snap.head, embed)
        return _steps(hits, plan.steps)

    @contextmanager
    def _snapshot(self, as_of: AsOf | None) -> Iterator[Snapshot]:
        """One read transaction per query. At the head, the indexes are caught up to it and hold
        still (``reading``) while the query runs, so index hits and node records agree. An earlier
        commit reads the snapshot alone (never the indexes): it neither waits for them nor holds
        them up, however long its exact scan takes."""
        with self._running.shared(), self.db.snapshot(as_of) as snap:
            if snap.at != snap.head:
                yield snap
                return
            self.indexes.catch_up(snap.head)
            with self.indexes.reading():
                yield snap

    def _source(self, snap: Snapshot, plane: int, source: Any, current: bool, embed: TextEmbedder | None) -> list[Hit]:
        if source == "ScanAll":
            return [Hit(n) for n in snap.nodes(plane)]
        if not isinstance(source, dict) or len(source) != 1:
            raise UsageError(f"unknown plan source {source!r}; see `drsg query --help`")
        ((kind, body),) = source.items()
        if kind == "ScanLabel":
            return [Hit(n) for n in snap.nodes(plane, str(body))]
        if kind == "SeekIds":
            return [Hit(n) for n in (snap.node(plane, int(i)) for i in body) if n is not None]
        if kind == "SeekKeys":
            return [Hit(n) for n in (snap.node_by_key(plane, str(k)) for k in body) if n is not None]
        if kind == "VectorTopK":
            query = _query_vector(body, embed)
            metric = _METRIC_FROM_PLAN.get(body.get("metric", "Cosine"), str(body.get("metric", "cosine")).lower())
            label, prop, k = body.get("label"), body.get("property", "embedding"), int(body.get("k", 10))
            ranked = self.vector_ranked(snap, plane, label, prop, query, check_metric(metric), k, current)
            return _hydrate(snap, plane, ranked)
        if kind == "KeywordTopK":
            label, prop, k = body["label"], body["property"], int(body.get("k", 10))
            return _hydrate(snap, plane, self.keyword_ranked(snap, plane, label, prop, str(body["query"]), k, current))
        if kind == "Hybrid":
            from drsg.workers.hybrid import HybridSpec, hybrid_on_snapshot  # hybrid builds on this module

            return list(hybrid_on_snapshot(self, snap, plane, HybridSpec.from_plan_json(body), current, embed))
        raise UsageError(f"plan source {kind} is not supported yet; use VectorTopK, KeywordTopK, Hybrid, Scan*, Seek*")

    # ------------------------------------------------------------------ the two searches

    def vector(
        self,
        plane: str,
        label: str | None,
        prop: str,
        query: Vector,
        metric: str = "cosine",
        k: int = 10,
        as_of: AsOf | str | int | None = None,
    ) -> list[Hit]:
        with self._snapshot(_as_of(as_of)) as snap:
            plane_id, metric = self.plane_id(snap, plane), check_metric(metric)
            current = snap.at == snap.head
            return _hydrate(snap, plane_id, self.vector_ranked(snap, plane_id, label, prop, query, metric, k, current))

    def keyword(
        self, plane: str, label: str, prop: str, text: str, k: int = 10, as_of: AsOf | str | int | None = None
    ) -> list[Hit]:
        with self._snapshot(_as_of(as_of)) as snap:
            plane_id = self.plane_id(snap, plane)
            current = snap.at == snap.head
            return _hydrate(snap, plane_id, self.keyword_ranked(snap, plane_id, label, prop, text, k, current))

    # ------------------------------------------------------------------ ranked ids; callers load records
    # (hybrid retrieval combines candidate pools and loads only the winners)

    def vector_ranked(
        self,
        snap: Snapshot,
        plane: int,
        label: str | None,
        prop: str,
        query: Vector,
        metric: str,
        k: int,
        current: bool,
    ) -> list[tuple[int, float]]:
        """Top-k ``(node id, similarity)`` from the index when it serves this query, else exactly."""
        return pairs(self.vector_pool(snap, plane, label, prop, query, metric, k, current))

    def vector_pool(
        self,
        snap: Snapshot,
        plane: int,
        label: str | None,
        prop: str,
        query: Vector,
        metric: str,
        k: int,
        current: bool,
    ) -> Pool:
        """As :meth:`vector_ranked`, as arrays (node ids, similarities)."""
        worker = self.indexes.get(plane, "vector", label, prop) if (label and current) else None
        if isinstance(worker, VectorIndex) and worker.metric == metric:  # a size mismatch is an error there
            return worker.search_arrays(query, k)
        return _pool(exact_vector_search(snap, plane, label, prop, query, metric, k))

    def keyword_ranked(
        self, snap: Snapshot, plane: int, label: str, prop: str, text: str, k: int, current: bool
    ) -> list[tuple[int, float]]:
        """Top-k ``(node id, BM25)``; AS OF an earlier commit, over that snapshot's documents exactly."""
        return pairs(self.keyword_pool(snap, plane, label, prop, text, k, current))

    def keyword_pool(self, snap: Snapshot, plane: int, label: str, prop: str, text: str, k: int, current: bool) -> Pool:
        """As :meth:`keyword_ranked`, as arrays (node ids, BM25 scores)."""
        worker = self.indexes.get(plane, "keyword", label, prop) if current else None
        if worker is None:
            decl = snap.index(plane, "keyword", label, prop)
            if decl is None:
                raise NotFound(
                    f"no keyword index on {label}.{prop}; declare one with "
                    f"`drsg index keyword {label} {prop} --plane {snap.plane_by_id(plane).name}`"  # type: ignore[union-attr]
                )
            worker = worker_class("keyword")(decl, self.db.path, "")
            worker.rebuild(snap)
        return worker.search_arrays(text, k)


def _as_of(as_of: AsOf | str | int | None) -> AsOf | None:
    if as_of is None or isinstance(as_of, AsOf):
        return as_of
    from drsg.kernel.asof import parse_as_of

    return parse_as_of(as_of)


def _query_vector(body: dict[str, Any], embed: TextEmbedder | None) -> Vector:
    if "query" in body:
        return Vector.of(body["query"])
    text = body.get("query_text")
    if text is None:
        raise UsageError('VectorTopK needs "query" (a list of numbers)')
    if embed is None:
        raise UsageError('this query has NEAR "text": it needs an embedder (--embed)')
    return embed(str(text))


def _pool(ranked: list[tuple[int, float]]) -> Pool:
    ids = np.fromiter((node for node, _ in ranked), dtype=np.int64, count=len(ranked))
    scores = np.fromiter((score for _, score in ranked), dtype=np.float64, count=len(ranked))
    return ids, scores


def _hydrate(snap: Snapshot, plane: int, ranked: list[tuple[int, float]]) -> list[Hit]:
    hits = []
    for node_id, score in ranked:
        node = snap.node(plane, node_id)
        if node is not None:
            hits.append(Hit(node, score))
    return hits


def _steps(hits: list[Hit], steps: list[Any]) -> list[Hit]:
    for step in steps:
        if isinstance(step, dict) and len(step) == 1:
            ((name, arg),) = step.items()
            if name == "Limit":
                hits = hits[: int(arg)]
                continue
            if name == "Skip":
                hits = hits[int(arg) :]
                continue
        else:
            name = step
        raise UsageError(f"plan step {name} is not supported yet; supported steps: Limit, Skip")
    return hits
