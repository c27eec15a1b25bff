"""A plan's read-only steps and their expressions: the shape check and the evaluation (pure).

Steps follow upstream's serde shape::

    {"Expand": {"dir": "Out"|"In"|"Both", "edge_type": "T"|null}}
    {"ExpandVar": {"dir", "edge_type", "min": 1, "max": 3}}       walk semantics: nodes may repeat
    {"Filter": <Expr>}   "Distinct"   {"Sort": [{"expr": <Expr>, "descending": false}]}
    {"Skip": n}   {"Limit": n}

Expressions: ``{"Property": "p"}``, ``{"Literal": {"Int": 1}|{"Float": 1.5}|{"Str": "x"}|{"Bool": true}|
"Null"}``, ``{"HasLabel": "L"}``, ``"ExternalKey"``, ``"Score"``, ``"Hops"``, ``{"IsNull": e}``,
``{"Not": e}``, ``{"Compare": {"op": "Eq|Ne|Lt|Le|Gt|Ge", "lhs", "rhs"}}``, ``{"Logic": {"op": "And|Or",
"lhs", "rhs"}}``, ``{"Arith": {"op": "Add|Sub|Mul|Div", "lhs", "rhs"}}``, ``{"StringMatch": {"op":
"Contains|StartsWith|EndsWith", "lhs", "rhs"}}``, ``{"In": {"needle", "haystack"}}``.

Evaluation is total, as upstream's: a missing or incomparable value makes a predicate false, never
an error. There is no write step and no vector step, so nothing here can change or embed anything.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from drsg.kernel.errors import UsageError
from drsg.kernel.values import check_utf8

#: most hops one ExpandVar may walk (a walk grows with the fan-out to this power)
MAX_HOPS = 6
DIRECTIONS = {"Out": "out", "In": "in", "Both": "both"}
STEPS = ("Expand", "ExpandVar", "Filter", "Distinct", "Sort", "Skip", "Limit")
_COMPARE = ("Eq", "Ne", "Lt", "Le", "Gt", "Ge")
_BINARY = {"Compare": _COMPARE, "Logic": ("And", "Or"), "Arith": ("Add", "Sub", "Mul", "Div")}
_BINARY["StringMatch"] = ("Contains", "StartsWith", "EndsWith")
_LITERALS = ("Int", "Float", "Str", "Bool", "List")
_LEAVES = ("ExternalKey", "Score", "Hops")


def check_step(step: Any, max_count: int) -> None:
    """A UsageError naming what is wrong with one step, or nothing."""
    if step == "Distinct":
        return
    if not isinstance(step, dict) or len(step) != 1 or next(iter(step)) not in STEPS:
        raise UsageError(f"plan step {step!r:.60} is not supported; the steps are {', '.join(STEPS)}")
    ((name, body),) = step.items()
    if name in ("Limit", "Skip"):
        if not (isinstance(body, int) and not isinstance(body, bool) and 0 <= body <= max_count):
            raise UsageError(f"{name} must be a whole number from 0 to {max_count}, not {body!r:.40}")
    elif name in ("Expand", "ExpandVar"):
        _check_expand(name, body)
    elif name == "Filter":
        check_expr(body)
    elif name == "Sort":
        if not isinstance(body, list) or not body:
            raise UsageError('Sort takes a list of keys: [{"expr": {"Property": "born"}, "descending": false}]')
        for key in body:
            if not isinstance(key, dict) or "expr" not in key or set(key) - {"expr", "descending"}:
                raise UsageError(f'a Sort key is {{"expr": …, "descending": bool}}, not {key!r:.60}')
            if not isinstance(key.get("descending", False), bool):
                raise UsageError("a Sort key's descending must be true or false")
            check_expr(key["expr"])
    elif name == "Distinct":
        raise UsageError('Distinct takes no argument: write "Distinct"')


def _check_expand(name: str, body: Any) -> None:
    fields = {"dir", "edge_type"} | ({"min", "max"} if name == "ExpandVar" else set())
    if not isinstance(body, dict) or set(body) - fields:
        raise UsageError(f"{name} takes an object with {', '.join(sorted(fields))}")
    direction = body.get("dir", "Out")
    if not isinstance(direction, str) or direction not in DIRECTIONS:
        raise UsageError(f"{name}'s dir must be Out, In or Both, not {body.get('dir')!r:.30}")
    edge_type = body.get("edge_type")
    if edge_type is not None and (not isinstance(edge_type, str) or not edge_type):
        raise UsageError(f"{name}'s edge_type must be an edge type's name or null")
    if edge_type is not None:
        check_utf8(edge_type, f"{name}'s edge_type")  # a JSON "\ud800" is a str, but no key can hold it
    if name == "ExpandVar":
        low, high = body.get("min", 1), body.get("max", 1)
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in (low, high)) or not (
            0 <= low <= high <= MAX_HOPS
        ):
            raise UsageError(f"ExpandVar needs whole numbers 0 ≤ min ≤ max ≤ {MAX_HOPS}, not {low!r:.10}..{high!r:.10}")


def check_expr(expr: Any, depth: int = 0) -> None:
    if depth > 32:
        raise UsageError("a Filter expression nests more than 32 levels; simplify it")
    if expr in _LEAVES:
        return
    if not isinstance(expr, dict) or len(expr) != 1:
        raise UsageError(f"expression {expr!r:.60} is not one of upstream's (Property, Literal, Compare, …)")
    ((kind, body),) = expr.items()
    if kind in ("Property", "HasLabel"):
        if not isinstance(body, str) or not body:
            raise UsageError(f"{kind} takes a name, not {body!r:.40}")
    elif kind == "Literal":
        _literal(body)
    elif kind in ("IsNull", "Not"):
        check_expr(body, depth + 1)
    elif kind in _BINARY:
        if not isinstance(body, dict) or set(body) != {"op", "lhs", "rhs"} or body["op"] not in _BINARY[kind]:
            raise UsageError(f'{kind} is {{"op": {"|".join(_BINARY[kind])}, "lhs": …, "rhs": …}}')
        check_expr(body["lhs"], depth + 1)
        check_expr(body["rhs"], depth + 1)
    elif kind == "In":
        if not isinstance(body, dict) or set(body) != {"needle", "haystack"}:
            raise UsageError('In is {"needle": <expr>, "haystack": <expr>}')
        check_expr(body["needle"], depth + 1)
        check_expr(body["haystack"], depth + 1)
    else:
        raise UsageError(f"expression {kind} is not supported in a plan here")


def _literal(body: Any) -> Any:
    if body == "Null":
        return None
    if not isinstance(body, dict) or len(body) != 1 or next(iter(body)) not in _LITERALS:
        raise UsageError(
            f'a Literal is {{"Int": 1}}, {{"Float": 1.5}}, {{"Str": "x"}}, {{"Bool": true}} or "Null", not {body!r:.40}'
        )
    ((kind, value),) = body.items()
    ok = {
        "Int": isinstance(value, int) and not isinstance(value, bool),
        "Float": isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value),
        "Str": isinstance(value, str),
        "Bool": isinstance(value, bool),
        "List": isinstance(value, list) and all(_scalar(v) for v in value),
    }[kind]
    if not ok:
        raise UsageError(f"this {kind} literal cannot hold {value!r:.40}")
    return float(value) if kind == "Float" else value


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def expr_names(expr: Any) -> Iterator[tuple[str, str]]:
    """("property" | "label", name) for every name an expression refers to (for schema checks)."""
    if not isinstance(expr, dict) or len(expr) != 1:
        return
    ((kind, body),) = expr.items()
    if kind == "Property":
        yield "property", body
    elif kind == "HasLabel":
        yield "label", body
    elif kind in ("IsNull", "Not"):
        yield from expr_names(body)
    elif kind in _BINARY:
        yield from expr_names(body["lhs"])
        yield from expr_names(body["rhs"])
    elif kind == "In":
        yield from expr_names(body["needle"])
        yield from expr_names(body["haystack"])


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


def evaluate(expr: Any, row: Row) -> Any:
    """An expression's value on a row; ``_MISSING`` flows through and makes predicates false."""
    if expr == "ExternalKey":
        return row.key if row.key is not None else _MISSING
    if expr == "Score":
        return row.score if row.score is not None else _MISSING
    if expr == "Hops":
        return row.hops
    ((kind, body),) = expr.items()
    if kind == "Property":
        value = row.props.get(body, _MISSING)
        return value if value is None or isinstance(value, str | int | float | bool | list | dict) else _MISSING
    if kind == "Literal":
        return _literal(body)
    if kind == "HasLabel":
        return body in row.labels
    if kind == "IsNull":
        value = evaluate(body, row)
        return value is None or value is _MISSING
    if kind == "Not":
        return not truthy(evaluate(body, row))
    if kind == "In":
        return _contains(evaluate(body["haystack"], row), evaluate(body["needle"], row))
    op, lhs = body["op"], evaluate(body["lhs"], row)
    if kind == "Logic":  # short-circuit, as the model would expect
        if op == "And":
            return truthy(lhs) and truthy(evaluate(body["rhs"], row))
        return truthy(lhs) or truthy(evaluate(body["rhs"], row))
    rhs = evaluate(body["rhs"], row)
    if kind == "Compare":
        return _compare(op, lhs, rhs)
    if kind == "Arith":
        return _arith(op, lhs, rhs)
    return _string_match(op, lhs, rhs)


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
