"""openCypher's syntax tree → a compiled statement: the row plan, and the logical plan when it can say it (pure).

:func:`compile_query` checks what can be checked before anything runs — each a
:class:`~drsg.kernel.errors.QueryError` naming the construct and where it was written — and
plans each clause as row operators (:mod:`drsg.plan.cypher.rows`). Planning a MATCH: each
pattern part starts from a node already bound by an earlier clause (no re-scan), else from its
first node, whose source is a key seek (``key(n) = "k"`` / ``key(n) IN [...]`` in the WHERE,
upstream's rule), an id seek (``id(n) = …``), its label's scan, or the plane's; the predicate
stays as a filter. SEARCH, HYBRID and CALL compile to their plan sources
(:mod:`drsg.plan.cypher.sources`). A statement in upstream's subset also compiles to the
:class:`~drsg.plan.logical.LogicalPlan` upstream would run (:mod:`drsg.plan.cypher.upstream`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from drsg.kernel.errors import QueryError, QuerySyntaxError
from drsg.kernel.values import Json
from drsg.plan.cypher import ast, rows
from drsg.plan.cypher.check import (
    NODE,
    PATH,
    REL,
    RELS,
    VALUE,
    Kind,
    at,
    check_expr,
    has_aggregate,
    is_aggregate,
    literal_value,
    parameters,
    walk,
)
from drsg.plan.cypher.graph import KEY_PROPERTY
from drsg.plan.cypher.sources import build_source
from drsg.plan.cypher.upstream import upstream_plan
from drsg.plan.logical import LogicalPlan, ScanAll, ScanLabel, SeekIds, SeekKeys


@dataclass(frozen=True, slots=True)
class Compiled:
    """A compiled statement: its row plan, its answer's columns, whether it writes, and the logical
    plan it also is (upstream's subset: ``--explain`` shows it, and it runs through the plan
    executor ``drsg query`` uses). ``parameters``: the names it reads."""

    plan: rows.RowPlan | rows.Union
    columns: tuple[str, ...]
    writes: bool
    logical: LogicalPlan | None = None
    as_of: ast.AsOfClause | None = None
    parameters: frozenset[str] = field(default_factory=frozenset)

    def to_json(self) -> Json:
        """``--explain``: the logical plan's JSON when there is one, else the row plan's."""
        return self.logical.to_json() if self.logical is not None else self.plan.to_json()


def compile_query(query: ast.Query) -> Compiled:
    writes = query.writes
    if writes and query.as_of is not None:
        raise QueryError(f"AS OF{at(query.as_of)} cannot pin a write: a write runs at the head; drop AS OF")
    if len(set(query.union_all)) > 1:
        raise QueryError(f"UNION and UNION ALL{at(query)} are mixed in one statement; use one of them throughout")
    parts = tuple(_Compiler().single(part) for part in query.parts)
    for part, tree in zip(parts[1:], query.parts[1:], strict=True):
        if part.columns != parts[0].columns:
            raise QueryError(
                f"UNION{at(tree)} joins parts with different columns ({', '.join(parts[0].columns)} and "
                f"{', '.join(part.columns)}); give every part the same RETURN names"
            )
    plan: rows.RowPlan | rows.Union = parts[0] if len(parts) == 1 else rows.Union(parts, query.union_all)
    names = frozenset(parameters(query))
    logical = None
    if not names and len(query.parts) == 1 and not writes:
        logical = upstream_plan(query.parts[0])
    return Compiled(plan, parts[0].columns, writes, logical, query.as_of, names)


@dataclass(frozen=True, slots=True)
class _ParamSeek:
    """A key or id seek whose values are a parameter's, read when the statement runs."""

    kind: str  # "key" or "id"
    values: ast.Expr


Seek = SeekKeys | SeekIds | _ParamSeek


def pattern_ops(
    part: ast.PatternPart, nodes: frozenset[str], rels: frozenset[str] = frozenset()
) -> tuple[rows.Op, ...]:
    """The operators matching ``part`` with ``nodes`` and ``rels`` bound (a pattern predicate, on a row)."""
    scope: dict[str, Kind] = dict.fromkeys(nodes, NODE) | dict.fromkeys(rels, REL)
    return tuple(_Compiler().part(part, scope, [], {}))


class _Compiler:
    def __init__(self) -> None:
        self.hidden = 0

    def fresh(self, kind: str) -> str:
        self.hidden += 1
        return f"{rows.HIDDEN}{kind}{self.hidden}"

    # ------------------------------------------------------------------ a single query

    def single(self, part: ast.SingleQuery) -> rows.RowPlan:
        scope: dict[str, Kind] = {}
        ops: list[rows.Op] = []
        columns: tuple[str, ...] = ()
        clauses = part.clauses
        for i, clause in enumerate(clauses):
            last = i == len(clauses) - 1
            if isinstance(clause, ast.Return) and not last:
                raise QueryError(f"RETURN{at(clause)} must be the last clause; use WITH to go on")
            match clause:
                case ast.Match():
                    ops += self.match(clause, scope)
                case ast.Unwind(expr, variable):
                    check_expr(expr, scope, what="UNWIND")
                    self.bind(scope, variable, VALUE, clause)
                    ops.append(rows.Unwind(expr, variable))
                case ast.With(projection, where):
                    more, new_scope, _ = self.projection(projection, scope, clause)
                    ops += more
                    scope.clear()
                    scope.update(new_scope)
                    if where is not None:
                        check_expr(where, scope, what="WHERE")
                        ops.append(rows.Filter(where))
                case ast.Return(projection):
                    more, _, columns = self.projection(projection, scope, clause)
                    ops += more
                case ast.Search() | ast.HybridSearch() | ast.CallAlgo():
                    ops.append(self.source(clause, scope))
                case ast.Beam():
                    ops.append(self.beam(clause, scope))
                case ast.Create() | ast.Merge() | ast.SetClause() | ast.Remove() | ast.Delete():
                    self.write(clause, scope)
                    ops.append(rows.Write(clause))
        writes = any(not isinstance(c, ast.READ_CLAUSES) for c in clauses)
        if clauses and not isinstance(clauses[-1], ast.Return) and not writes:
            # openCypher's grammar: a reading query ends with RETURN (so a syntax error, as the TCK says)
            line, column = part.at if part.at[0] else (1, 1)
            raise QuerySyntaxError(
                f"line {line}, column {column}: the statement ends without RETURN; add RETURN with what to answer"
            )
        return rows.RowPlan(tuple(ops), columns)

    def bind(self, scope: dict[str, Kind], name: str, kind: Kind, where: object) -> None:
        bound = scope.get(name)
        if bound is not None and bound != kind:
            raise QueryError(f"variable `{name}`{at(where)} is a {bound} already; it cannot be bound as a {kind}")
        if bound is not None and kind in (VALUE, PATH):
            raise QueryError(f"variable `{name}`{at(where)} is bound already; choose another name")
        scope[name] = kind

    # ------------------------------------------------------------------ MATCH

    def match(self, clause: ast.Match, scope: dict[str, Kind]) -> list[rows.Op]:
        before = set(scope)
        seeks = {} if clause.where is None else _seeks(clause.where)
        used: list[str] = []  # relationship variables of this clause (isomorphism)
        ops: list[rows.Op] = []
        for part in clause.pattern:
            ops += self.part(part, scope, used, seeks)
        if clause.where is not None:
            check_expr(clause.where, scope, what="WHERE")
            ops = _push_filters(ops, clause.where, before)
        if not clause.optional:
            return ops
        introduced = tuple(name for name in scope if name not in before)
        return [rows.Optional(tuple(ops), introduced)]

    def part(
        self, part: ast.PatternPart, scope: dict[str, Kind], used: list[str], seeks: dict[str, Seek]
    ) -> list[rows.Op]:
        if part.shortest is not None:
            raise QueryError(f"{part.shortest}(){at(part)} is not supported; match the paths and order by length")
        nodes = [n.variable or self.fresh("n") for n in part.nodes]
        rels = [r.variable or self.fresh("r") for r in part.rels]
        for pattern, name in zip(part.nodes, nodes, strict=True):
            if pattern.properties is not None:
                check_expr(pattern.properties, scope, what="a node pattern")
            if name in scope and scope[name] not in (NODE, VALUE):  # a value may hold a node: checked as it runs
                raise QueryError(f"variable `{name}`{at(pattern)} is a {scope[name]} already; it cannot be a node")
        # where the walk starts: a bound node (no scan), else a seek, else a label's scan, else the first
        start = next((i for i, name in enumerate(nodes) if name in scope), None)
        if start is None:
            start = next((i for i, name in enumerate(nodes) if name in seeks), None)
        if start is None:
            start = next((i for i, node in enumerate(part.nodes) if node.labels), 0)
        first = part.nodes[start]
        ops: list[rows.Op] = []
        if nodes[start] in scope:
            ops.append(rows.Argument(_check(nodes[start], first)))
        else:
            ops.append(self.scan(nodes[start], first, seeks.get(nodes[start])))
            scope[nodes[start]] = NODE
        order = [(j, j, j + 1, part.rels[j].direction, False) for j in range(start, len(rels))]
        order += [(j, j + 1, j, _reverse(part.rels[j].direction), True) for j in range(start - 1, -1, -1)]
        for j, src, dst, direction, backwards in order:
            rel = part.rels[j]
            op = self.expand(rel, rels[j], direction, nodes[src], nodes[dst], part.nodes[dst], scope, used)
            ops.append(replace(op, backwards=backwards) if backwards else op)
        if part.path_variable is not None:
            self.bind(scope, part.path_variable, PATH, part)
            ops.append(rows.BindPath(part.path_variable, tuple(nodes), tuple(rels)))
        return ops

    def scan(self, name: str, pattern: ast.NodePattern, seek: Seek | None) -> rows.NodeScan:
        check = _check(name, pattern)
        seek = seek or _pattern_seek(pattern)
        if isinstance(seek, SeekKeys | SeekIds):
            return rows.NodeScan(check, seek)
        if seek is not None:
            return rows.NodeScan(check, SeekKeys(()) if seek.kind == "key" else SeekIds(()), seek=seek.values)
        if pattern.labels:
            return rows.NodeScan(replace(check, labels=pattern.labels[1:]), ScanLabel(pattern.labels[0]))
        return rows.NodeScan(check, ScanAll())

    def expand(
        self,
        rel: ast.RelPattern,
        name: str,
        direction: ast.Direction,
        src: str,
        dst: str,
        end: ast.NodePattern,
        scope: dict[str, Kind],
        used: list[str],
    ) -> rows.Expand:
        if rel.properties is not None:
            check_expr(rel.properties, scope, what="a relationship pattern")
        kind = REL if rel.length is None else RELS
        rel_bound = name in scope
        if rel_bound and scope[name] not in (kind, VALUE):
            raise QueryError(f"variable `{name}`{at(rel)} is a {scope[name]} already; it cannot be bound as a {kind}")
        if rel_bound and (kind == RELS or name in used):
            raise QueryError(
                f"relationship variable `{name}`{at(rel)} is bound already; a MATCH binds each relationship once"
            )
        end_bound = dst in scope
        low, high = 1, 1
        if rel.length is not None:
            low = 1 if rel.length.min_hops is None else rel.length.min_hops
            high_ = rel.length.max_hops
            if high_ is not None and high_ < low:
                raise QueryError(f"a variable length{at(rel)} runs from {low} to {high_}: the upper bound is smaller")
            op = rows.Expand(src, name, rel.types, direction, _check(dst, end), end_bound, True, low, high_)
        else:
            op = rows.Expand(src, name, rel.types, direction, _check(dst, end), end_bound, False, low, high)
        op = replace(op, properties=rel.properties, unique_with=tuple(used), rel_bound=rel_bound)
        used.append(name)
        self.bind(scope, name, kind, rel)
        scope[dst] = NODE
        return op

    # ------------------------------------------------------------------ upstream's sources and BEAM

    def source(self, clause: ast.Search | ast.HybridSearch | ast.CallAlgo, scope: dict[str, Kind]) -> rows.NodeScan:
        variable = clause.variable or "n"
        if variable in scope:
            raise QueryError(f"variable `{variable}`{at(clause)} is bound already; a source binds a new variable")
        scope[variable] = NODE
        check = rows.NodeCheck(variable)
        if any(True for _ in parameters(clause)):
            return rows.NodeScan(check, ScanAll(), deferred=clause)
        return rows.NodeScan(check, build_source(clause, literal_value))

    def beam(self, clause: ast.Beam, scope: dict[str, Kind]) -> rows.Beam:
        if scope.get(clause.variable) != NODE:
            raise QueryError(f"BEAM ({clause.variable}){at(clause)} needs a node bound before it")
        for expr in (clause.near, clause.width, clause.depth):
            check_expr(expr, scope, what="BEAM")
        prop, metric = clause.property or "embedding", (clause.metric or "cosine").lower()
        return rows.Beam(
            clause.variable, clause.direction, clause.edge_type, prop, clause.near, metric, clause.width, clause.depth
        )

    # ------------------------------------------------------------------ writes

    def write(self, clause: rows.WriteClause, scope: dict[str, Kind]) -> None:
        """Check a write clause's names and shapes; bind what it creates."""
        match clause:
            case ast.Create(pattern):
                for part in pattern:
                    self.created(part, scope, merge=False)
            case ast.Merge(part, on_create, on_match):
                self.created(part, scope, merge=True)
                for item in (*on_create, *on_match):
                    self.set_item(item, scope)
            case ast.SetClause(items):
                for item in items:
                    self.set_item(item, scope)
            case ast.Remove(items):
                for removed in items:
                    if isinstance(removed, ast.RemoveProperty):
                        check_expr(removed.target, scope, what="REMOVE")
                    else:
                        check_expr(ast.Variable(removed.variable, at=removed.at), scope, what="REMOVE")
            case ast.Delete(exprs):
                for expr in exprs:
                    check_expr(expr, scope, what="DELETE")

    def set_item(self, item: ast.SetItem, scope: dict[str, Kind]) -> None:
        match item:
            case ast.SetProperty(target, value):
                check_expr(target, scope, what="SET")
                check_expr(value, scope, what="SET")
            case ast.SetProperties(variable, value):
                check_expr(ast.Variable(variable, at=item.at), scope, what="SET")
                check_expr(value, scope, what="SET")
            case ast.SetLabels(variable):
                check_expr(ast.Variable(variable, at=item.at), scope, what="SET")

    def created(self, part: ast.PatternPart, scope: dict[str, Kind], *, merge: bool) -> None:
        what = "MERGE" if merge else "CREATE"
        if part.shortest is not None:
            raise QueryError(f"{part.shortest}(){at(part)} cannot be created")
        for node in part.nodes:
            if node.properties is not None:
                check_expr(node.properties, scope, what=what)
            if node.variable is not None:
                if node.variable in scope and (node.labels or node.properties) and not merge:
                    raise QueryError(
                        f"variable `{node.variable}`{at(node)} is bound already; {what} cannot give it labels or "
                        "properties (use SET)"
                    )
                self.bind(scope, node.variable, NODE, node)
        for rel in part.rels:
            if rel.direction == "both" and not merge:
                raise QueryError(f"a created relationship{at(rel)} needs a direction: write -[:T]-> or <-[:T]-")
            if len(rel.types) != 1:
                raise QueryError(f"a created relationship{at(rel)} needs exactly one type, e.g. -[:KNOWS]->")
            if rel.length is not None:
                raise QueryError(f"a variable-length relationship{at(rel)} cannot be created")
            if rel.properties is not None:
                check_expr(rel.properties, scope, what=what)
            if rel.variable is not None:
                if rel.variable in scope:
                    raise QueryError(f"variable `{rel.variable}`{at(rel)} is bound already; {what} makes a new one")
                self.bind(scope, rel.variable, REL, rel)
        if part.path_variable is not None:
            self.bind(scope, part.path_variable, PATH, part)

    # ------------------------------------------------------------------ WITH / RETURN

    def projection(
        self, proj: ast.Projection, scope: Mapping[str, Kind], clause: ast.With | ast.Return
    ) -> tuple[list[rows.Op], dict[str, Kind], tuple[str, ...]]:
        keyword = "WITH" if isinstance(clause, ast.With) else "RETURN"
        items: list[tuple[str, ast.Expr]] = []
        if proj.star:
            visible = sorted(name for name in scope if not name.startswith(rows.HIDDEN))
            if not visible and not proj.items:
                raise QueryError(f"{keyword} *{at(clause)} has no variables to answer; name what to {keyword}")
            items += [(name, ast.Variable(name)) for name in visible]
        for item in proj.items:
            check_expr(item.expr, scope, aggregates=True, what=keyword)
            if item.alias is not None:
                name = item.alias
            elif isinstance(item.expr, ast.Variable):
                name = item.expr.name
            elif keyword == "WITH":
                raise QueryError(f"WITH {item.text or 'expression'}{at(item)} needs an alias: write AS name")
            else:
                name = item.text
            items.append((name, item.expr))
        columns = tuple(name for name, _ in items)
        duplicate = next((name for i, name in enumerate(columns) if name in columns[:i]), None)
        if duplicate is not None:
            raise QueryError(f"{keyword}{at(clause)} names the column `{duplicate}` twice; give each its own alias")
        new_scope = {name: _kind_of(expr, scope) for name, expr in items}
        aggregating = any(has_aggregate(expr) for _, expr in items)
        ops: list[rows.Op] = []
        order = proj.order
        keep = False
        if aggregating:
            ops += self.aggregate(items, clause)
        elif order and not proj.distinct:
            ops.append(rows.Project(tuple(items), keep=True))
            keep = True
        else:
            ops.append(rows.Project(tuple(items)))
        if proj.distinct:
            ops.append(rows.Distinct(columns))
        if order:
            ops.append(rows.Sort(tuple(self.sort_key(s, items, scope, keep, keyword) for s in order)))
        for bound, make in ((proj.skip, rows.Skip), (proj.limit, rows.Limit)):
            if bound is not None:
                _check_count(bound, "SKIP" if make is rows.Skip else "LIMIT")
                ops.append(make(bound))
        if keep:
            ops.append(rows.Project(tuple((name, ast.Variable(name)) for name in columns)))
        return ops, new_scope, columns

    def sort_key(
        self,
        item: ast.SortItem,
        items: list[tuple[str, ast.Expr]],
        scope: Mapping[str, Kind],
        keep: bool,
        keyword: str,
    ) -> tuple[ast.Expr, bool]:
        expr = _substitute(item.expr, {e: ast.Variable(name) for name, e in items if not isinstance(e, ast.Variable)})
        visible: dict[str, Kind] = {name: VALUE for name, _ in items}
        if keep:
            visible = {**scope, **visible}
        try:
            check_expr(expr, visible, what="ORDER BY")
        except QueryError as exc:
            if not keep and "not defined" in exc.message:
                raise QueryError(
                    f"ORDER BY{at(item)} after {keyword} DISTINCT or an aggregation can only use what {keyword} "
                    f"projects ({', '.join(name for name, _ in items)}); project it too"
                ) from None
            raise
        return expr, item.descending

    def aggregate(self, items: list[tuple[str, ast.Expr]], clause: object) -> list[rows.Op]:
        keys = [(name, expr) for name, expr in items if not has_aggregate(expr)]
        calls: dict[ast.Expr, str] = {}
        for _, expr in items:
            for sub in walk(expr):
                if is_aggregate(sub) and sub not in calls:
                    calls[sub] = self.fresh("agg")
        replacements: dict[ast.Expr, ast.Expr] = {call: ast.Variable(name) for call, name in calls.items()}
        replacements |= {expr: ast.Variable(name) for name, expr in keys}
        final: list[tuple[str, ast.Expr]] = []
        allowed = {name for name, _ in keys} | set(calls.values())
        for name, expr in items:
            rewritten = _substitute(expr, replacements)
            for sub in walk(rewritten):
                if isinstance(sub, ast.Variable) and sub.name not in allowed:
                    raise QueryError(
                        f"`{sub.name}` in the aggregating item {name}{at(clause)} is neither aggregated nor a "
                        "grouping key; add it as its own item or aggregate it"
                    )
            final.append((name, rewritten))
        aggregates = tuple(
            (name, call) for call, name in calls.items() if isinstance(call, ast.FunctionCall | ast.CountStar)
        )
        return [rows.Aggregate(tuple(keys), aggregates), rows.Project(tuple(final))]


# ---------------------------------------------------------------------------- helpers


def _check(name: str, pattern: ast.NodePattern) -> rows.NodeCheck:
    return rows.NodeCheck(name, pattern.labels, pattern.properties)


def _reverse(direction: ast.Direction) -> ast.Direction:
    return "in" if direction == "out" else "out" if direction == "in" else "both"


def _kind_of(expr: ast.Expr, scope: Mapping[str, Kind]) -> Kind:
    if isinstance(expr, ast.Variable):
        return scope.get(expr.name, VALUE)
    return VALUE


def _check_count(expr: ast.Expr, what: str) -> None:
    """openCypher 9: SKIP and LIMIT take any expression that reads no variable (a literal, a
    ``$parameter``, ``toInteger($n) + 1``); a literal is checked here, the rest when it runs."""
    if any(isinstance(part, ast.Variable | ast.PatternPredicate) for part in walk(expr)):
        raise QueryError(
            f"{what}{at(expr)} cannot read a variable; give a number, a $parameter or an expression of those"
        )
    check_expr(expr, {}, what=what)
    if isinstance(expr, ast.Literal):
        value = literal_value(expr)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise QueryError(f"{what}{at(expr)} takes a non-negative whole number, not {value!r:.40}")


def _substitute(expr: ast.Expr, replacements: Mapping[ast.Expr, ast.Expr]) -> ast.Expr:
    """``expr`` with each sub-expression equal to a key replaced (equality ignores positions)."""
    found = replacements.get(expr)
    if found is not None:
        return found
    if isinstance(expr, ast.PatternPredicate | ast.Literal | ast.Parameter | ast.Variable | ast.CountStar):
        return expr
    changes: dict[str, object] = {}
    for name in expr.__dataclass_fields__:
        value = getattr(expr, name)
        new = _substitute_in(value, replacements)
        if new is not value:
            changes[name] = new
    return replace(expr, **changes) if changes else expr  # type: ignore[arg-type]  # an expression's own fields


def _substitute_in(value: object, replacements: Mapping[ast.Expr, ast.Expr]) -> object:
    if isinstance(value, ast.EXPR_TYPES):
        return _substitute(value, replacements)
    if isinstance(value, tuple):
        items = tuple(_substitute_in(item, replacements) for item in value)
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    return value


def _push_filters(ops: list[rows.Op], where: ast.Expr, bound: set[str]) -> list[rows.Op]:
    """A MATCH's operators with each AND-term of its WHERE right after the operator that binds the
    last variable it reads (a term on the first node filters before the walk, not after it). A term
    with a pattern predicate or a local variable (a list comprehension's) goes last."""
    placed: dict[int, list[ast.Expr]] = {}
    names = set(bound)
    after: list[set[str]] = []
    for op in ops:
        match op:
            case rows.NodeScan(node):
                names.add(node.variable)
            case rows.Expand():
                names.update((op.rel, op.end.variable))
            case rows.BindPath(variable):
                names.add(variable)
        after.append(set(names))
    for term in _conjuncts(where):
        reads = [e for e in walk(term)]
        at_end = any(isinstance(e, ast.PatternPredicate | ast.ListComprehension | ast.Quantified) for e in reads)
        needed = {e.name for e in reads if isinstance(e, ast.Variable)}
        index = len(ops) - 1
        if not at_end:
            index = next((i for i, names_then in enumerate(after) if needed <= names_then), index)
        placed.setdefault(index, []).append(term)
    out: list[rows.Op] = []
    for i, op in enumerate(ops):
        out.append(op)
        out += [rows.Filter(term) for term in placed.get(i, ())]
    return out


def _conjuncts(expr: ast.Expr) -> list[ast.Expr]:
    if isinstance(expr, ast.Binary) and expr.op == "AND":
        return _conjuncts(expr.lhs) + _conjuncts(expr.rhs)
    return [expr]


def _seeks(where: ast.Expr) -> dict[str, Seek]:
    """Upstream's rule: ``key(v) = k`` / ``key(v) IN [...]`` (or ``id(v)``) in a WHERE makes ``v``'s
    source a seek (its literal keys or ids, or a parameter's read when the statement runs)."""
    out: dict[str, Seek] = {}
    for term in _conjuncts(where):
        if not isinstance(term, ast.Binary) or term.op not in ("=", "IN"):
            continue
        call, other = term.lhs, term.rhs
        if term.op == "=" and not _seek_call(call) and _seek_call(other):
            call, other = other, call
        if not _seek_call(call):
            continue
        assert isinstance(call, ast.FunctionCall) and isinstance(call.args[0], ast.Variable)
        name, kind = call.args[0].name, call.name
        values: ast.Expr = ast.ListLiteral((other,)) if term.op == "=" else other
        if isinstance(other, ast.Parameter):
            out[name] = _ParamSeek(kind, values)
            continue
        try:
            literal = literal_value(values)
        except QueryError:
            continue
        if not isinstance(literal, list):
            continue
        if kind == "key" and all(isinstance(v, str) for v in literal):
            out[name] = SeekKeys(tuple(dict.fromkeys(v for v in literal if isinstance(v, str))))
        elif kind == "id" and all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in literal):
            out[name] = SeekIds(tuple(dict.fromkeys(v for v in literal if isinstance(v, int))))
    return out


def _pattern_seek(pattern: ast.NodePattern) -> Seek | None:
    """``(n {key: "k"})`` seeks the key index (graph.KEY_PROPERTY: a string ``key`` entry is the
    external key). A ``$param`` there is left to the node check, which reads it when the statement
    runs (a string matches the key, anything else the property)."""
    if not isinstance(pattern.properties, ast.MapLiteral):
        return None
    value = dict(pattern.properties.entries).get(KEY_PROPERTY)
    if isinstance(value, ast.Literal) and isinstance(value.value, str):
        return SeekKeys((value.value,))
    return None


def _seek_call(expr: ast.Expr) -> bool:
    return (
        isinstance(expr, ast.FunctionCall)
        and expr.name in ("key", "id")
        and len(expr.args) == 1
        and isinstance(expr.args[0], ast.Variable)
    )
