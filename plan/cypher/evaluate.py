"""Evaluating a Cypher expression on a row (pure): ``evaluate(expr, row, ctx)``.

Every expression class of :mod:`drsg.plan.cypher.ast` but the aggregates (which the executor
accumulates across rows) is answered here, by openCypher 9's rules in
:mod:`drsg.plan.cypher.values` and the functions of :mod:`drsg.plan.cypher.functions`. The graph
is read only through ``ctx`` (labels, properties, relationships, pattern predicates), so the same
evaluator runs a read on a snapshot and a write inside its transaction.
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


def evaluate(expr: ast.Expr, row: Row, ctx: EvalContext) -> CypherValue:
    """The value of ``expr`` with the row's variables bound."""
    return _HANDLERS[type(expr)](expr, row, ctx)


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


def _literal(expr: ast.Literal, row: Row, ctx: EvalContext) -> CypherValue:
    return expr.value


def _parameter(expr: ast.Parameter, row: Row, ctx: EvalContext) -> CypherValue:
    params = ctx.params
    if expr.name not in params:
        raise QueryError(
            f"parameter ${expr.name} is not given; pass it with the statement (--param {expr.name}=JSON, or params)"
        )
    return params[expr.name]


def _variable(expr: ast.Variable, row: Row, ctx: EvalContext) -> CypherValue:
    try:
        return row[expr.name]
    except KeyError:
        raise QueryError(f"variable `{expr.name}` is not defined; bind it in a MATCH, WITH or UNWIND first") from None


def _property(subject: CypherValue, key: str, ctx: EvalContext) -> CypherValue:
    if subject is None:
        return None
    if isinstance(subject, NodeRef):
        return ctx.graph.properties(subject.id).get(key)
    if isinstance(subject, RelRef):
        return ctx.graph.relationship(subject.id).properties.get(key)
    if isinstance(subject, dict):
        return subject.get(key)
    raise QueryError(
        f"cannot read property `{key}` of {type_name(subject)}; only nodes, relationships and maps have them"
    )


def _property_access(expr: ast.PropertyAccess, row: Row, ctx: EvalContext) -> CypherValue:
    return _property(evaluate(expr.subject, row, ctx), expr.key, ctx)


def _list(expr: ast.ListLiteral, row: Row, ctx: EvalContext) -> CypherValue:
    return [evaluate(item, row, ctx) for item in expr.items]


def _map(expr: ast.MapLiteral, row: Row, ctx: EvalContext) -> CypherValue:
    return {key: evaluate(value, row, ctx) for key, value in expr.entries}


# ------------------------------------------------------------------------ indexing and slicing


def _integer(what: str, value: CypherValue) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise QueryError(f"{what} needs an integer, got {type_name(value)}")


def _index(expr: ast.Index, row: Row, ctx: EvalContext) -> CypherValue:
    subject, index = evaluate(expr.subject, row, ctx), evaluate(expr.index, row, ctx)
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


def _slice(expr: ast.Slice, row: Row, ctx: EvalContext) -> CypherValue:
    subject = evaluate(expr.subject, row, ctx)
    start = None if expr.start is None else evaluate(expr.start, row, ctx)
    end = None if expr.end is None else evaluate(expr.end, row, ctx)
    if subject is None or (expr.start is not None and start is None) or (expr.end is not None and end is None):
        return None
    if not isinstance(subject, list):
        raise QueryError(f"cannot slice {type_name(subject)}; [a..b] takes part of a list")
    low = None if start is None else _integer("a slice bound", start)
    high = None if end is None else _integer("a slice bound", end)
    return subject[low:high]  # negative from the end, out of range clipped: as openCypher's


# ---------------------------------------------------------------------------------- operators


def _unary(expr: ast.Unary, row: Row, ctx: EvalContext) -> CypherValue:
    value = evaluate(expr.operand, row, ctx)
    if expr.op == "NOT":
        return logical_not(value)
    if expr.op == "-":
        return negate(value)
    if value is None or is_number(value):
        return value
    raise QueryError(f"unary + needs a number, got {type_name(value)}")


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


def _binary(expr: ast.Binary, row: Row, ctx: EvalContext) -> CypherValue:
    op = expr.op
    lhs = evaluate(expr.lhs, row, ctx)
    if op == "AND" or op == "OR":
        if lhs is (op == "OR"):  # false AND x is false, true OR x is true, whatever x is
            return lhs
        return logic(op, lhs, evaluate(expr.rhs, row, ctx))
    if op == "XOR":
        return logic(op, lhs, evaluate(expr.rhs, row, ctx))
    return _BINARY[op](lhs, evaluate(expr.rhs, row, ctx))


def _is_null(expr: ast.IsNull, row: Row, ctx: EvalContext) -> CypherValue:
    return (evaluate(expr.operand, row, ctx) is None) != expr.negated


def _has_labels(expr: ast.HasLabels, row: Row, ctx: EvalContext) -> CypherValue:
    subject = evaluate(expr.subject, row, ctx)
    if subject is None:
        return None
    if isinstance(subject, NodeRef):
        labels = ctx.graph.labels(subject.id)
        return all(label in labels for label in expr.labels)
    if isinstance(subject, RelRef):
        kind = ctx.graph.relationship(subject.id).type
        return all(label == kind for label in expr.labels)
    raise QueryError(f"a label test needs a node, got {type_name(subject)}")


# ---------------------------------------------------------------------------------- functions


def _function(expr: ast.FunctionCall, row: Row, ctx: EvalContext) -> CypherValue:
    name = expr.name
    if name in AGGREGATES:
        raise QueryError(f"{name}() is an aggregate; use it in RETURN or WITH")
    spec = FUNCTIONS.get(name)
    count = len(expr.args)
    if spec is None or expr.distinct or count < spec.min_args or (spec.max_args is not None and count > spec.max_args):
        check_call(name, count, expr.distinct)  # says what is wrong (the compiler has said it already)
        raise AssertionError(f"check_call passed {name}()")  # pragma: no cover - it always raises here
    if name == "exists" and isinstance(expr.args[0], ast.PatternPredicate):
        return evaluate(expr.args[0], row, ctx)  # exists((a)-->(b)): the pattern's own answer
    return spec.call([evaluate(arg, row, ctx) for arg in expr.args], row, ctx)


def _count_star(expr: ast.CountStar, row: Row, ctx: EvalContext) -> CypherValue:
    raise QueryError("count(*) is an aggregate; use it in RETURN or WITH")


def _condition(value: CypherValue) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    raise QueryError(f"a condition needs a boolean, got {type_name(value)}")


def _case(expr: ast.Case, row: Row, ctx: EvalContext) -> CypherValue:
    if expr.subject is not None:
        subject = evaluate(expr.subject, row, ctx)
        for when, then in expr.whens:
            if equals(subject, evaluate(when, row, ctx)) is True:  # null never matches
                return evaluate(then, row, ctx)
    else:
        for when, then in expr.whens:
            if _condition(evaluate(when, row, ctx)) is True:
                return evaluate(then, row, ctx)
    return None if expr.default is None else evaluate(expr.default, row, ctx)


def _source(what: str, expr: ast.Expr, row: Row, ctx: EvalContext) -> list[CypherValue] | None:
    value = evaluate(expr, row, ctx)
    if value is None or isinstance(value, list):
        return value
    raise QueryError(f"{what} needs a list after IN, got {type_name(value)}")


def _comprehension(expr: ast.ListComprehension, row: Row, ctx: EvalContext) -> CypherValue:
    items = _source("a list comprehension", expr.source, row, ctx)
    if items is None:
        return None
    out: list[CypherValue] = []
    for item in items:
        bound = _Bound(row, expr.variable, item)
        if expr.predicate is not None and not truthy(evaluate(expr.predicate, bound, ctx)):
            continue
        out.append(item if expr.projection is None else evaluate(expr.projection, bound, ctx))
    return out


def _quantified(expr: ast.Quantified, row: Row, ctx: EvalContext) -> CypherValue:
    items = _source(f"{expr.quantifier}()", expr.source, row, ctx)
    if items is None:
        return None
    trues = unknowns = 0
    for item in items:
        verdict = _condition(evaluate(expr.predicate, _Bound(row, expr.variable, item), ctx))
        if verdict is None:
            unknowns += 1
        elif verdict:
            trues += 1
            if expr.quantifier == "any" or (expr.quantifier == "single" and trues > 1):
                break  # decided: any is true, single is false
        elif expr.quantifier == "all":
            return False
    if expr.quantifier == "all":
        return None if unknowns else True
    if expr.quantifier == "any":
        return True if trues else (None if unknowns else False)
    if expr.quantifier == "none":
        return False if trues else (None if unknowns else True)
    if trues > 1:
        return False
    return None if unknowns else trues == 1


def _pattern(expr: ast.PatternPredicate, row: Row, ctx: EvalContext) -> CypherValue:
    return ctx.pattern_exists(expr.pattern, row)


# Any: each handler takes the one expression class it is registered for (the table says which).
_HANDLERS: dict[type, Callable[[Any, Row, EvalContext], CypherValue]] = {
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
