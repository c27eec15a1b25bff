"""A plan's expressions evaluated on a row (pure): what ``Filter`` and ``Sort`` compute.

The expressions are :mod:`drsg.plan.expr`'s types (the wire JSON is read there, once); the steps
:mod:`drsg.plan.logical`'s. Evaluation is total, as upstream's: a missing or incomparable value
makes a predicate false, never an error. There is no write step and no vector step, so nothing
here can change or embed anything.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from drsg.kernel.values import Json
from drsg.plan.expr import (
    Arith,
    Compare,
    Expr,
    ExternalKey,
    HasLabel,
    Hops,
    In,
    IsNull,
    Literal,
    Logic,
    Not,
    Property,
    Score,
    StringMatch,
    parse_expr,
)

_EXPRS = (Property, HasLabel, ExternalKey, Score, Hops, Literal, IsNull, Not, Compare, Logic, Arith, StringMatch, In)

# ---------------------------------------------------------------------------- evaluation


@dataclass(frozen=True, slots=True)
class Row:
    """What an expression sees of one result row: the node's key, labels and properties, its score
    and how many hops the walk took to reach it."""

    key: str | None
    labels: tuple[str, ...]
    props: Mapping[str, Any]
    score: float | None = None
    hops: int = 0


_MISSING = object()


def evaluate(expr: Expr | Json, row: Row) -> Any:
    """An expression's value on a row; ``_MISSING`` flows through and makes predicates false. A wire
    expression is read first (:func:`drsg.plan.expr.parse_expr`); a plan's are typed already."""
    return value_of(expr if isinstance(expr, _EXPRS) else parse_expr(expr), row)


def value_of(expr: Expr, row: Row) -> Any:
    """The value of a typed expression on a row (Any: a property holds whatever was stored)."""
    match expr:  # the cases a Filter meets most come first
        case Compare(op, lhs, rhs):
            return _compare(op, value_of(lhs, row), value_of(rhs, row))
        case Logic(op, lhs, rhs):  # short-circuit, as the model would expect
            if op == "And":
                return truthy(value_of(lhs, row)) and truthy(value_of(rhs, row))
            return truthy(value_of(lhs, row)) or truthy(value_of(rhs, row))
        case Property(name):
            value = row.props.get(name, _MISSING)
            return value if value is None or isinstance(value, str | int | float | bool | list | dict) else _MISSING
        case Literal():
            return expr.constant
        case ExternalKey():
            return row.key if row.key is not None else _MISSING
        case Score():
            return row.score if row.score is not None else _MISSING
        case Hops():
            return row.hops
        case HasLabel(label):
            return label in row.labels
        case IsNull(inner):
            value = value_of(inner, row)
            return value is None or value is _MISSING
        case Not(inner):
            return not truthy(value_of(inner, row))
        case In(needle, haystack):
            return _contains(value_of(haystack, row), value_of(needle, row))
        case Arith(op, lhs, rhs):
            return _arith(op, value_of(lhs, row), value_of(rhs, row))
        case StringMatch(op, lhs, rhs):
            return _string_match(op, value_of(lhs, row), value_of(rhs, row))


def truthy(value: Any) -> bool:
    return value is True


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _compare(op: str, lhs: Any, rhs: Any) -> bool:
    if lhs is _MISSING or rhs is _MISSING or lhs is None or rhs is None:
        return False
    if _number(lhs) and _number(rhs):
        pass
    elif type(lhs) is not type(rhs) or not isinstance(lhs, str | bool):
        return False  # incomparable: false, whatever the operator
    if op == "Eq":
        return bool(lhs == rhs)
    if op == "Ne":
        return bool(lhs != rhs)
    if op == "Lt":
        return bool(lhs < rhs)
    if op == "Le":
        return bool(lhs <= rhs)
    if op == "Gt":
        return bool(lhs > rhs)
    return bool(lhs >= rhs)


def _arith(op: str, lhs: Any, rhs: Any) -> Any:
    if not (_number(lhs) and _number(rhs)):
        return _MISSING
    if op == "Add":
        return lhs + rhs
    if op == "Sub":
        return lhs - rhs
    if op == "Mul":
        return lhs * rhs
    return lhs / rhs if rhs != 0 else _MISSING


def _text(value: Any) -> str | None:
    """Scalars promoted to text (upstream's string ops); lists, maps and missing values are not text."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if _number(value):
        return str(value)
    return None


def _string_match(op: str, lhs: Any, rhs: Any) -> bool:
    left, right = _text(lhs), _text(rhs)
    if left is None or right is None:
        return False
    if op == "Contains":
        return right in left
    if op == "StartsWith":
        return left.startswith(right)
    return left.endswith(right)


def _contains(haystack: Any, needle: Any) -> bool:
    if needle is _MISSING:
        return False
    if isinstance(haystack, list):
        return any(_compare("Eq", item, needle) for item in haystack)
    if isinstance(haystack, dict):
        return isinstance(needle, str) and needle in haystack
    return False


def sort_key(value: Any) -> tuple[int, Any]:
    """Total order for Sort: numbers, then text, then booleans; missing and null last."""
    if _number(value):
        return 0, float(value)
    if isinstance(value, str):
        return 1, value
    if isinstance(value, bool):
        return 2, value
    return 3, 0
