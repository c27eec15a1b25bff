"""A plan's expressions as types, read once from upstream's serde shape and written back to it (pure).

    {"Property": "p"}   {"HasLabel": "L"}   "ExternalKey"   "Score"   "Hops"
    {"Literal": {"Int": 1} | {"Float": 1.5} | {"Str": "x"} | {"Bool": true} | {"List": [1, "a"]} | "Null"}
    {"IsNull": e}   {"Not": e}   {"In": {"needle": e, "haystack": e}}
    {"Compare": {"op": "Eq|Ne|Lt|Le|Gt|Ge", "lhs": e, "rhs": e}}   {"Logic": {"op": "And|Or", …}}
    {"Arith": {"op": "Add|Sub|Mul|Div", …}}   {"StringMatch": {"op": "Contains|StartsWith|EndsWith", …}}

:func:`parse_expr` checks a wire expression and gives its type, with the one-line errors a user
sees; ``to_json()`` gives the wire form back exactly (a ``Float`` written ``1`` stays ``1``). The
evaluation is :mod:`drsg.plan.traversal`'s. A front end (a future Cypher compiler) builds these
classes directly.
"""

from __future__ import annotations

import math
import typing
from collections.abc import Iterator
from dataclasses import field

from drsg.kernel.errors import UsageError
from drsg.kernel.frozen import hashable
from drsg.kernel.values import Json

#: most levels one expression may nest
MAX_DEPTH = 32
CompareOp = typing.Literal["Eq", "Ne", "Lt", "Le", "Gt", "Ge"]
LogicOp = typing.Literal["And", "Or"]
ArithOp = typing.Literal["Add", "Sub", "Mul", "Div"]
MatchOp = typing.Literal["Contains", "StartsWith", "EndsWith"]
LiteralKind = typing.Literal["Int", "Float", "Str", "Bool", "List", "Null"]
Scalar = str | int | float | bool | None
_BINARY: dict[str, tuple[str, ...]] = {
    "Compare": typing.get_args(CompareOp),
    "Logic": typing.get_args(LogicOp),
    "Arith": typing.get_args(ArithOp),
    "StringMatch": typing.get_args(MatchOp),
}
_LITERALS = ("Int", "Float", "Str", "Bool", "List")


@hashable
class Property:
    name: str

    def to_json(self) -> Json:
        return {"Property": self.name}


@hashable
class HasLabel:
    label: str

    def to_json(self) -> Json:
        return {"HasLabel": self.label}


@hashable
class ExternalKey:
    def to_json(self) -> Json:
        return "ExternalKey"


@hashable
class Score:
    def to_json(self) -> Json:
        return "Score"


@hashable
class Hops:
    def to_json(self) -> Json:
        return "Hops"


@hashable
class Literal:
    """A constant; ``value`` as written (a List's items in a tuple, ``None`` for Null)."""

    kind: LiteralKind
    value: Scalar | tuple[Scalar, ...] = None
    #: what it evaluates to (a Float as a float, a List as a list), worked out once
    constant: Scalar | list[Scalar] = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        value = self.value
        if isinstance(value, tuple):
            constant: Scalar | list[Scalar] = list(value)
        else:
            constant = float(value) if self.kind == "Float" and value is not None else value
        object.__setattr__(self, "constant", constant)

    def to_json(self) -> Json:
        if self.kind == "Null":
            return {"Literal": "Null"}
        value: Json = list(self.value) if isinstance(self.value, tuple) else self.value
        return {"Literal": {self.kind: value}}


@hashable
class IsNull:
    expr: Expr

    def to_json(self) -> Json:
        return {"IsNull": self.expr.to_json()}


@hashable
class Not:
    expr: Expr

    def to_json(self) -> Json:
        return {"Not": self.expr.to_json()}


@hashable
class Compare:
    op: CompareOp
    lhs: Expr
    rhs: Expr

    def to_json(self) -> Json:
        return {"Compare": {"op": self.op, "lhs": self.lhs.to_json(), "rhs": self.rhs.to_json()}}


@hashable
class Logic:
    op: LogicOp
    lhs: Expr
    rhs: Expr

    def to_json(self) -> Json:
        return {"Logic": {"op": self.op, "lhs": self.lhs.to_json(), "rhs": self.rhs.to_json()}}


@hashable
class Arith:
    op: ArithOp
    lhs: Expr
    rhs: Expr

    def to_json(self) -> Json:
        return {"Arith": {"op": self.op, "lhs": self.lhs.to_json(), "rhs": self.rhs.to_json()}}


@hashable
class StringMatch:
    op: MatchOp
    lhs: Expr
    rhs: Expr

    def to_json(self) -> Json:
        return {"StringMatch": {"op": self.op, "lhs": self.lhs.to_json(), "rhs": self.rhs.to_json()}}


@hashable
class In:
    needle: Expr
    haystack: Expr

    def to_json(self) -> Json:
        return {"In": {"needle": self.needle.to_json(), "haystack": self.haystack.to_json()}}


Leaf = Property | HasLabel | ExternalKey | Score | Hops | Literal
Expr = Leaf | IsNull | Not | Compare | Logic | Arith | StringMatch | In
_LEAVES: dict[str, Expr] = {"ExternalKey": ExternalKey(), "Score": Score(), "Hops": Hops()}


def parse_expr(expr: object, depth: int = 0) -> Expr:
    """The typed expression, or a UsageError naming what is wrong with the wire one."""
    if depth > MAX_DEPTH:
        raise UsageError(f"a Filter expression nests more than {MAX_DEPTH} levels; simplify it")
    if isinstance(expr, str) and expr in _LEAVES:
        return _LEAVES[expr]
    if not isinstance(expr, dict) or len(expr) != 1:
        raise UsageError(f"expression {expr!r:.60} is not one of upstream's (Property, Literal, Compare, …)")
    ((kind, body),) = expr.items()
    if kind in ("Property", "HasLabel"):
        if not isinstance(body, str) or not body:
            raise UsageError(f"{kind} takes a name, not {body!r:.40}")
        return Property(body) if kind == "Property" else HasLabel(body)
    if kind == "Literal":
        return parse_literal(body)
    if kind in ("IsNull", "Not"):
        inner = parse_expr(body, depth + 1)
        return IsNull(inner) if kind == "IsNull" else Not(inner)
    if kind in _BINARY:
        if not isinstance(body, dict) or set(body) != {"op", "lhs", "rhs"} or body["op"] not in _BINARY[kind]:
            raise UsageError(f'{kind} is {{"op": {"|".join(_BINARY[kind])}, "lhs": …, "rhs": …}}')
        op, lhs, rhs = body["op"], parse_expr(body["lhs"], depth + 1), parse_expr(body["rhs"], depth + 1)
        if kind == "Compare":
            return Compare(op, lhs, rhs)
        if kind == "Logic":
            return Logic(op, lhs, rhs)
        return Arith(op, lhs, rhs) if kind == "Arith" else StringMatch(op, lhs, rhs)
    if kind == "In":
        if not isinstance(body, dict) or set(body) != {"needle", "haystack"}:
            raise UsageError('In is {"needle": <expr>, "haystack": <expr>}')
        return In(parse_expr(body["needle"], depth + 1), parse_expr(body["haystack"], depth + 1))
    raise UsageError(f"expression {kind} is not supported in a plan here")


def parse_literal(body: object) -> Literal:
    if body == "Null":
        return Literal("Null")
    if not isinstance(body, dict) or len(body) != 1 or next(iter(body)) not in _LITERALS:
        raise UsageError(
            f'a Literal is {{"Int": 1}}, {{"Float": 1.5}}, {{"Str": "x"}}, {{"Bool": true}} or "Null", not {body!r:.40}'
        )
    ((kind, value),) = body.items()
    if kind == "Int" and _whole(value):
        return Literal("Int", value)
    if kind == "Float" and isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return Literal("Float", value)
    if kind == "Str" and isinstance(value, str):
        return Literal("Str", value)
    if kind == "Bool" and isinstance(value, bool):
        return Literal("Bool", value)
    if kind == "List" and isinstance(value, list) and all(_scalar(v) for v in value):
        return Literal("List", tuple(value))
    raise UsageError(f"this {kind} literal cannot hold {value!r:.40}")


def _whole(value: object) -> typing.TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _scalar(value: object) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def expr_names(expr: Expr) -> Iterator[tuple[str, str]]:
    """("property" | "label", name) for every name an expression refers to (for schema checks)."""
    match expr:
        case Property(name):
            yield "property", name
        case HasLabel(label):
            yield "label", label
        case IsNull(inner) | Not(inner):
            yield from expr_names(inner)
        case Compare(_, lhs, rhs) | Logic(_, lhs, rhs) | Arith(_, lhs, rhs) | StringMatch(_, lhs, rhs):
            yield from expr_names(lhs)
            yield from expr_names(rhs)
        case In(needle, haystack):
            yield from expr_names(needle)
            yield from expr_names(haystack)
