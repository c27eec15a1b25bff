"""A statement in upstream's subset as the logical plan upstream would run (pure).

Upstream's subset: one source (``MATCH`` a chain, or SEARCH/HYBRID/CALL with a tail), typed
hops on the last variable, a WHERE only on the last variable (and ``key()``/``id()`` seeks on the
first), RETURN that variable (or ``*``), ORDER BY, SKIP, LIMIT. Such a statement compiles to a
:class:`~drsg.plan.logical.LogicalPlan`, so ``--explain`` shows upstream's plan JSON and it runs
through the executor ``drsg query`` uses.

Only where the plan's executor answers the rows openCypher 9 defines: the plan's walk lets a
path reuse an edge and an undirected hop meet a self-loop twice, its string tests promote numbers,
its NOT of a missing value is true, its sort puts types in another order and nulls last both
ways. So a plan is made only for at most one hop, directed, and predicates where the two agree
on which rows are kept (``=``, ``<``…``>=``, ``IN`` a list, ``IS [NOT] NULL``, labels, ``AND``,
``OR``, over the last variable's properties, ``key()`` and ``score()`` against literals), and
ORDER BY ``score()`` of a scored source; anything else runs as the row plan (same answers).
"""

from __future__ import annotations

from drsg.kernel.errors import QueryError
from drsg.plan import expr as px
from drsg.plan.cypher import ast
from drsg.plan.cypher.check import at, literal_value, walk
from drsg.plan.cypher.sources import Read, build_source
from drsg.plan.logical import (
    MAX_HOPS,
    MAX_K,
    Direction,
    Distinct,
    Expand,
    ExpandVar,
    Filter,
    Limit,
    LogicalPlan,
    ScanAll,
    ScanLabel,
    SeekIds,
    SeekKeys,
    Skip,
    Sort,
    SortKey,
    Source,
    Step,
)

_COMPARE: dict[str, px.CompareOp] = {"=": "Eq", "<": "Lt", "<=": "Le", ">": "Gt", ">=": "Ge"}
_FLIPPED = {"=": "=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}


class _NotSubset(Exception):
    """The statement is outside the subset (or outside where the two executors agree)."""


def upstream_plan(query: ast.SingleQuery) -> LogicalPlan | None:
    """The logical plan of a statement in upstream's subset; None for any other."""
    try:
        return _plan(query)
    except _NotSubset:
        return None


def source_plan(query: ast.Query, value: Read) -> LogicalPlan:
    """``drsg query``'s statement — a SEARCH, HYBRID or CALL source and upstream's tail — as its
    logical plan, its values read by ``value``; a QueryError naming ``drsg cypher`` for any other."""
    head = query.parts[0].clauses[0] if query.parts and query.parts[0].clauses else None
    if not isinstance(head, ast.Search | ast.HybridSearch | ast.CallAlgo) or query.explain:
        raise QueryError(
            'a query here starts with SEARCH, HYBRID or CALL, e.g. SEARCH (d:Doc) ON body MATCHING "graph"; '
            "run other Cypher with drsg cypher"
        )
    if len(query.parts) == 1 and len(query.parts[0].clauses) == 1:
        return LogicalPlan(build_source(head, value), ())
    for clause in query.parts[0].clauses:
        if isinstance(clause, ast.Return):
            for word, bound in (("SKIP", clause.projection.skip), ("LIMIT", clause.projection.limit)):
                if isinstance(bound, ast.Literal) and isinstance(bound.value, int) and not 0 <= bound.value <= MAX_K:
                    raise QueryError(f"{word}{at(bound)} must be a whole number from 0 to {MAX_K} in a plan")
    try:
        if len(query.parts) > 1:
            raise _NotSubset
        return _plan(query.parts[0], value)
    except _NotSubset:
        name = {ast.Search: "SEARCH", ast.HybridSearch: "HYBRID", ast.CallAlgo: "CALL"}[type(head)]
        variable = head.variable or "n"
        raise QueryError(
            f"this {name} statement{at(query.parts[0])} is Cypher beyond a plain plan (a plan returns {variable} "
            f"or *, with LIMIT, SKIP, ORDER BY score() and simple filters); run it with drsg cypher"
        ) from None


def _plan(query: ast.SingleQuery, value: Read = literal_value) -> LogicalPlan:
    clauses = list(query.clauses)
    if len(clauses) < 2 or not isinstance(clauses[-1], ast.Return):
        raise _NotSubset
    ret = clauses.pop()
    assert isinstance(ret, ast.Return)
    scored = False
    source: Source | None = None
    first: str | None
    if isinstance(clauses[0], ast.Search | ast.HybridSearch | ast.CallAlgo):
        head = clauses.pop(0)
        assert isinstance(head, ast.Search | ast.HybridSearch | ast.CallAlgo)
        source = build_source(head, value)
        scored, first = True, head.variable or "n"
    if len(clauses) > 1:
        raise _NotSubset
    match = clauses[0] if clauses else None
    if match is not None and (not isinstance(match, ast.Match) or match.optional or len(match.pattern) != 1):
        raise _NotSubset
    part = match.pattern[0] if match is not None else None
    if part is None:
        assert source is not None
        last, steps, where = first, [], None
    else:
        if part.path_variable is not None or part.shortest is not None:
            raise _NotSubset
        start = part.nodes[0]
        if source is not None:
            if start.variable != first or start.labels or start.properties is not None:
                raise _NotSubset
        else:
            first = start.variable
        assert match is not None
        where = match.where
        last = part.nodes[-1].variable
        source, where = _source(source, start, first, last, where)
        steps = _hops(part)
    steps += _filters(where, last, scored)
    return LogicalPlan(source, (*steps, *_projection(ret.projection, last, first, part, scored)))


def _source(
    given: Source | None, start: ast.NodePattern, first: str | None, last: str | None, where: ast.Expr | None
) -> tuple[Source, ast.Expr | None]:
    """The MATCH's source, and what of the WHERE is left once a seek took its term."""
    if given is not None:
        return given, where
    if start.properties is not None or len(start.labels) > 1:
        raise _NotSubset
    terms = _conjuncts(where)
    for i, term in enumerate(terms):
        seek = _seek(term, first)
        if seek is not None:
            if start.labels and first != last:
                raise _NotSubset  # the label would need a filter on the first variable
            rest = terms[:i] + terms[i + 1 :]
            if start.labels:
                rest.append(ast.HasLabels(ast.Variable(last or ""), start.labels))
            return seek, _and(rest)
    if first is not None and first != last and any(first in _variables(t) for t in terms):
        raise _NotSubset
    return (ScanLabel(start.labels[0]) if start.labels else ScanAll()), where


def _seek(term: ast.Expr, first: str | None) -> Source | None:
    """``key(first) = "k"`` / ``IN ["k", …]`` → SeekKeys; ``id(first) = 7`` / ``IN [...]`` → SeekIds (exact)."""
    if first is None or not isinstance(term, ast.Binary) or term.op not in ("=", "IN"):
        return None
    call, other = term.lhs, term.rhs
    if term.op == "=" and isinstance(other, ast.FunctionCall):
        call, other = other, call
    if not (isinstance(call, ast.FunctionCall) and call.name in ("key", "id") and call.args == (ast.Variable(first),)):
        return None
    values = [other] if term.op == "=" else list(other.items) if isinstance(other, ast.ListLiteral) else None
    if values is None or not all(isinstance(v, ast.Literal) for v in values):
        return None
    literal = [v.value for v in values if isinstance(v, ast.Literal)]
    if call.name == "key" and all(isinstance(v, str) for v in literal):
        return SeekKeys(tuple(dict.fromkeys(str(v) for v in literal)))
    if call.name == "id" and all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in literal):
        return SeekIds(tuple(dict.fromkeys(int(v) for v in literal if isinstance(v, int))))
    return None


def _hops(part: ast.PatternPart) -> list[Step]:
    if len(part.rels) > 1:
        raise _NotSubset  # two hops: the plan's walk may reuse an edge where a MATCH may not
    for node in part.nodes[1:-1]:
        if node.labels or node.properties is not None:
            raise _NotSubset
    steps: list[Step] = []
    for rel in part.rels:
        if len(rel.types) > 1 or rel.properties is not None or rel.direction == "both":
            raise _NotSubset
        direction: Direction = "Out" if rel.direction == "out" else "In"
        edge_type = rel.types[0] if rel.types else None
        if rel.length is None:
            steps.append(Expand(direction, edge_type))
            continue
        low = 1 if rel.length.min_hops is None else rel.length.min_hops
        high = rel.length.max_hops
        if high is None or high > 1 or high > MAX_HOPS or low > high:
            raise _NotSubset
        steps.append(ExpandVar(direction, edge_type, low, high))
    if not part.rels:
        return steps  # the one node is the source's: its label is the scan's
    end = part.nodes[-1]
    filters: list[Step] = [Filter(px.HasLabel(label)) for label in end.labels]
    if end.properties is not None:
        if not isinstance(end.properties, ast.MapLiteral):
            raise _NotSubset
        for key, value in end.properties.entries:
            filters.append(Filter(px.Compare("Eq", px.Property(key), _scalar(value))))
    return steps + filters


def _filters(where: ast.Expr | None, last: str | None, scored: bool) -> list[Step]:
    if where is None:
        return []
    if last is None:
        raise _NotSubset
    return [Filter(_expr(where, last, scored))]


def _expr(expr: ast.Expr, var: str, scored: bool) -> px.Expr:
    match expr:
        case ast.Binary("AND" | "OR" as op, lhs, rhs):
            return px.Logic("And" if op == "AND" else "Or", _expr(lhs, var, scored), _expr(rhs, var, scored))
        case ast.Binary("=" | "<" | "<=" | ">" | ">=" as op, lhs, rhs):
            if isinstance(lhs, ast.Literal):
                return px.Compare(_COMPARE[_FLIPPED[op]], _operand(rhs, var, scored), _scalar(lhs))
            return px.Compare(_COMPARE[op], _operand(lhs, var, scored), _scalar(rhs))
        case ast.Binary("IN", needle, ast.ListLiteral(items)):
            literal = tuple(_scalar(item).constant for item in items)
            scalars = tuple(v for v in literal if not isinstance(v, list))
            return px.In(_operand(needle, var, scored), px.Literal("List", scalars))
        case ast.IsNull(operand, negated):
            inner = px.IsNull(_operand(operand, var, scored))
            return px.Not(inner) if negated else inner
        case ast.HasLabels(ast.Variable(name), labels) if name == var and labels:
            out: px.Expr = px.HasLabel(labels[0])
            for label in labels[1:]:
                out = px.Logic("And", out, px.HasLabel(label))
            return out
    raise _NotSubset


def _operand(expr: ast.Expr, var: str, scored: bool) -> px.Expr:
    match expr:
        case ast.PropertyAccess(ast.Variable(name), key) if name == var:
            return px.Property(key)
        case ast.FunctionCall("key", (ast.Variable(name),)) if name == var:
            return px.ExternalKey()
        case ast.FunctionCall("score", ()) if scored:
            return px.Score()
    raise _NotSubset


def _scalar(expr: ast.Expr) -> px.Literal:
    match expr:
        case ast.Literal(bool() as value):
            return px.Literal("Bool", value)
        case ast.Literal(int() as value):
            return px.Literal("Int", value)
        case ast.Literal(float() as value):
            return px.Literal("Float", value)
        case ast.Literal(str() as value):
            return px.Literal("Str", value)
    raise _NotSubset


def _projection(proj: ast.Projection, last: str | None, first: str | None, part: object, scored: bool) -> list[Step]:
    if last is None:
        raise _NotSubset
    if proj.star:
        named = _named(part) | ({first} if first else set())
        if proj.items or named != {last}:
            raise _NotSubset
    elif len(proj.items) != 1 or proj.items[0].expr != ast.Variable(last):
        raise _NotSubset
    steps: list[Step] = [Distinct()] if proj.distinct else []
    if proj.order:
        keys = []
        for item in proj.order:
            if item.expr != ast.FunctionCall("score") or not scored:
                raise _NotSubset  # the plan's sort orders types and nulls otherwise than openCypher
            keys.append(SortKey(px.Score(), item.descending))
        steps.append(Sort(tuple(keys)))
    for bound, make in ((proj.skip, Skip), (proj.limit, Limit)):
        if bound is not None:
            if not isinstance(bound, ast.Literal) or not isinstance(bound.value, int) or isinstance(bound.value, bool):
                raise _NotSubset
            if not 0 <= bound.value <= MAX_K:
                raise _NotSubset
            steps.append(make(bound.value))
    return steps


def _named(part: object) -> set[str]:
    if not isinstance(part, ast.PatternPart):
        return set()
    names = {n.variable for n in part.nodes} | {r.variable for r in part.rels}
    return {name for name in names if name is not None}


def _conjuncts(expr: ast.Expr | None) -> list[ast.Expr]:
    if expr is None:
        return []
    if isinstance(expr, ast.Binary) and expr.op == "AND":
        return _conjuncts(expr.lhs) + _conjuncts(expr.rhs)
    return [expr]


def _and(terms: list[ast.Expr]) -> ast.Expr | None:
    if not terms:
        return None
    out = terms[0]
    for term in terms[1:]:
        out = ast.Binary("AND", out, term)
    return out


def _variables(expr: ast.Expr) -> set[str]:
    return {e.name for e in walk(expr) if isinstance(e, ast.Variable)}
