"""Evaluating a Cypher expression on a row (pure): ``evaluate(expr, row, ctx)``.

Every expression class of :mod:`drsg.plan.cypher.ast` but the aggregates (which the executor
accumulates across rows) is answered here, by openCypher 9's rules in
:mod:`drsg.plan.cypher.values` and the functions of :mod:`drsg.plan.cypher.functions`. The graph
is read only through ``ctx`` (labels, properties, relationships, pattern predicates), so the same
evaluator runs a read on a snapshot and a write inside its transaction.

An expression is compiled once into nested closures (:func:`compile_expr`) and the closure kept
while the tree lives: a row then costs a call per operator, not a walk of the tree with a dispatch
at every node. What compiling can tell without a row — an unknown function, a wrong number of
arguments, an aggregate out of place — it says then; everything else when the row is evaluated.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from functools import partial
from typing import Any

from drsg.kernel.errors import QueryError
from drsg.plan.cypher import ast
from drsg.plan.cypher.functions import AGGREGATES, FUNCTIONS, check_call
from drsg.plan.cypher.graph import CypherValue, EvalContext, NodeRef, RelRef, Row
from drsg.plan.cypher.values import (
    arithmetic,
    comparison,
    equals,
    is_number,
    logic,
    logical_not,
    membership,
    negate,
    regex_match,
    string_predicate,
    type_name,
)

#: a compiled expression: its value on a row
Compiled = Callable[[Row, EvalContext], CypherValue]

#: id(tree) -> (the tree, its closure); the tree is held so its id cannot be reused while cached
_CACHE: dict[int, tuple[ast.Expr, Compiled]] = {}
_CACHE_SIZE = 4096


def evaluate(expr: ast.Expr, row: Row, ctx: EvalContext) -> CypherValue:
    """The value of ``expr`` with the row's variables bound."""
    entry = _CACHE.get(id(expr))
    if entry is None or entry[0] is not expr:
        if len(_CACHE) >= _CACHE_SIZE:
            _CACHE.clear()  # a bound, not an LRU: statements are few and their trees cached upstream
        entry = _CACHE[id(expr)] = (expr, compile_expr(expr))
    return entry[1](row, ctx)


def compile_expr(expr: ast.Expr) -> Compiled:
    """``expr`` as a closure of (row, ctx): what :func:`evaluate` runs."""
    return _COMPILERS[type(expr)](expr)


def evaluate_predicate(expr: ast.Expr, row: Row, ctx: EvalContext) -> CypherValue:
    """As :func:`evaluate`, where the value is a condition (a ``WHERE``): a pattern there is true
    when it matches, not the list of its paths (openCypher 9)."""
    if isinstance(expr, ast.PatternPredicate):
        return ctx.pattern_exists(expr.pattern, row)
    return evaluate(expr, row, ctx)


def truthy(value: CypherValue) -> bool:
    """Whether a ``WHERE`` keeps the row: only ``true`` does; null and false do not."""
    if value is True:
        return True
    if value is None or value is False:
        return False
    raise QueryError(
        f"WHERE needs a boolean, got {type_name(value)}; compare the value (x <> 0) or test it (x IS NOT NULL)"
    )


class _Bound(Mapping[str, CypherValue]):
    """The row with one more variable (a list comprehension's or a quantifier's), without a copy."""

    __slots__ = ("name", "row", "value")

    def __init__(self, row: Row, name: str, value: CypherValue) -> None:
        self.row, self.name, self.value = row, name, value

    def __getitem__(self, key: str) -> CypherValue:
        return self.value if key == self.name else self.row[key]

    def __contains__(self, key: object) -> bool:
        return key == self.name or key in self.row

    def __iter__(self) -> Iterator[str]:
        yield self.name
        yield from (key for key in self.row if key != self.name)

    def __len__(self) -> int:
        return len(self.row) + (self.name not in self.row)


# ------------------------------------------------------------------------------------ leaves


def _literal(expr: ast.Literal) -> Compiled:
    value = expr.value
    return lambda row, ctx: value


def _parameter(expr: ast.Parameter) -> Compiled:
    name = expr.name

    def run(row: Row, ctx: EvalContext) -> CypherValue:
        params = ctx.params
        if name in params:
            return params[name]
        raise QueryError(f"parameter ${name} is not given; pass it with the statement (--param {name}=JSON, or params)")

    return run


def _unbound(name: str) -> QueryError:
    return QueryError(f"variable `{name}` is not defined; bind it in a MATCH, WITH or UNWIND first")


def _variable(expr: ast.Variable) -> Compiled:
    name = expr.name

    def run(row: Row, ctx: EvalContext) -> CypherValue:
        try:
            return row[name]
        except KeyError:
            raise _unbound(name) from None

    return run


def _property(subject: CypherValue, key: str, ctx: EvalContext) -> CypherValue:
    if isinstance(subject, NodeRef):
        return ctx.graph.properties(subject.id).get(key)
    if subject is None:
        return None
    if isinstance(subject, RelRef):
        return ctx.graph.relationship(subject.id).properties.get(key)
    if isinstance(subject, dict):
        return subject.get(key)
    raise QueryError(
        f"cannot read property `{key}` of {type_name(subject)}; only nodes, relationships and maps have one"
    )


def _property_access(expr: ast.PropertyAccess) -> Compiled:
    key = expr.key
    if isinstance(expr.subject, ast.Variable):  # n.p, the common case: one closure, not two
        name = expr.subject.name

        def read(row: Row, ctx: EvalContext) -> CypherValue:
            try:
                subject = row[name]
            except KeyError:
                raise _unbound(name) from None
            return _property(subject, key, ctx)

        return read
    subject = compile_expr(expr.subject)
    return lambda row, ctx: _property(subject(row, ctx), key, ctx)


def _list(expr: ast.ListLiteral) -> Compiled:
    items = tuple(compile_expr(item) for item in expr.items)
    return lambda row, ctx: [item(row, ctx) for item in items]


def _map(expr: ast.MapLiteral) -> Compiled:
    entries = tuple((key, compile_expr(value)) for key, value in expr.entries)
    return lambda row, ctx: {key: value(row, ctx) for key, value in entries}


# ------------------------------------------------------------------------ indexing and slicing


def _integer(what: str, value: CypherValue) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise QueryError(f"{what} needs an integer, got {type_name(value)}")


def _item(subject: CypherValue, index: CypherValue, ctx: EvalContext) -> CypherValue:
    if subject is None or index is None:
        return None
    if isinstance(subject, list):
        position = _integer("a list index", index)
        return subject[position] if -len(subject) <= position < len(subject) else None
    if isinstance(subject, dict | NodeRef | RelRef):
        if not isinstance(index, str):
            raise QueryError(f"a map, node or relationship is indexed by a string key, got {type_name(index)}")
        return _property(subject, index, ctx)
    raise QueryError(f"cannot index {type_name(subject)}; [i] reads a list's item or a map's value")


def _index(expr: ast.Index) -> Compiled:
    subject, index = compile_expr(expr.subject), compile_expr(expr.index)
    return lambda row, ctx: _item(subject(row, ctx), index(row, ctx), ctx)


def _bound(expr: ast.Expr | None) -> Compiled | None:
    return None if expr is None else compile_expr(expr)


def _slice(expr: ast.Slice) -> Compiled:
    subject, start, end = compile_expr(expr.subject), _bound(expr.start), _bound(expr.end)

    def run(row: Row, ctx: EvalContext) -> CypherValue:
        value = subject(row, ctx)
        low = None if start is None else start(row, ctx)
        high = None if end is None else end(row, ctx)
        if value is None or (start is not None and low is None) or (end is not None and high is None):
            return None  # a null bound makes the slice null, as a null index does
        if not isinstance(value, list):
            raise QueryError(f"cannot slice {type_name(value)}; [a..b] takes part of a list")
        first = None if low is None else _integer("a slice bound", low)
        last = None if high is None else _integer("a slice bound", high)
        return value[first:last]  # negative from the end, out of range clipped: as openCypher's

    return run


# ---------------------------------------------------------------------------------- operators


def _plus(value: CypherValue) -> CypherValue:
    if value is None or is_number(value):
        return value
    raise QueryError(f"unary + needs a number, got {type_name(value)}")


_UNARY: dict[str, Callable[[CypherValue], CypherValue]] = {"NOT": logical_not, "-": negate, "+": _plus}


def _test(expr: ast.Expr) -> Compiled:
    """An operand of AND, OR, XOR or NOT: a pattern there is a test, not a list of paths."""
    if isinstance(expr, ast.PatternPredicate):
        pattern = expr.pattern
        return lambda row, ctx: ctx.pattern_exists(pattern, row)
    return compile_expr(expr)


def _unary(expr: ast.Unary) -> Compiled:
    operand = _test(expr.operand) if expr.op == "NOT" else compile_expr(expr.operand)
    apply = _UNARY[expr.op]
    return lambda row, ctx: apply(operand(row, ctx))


def _not_equal(a: CypherValue, b: CypherValue) -> bool | None:
    same = equals(a, b)
    return None if same is None else not same


_BINARY: dict[str, Callable[[CypherValue, CypherValue], CypherValue]] = {
    "=": equals,
    "<>": _not_equal,
    "IN": membership,
    "=~": regex_match,
    **{op: partial(comparison, op) for op in ("<", "<=", ">", ">=")},
    **{op: partial(string_predicate, op) for op in ("CONTAINS", "STARTS WITH", "ENDS WITH")},
    **{op: partial(arithmetic, op) for op in ("+", "-", "*", "/", "%", "^")},
}


def _binary(expr: ast.Binary) -> Compiled:
    op = expr.op
    compile_side = _test if op in ("AND", "OR", "XOR") else compile_expr
    lhs, rhs = compile_side(expr.lhs), compile_side(expr.rhs)
    if op == "AND" or op == "OR":
        decided = op == "OR"  # false AND x is false, true OR x is true, whatever x is

        def short(row: Row, ctx: EvalContext) -> CypherValue:
            left = lhs(row, ctx)
            if left is decided:
                return left
            return logic(op, left, rhs(row, ctx))

        return short
    apply = partial(logic, op) if op == "XOR" else _BINARY[op]
    return lambda row, ctx: apply(lhs(row, ctx), rhs(row, ctx))


def _is_null(expr: ast.IsNull) -> Compiled:
    operand, negated = compile_expr(expr.operand), expr.negated
    return lambda row, ctx: (operand(row, ctx) is None) != negated


def _has_labels(expr: ast.HasLabels) -> Compiled:
    subject, wanted = compile_expr(expr.subject), expr.labels

    def run(row: Row, ctx: EvalContext) -> CypherValue:
        value = subject(row, ctx)
        if value is None:
            return None
        if isinstance(value, NodeRef):
            labels = ctx.graph.labels(value.id)
            return all(label in labels for label in wanted)
        if isinstance(value, RelRef):
            kind = ctx.graph.relationship(value.id).type
            return all(label == kind for label in wanted)
        raise QueryError(f"a label test needs a node, got {type_name(value)}")

    return run


# ---------------------------------------------------------------------------------- functions


def _function(expr: ast.FunctionCall) -> Compiled:
    name = expr.name
    if name in AGGREGATES:
        raise QueryError(f"{name}() is an aggregate; use it in RETURN or WITH")
    check_call(name, len(expr.args), expr.distinct)  # the compiler has said so already; be safe
    if name == "exists" and isinstance(expr.args[0], ast.PatternPredicate):
        return _test(expr.args[0])  # exists((a)-->(b)): whether the pattern matches
    call = FUNCTIONS[name].call
    args = tuple(compile_expr(arg) for arg in expr.args)
    return lambda row, ctx: call([arg(row, ctx) for arg in args], row, ctx)


def _count_star(expr: ast.CountStar) -> Compiled:
    raise QueryError("count(*) is an aggregate; use it in RETURN or WITH")


def _condition(value: CypherValue) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    raise QueryError(f"a condition needs a boolean, got {type_name(value)}")


def _case(expr: ast.Case) -> Compiled:
    whens = tuple((compile_expr(when), compile_expr(then)) for when, then in expr.whens)
    default = _bound(expr.default)
    subject = _bound(expr.subject)

    def run(row: Row, ctx: EvalContext) -> CypherValue:
        if subject is not None:
            value = subject(row, ctx)
            for when, then in whens:
                if equals(value, when(row, ctx)) is True:  # null never matches
                    return then(row, ctx)
        else:
            for when, then in whens:
                if _condition(when(row, ctx)) is True:
                    return then(row, ctx)
        return None if default is None else default(row, ctx)

    return run


def _source(what: str, value: CypherValue) -> list[CypherValue] | None:
    if value is None or isinstance(value, list):
        return value
    raise QueryError(f"{what} needs a list after IN, got {type_name(value)}")


def _comprehension(expr: ast.ListComprehension) -> Compiled:
    name, source = expr.variable, compile_expr(expr.source)
    predicate, projection = _bound(expr.predicate), _bound(expr.projection)

    def run(row: Row, ctx: EvalContext) -> CypherValue:
        items = _source("a list comprehension", source(row, ctx))
        if items is None:
            return None
        out: list[CypherValue] = []
        for item in items:
            bound = _Bound(row, name, item)
            if predicate is not None and not truthy(predicate(bound, ctx)):
                continue
            out.append(item if projection is None else projection(bound, ctx))
        return out

    return run


def _quantified(expr: ast.Quantified) -> Compiled:
    quantifier, name = expr.quantifier, expr.variable
    source, predicate = compile_expr(expr.source), compile_expr(expr.predicate)

    def run(row: Row, ctx: EvalContext) -> CypherValue:
        items = _source(f"{quantifier}()", source(row, ctx))
        if items is None:
            return None
        trues = unknowns = 0
        for item in items:
            verdict = _condition(predicate(_Bound(row, name, item), ctx))
            if verdict is None:
                unknowns += 1
            elif verdict:
                trues += 1
                if quantifier == "any" or (quantifier == "single" and trues > 1):
                    break  # decided: any is true, single is false
            elif quantifier == "all":
                return False
        if quantifier == "all":
            return None if unknowns else True
        if quantifier == "any":
            return True if trues else (None if unknowns else False)
        if quantifier == "none":
            return False if trues else (None if unknowns else True)
        if trues > 1:
            return False
        return None if unknowns else trues == 1

    return run


def _pattern(expr: ast.PatternPredicate) -> Compiled:
    """A pattern as a value is the list of the paths it matches (``size((a)-->())`` counts them);
    as a condition (:func:`_test`, :func:`evaluate_predicate`) it is whether there is one."""
    pattern = expr.pattern

    def paths(row: Row, ctx: EvalContext) -> CypherValue:
        found: list[CypherValue] = list(ctx.pattern_paths(pattern, row))
        return found

    return paths


# Any: each compiler takes the one expression class it is registered for (the table says which).
_COMPILERS: dict[type, Callable[[Any], Compiled]] = {
    ast.Literal: _literal,
    ast.Parameter: _parameter,
    ast.Variable: _variable,
    ast.PropertyAccess: _property_access,
    ast.ListLiteral: _list,
    ast.MapLiteral: _map,
    ast.Index: _index,
    ast.Slice: _slice,
    ast.Unary: _unary,
    ast.Binary: _binary,
    ast.IsNull: _is_null,
    ast.HasLabels: _has_labels,
    ast.FunctionCall: _function,
    ast.CountStar: _count_star,
    ast.Case: _case,
    ast.ListComprehension: _comprehension,
    ast.Quantified: _quantified,
    ast.PatternPredicate: _pattern,
}
