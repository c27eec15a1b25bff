"""Running a row plan (:mod:`drsg.plan.cypher.rows`) on one graph: the core a read and a write share.

:func:`execute` runs the operators in order over the whole set of rows (each operator sees all of
the previous one's rows: a write clause's effect is seen by every later clause), on a snapshot's
adjacency and a :class:`~drsg.plan.cypher.graph.GraphView`'s labels and properties. Sources come
from a :data:`SourceRunner` (the read path runs searches and algorithms through
:func:`drsg.workers.plans.run_source`); write clauses go to a :data:`WriteRunner` (the write
path's :func:`drsg.workers.cypher.writes.apply_write`), and a read-only statement has none.

Each row carries the nodes and relationships its pattern elements bound (``seen``, named or
not): the answer's subgraph is theirs, for the rows that reach the end. An aggregate's rows start
afresh, holding only what they return (a group's key, a ``collect``): ``MATCH (n) RETURN count(*)``
answers a number, not every node of the plane. Past ``[query] max_rows`` rows at any step, or past the
deadline, the statement stops with :class:`~drsg.kernel.errors.QueryLimit`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace

from drsg.kernel.errors import QueryError, QueryLimit
from drsg.plan.cypher import ast, rows
from drsg.plan.cypher.aggregates import Aggregator, make_aggregator
from drsg.plan.cypher.compile import pattern_ops
from drsg.plan.cypher.evaluate import evaluate, evaluate_predicate, truthy
from drsg.plan.cypher.graph import HOPS, SCORE, CypherValue, GraphView, NodeRef, PathValue, RelRef, Row
from drsg.plan.cypher.sources import build_source
from drsg.plan.cypher.values import group_key, order_key, type_name
from drsg.plan.logical import SeekIds, SeekKeys, Source
from drsg.store.records import Node
from drsg.store.snapshot import Snapshot
from drsg.workers.cypher.beam import beam
from drsg.workers.cypher.matching import Matcher
from drsg.workers.cypher.rec import Rec, Ref

#: a source's nodes, best first, with their scores (None for a scan)
SourceRunner = Callable[[Source], list[tuple[Node, float | None]]]
#: runs one write clause over all the rows so far and gives the rows that go on
WriteRunner = Callable[[rows.WriteClause, list[Row]], list[Row]]
#: how often (in candidates looked at) the clock is read
_CLOCK_EVERY = 1024


@dataclass(frozen=True, slots=True)
class Limits:
    """``[query] max_rows`` and the statement's deadline (``time.monotonic()``; None: none)."""

    max_rows: int | None = None
    deadline: float | None = None

    @classmethod
    def of(cls, max_rows: int | None, timeout: float | None) -> Limits:
        return cls(max_rows, None if timeout is None else time.monotonic() + timeout)


def scan_source(snap: Snapshot, plane: int) -> SourceRunner:
    """The scans and seeks alone (what a write statement's MATCH needs); a search is refused."""

    def run(source: Source) -> list[tuple[Node, float | None]]:
        from drsg.plan.logical import ScanAll, ScanLabel

        match source:
            case ScanAll():
                return [(node, None) for node in snap.nodes(plane)]
            case ScanLabel(label):
                return [(node, None) for node in snap.nodes(plane, label)]
            case SeekIds(ids):
                return [(node, None) for node in snap.nodes_at(plane, list(ids)) if node is not None]
            case SeekKeys(keys):
                found = (snap.node_by_key(plane, key) for key in keys)
                return [(node, None) for node in found if node is not None]
        raise QueryError(f"{type(source).__name__} cannot run here: SEARCH, HYBRID and CALL are for reads")

    return run


class Executor:
    """One statement's run (see the module); it is the statement's evaluation context."""

    def __init__(
        self,
        snap: Snapshot,
        plane: int,
        graph: GraphView,
        params: Mapping[str, CypherValue],
        sources: SourceRunner,
        limits: Limits = Limits(),
        writer: WriteRunner | None = None,
    ) -> None:
        self.snap = snap
        self.plane = plane
        self._graph = graph
        self._params = params
        self.sources = sources
        self.limits = limits
        self.writer = writer
        self.matcher = Matcher(snap, plane, graph, self.value, self.tick)
        self._ticks = 0
        self._depth = 0
        #: each scan's nodes, kept through one top-level step (an OPTIONAL MATCH scans once, not per row)
        self._found: dict[int, list[tuple[Node, float | None]]] = {}
        self._patterns: dict[tuple[int, frozenset[str], frozenset[str], bool], tuple[rows.Op, ...]] = {}
        self._remember: Callable[[Node], None] | None = getattr(graph, "remember", None)

    # ------------------------------------------------------------------ EvalContext

    @property
    def graph(self) -> GraphView:
        return self._graph

    @property
    def params(self) -> Mapping[str, CypherValue]:
        return self._params

    def pattern_exists(self, pattern: ast.PatternPart, row: Row) -> bool:
        return bool(self._pattern_rows(pattern, row, False))

    def pattern_paths(self, pattern: ast.PatternPart, row: Row) -> list[PathValue]:
        found = (rec.values[_PATH] for rec in self._pattern_rows(pattern, row, True))
        return [path for path in found if isinstance(path, PathValue)]

    def _pattern_rows(self, pattern: ast.PatternPart, row: Row, paths: bool) -> list[Rec]:
        """The rows ``pattern`` matches from ``row`` (with each one's path under ``_PATH`` if ``paths``)."""
        nodes = frozenset(name for name, value in row.items() if isinstance(value, NodeRef))
        rels = frozenset(name for name, value in row.items() if isinstance(value, RelRef))
        key = (id(pattern), nodes, rels, paths)  # the pattern lives as long as the compiled statement
        ops = self._patterns.get(key)
        if ops is None:
            part = replace(pattern, path_variable=_PATH) if paths else pattern
            ops = self._patterns[key] = pattern_ops(part, nodes, rels)
        return self.run_ops(ops, [Rec(dict(row))])

    def value(self, expr: ast.Expr, row: Row) -> CypherValue:
        return evaluate(expr, row, self)

    # ------------------------------------------------------------------ limits

    def tick(self, count: int) -> None:
        self._ticks += count
        if self._ticks >= _CLOCK_EVERY:
            self._ticks = 0
            deadline = self.limits.deadline
            if deadline is not None and time.monotonic() > deadline:
                raise QueryLimit(
                    "the statement ran past [query] timeout_secs; narrow the MATCH (a label, a key, a shorter "
                    "variable length) or raise the setting"
                )

    def clocked(self, recs: Iterable[Rec]) -> Iterator[Rec]:
        """``recs``, each counted against the deadline: a step over many rows reads the clock as it
        goes, not only when it is done."""
        for i, rec in enumerate(recs, 1):
            if not i % _CLOCK_EVERY:
                self.tick(_CLOCK_EVERY)
            yield rec

    def _check(self, recs: list[Rec], what: str) -> None:
        high = self.limits.max_rows
        if high is not None and len(recs) > high:
            raise QueryLimit(f"{what} made more than {high} rows; narrow the MATCH or raise [query] max_rows")

    # ------------------------------------------------------------------ running

    def run(self, plan: rows.RowPlan | rows.Union) -> list[Rec]:
        if isinstance(plan, rows.RowPlan):
            return self.run_ops(plan.ops, [Rec({})])
        out = self.run_ops(plan.parts[0].ops, [Rec({})])
        for part, keep_all in zip(plan.parts[1:], plan.all_, strict=True):
            out = out + self.run_ops(part.ops, [Rec({})])
            if not keep_all:
                out = _distinct(out, plan.columns)
            self._check(out, "UNION")
        return out

    def run_ops(self, ops: Iterable[rows.Op], recs: list[Rec]) -> list[Rec]:
        top = self._depth == 0
        self._depth += 1
        try:
            for op in ops:
                if top:
                    self._found.clear()  # a write step may have changed what a source finds
                recs = self.step(op, recs)
                self._check(recs, type(op).__name__)
                self.tick(_CLOCK_EVERY)  # the clock, once per step at least
        finally:
            self._depth -= 1
        return recs

    def step(self, op: rows.Op, recs: list[Rec]) -> list[Rec]:
        match op:
            case rows.NodeScan():
                return self.scan(op, recs)
            case rows.Argument(check):
                return [r for r in recs if self._argument(check, r)]
            case rows.Expand():
                return self.expand(op, recs)
            case rows.BindPath():
                return [self.bind_path(op, r) for r in self.clocked(recs)]
            case rows.Filter(predicate):
                return [r for r in self.clocked(recs) if truthy(evaluate_predicate(predicate, r.values, self))]
            case rows.Project(items, keep):
                return [self.project(items, keep, r) for r in self.clocked(recs)]
            case rows.Aggregate():
                return self.aggregate(op, recs)
            case rows.Unwind(expr, variable):
                return self.unwind(expr, variable, recs)
            case rows.Optional(ops, introduced):
                out: list[Rec] = []
                for rec in recs:
                    found = self.run_ops(ops, [rec])
                    out += found or [Rec(rec.values | dict.fromkeys(introduced), rec.seen)]
                    self._check(out, "OPTIONAL MATCH")
                return out
            case rows.Distinct(columns):
                return _distinct(recs, columns)
            case rows.Sort(keys):
                return self.sort(keys, recs)
            case rows.Skip(count):
                return recs[self.count(count, "SKIP") :]
            case rows.Limit(count):
                return recs[: self.count(count, "LIMIT")]
            case rows.Beam():
                return beam(op, recs, self.snap, self.plane, self.graph, self.value, self.tick)
            case rows.Write(clause):
                return self.write(clause, recs)
        raise AssertionError(f"no case for {type(op).__name__}")

    # ------------------------------------------------------------------ operators

    def scan(self, op: rows.NodeScan, recs: list[Rec]) -> list[Rec]:
        found = self._found.get(id(op))
        if found is None:
            found = self._found[id(op)] = self.sources(self._source(op))
        name, check = op.node.variable, op.node
        checked = bool(check.labels) or check.properties is not None
        remember, node_ok = self._remember, self.matcher.node_ok
        if remember is not None:
            for node, _ in found:
                remember(node)
        self.tick(len(found) * len(recs))
        out: list[Rec] = []
        for rec in recs:
            for node, score in found:
                if checked and not node_ok(check, node.id, rec.values):
                    continue
                ref = NodeRef(node.id)
                values = rec.values | {name: ref}
                if score is not None:
                    values[SCORE] = score
                out.append(Rec(values, rec.seen | {ref} if rec.seen else frozenset((ref,))))
            self._check(out, "MATCH")
        return out

    def _source(self, op: rows.NodeScan) -> Source:
        if op.deferred is not None:
            return build_source(op.deferred, lambda expr: self.value(expr, {}))
        if op.seek is None:
            return op.source
        values = self.value(op.seek, {})
        if values is None:
            values = []
        if not isinstance(values, list):
            raise QueryError(f"a key or id seek needs a list, not {type_name(values)}")
        if isinstance(op.source, SeekKeys):
            return SeekKeys(tuple(dict.fromkeys(v for v in values if isinstance(v, str))))
        ids = (v for v in values if isinstance(v, int) and not isinstance(v, bool) and v >= 0)
        return SeekIds(tuple(dict.fromkeys(ids)))

    def _argument(self, check: rows.NodeCheck, rec: Rec) -> bool:
        value = rec.values.get(check.variable)
        if value is None:
            return False
        if not isinstance(value, NodeRef):
            raise QueryError(f"`{check.variable}` holds {type_name(value)}, not a node")
        return self.matcher.node_ok(check, value.id, rec.values)

    def expand(self, op: rows.Expand, recs: list[Rec]) -> list[Rec]:
        out: list[Rec] = []
        for rec in recs:
            hops = rec.values.get(HOPS)
            before = hops if isinstance(hops, int) else 0
            for rel, end, taken in self.matcher.expand(op, rec.values):
                if op.backwards and isinstance(rel, list):
                    rel = rel[::-1]  # walked from the right: bound in the pattern's order
                end_ref = NodeRef(end)
                values = rec.values | {op.rel: rel, op.end.variable: end_ref, HOPS: before + taken}
                refs: set[Ref] = {end_ref}
                if isinstance(rel, RelRef):
                    refs.add(rel)
                else:
                    start = rec.values[op.start]
                    assert isinstance(start, NodeRef)
                    trail = [r for r in rel if isinstance(r, RelRef)]
                    refs.update(trail)
                    refs.update(self.matcher.path_nodes(start, trail))
                out.append(Rec(values, rec.seen | refs))
                if not len(out) % _CLOCK_EVERY:  # one start's trails alone may pass the limit
                    self._check(out, "MATCH")
            self._check(out, "MATCH")
        return out

    def bind_path(self, op: rows.BindPath, rec: Rec) -> Rec:
        first = rec.values[op.nodes[0]]
        assert isinstance(first, NodeRef)
        nodes: list[NodeRef] = [first]
        rels: list[RelRef] = []
        for rel_name, node_name in zip(op.rels, op.nodes[1:], strict=True):
            rel = rec.values[rel_name]
            chain = (
                [rel]
                if isinstance(rel, RelRef)
                else [r for r in rel if isinstance(r, RelRef)]
                if isinstance(rel, list)
                else []
            )
            nodes += self.matcher.path_nodes(nodes[-1], chain)[1:]
            rels += chain
            end = rec.values[node_name]
            assert isinstance(end, NodeRef) and nodes[-1] == end
        return Rec(rec.values | {op.variable: PathValue(tuple(nodes), tuple(rels))}, rec.seen)

    def project(self, items: tuple[tuple[str, ast.Expr], ...], keep: bool, rec: Rec) -> Rec:
        values = {name: self.value(expr, rec.values) for name, expr in items}
        if keep:
            return Rec(rec.values | values, rec.seen)
        for reserved in (SCORE, HOPS):  # score() and hops() read the row's, after a projection too
            if reserved in rec.values:
                values.setdefault(reserved, rec.values[reserved])
        return Rec(values, rec.seen)

    def aggregate(self, op: rows.Aggregate, recs: list[Rec]) -> list[Rec]:
        groups: dict[tuple[Hashable, ...], tuple[dict[str, CypherValue], list[Aggregator]]] = {}
        for rec in self.clocked(recs):
            keys = {name: self.value(expr, rec.values) for name, expr in op.keys}
            group = tuple(group_key(value) for value in keys.values())
            entry = groups.get(group)
            if entry is None:
                made = [_aggregator(call) for _, call in op.aggregates]
                entry = groups[group] = (keys, made)
            for (_, call), aggregator in zip(op.aggregates, entry[1], strict=True):
                arg = None if isinstance(call, ast.CountStar) else self.value(call.args[0], rec.values)
                aggregator.add(arg)
        if not groups and not op.keys:
            groups[()] = ({}, [_aggregator(call) for _, call in op.aggregates])
        out = []
        for keys, aggregators in groups.values():
            values = dict(keys)
            for (name, _), aggregator in zip(op.aggregates, aggregators, strict=True):
                values[name] = aggregator.result()
            out.append(Rec(values))
        return out

    def unwind(self, expr: ast.Expr, variable: str, recs: list[Rec]) -> list[Rec]:
        out: list[Rec] = []
        for rec in recs:
            value = self.value(expr, rec.values)
            items = value if isinstance(value, list) else [] if value is None else [value]
            for start in range(0, len(items), _CLOCK_EVERY):  # a long list on the clock as it unwinds
                out += [Rec(rec.values | {variable: item}, rec.seen) for item in items[start : start + _CLOCK_EVERY]]
                self._check(out, "UNWIND")
                self.tick(_CLOCK_EVERY)
        return out

    def sort(self, keys: tuple[tuple[ast.Expr, bool], ...], recs: list[Rec]) -> list[Rec]:
        def key(rec: Rec) -> tuple[object, ...]:
            return tuple(order_key(self.value(expr, rec.values), desc) for expr, desc in keys)

        keyed = [key(rec) for rec in self.clocked(recs)]  # the keys read on the clock; the sort is stable
        return [recs[i] for i in sorted(range(len(recs)), key=keyed.__getitem__)]

    def count(self, expr: ast.Expr, what: str) -> int:
        value = self.value(expr, {})  # no variable in it (the compiler checked): evaluated once
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise QueryError(f"{what} takes a non-negative whole number, not {value!r:.40}")
        return value

    def write(self, clause: rows.WriteClause, recs: list[Rec]) -> list[Rec]:
        if self.writer is None:
            raise QueryError(f"{type(clause).__name__.upper()} writes: run the statement as a write")
        done = self.writer(clause, [rec.values for rec in recs])
        if len(done) == len(recs):
            return [Rec(dict(row), rec.seen) for row, rec in zip(done, recs, strict=True)]
        return [Rec(dict(row)) for row in done]


#: where a pattern used as a value binds each path it matches (hidden: no user name starts with a space)
_PATH = f"{rows.HIDDEN}pattern path"


def _aggregator(call: ast.FunctionCall | ast.CountStar) -> Aggregator:
    if isinstance(call, ast.CountStar):
        return make_aggregator("count(*)")
    return make_aggregator(call.name, call.distinct)


def _distinct(recs: list[Rec], columns: tuple[str, ...]) -> list[Rec]:
    first: dict[tuple[Hashable, ...], int] = {}
    out: list[Rec] = []
    for rec in recs:
        key = tuple(group_key(rec.values.get(name)) for name in columns)
        at = first.get(key)
        if at is None:
            first[key] = len(out)
            out.append(rec)
        else:
            out[at] = Rec(out[at].values, out[at].seen | rec.seen)
    return out
