"""The plan executor: runs a logical plan (:class:`drsg.plan.query.Plan`, typed) over a Searcher.

The source is dispatched on its class: scans and seeks read the snapshot, ``VectorTopK`` and
``KeywordTopK`` run the Searcher's two searches, ``Hybrid`` runs :mod:`drsg.workers.hybrid`,
``Algo`` :mod:`drsg.workers.algo` (score = rank, group index or path position); then
the steps apply (:mod:`drsg.workers.traverse`: walks, Filter, Sort, …). This module sits above both
search.py and hybrid.py (hybrid builds on the Searcher), so neither has to import the other at call
time.
"""

from __future__ import annotations

from typing import assert_never

from drsg.kernel.errors import UsageError
from drsg.kernel.metrics import check_metric
from drsg.kernel.values import Vector
from drsg.plan.hybrid import HybridSpec
from drsg.plan.logical import (
    Algo,
    Hybrid,
    KeywordTopK,
    LogicalPlan,
    ScanAll,
    ScanLabel,
    SeekIds,
    SeekKeys,
    Source,
    Step,
    VectorTopK,
)
from drsg.plan.query import Plan
from drsg.store.records import Edge, Node
from drsg.store.snapshot import Snapshot
from drsg.workers.algo import algo_rows
from drsg.workers.manager import IndexKeys
from drsg.workers.search import Hit, Searcher, TextEmbedder, embedded, hybrid_indexes, hydrate_pool, vector_indexes
from drsg.workers.traverse import Subgraph, Walked, run_steps


def run_plan(searcher: Searcher, plane: str, plan: Plan, embed: TextEmbedder | None = None) -> list[Hit]:
    """Run ``plan`` on ``plane`` at the head (read-your-writes) or at its AS OF; ``embed`` turns a
    ``query_text`` into a vector."""
    with searcher.view(plane, plan.as_of, names=source_indexes(plan.logical.source)) as (snap, plane_id, current):
        hits = run_source(searcher, snap, plane_id, plan.logical.source, current, embed)
        return _steps(hits, plan.logical.steps, snap, plane_id)


def source_indexes(source: Source) -> IndexKeys | None:
    """The indexes a source searches (what a lazy index set loads for it): a vector search's with
    a label (one without is exact), a keyword search's, a hybrid query's two; none for a scan, a
    seek or an algorithm. None (the plane's): a hybrid body that does not read, whose run says why."""
    if isinstance(source, VectorTopK):
        return vector_indexes(source.label, source.property)
    if isinstance(source, KeywordTopK):
        return (("keyword", source.label, source.property),)
    if isinstance(source, Hybrid):
        try:
            return hybrid_indexes(HybridSpec.from_plan_json(source.body))
        except UsageError:
            return None
    return ()


def run_source(
    searcher: Searcher, snap: Snapshot, plane: int, source: Source, current: bool, embed: TextEmbedder | None
) -> list[Hit]:
    """A plan's source on one open snapshot (the indexes caught up to it when ``current``)."""
    match source:
        case ScanAll():
            return [Hit(n) for n in snap.nodes(plane)]
        case ScanLabel(label):
            return [Hit(n) for n in snap.nodes(plane, label)]
        case SeekIds(ids):
            return [Hit(n) for n in snap.nodes_at(plane, list(ids)) if n is not None]
        case SeekKeys(keys):
            return [Hit(n) for n in (snap.node_by_key(plane, k) for k in keys) if n is not None]
        case VectorTopK(label, prop, metric, k):
            query, how = _query_vector(source, embed), check_metric(metric)
            return searcher.vector_hits(snap, plane, label, prop, query, how, k, current)
        case KeywordTopK(label, prop, text, k):
            return hydrate_pool(snap, plane, searcher.keyword_pool(snap, plane, label, prop, text, k, current))
        case Hybrid(body):  # read here, where it runs, as it always was
            from drsg.workers.hybrid import hybrid_on_snapshot  # numpy: only a hybrid source needs it

            return list(hybrid_on_snapshot(searcher, snap, plane, HybridSpec.from_plan_json(body), current, embed))
        case Algo(spec):
            return [Hit(node, score) for node, score in algo_rows(snap, plane, spec)]
        case _:
            assert_never(source)  # a new source type: mypy says here that it must be run


def _query_vector(source: VectorTopK, embed: TextEmbedder | None) -> Vector:
    if source.query is not None:
        return Vector.of(list(source.query))
    if source.query_text is None:
        raise UsageError('VectorTopK needs "query" (a list of numbers)')
    return embedded(source.query_text, embed)


def _steps(hits: list[Hit], steps: tuple[Step, ...], snap: Snapshot, plane: int) -> list[Hit]:
    if not steps:
        return hits
    rows = run_steps(snap, plane, [Walked(h.node, h.score) for h in hits], steps)
    return [Hit(r.node, r.score) for r in rows]


def run_plan_subgraph(
    searcher: Searcher, plane: str, plan: Plan, embed: TextEmbedder | None = None
) -> tuple[list[Walked], list[Node], list[Edge]]:
    """Run ``plan`` and keep how each row was reached: (rows, the subgraph's nodes, its edges)."""
    with searcher.view(plane, plan.as_of, names=source_indexes(plan.logical.source)) as (snap, plane_id, current):
        return run_logical(searcher, snap, plane_id, plan.logical, current, embed)


def run_logical(
    searcher: Searcher, snap: Snapshot, plane: int, logical: LogicalPlan, current: bool, embed: TextEmbedder | None
) -> tuple[list[Walked], list[Node], list[Edge]]:
    """:func:`run_plan_subgraph` on a snapshot the caller holds open (a Cypher statement's)."""
    hits = run_source(searcher, snap, plane, logical.source, current, embed)
    rows = run_steps(snap, plane, [Walked(h.node, h.score) for h in hits], logical.steps)
    nodes, edges = Subgraph(rows).nodes_and_edges(snap, plane)
    return rows, nodes, edges
