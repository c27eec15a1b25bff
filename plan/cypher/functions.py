"""openCypher's scalar functions and upstream's own (pure): one table, :data:`FUNCTIONS`, that the
compiler checks names and argument counts against and the evaluator calls.

Each function takes its evaluated arguments, the row (``score()``, ``hops()`` read its reserved
keys) and the context (``labels(n)``, ``type(r)``, ``key(n)`` read the graph). Null in gives null
out, function by function as openCypher says (``coalesce`` and ``exists`` are made for nulls);
an argument of the wrong type is a QueryError naming the function and the type. ``rand()`` is left
out on purpose: a statement's rows must not change between two runs on the same snapshot.
The aggregating functions are accumulators (:mod:`drsg.plan.cypher.aggregates`, re-exported here).
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import NoReturn

from drsg.kernel.errors import BadValue, QueryError
from drsg.kernel.metrics import check_metric
from drsg.kernel.values import Vector
from drsg.plan.cypher.aggregates import AGGREGATES, Aggregator, make_aggregator
from drsg.plan.cypher.graph import HOPS, SCORE, CypherValue, EvalContext, NodeRef, PathValue, RelRef, Row
from drsg.plan.cypher.values import INT_MAX, INT_MIN, check_int, is_number, to_text, type_name

__all__ = ["AGGREGATES", "FUNCTIONS", "Aggregator", "FunctionSpec", "check_call", "make_aggregator"]

#: ``range()`` refuses to build a longer list than this (a typo's ``range(0, 1e12)`` must not run)
MAX_RANGE = 10_000_000

Args = Sequence[CypherValue]
Call = Callable[[Args, Row, EvalContext], CypherValue]


@dataclass(frozen=True, slots=True)
class FunctionSpec:
    """``name`` as documented (``toString``); ``max_args`` None: any number (``coalesce``)."""

    name: str
    min_args: int
    max_args: int | None
    call: Call


_TABLE: dict[str, FunctionSpec] = {}
#: lower-cased name → the function (the parser lower-cases the names it reads)
FUNCTIONS: Mapping[str, FunctionSpec] = _TABLE


def check_call(name: str, count: int, distinct: bool = False, where: str = "") -> None:
    """QueryError unless ``name(…)`` with ``count`` arguments is a function drsg knows: an unknown
    name says which known one is closest; ``where`` (`` at line 1, column 8``) goes in the message."""
    if name in AGGREGATES:
        if count != 1:
            raise QueryError(f"{name}(){where} takes 1 argument, not {count}")
        return
    spec = FUNCTIONS.get(name)
    if spec is None:
        close = difflib.get_close_matches(name, [*FUNCTIONS, *AGGREGATES], n=1)
        hint = f"did you mean {_display(close[0])}()?" if close else "see the list of functions in the docs"
        raise QueryError(f"unknown function {name}(){where}; {hint}")
    if distinct:
        raise QueryError(f"DISTINCT{where} only goes inside an aggregate (count, collect, …), not {spec.name}()")
    low, high = spec.min_args, spec.max_args
    if count < low or (high is not None and count > high):
        wanted = str(low) if low == high else f"{low} to {high}" if high is not None else f"at least {low}"
        raise QueryError(f"{spec.name}(){where} takes {wanted} argument(s), not {count}")


def _display(name: str) -> str:
    spec = FUNCTIONS.get(name)
    return spec.name if spec is not None else name


def _fail(name: str, wanted: str, value: CypherValue) -> NoReturn:
    raise QueryError(f"{name}() needs {wanted}, got {type_name(value)}")


def _register(name: str, low: int, high: int | None, call: Call) -> None:
    _TABLE[name.lower()] = FunctionSpec(name, low, high, call)


def _unary(name: str) -> Callable[[Callable[[CypherValue], CypherValue]], Callable[[CypherValue], CypherValue]]:
    """A one-argument function of the value alone, null in null out."""

    def register(fn: Callable[[CypherValue], CypherValue]) -> Callable[[CypherValue], CypherValue]:
        _register(name, 1, 1, lambda args, row, ctx: None if args[0] is None else fn(args[0]))
        return fn

    return register


def _graph(name: str) -> Callable[[Callable[[CypherValue, EvalContext], CypherValue]], None]:
    """A one-argument function that reads the graph, null in null out."""

    def register(fn: Callable[[CypherValue, EvalContext], CypherValue]) -> None:
        _register(name, 1, 1, lambda args, row, ctx: None if args[0] is None else fn(args[0], ctx))

    return register


# -------------------------------------------------------------------------- graph elements


@_unary("id")
def _id(value: CypherValue) -> CypherValue:
    if isinstance(value, NodeRef | RelRef):
        return value.id
    _fail("id", "a node or a relationship", value)


@_graph("labels")
def _labels(value: CypherValue, ctx: EvalContext) -> CypherValue:
    if isinstance(value, NodeRef):
        return list(ctx.graph.labels(value.id))
    _fail("labels", "a node", value)


@_graph("type")
def _type(value: CypherValue, ctx: EvalContext) -> CypherValue:
    if isinstance(value, RelRef):
        return ctx.graph.relationship(value.id).type
    _fail("type", "a relationship", value)


def _properties_of(name: str, value: CypherValue, ctx: EvalContext) -> Mapping[str, CypherValue]:
    if isinstance(value, dict):
        return value
    if isinstance(value, NodeRef):
        return ctx.graph.properties(value.id)
    if isinstance(value, RelRef):
        return ctx.graph.relationship(value.id).properties
    _fail(name, "a node, a relationship or a map", value)


@_graph("properties")
def _properties(value: CypherValue, ctx: EvalContext) -> CypherValue:
    return dict(_properties_of("properties", value, ctx))


@_graph("keys")
def _keys(value: CypherValue, ctx: EvalContext) -> CypherValue:
    properties = _properties_of("keys", value, ctx)
    if isinstance(value, dict):
        return list(properties)  # a map's keys, null values included
    return [k for k, v in properties.items() if v is not None]


@_graph("startNode")
def _start_node(value: CypherValue, ctx: EvalContext) -> CypherValue:
    if isinstance(value, RelRef):
        return NodeRef(ctx.graph.relationship(value.id).src)
    _fail("startNode", "a relationship", value)


@_graph("endNode")
def _end_node(value: CypherValue, ctx: EvalContext) -> CypherValue:
    if isinstance(value, RelRef):
        return NodeRef(ctx.graph.relationship(value.id).dst)
    _fail("endNode", "a relationship", value)


@_graph("key")
def _key(value: CypherValue, ctx: EvalContext) -> CypherValue:
    if isinstance(value, NodeRef):
        return ctx.graph.key(value.id)
    _fail("key", "a node", value)


@_unary("nodes")
def _nodes(value: CypherValue) -> CypherValue:
    if isinstance(value, PathValue):
        return list(value.nodes)
    _fail("nodes", "a path", value)


@_unary("relationships")
def _relationships(value: CypherValue) -> CypherValue:
    if isinstance(value, PathValue):
        return list(value.rels)
    _fail("relationships", "a path", value)


@_unary("length")
def _length(value: CypherValue) -> CypherValue:
    if isinstance(value, PathValue):
        return len(value.rels)
    raise QueryError(f"length() needs a path, got {type_name(value)}; use size() for a list or a string")


_register("score", 0, 0, lambda args, row, ctx: row.get(SCORE))
_register("hops", 0, 0, lambda args, row, ctx: row.get(HOPS))

# ----------------------------------------------------------------------------- null handling


def _coalesce(args: Args, row: Row, ctx: EvalContext) -> CypherValue:
    return next((value for value in args if value is not None), None)


_register("coalesce", 1, None, _coalesce)
# exists(n.p); the pattern form exists((a)-->(b)) is a PatternPredicate the evaluator answers
_register("exists", 1, 1, lambda args, row, ctx: args[0] is not None)

# ---------------------------------------------------------------------------- conversions

_INTEGER = re.compile(r"[+-]?\d+")
_FLOAT = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


@_unary("toString")
def _to_string(value: CypherValue) -> CypherValue:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return to_text(value)
    _fail("toString", "a number, a boolean or a string", value)


def _truncate(name: str, number: float) -> int | None:
    if not math.isfinite(number):
        return None
    return check_int(int(number), f"{name}({to_text(number)})")


@_unary("toInteger")
def _to_integer(value: CypherValue) -> CypherValue:
    if isinstance(value, bool):
        _fail("toInteger", "a number or a string", value)
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return _truncate("toInteger", value)
    if isinstance(value, str):
        text = value.strip()
        if _INTEGER.fullmatch(text):
            number = int(text)
            return number if INT_MIN <= number <= INT_MAX else None
        return _truncate("toInteger", float(text)) if _FLOAT.fullmatch(text) else None  # "x" → null
    _fail("toInteger", "a number or a string", value)


@_unary("toFloat")
def _to_float(value: CypherValue) -> CypherValue:
    if isinstance(value, bool):
        _fail("toFloat", "a number or a string", value)
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        text = value.strip()
        return float(text) if _FLOAT.fullmatch(text) else None
    _fail("toFloat", "a number or a string", value)


@_unary("toBoolean")
def _to_boolean(value: CypherValue) -> CypherValue:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        return {"true": True, "false": False}.get(value.strip().lower())
    _fail("toBoolean", "a boolean or a string", value)


# -------------------------------------------------------------------------------- strings


def _string(name: str, value: CypherValue) -> str:
    if isinstance(value, str):
        return value
    _fail(name, "a string", value)


def _count(name: str, value: CypherValue, what: str = "length") -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 0:
            raise QueryError(f"{name}() needs a {what} of 0 or more, got {value}")
        return value
    raise QueryError(f"{name}() needs an integer {what}, got {type_name(value)}")


def _string_function(name: str, method: Callable[[str], str]) -> None:
    _unary(name)(lambda value: method(_string(name, value)))


for _name, _method in (
    ("toLower", str.lower),
    ("toUpper", str.upper),
    ("trim", str.strip),
    ("lTrim", str.lstrip),
    ("rTrim", str.rstrip),
):
    _string_function(_name, _method)


def _substring(args: Args, row: Row, ctx: EvalContext) -> CypherValue:
    if args[0] is None:
        return None
    text = _string("substring", args[0])
    start = _count("substring", args[1], "start")
    if len(args) == 2:
        return text[start:]
    return text[start : start + _count("substring", args[2])]


def _left_right(left: bool) -> Call:
    name = "left" if left else "right"

    def call(args: Args, row: Row, ctx: EvalContext) -> CypherValue:
        if args[0] is None:
            return None
        text, size = _string(name, args[0]), _count(name, args[1])
        return text[:size] if left else text[len(text) - min(size, len(text)) :]

    return call


def _split(args: Args, row: Row, ctx: EvalContext) -> CypherValue:
    if args[0] is None or args[1] is None:
        return None
    text, separator = _string("split", args[0]), _string("split", args[1])
    parts: list[CypherValue] = [*text] if separator == "" else [*text.split(separator)]
    return parts


def _replace(args: Args, row: Row, ctx: EvalContext) -> CypherValue:
    if any(arg is None for arg in args):
        return None
    return _string("replace", args[0]).replace(_string("replace", args[1]), _string("replace", args[2]))


_register("substring", 2, 3, _substring)
_register("left", 2, 2, _left_right(left=True))
_register("right", 2, 2, _left_right(left=False))
_register("split", 2, 2, _split)
_register("replace", 3, 3, _replace)

# ---------------------------------------------------------------------------------- lists


@_unary("size")
def _size(value: CypherValue) -> CypherValue:
    if isinstance(value, list | str):
        return len(value)
    _fail("size", "a list or a string", value)


@_unary("reverse")
def _reverse(value: CypherValue) -> CypherValue:
    if isinstance(value, str):
        return value[::-1]
    if isinstance(value, list):
        return value[::-1]
    _fail("reverse", "a list or a string", value)


def _list(name: str, value: CypherValue) -> list[CypherValue]:
    if isinstance(value, list):
        return value
    _fail(name, "a list", value)


_unary("head")(lambda value: next(iter(_list("head", value)), None))
_unary("last")(lambda value: _list("last", value)[-1] if _list("last", value) else None)
_unary("tail")(lambda value: _list("tail", value)[1:])


def _range(args: Args, row: Row, ctx: EvalContext) -> CypherValue:
    bounds = []
    for arg in args:
        if not isinstance(arg, int) or isinstance(arg, bool):
            _fail("range", "integers", arg)
        bounds.append(arg)
    start, end, step = bounds[0], bounds[1], bounds[2] if len(bounds) == 3 else 1
    if step == 0:
        raise QueryError("range() needs a step other than 0")
    count = max(0, (end - start) // step + 1)
    if count > MAX_RANGE:
        raise QueryError(f"range() would make {count} items, more than {MAX_RANGE}; narrow the range or raise the step")
    return list(range(start, end + (1 if step > 0 else -1), step))


_register("range", 2, 3, _range)

# -------------------------------------------------------------------------------- numbers


def _number(name: str, value: CypherValue) -> int | float:
    if isinstance(value, int | float) and is_number(value):
        return value
    _fail(name, "a number", value)


@_unary("abs")
def _abs(value: CypherValue) -> CypherValue:
    number = _number("abs", value)
    return check_int(abs(number), f"abs({number})") if isinstance(number, int) else abs(number)


@_unary("sign")
def _sign(value: CypherValue) -> CypherValue:
    number = _number("sign", value)
    return (number > 0) - (number < 0)


def _round(number: float) -> float:
    """Halves up, as Java's Math.round; ``number - floor`` is exact where ``number + 0.5`` is not
    (0.49999999999999994 + 0.5 rounds to 1.0)."""
    if not math.isfinite(number):
        return number
    floor = float(math.floor(number))
    return floor + 1.0 if number - floor >= 0.5 else floor


def _float_function(name: str, fn: Callable[[float], float]) -> None:
    def call(value: CypherValue) -> CypherValue:
        number = float(_number(name, value))
        try:
            return float(fn(number))
        except ValueError:  # outside the domain (sqrt(-1), log(-1)): NaN, as Java's
            return -math.inf if number == 0 else math.nan
        except OverflowError:
            return math.inf

    _unary(name)(call)


for _name, _fn in (
    ("ceil", math.ceil),
    ("floor", math.floor),
    ("round", _round),
    ("sqrt", math.sqrt),
    ("exp", math.exp),
    ("log", math.log),
    ("log10", math.log10),
):
    _float_function(_name, _fn)
_register("e", 0, 0, lambda args, row, ctx: math.e)
_register("pi", 0, 0, lambda args, row, ctx: math.pi)

# ------------------------------------------------------------------------- vector functions


def _vector(name: str, value: CypherValue | Vector) -> list[float]:
    if isinstance(value, Vector):
        return value.tolist()
    if isinstance(value, list) and value:
        floats = [float(x) for x in value if isinstance(x, int | float) and not isinstance(x, bool)]
        if len(floats) == len(value):
            return floats
    _fail(name, "a vector (a non-empty list of numbers)", value)


def _metric(name: str, args: Args) -> str:
    if len(args) < 3:
        return "cosine"
    metric = args[2]
    if not isinstance(metric, str):
        _fail(name, "a metric name (cosine, dot or l2)", metric)
    try:
        return check_metric(metric)
    except BadValue as exc:
        raise QueryError(f"{name}(): {exc}") from None


def similarity(metric: str, a: Sequence[float], b: Sequence[float]) -> float:
    """Higher is nearer, as the vector searches score: cosine, dot, or minus the Euclidean distance."""
    if metric == "dot":
        return math.fsum(x * y for x, y in zip(a, b, strict=True))
    if metric == "l2":
        return -math.dist(a, b)
    norms = math.hypot(*a) * math.hypot(*b)
    return math.fsum(x * y for x, y in zip(a, b, strict=True)) / norms if norms > 0 else 0.0


def _vector_function(distance: bool) -> Call:
    name = "distance" if distance else "similarity"

    def call(args: Args, row: Row, ctx: EvalContext) -> CypherValue:
        metric = _metric(name, args)
        if args[0] is None or args[1] is None:
            return None
        a, b = _vector(name, args[0]), _vector(name, args[1])
        if len(a) != len(b):
            return None  # vectors of other sizes are not comparable: as a search skips them
        score = similarity(metric, a, b)
        if not distance:
            return score
        return 1.0 - score if metric == "cosine" else -score  # upstream's distances: 1 - cos, -dot, ‖a - b‖

    return call


_register("similarity", 2, 3, _vector_function(distance=False))
_register("distance", 2, 3, _vector_function(distance=True))
