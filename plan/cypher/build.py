"""lark's parse tree of a Cypher statement → the syntax tree (:mod:`drsg.plan.cypher.ast`), pure.

One method per grammar rule (``grammar.lark``); each gets the rule's meta (where it starts) and
its children, already built. What a grammar cannot say is checked here and raised as a
:class:`SyntaxProblem` at its line and column (the parser words it as a QuerySyntaxError, or as a
QueryError for openCypher drsg does not run, such as a procedure call): integers past 64 bits,
unknown string escapes, a key twice in a map, HYBRID's parts at most once, where a WHERE or a bare
LIMIT may stand. Upstream's sources bind one variable; their relationship
tail and their WHERE become a :class:`ast.Match` appended after them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from lark import Token, v_args
from lark.tree import Meta

from drsg.kernel.errors import BadValue, UsageError
from drsg.kernel.frozen import hashable
from drsg.kernel.metrics import check_metric
from drsg.plan.algo import ALGOS, check_algo
from drsg.plan.call import ARGS as ALGO_ARGS
from drsg.plan.cypher import ast
from drsg.plan.cypher.build_expr import Dotted, ExprBuild, Name, SyntaxProblem, at_of, fail, is_tok, tok_at, values
from drsg.plan.hybrid import FUSIONS

__all__ = ["Build", "SyntaxProblem"]


@hashable
class _Where:
    expr: ast.Expr
    at: ast.Position


@hashable
class _Page:
    order: tuple[ast.SortItem, ...]
    skip: ast.Expr | None
    limit: ast.Expr | None
    at: ast.Position


@hashable
class _Tail:
    nodes: tuple[ast.NodePattern, ...]
    rels: tuple[ast.RelPattern, ...]


@hashable
class _Source:
    """A SEARCH/HYBRID/CALL clause, the variable it binds and its relationship tail."""

    clause: ast.Search | ast.HybridSearch | ast.CallAlgo
    variable: str
    tail: _Tail | None


@hashable
class _Part:
    word: str
    fields: dict[str, Any]
    at: ast.Position


def _after(children: Sequence[object], keyword: str) -> Any:
    """The child right after the ``keyword`` token, None when the keyword is not there."""
    for i, child in enumerate(children):
        if is_tok(child, keyword):
            return children[i + 1]
    return None


def _metric(name: Name | None) -> str | None:
    if name is None:
        return None
    try:
        check_metric(name.text)
    except BadValue as exc:
        fail(name.at, exc.message)
    return name.text


@v_args(meta=True)
class Build(ExprBuild):
    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text

    # ------------------------------------------------------------------------ statement
    def start(self, meta: Meta, children: list[Any]) -> ast.Query:
        query: ast.Query = values(children)[0]
        return replace(query, explain=is_tok(children[0], "EXPLAIN"), at=at_of(meta))

    def query(self, meta: Meta, children: list[Any]) -> ast.Query:
        parts = tuple(c for c in children if isinstance(c, ast.SingleQuery))
        union_all = tuple(c for c in children if isinstance(c, bool))
        as_of = next((c for c in children if isinstance(c, ast.AsOfClause)), None)
        return ast.Query(parts, union_all, as_of, at=at_of(meta))

    def union(self, meta: Meta, children: list[Any]) -> bool:
        return any(is_tok(c, "ALL") for c in children)

    def as_of(self, meta: Meta, children: list[Any]) -> ast.AsOfClause:
        value: Token = children[-1]
        at = tok_at(value)
        if value.type == "PARAM":
            expr: ast.Expr = ast.Parameter(value[1:], at=at)
        elif value.type == "STRING":
            expr = ast.Literal(self._string(value), at=at)
        else:
            expr = ast.Literal(self._int(value), at=at)
        timed = any(is_tok(c, "TIME") for c in children)
        kind: ast.AsOfKind = "ms" if timed else "time" if value.type == "STRING" else "seq"
        return ast.AsOfClause(kind, expr, at=at_of(meta))

    def single_query(self, meta: Meta, children: list[Any]) -> ast.SingleQuery:
        return ast.SingleQuery(self._assemble(children), at=at_of(meta))

    def _assemble(self, items: list[Any]) -> tuple[ast.Clause, ...]:
        """The clauses in order: a source's tail and WHERE appended as a Match, a WHERE given to
        the MATCH or WITH before it, a bare ORDER BY/SKIP/LIMIT after a source as ``RETURN *``."""
        clauses: list[ast.Clause] = []
        bound: str | None = None  # the variable the source or BEAM just before binds
        for i, item in enumerate(items):
            if clauses and isinstance(clauses[-1], ast.Return):
                fail(_item_at(item), "RETURN ends a query: only UNION or AS OF may follow it")
            if isinstance(item, _Source):
                if i:
                    fail(item.clause.at, f"{_source_word(item.clause)} starts a statement; it cannot follow a clause")
                clauses.append(item.clause)
                if item.tail is not None:
                    head = ast.NodePattern(item.variable, at=item.clause.at)
                    part = ast.PatternPart((head, *item.tail.nodes), item.tail.rels, at=item.clause.at)
                    clauses.append(ast.Match((part,), at=item.clause.at))
                bound = item.variable
                continue
            if isinstance(item, _Where):
                clauses.append(self._where(clauses, bound, item))
                bound = None
                continue
            if isinstance(item, _Page):
                if not clauses or not isinstance(clauses[0], ast.Search | ast.HybridSearch | ast.CallAlgo):
                    fail(item.at, "ORDER BY, SKIP and LIMIT follow RETURN or WITH (e.g. RETURN n LIMIT 10)")
                projection = ast.Projection(star=True, order=item.order, skip=item.skip, limit=item.limit, at=item.at)
                clauses.append(ast.Return(projection, at=item.at))
                continue
            clauses.append(item)
            bound = item.variable if isinstance(item, ast.Beam) else None
        return tuple(clauses)

    def _where(self, clauses: list[ast.Clause], bound: str | None, where: _Where) -> ast.Clause:
        last = clauses.pop() if clauses else None
        if isinstance(last, ast.Match | ast.With) and last.where is not None:
            fail(where.at, "a second WHERE: join the conditions with AND")
        if isinstance(last, ast.Match):
            return replace(last, where=where.expr)
        if isinstance(last, ast.With):
            return replace(last, where=where.expr)
        if last is not None:
            clauses.append(last)
        if bound is None:
            fail(where.at, "WHERE follows MATCH, OPTIONAL MATCH, WITH, SEARCH, HYBRID, CALL or BEAM")
        node = ast.NodePattern(bound, at=where.at)
        return ast.Match((ast.PatternPart((node,), at=where.at),), where=where.expr, at=where.at)

    # ------------------------------------------------------------------------ clauses
    def match(self, meta: Meta, children: list[Any]) -> ast.Match:
        return ast.Match(children[-1], optional=is_tok(children[0], "OPTIONAL"), at=at_of(meta))

    def unwind(self, meta: Meta, children: list[Any]) -> ast.Unwind:
        expr, name = values(children)
        return ast.Unwind(expr, name.text, at=at_of(meta))

    def with_(self, meta: Meta, children: list[Any]) -> ast.With:
        return ast.With(children[-1], at=at_of(meta))

    def return_(self, meta: Meta, children: list[Any]) -> ast.Return:
        return ast.Return(children[-1], at=at_of(meta))

    def where_(self, meta: Meta, children: list[Any]) -> _Where:
        return _Where(children[-1], at_of(meta))

    def page(self, meta: Meta, children: list[Any]) -> _Page:
        order = next((c for c in children if isinstance(c, tuple)), ())
        skip = next((c[1] for c in children if isinstance(c, list) and c[0] == "skip"), None)
        limit = next((c[1] for c in children if isinstance(c, list) and c[0] == "limit"), None)
        return _Page(order, skip, limit, at_of(meta))

    def create(self, meta: Meta, children: list[Any]) -> ast.Create:
        return ast.Create(children[-1], at=at_of(meta))

    def merge(self, meta: Meta, children: list[Any]) -> ast.Merge:
        part = values(children)[0]
        on_create: list[ast.SetItem] = []
        on_match: list[ast.SetItem] = []
        for kind, items in (c for c in children if isinstance(c, tuple)):
            (on_create if kind == "CREATE" else on_match).extend(items)
        return ast.Merge(part, tuple(on_create), tuple(on_match), at=at_of(meta))

    def merge_action(self, meta: Meta, children: list[Any]) -> tuple[str, tuple[ast.SetItem, ...]]:
        return (children[1].type, tuple(values(children)))

    def set_(self, meta: Meta, children: list[Any]) -> ast.SetClause:
        return ast.SetClause(tuple(values(children)), at=at_of(meta))

    def set_assign(self, meta: Meta, children: list[Any]) -> ast.SetItem:
        target, value = values(children)
        if len(target.names) == 1:
            return ast.SetProperties(target.names[0].text, value, at=at_of(meta))
        access = target.expr()
        assert isinstance(access, ast.PropertyAccess)
        return ast.SetProperty(access, value, at=at_of(meta))

    def set_merge(self, meta: Meta, children: list[Any]) -> ast.SetProperties:
        target, value = values(children)
        if len(target.names) != 1:
            fail(at_of(meta), "+= sets a variable's properties from a map: write v += {key: value}")
        return ast.SetProperties(target.names[0].text, value, merge=True, at=at_of(meta))

    def set_labels(self, meta: Meta, children: list[Any]) -> ast.SetLabels:
        name, labels = children
        return ast.SetLabels(name.text, labels.names, at=at_of(meta))

    def remove(self, meta: Meta, children: list[Any]) -> ast.Remove:
        return ast.Remove(tuple(values(children)), at=at_of(meta))

    def remove_prop(self, meta: Meta, children: list[Any]) -> ast.RemoveProperty:
        target: Dotted = children[0]
        access = target.expr()
        if not isinstance(access, ast.PropertyAccess):
            fail(at_of(meta), "REMOVE takes a property (v.key) or labels (v:Label)")
        return ast.RemoveProperty(access, at=at_of(meta))

    def remove_labels(self, meta: Meta, children: list[Any]) -> ast.RemoveLabels:
        name, labels = children
        return ast.RemoveLabels(name.text, labels.names, at=at_of(meta))

    def delete(self, meta: Meta, children: list[Any]) -> ast.Delete:
        return ast.Delete(tuple(values(children)), detach=is_tok(children[0], "DETACH"), at=at_of(meta))

    # ------------------------------------------------------------------------ projections
    def projection(self, meta: Meta, children: list[Any]) -> ast.Projection:
        star, items = next(c for c in children if isinstance(c, _Items)).pair
        order = next((c for c in children if isinstance(c, tuple)), ())
        skip = next((c[1] for c in children if isinstance(c, list) and c[0] == "skip"), None)
        limit = next((c[1] for c in children if isinstance(c, list) and c[0] == "limit"), None)
        distinct = is_tok(children[0], "DISTINCT")
        return ast.Projection(items, star, distinct, order, skip, limit, at=at_of(meta))

    def proj_items(self, meta: Meta, children: list[Any]) -> _Items:
        return _Items((is_tok(children[0], "STAR"), tuple(values(children))))

    def proj_item(self, meta: Meta, children: list[Any]) -> ast.ProjectionItem:
        expr = children[0]
        as_token = next((c for c in children if is_tok(c, "AS")), None)
        end = as_token.start_pos if as_token is not None else meta.end_pos
        text = self.text[meta.start_pos : end].rstrip()
        alias = children[-1].text if as_token is not None else None
        return ast.ProjectionItem(expr, alias, text, at=at_of(meta))

    def order(self, meta: Meta, children: list[Any]) -> tuple[ast.SortItem, ...]:
        return tuple(values(children))

    def sort_item(self, meta: Meta, children: list[Any]) -> ast.SortItem:
        descending = is_tok(children[-1], "DESC", "DESCENDING")
        return ast.SortItem(children[0], descending, at=at_of(meta))

    def skip(self, meta: Meta, children: list[Any]) -> list[Any]:
        return ["skip", children[-1]]

    def limit(self, meta: Meta, children: list[Any]) -> list[Any]:
        return ["limit", children[-1]]

    # ------------------------------------------------------------------------ upstream's sources
    def search(self, meta: Meta, children: list[Any]) -> _Source:
        names = _names_after(children, "SEARCH", stop="ON")
        var, label = names[0].text, (names[1].text if len(names) > 1 else None)
        prop = _after(children, "ON")
        body: dict[str, Any] = next(c for c in children if isinstance(c, dict))
        at = at_of(meta)
        if "matching" in body and (label is None or prop is None):
            fail(at, 'a keyword SEARCH needs a label and ON: SEARCH (d:Doc) ON body MATCHING "…"')
        clause = ast.Search(var, label, prop.text if prop else None, **body, at=at)
        return _Source(clause, var, _tail_of(children))

    def search_near(self, meta: Meta, children: list[Any]) -> dict[str, Any]:
        body: dict[str, Any] = {"near": children[1]}
        for key, value, at in (c for c in children[2:] if isinstance(c, tuple)):
            if key in body:
                fail(at, f"{key.upper()} appears twice in SEARCH")
            body[key] = value
        return body

    def search_matching(self, meta: Meta, children: list[Any]) -> dict[str, Any]:
        return {"matching": children[1], "topk": _after(children, "TOPK")}

    def opt_metric(self, meta: Meta, children: list[Any]) -> tuple[str, Any, ast.Position]:
        return ("metric", _metric(children[1]), at_of(meta))

    def opt_topk(self, meta: Meta, children: list[Any]) -> tuple[str, Any, ast.Position]:
        return ("topk", children[1], at_of(meta))

    def hybrid(self, meta: Meta, children: list[Any]) -> _Source:
        names = _names_after(children, "HYBRID")
        var, label = names[0].text, (names[1].text if len(names) > 1 else None)
        fields: dict[str, Any] = {}
        for part in (c for c in children if isinstance(c, _Part)):
            if part.word in fields:
                fail(part.at, f"{part.word.upper()} appears twice; each part of HYBRID comes at most once")
            fields[part.word] = part
        at = at_of(meta)
        if "vector" not in fields and "keyword" not in fields:
            fail(at, "HYBRID needs VECTOR … NEAR … and/or KEYWORD ON … MATCHING …")
        if "keyword" in fields and label is None:
            fail(fields["keyword"].at, 'HYBRID KEYWORD needs a label: HYBRID (d:Doc) KEYWORD ON body MATCHING "…"')
        spec: dict[str, Any] = {}
        for word, part in fields.items():
            if word == "fusion":
                spec.update(part.fields)
            elif word in ("candidates", "topk"):
                spec[word] = part.fields["value"]
            else:
                spec[word] = part.fields["node"]
        return _Source(ast.HybridSearch(var, label, **spec, at=at), var, _tail_of(children))

    def h_vector(self, meta: Meta, children: list[Any]) -> _Part:
        prop = _after(children, "ON")
        vector = ast.HybridVector(
            prop.text if prop else None, _after(children, "NEAR"), _metric(_after(children, "METRIC")),
            _after(children, "WEIGHT"),
        )  # fmt: skip
        return _Part("vector", {"node": vector}, at_of(meta))

    def h_keyword(self, meta: Meta, children: list[Any]) -> _Part:
        prop: Name = _after(children, "ON")
        keyword = ast.HybridKeyword(prop.text, _after(children, "MATCHING"), _after(children, "WEIGHT"))
        return _Part("keyword", {"node": keyword}, at_of(meta))

    def h_graph(self, meta: Meta, children: list[Any]) -> _Part:
        decay = _after(children, "DECAY")
        if isinstance(decay, ast.Literal) and isinstance(decay.value, int | float) and not 0 <= decay.value <= 1:
            fail(decay.at, f"DECAY must be in [0, 1], not {decay.value}")
        graph = ast.HybridGraph(_after(children, "HOPS"), decay, _after(children, "SEEDS"), _after(children, "WEIGHT"))
        return _Part("graph", {"node": graph}, at_of(meta))

    def h_candidates(self, meta: Meta, children: list[Any]) -> _Part:
        return _Part("candidates", {"value": children[1]}, at_of(meta))

    def h_topk(self, meta: Meta, children: list[Any]) -> _Part:
        return _Part("topk", {"value": children[1]}, at_of(meta))

    def h_fusion(self, meta: Meta, children: list[Any]) -> _Part:
        name: Name = children[1]
        if name.text.lower() not in FUSIONS:
            fail(name.at, f"unknown FUSION {name.text.lower()!r}; use minmax, rrf or dbsf")
        return _Part("fusion", {"fusion": name.text.lower(), "fusion_k": _after(children, "K")}, at_of(meta))

    def call_algo(self, meta: Meta, children: list[Any]) -> _Source:
        dotted: Dotted = children[1]
        written = ".".join(n.text for n in dotted.names).lower()
        try:
            algorithm = check_algo(written)
        except UsageError as exc:
            if len(dotted.names) > 1:  # db.labels(): openCypher's procedures, which drsg has none of
                algorithms = ", ".join(ALGOS)
                message = f"CALL {written}(): procedures are not supported; CALL runs drsg's algorithms: {algorithms}"
                raise SyntaxProblem(dotted.at, message, unsupported=True) from None
            fail(dotted.at, exc.message)
        known = ALGO_ARGS[algorithm]
        args = [c for c in children if isinstance(c, tuple)]
        seen: set[str] = set()
        for name, _, arg_at in args:
            if name not in known:
                fail(arg_at, f"CALL {written} has no argument {name!r}; its arguments: {', '.join(known) or 'none'}")
            if name in seen:
                fail(arg_at, f"CALL {written}: the argument {name!r} is given twice")
            seen.add(name)
        if algorithm == "shortest_path" and not {"from", "to"} <= seen:
            fail(dotted.at, 'CALL shortest_path needs from: and to: (a "key" or an id each)')
        on = _names_after(children, "ON")
        var, label = (on[0].text if on else None), (on[1].text if len(on) > 1 else None)
        clause = ast.CallAlgo(algorithm, tuple((n, e) for n, e, _ in args), var, label, at=at_of(meta))
        return _Source(clause, var or "n", _tail_of(children))

    def call_arg(self, meta: Meta, children: list[Any]) -> tuple[str, ast.Expr, ast.Position]:
        return (children[0].text, children[1], at_of(meta))

    def source_tail(self, meta: Meta, children: list[Any]) -> _Tail:
        return _Tail(tuple(children[1::2]), tuple(children[0::2]))

    def beam(self, meta: Meta, children: list[Any]) -> ast.Beam:
        direction = next(c for c in children if is_tok(c, "OUT", "IN", "BOTH")).type.lower()
        names = _names_after(children, "BEAM", stop="ON")
        on = _after(children, "ON")
        edge_type = names[1].text if len(names) > 1 else None
        return ast.Beam(
            names[0].text, direction, edge_type, _after(children, "NEAR"), _after(children, "WIDTH"),
            _after(children, "DEPTH"), on.text if on else None, _metric(_after(children, "METRIC")), at=at_of(meta),
        )  # fmt: skip


@hashable
class _Items:
    pair: tuple[bool, tuple[ast.ProjectionItem, ...]]


def _names_after(children: Sequence[object], keyword: str, stop: str = "NEAR") -> list[Name]:
    """The names after ``keyword`` up to the first non-name value or the ``stop`` keyword."""
    out: list[Name] = []
    started = False
    for child in children:
        if is_tok(child, keyword):
            started = True
        elif started and is_tok(child, stop):
            break
        elif started and isinstance(child, Name):
            out.append(child)
        elif started and not isinstance(child, Token):
            break
    return out


def _tail_of(children: Sequence[object]) -> _Tail | None:
    return next((c for c in children if isinstance(c, _Tail)), None)


def _item_at(item: object) -> ast.Position:
    at = getattr(item, "at", None)
    if at is None and isinstance(item, _Source):
        at = item.clause.at
    return at if isinstance(at, tuple) else ast.NOWHERE


def _source_word(clause: ast.Search | ast.HybridSearch | ast.CallAlgo) -> str:
    return {ast.Search: "SEARCH", ast.HybridSearch: "HYBRID", ast.CallAlgo: "CALL"}[type(clause)]
