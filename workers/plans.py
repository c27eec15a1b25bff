"""The plan executor: runs a logical plan (upstream's JSON, :class:`drsg.plan.query.Plan`) over a Searcher.

The source is dispatched on its kind: scans and seeks read the snapshot, ``VectorTopK`` and
``KeywordTopK`` run the Searcher's two searches, ``Hybrid`` runs :mod:`drsg.workers.hybrid`,
``Algo`` :mod:`drsg.workers.algo` (score = rank, group index or path position); then
the steps apply (:mod:`drsg.workers.traverse`: walks, Filter, Sort, …). This module sits above both
search.py and hybrid.py (hybrid builds on the Searcher), so neither has to import the other at call
time.
"""

from __future__ import annotations

from typing import Any

from drsg.kernel.errors import UsageError
from drsg.kernel.metrics import check_metric
from drsg.kernel.values import Vector
from drsg.plan.algo import AlgoSpec
from drsg.plan.hybrid import HybridSpec
from drsg.plan.query import SOURCES, Plan
from drsg.store.records import Edge, Node
from drsg.store.snapshot import Snapshot
from drsg.workers.algo import algo_rows
from drsg.workers.hybrid import hybrid_on_snapshot
from drsg.workers.search import Hit, Searcher, TextEmbedder, embedded, hydrate_pool
from drsg.workers.traverse import Subgraph, Walked, run_steps


def run_plan(searcher: Searcher, plane: str, plan: Plan, embed: TextEmbedder | None = None) -> list[Hit]:
    """Run ``plan`` on ``plane`` at the head (read-your-writes) or at its AS OF; ``embed`` turns a
    ``query_text`` into a vector."""
    with searcher.view(plane, plan.as_of) as (snap, plane_id, current):
        hits = run_source(searcher, snap, plane_id, plan.source, current, embed)
        return _steps(hits, plan.steps, snap, plane_id)


def run_source(
    searcher: Searcher, snap: Snapshot, plane: int, source: Any, current: bool, embed: TextEmbedder | None
) -> list[Hit]:
    """A plan's source on one open snapshot (the indexes caught up to it when ``current``)."""
    if source == "ScanAll":
        return [Hit(n) for n in snap.nodes(plane)]
    if not isinstance(source, dict) or len(source) != 1:
        raise UsageError(f"unknown plan source {source!r}; see `drsg query --help`")
    ((kind, body),) = source.items()
    if kind == "ScanLabel":
        return [Hit(n) for n in snap.nodes(plane, str(body))]
    if kind == "SeekIds":
        return [Hit(n) for n in snap.nodes_at(plane, [int(i) for i in body]) if n is not None]
    if kind == "SeekKeys":
        return [Hit(n) for n in (snap.node_by_key(plane, str(k)) for k in body) if n is not None]
    if kind == "VectorTopK":
        query, metric = _query_vector(body, embed), check_metric(str(body.get("metric", "cosine")))
        label, prop, k = body.get("label"), body.get("property", "embedding"), int(body.get("k", 10))
        return hydrate_pool(snap, plane, searcher.vector_pool(snap, plane, label, prop, query, metric, k, current))
    if kind == "KeywordTopK":
        label, prop, text, k = body["label"], body["property"], str(body["query"]), int(body.get("k", 10))
        return hydrate_pool(snap, plane, searcher.keyword_pool(snap, plane, label, prop, text, k, current))
    if kind == "Hybrid":
        return list(hybrid_on_snapshot(searcher, snap, plane, HybridSpec.from_plan_json(body), current, embed))
    if kind == "Algo":
        return [Hit(node, score) for node, score in algo_rows(snap, plane, AlgoSpec.from_plan_json(body))]
    raise UsageError(f"plan source {kind} is not supported yet; use one of {', '.join(SOURCES)}")


def _query_vector(body: dict[str, Any], embed: TextEmbedder | None) -> Vector:
    if "query" in body:
        return Vector.of(body["query"])
    text = body.get("query_text")
    if text is None:
        raise UsageError('VectorTopK needs "query" (a list of numbers)')
    return embedded(str(text), embed)


def _steps(hits: list[Hit], steps: list[Any], snap: Snapshot, plane: int) -> list[Hit]:
    if not steps:
        return hits
    rows = run_steps(snap, plane, [Walked(h.node, h.score) for h in hits], steps)
    return [Hit(r.node, r.score) for r in rows]


def run_plan_subgraph(
    searcher: Searcher, plane: str, plan: Plan, embed: TextEmbedder | None = None
) -> tuple[list[Walked], list[Node], list[Edge]]:
    """Run ``plan`` and keep how each row was reached: (rows, the subgraph's nodes, its edges)."""
    with searcher.view(plane, plan.as_of) as (snap, plane_id, current):
        hits = run_source(searcher, snap, plane_id, plan.source, current, embed)
        rows = run_steps(snap, plane_id, [Walked(h.node, h.score) for h in hits], plan.steps)
        nodes, edges = Subgraph(rows).nodes_and_edges(snap, plane_id)
    return rows, nodes, edges
