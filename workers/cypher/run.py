"""Running a Cypher statement: a read on one snapshot, and the core a write shares.

:func:`run_read` opens ONE snapshot (``Searcher.view``: at the head with the indexes caught up,
or exactly as of an earlier commit, SEARCH included) and answers the statement there. A statement
in upstream's subset has a logical plan and runs through the plan executor ``drsg query`` uses
(:func:`drsg.workers.plans.run_logical`); any other runs as its row plan
(:mod:`drsg.workers.cypher.execute`). :func:`run_on` is the row plan's run on any graph — a
snapshot's, or a write transaction's view with a :data:`~drsg.workers.cypher.execute.WriteRunner`
— and :func:`answer` resolves the rows' references into records while the graph is open.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from drsg.kernel.asof import AsOf
from drsg.kernel.errors import QueryError, QueryLimit, UsageError
from drsg.plan.cypher import ast
from drsg.plan.cypher.compile import Compiled
from drsg.plan.cypher.graph import CypherValue, GraphView, NodeRef, PathValue, RelRef
from drsg.plan.cypher.sources import build_source, reader
from drsg.plan.cypher.statement import Prepared
from drsg.plan.logical import Source
from drsg.store.records import Edge, Node
from drsg.store.snapshot import Snapshot
from drsg.workers.cypher.execute import Executor, Limits, SourceRunner, WriteRunner, scan_source
from drsg.workers.cypher.graphs import SnapshotGraph
from drsg.workers.cypher.rec import Rec
from drsg.workers.cypher.result import Answer, CypherResult, Path
from drsg.workers.manager import IndexKey, IndexKeys
from drsg.workers.plans import run_logical, run_source, source_indexes
from drsg.workers.search import Searcher, TextEmbedder


class Records(Protocol):
    """Where an answer's references are read: a node's and a relationship's record."""

    def node(self, node: int) -> Node: ...

    def edge(self, rel: int) -> Edge: ...


class RecordGraph(GraphView, Records, Protocol):
    """A graph that also gives records (:class:`SnapshotGraph`, a write's ``TxGraph``)."""


def run_read(
    searcher: Searcher,
    plane: str,
    prepared: Prepared,
    params: Mapping[str, CypherValue] | None = None,
    *,
    as_of: AsOf | None = None,
    embed: TextEmbedder | None = None,
    max_rows: int | None = None,
    timeout: float | None = None,
) -> CypherResult:
    """Answer a read statement on ``plane`` at one snapshot: the caller's ``as_of``, else the
    statement's AS OF, else the head (both given and different: QueryError)."""
    if prepared.writes:
        raise QueryError("this statement writes; run it as a write (it is refused on a read-only path)")
    params = params or {}
    pinned = prepared.as_of(params)
    if as_of is not None and pinned is not None and as_of != pinned:
        raise QueryError(f"the statement says AS OF {pinned} and the call as of {as_of}; give one of them")
    limits = Limits.of(max_rows, timeout)
    searches = _searches(prepared)
    names = _names(prepared, params) if searches else ()
    with searcher.view(plane, as_of or pinned, indexes=searches, names=names) as (snap, plane_id, current):
        logical = prepared.compiled.logical
        if logical is not None:
            walked, nodes, edges = run_logical(searcher, snap, plane_id, logical, current, embed)
            if max_rows is not None and len(walked) > max_rows:
                raise QueryLimit(
                    f"the statement made more than {max_rows} rows; narrow the MATCH or raise [query] max_rows"
                )
            rows = tuple((w.node,) for w in walked)
            return CypherResult(prepared.columns, rows, tuple(nodes), tuple(edges), seq=snap.at)

        def sources(source: Source) -> list[tuple[Node, float | None]]:
            hits = run_source(searcher, snap, plane_id, source, current, embed)
            return [(hit.node, hit.score) for hit in hits]

        graph = SnapshotGraph(snap, plane_id)
        return run_on(snap, plane_id, graph, prepared.compiled, params, sources=sources, limits=limits)


def _searches(prepared: Prepared) -> bool:
    """Whether the statement reads an index (SEARCH, HYBRID): else it waits for no index to catch up."""
    return any(isinstance(c, ast.Search | ast.HybridSearch) for part in prepared.query.parts for c in part.clauses)


def _names(prepared: Prepared, params: Mapping[str, CypherValue]) -> IndexKeys | None:
    """The indexes the statement's SEARCH and HYBRID clauses search (a lazy index set loads those
    alone); None (the plane's) when a clause's values do not read: its run says why."""
    if prepared.compiled.logical is not None:
        return source_indexes(prepared.compiled.logical.source)
    names: list[IndexKey] = []
    for part in prepared.query.parts:
        for clause in part.clauses:
            if isinstance(clause, ast.Search | ast.HybridSearch):
                try:
                    named = source_indexes(build_source(clause, reader(params)))
                except UsageError:
                    return None
                if named is None:
                    return None
                names.extend(named)
    return tuple(dict.fromkeys(names))


def run_on(
    snap: Snapshot,
    plane: int,
    graph: RecordGraph,
    compiled: Compiled,
    params: Mapping[str, CypherValue],
    *,
    sources: SourceRunner | None = None,
    limits: Limits | None = None,
    writer: WriteRunner | None = None,
    records: Records | None = None,
) -> CypherResult:
    """Run ``compiled``'s row plan on ``graph`` (``snap`` gives the adjacency and the scans) and
    answer with its rows resolved by ``records`` (default: ``graph``'s). A write passes its
    transaction's view, a ``writer`` and, if it must, its own records; the caller adds the counts
    and the seq it committed."""
    executor = Executor(snap, plane, graph, params, sources or scan_source(snap, plane), limits or Limits(), writer)
    recs = executor.run(compiled.plan)
    return answer(compiled.columns, recs, records or graph, seq=snap.at)


def answer(columns: tuple[str, ...], recs: list[Rec], records: Records, *, seq: int = 0) -> CypherResult:
    """The rows resolved into records, and the subgraph: the nodes and relationships the rows
    return, then those their patterns bound (by id), each once, with every relationship's ends."""
    refs: dict[NodeRef | RelRef, None] = {}
    rows = tuple(tuple(_resolve(rec.values.get(name), records, refs) for name in columns) for rec in recs)
    for rec in recs:
        for ref in sorted(rec.seen, key=lambda r: (isinstance(r, RelRef), r.id)):
            refs.setdefault(ref)
    node_ids: dict[int, None] = {}
    edges: dict[int, Edge] = {}
    for ref in refs:
        if isinstance(ref, NodeRef):
            node_ids.setdefault(ref.id)
        else:
            edge = edges.setdefault(ref.id, records.edge(ref.id))
            node_ids.setdefault(edge.src)
            node_ids.setdefault(edge.dst)
    nodes = tuple(records.node(node) for node in node_ids)
    return CypherResult(columns, rows, nodes, tuple(edges.values()), seq=seq)


def _resolve(value: CypherValue, records: Records, refs: dict[NodeRef | RelRef, None]) -> Answer:
    if isinstance(value, NodeRef):
        refs.setdefault(value)
        return records.node(value.id)
    if isinstance(value, RelRef):
        refs.setdefault(value)
        return records.edge(value.id)
    if isinstance(value, PathValue):
        for node in value.nodes:
            refs.setdefault(node)
        for rel in value.rels:
            refs.setdefault(rel)
        return Path(tuple(records.node(n.id) for n in value.nodes), tuple(records.edge(r.id) for r in value.rels))
    if isinstance(value, list):
        return [_resolve(item, records, refs) for item in value]
    if isinstance(value, dict):
        return {key: _resolve(item, records, refs) for key, item in value.items()}
    return value
