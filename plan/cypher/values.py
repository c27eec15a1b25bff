"""openCypher 9's value semantics (pure): equality, equivalence, comparability, orderability,
arithmetic, string and list operators, three-valued logic, and stored values in and out.

Four relations, as openCypher defines them, each its own function:

* :func:`equals` — ``=``/``<>``/``IN``: null propagates (``null = null`` is null), ``1 = 1.0``,
  lists and maps element-wise, different types unequal, NaN unequal to itself;
* :func:`group_key` — equivalence (``DISTINCT``, grouping, ``UNION``, ``count(DISTINCT …)``):
  null is equivalent to null and NaN to NaN, so equivalent values have equal hashable keys;
* :func:`compare` / :func:`comparison` — ``<``, ``<=``, ``>``, ``>=``: numbers with numbers, strings
  with strings, booleans with booleans, lists lexicographically; anything else (null, different
  types, nodes, maps) is null, and any comparison with NaN is false;
* :func:`order_key` — ``ORDER BY``'s total order: maps < nodes < relationships < lists < paths <
  (bytes, drsg's own) < strings < booleans < numbers (NaN after every other number) < null.

A Python ``bool`` is an ``int`` to ``isinstance``: every check here tells them apart by type.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Hashable
from decimal import Decimal
from functools import lru_cache
from typing import Final, Literal, cast, overload

from drsg.kernel.errors import QueryError
from drsg.kernel.values import Described, Value, Vector
from drsg.plan.cypher.graph import CypherValue, NodeRef, PathValue, RelRef

INT_MIN: Final = -(2**63)
INT_MAX: Final = 2**63 - 1

# ------------------------------------------------------------------------------------------ types


def is_number(value: object) -> bool:
    kind = type(value)
    return kind is int or kind is float


def type_name(value: object) -> str:
    """The value's type as an error message names it (``a boolean``, ``an integer``, …)."""
    if value is None:
        return "null"
    return _TYPE_NAMES.get(type(value), f"a {type(value).__name__}")


_TYPE_NAMES: dict[type, str] = {
    bool: "a boolean",
    int: "an integer",
    float: "a float",
    str: "a string",
    bytes: "bytes",
    list: "a list",
    dict: "a map",
    NodeRef: "a node",
    RelRef: "a relationship",
    PathValue: "a path",
    Vector: "a vector",
}


def check_int(value: int, what: str) -> int:
    """``value`` if it fits in 64 bits, else QueryError saying which operation overflowed."""
    if INT_MIN <= value <= INT_MAX:
        return value
    raise QueryError(f"integer overflow: {what} does not fit in 64 bits; use a float (toFloat(x)) instead")


# ------------------------------------------------------------------------------------ equality


def equals(a: CypherValue, b: CypherValue) -> bool | None:
    """``a = b``: None when either is null, or when a null inside lists or maps decides it."""
    if a is None or b is None:
        return None
    ka, kb = type(a), type(b)
    if ka is not kb:
        if (ka is int or ka is float) and (kb is int or kb is float):
            return a == b
        return False
    if ka is list:
        assert isinstance(a, list) and isinstance(b, list)
        return _all_equal(a, b) if len(a) == len(b) else False
    if ka is dict:
        assert isinstance(a, dict) and isinstance(b, dict)
        if a.keys() != b.keys():
            return False
        return _all_equal([a[k] for k in a], [b[k] for k in a])
    return a == b  # numbers (NaN unequal), strings, booleans, bytes, nodes, rels, paths by their ids


def _all_equal(xs: list[CypherValue], ys: list[CypherValue]) -> bool | None:
    result: bool | None = True
    for x, y in zip(xs, ys, strict=True):
        same = equals(x, y)
        if same is False:
            return False  # one unequal pair decides, whatever nulls are elsewhere
        if same is None:
            result = None
    return result


class _NaN:
    """The equivalence key of every NaN (NaN is not equal to itself, but equivalent)."""

    def __repr__(self) -> str:
        return "NaN"


_NAN_KEY: Final = _NaN()


def group_key(value: CypherValue) -> Hashable:
    """A hashable key equal for exactly the equivalent values (1 and 1.0 alike, NaN to NaN, null
    to null, lists and maps structurally). Tuples only ever appear as tags: no Cypher value is one."""
    if isinstance(value, float):
        return _NAN_KEY if value != value else value
    if isinstance(value, bool):
        return ("bool", value)  # True == 1 in Python: a boolean must not group with an integer
    if isinstance(value, list):
        return ("list", tuple(group_key(item) for item in value))
    if isinstance(value, dict):
        return ("map", frozenset((k, group_key(v)) for k, v in value.items()))
    return value  # null, int, str, bytes, and the references (frozen dataclasses, equal by id)


def equivalent(a: CypherValue, b: CypherValue) -> bool:
    return group_key(a) == group_key(b)


# ------------------------------------------------------------------------------- comparability


class _Unordered:
    """A comparison that met NaN: every operator answers false (not null)."""


_UNORDERED: Final = _Unordered()


def _cmp(a: CypherValue, b: CypherValue) -> int | _Unordered | None:
    ka, kb = type(a), type(b)
    if (ka is int or ka is float) and (kb is int or kb is float):
        assert isinstance(a, int | float) and isinstance(b, int | float)
        if a != a or b != b:
            return _UNORDERED
        return (a > b) - (a < b)
    if ka is not kb or a is None:
        return None
    if isinstance(a, str) and isinstance(b, str):
        return (a > b) - (a < b)
    if isinstance(a, bool) and isinstance(b, bool):
        return (a > b) - (a < b)  # false < true
    if ka is list:
        assert isinstance(a, list) and isinstance(b, list)
        for x, y in zip(a, b, strict=False):
            if x is None or y is None:
                return None
            order = _cmp(x, y)
            if order != 0:
                return order
        return (len(a) > len(b)) - (len(a) < len(b))
    return None  # maps, nodes, relationships, paths, bytes: not comparable


def compare(a: CypherValue, b: CypherValue) -> int | None:
    """-1, 0 or 1 when openCypher can compare ``a`` and ``b``; None when it cannot (null, different
    types, maps, nodes, relationships, paths) or when NaN is involved (see :func:`comparison`)."""
    order = _cmp(a, b)
    return order if isinstance(order, int) else None


_OPS: dict[str, Callable[[int], bool]] = {
    "<": lambda c: c < 0,
    "<=": lambda c: c <= 0,
    ">": lambda c: c > 0,
    ">=": lambda c: c >= 0,
}


def comparison(op: str, a: CypherValue, b: CypherValue) -> bool | None:
    """``a op b`` for ``<``, ``<=``, ``>``, ``>=``: null when not comparable, false with NaN."""
    order = _cmp(a, b)
    if order is None:
        return None
    if isinstance(order, _Unordered):
        return False
    return _OPS[op](order)


# --------------------------------------------------------------------------------- orderability

_MAP, _NODE, _REL, _LIST, _PATH, _BYTES, _STRING, _BOOLEAN, _NUMBER, _NULL = range(10)


@overload
def order_key(value: CypherValue, descending: Literal[False] = False) -> tuple[object, ...]: ...
@overload
def order_key(value: CypherValue, descending: bool) -> tuple[object, ...] | _Descending: ...
def order_key(value: CypherValue, descending: bool = False) -> tuple[object, ...] | _Descending:
    """ORDER BY's key: a total order over every value, null the largest (last ascending, first
    descending). ``descending=True`` wraps the key so it sorts backwards inside a tuple of keys
    (``sorted(rows, key=lambda r: (order_key(x, True), order_key(y)))``); for one key,
    ``sorted(…, key=order_key, reverse=True)`` is the same order."""
    key = _order(value)
    return _Descending(key) if descending else key


def _order(value: CypherValue) -> tuple[object, ...]:
    kind = type(value)
    if kind is int:
        return (_NUMBER, 0, value)
    if kind is float:
        return (_NUMBER, 1, 0) if value != value else (_NUMBER, 0, value)
    if kind is str:
        return (_STRING, value)
    if value is None:
        return (_NULL,)
    if kind is bool:
        return (_BOOLEAN, value)
    if kind is list:
        assert isinstance(value, list)
        return (_LIST, tuple(_order(item) for item in value))
    if kind is dict:
        assert isinstance(value, dict)
        keys = sorted(value)  # by size, then the sorted keys, then the values in key order
        return (_MAP, len(keys), tuple(keys), tuple(_order(value[k]) for k in keys))
    if kind is NodeRef:
        assert isinstance(value, NodeRef)
        return (_NODE, value.id)
    if kind is RelRef:
        assert isinstance(value, RelRef)
        return (_REL, value.id)
    if kind is PathValue:
        assert isinstance(value, PathValue)
        steps: list[tuple[object, ...]] = [(_NODE, value.nodes[0].id)] if value.nodes else []
        for rel, node in zip(value.rels, value.nodes[1:], strict=False):
            steps += [(_REL, rel.id), (_NODE, node.id)]
        return (_PATH, tuple(steps))  # as the list of its nodes and relationships, alternating
    assert isinstance(value, bytes)
    return (_BYTES, value)


class _Descending:
    """An order key sorting backwards (for one descending key among several)."""

    __slots__ = ("key",)

    def __init__(self, key: tuple[object, ...]) -> None:
        self.key = key

    def __lt__(self, other: _Descending) -> bool:
        return other.key < self.key

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Descending) and self.key == other.key

    def __hash__(self) -> int:
        return hash(self.key)


# ---------------------------------------------------------------------------------- arithmetic


def arithmetic(op: str, a: CypherValue, b: CypherValue) -> CypherValue:
    """``a op b`` for ``+ - * / % ^``: null with null, integers stay integers (64-bit, checked),
    a float makes a float (IEEE: 1.0 / 0 is infinity), ``+`` also joins strings and lists."""
    if a is None or b is None:
        return None
    ka, kb = type(a), type(b)
    if (ka is int or ka is float) and (kb is int or kb is float):
        assert isinstance(a, int | float) and isinstance(b, int | float)
        if op == "^":
            return _power(float(a), float(b))
        if ka is int and kb is int:
            assert isinstance(a, int) and isinstance(b, int)
            return _INT_OPS[op](a, b)
        return _FLOAT_OPS[op](float(a), float(b))
    if op == "+":
        if ka is list:
            assert isinstance(a, list)
            return a + b if isinstance(b, list) else [*a, b]
        if kb is list:
            assert isinstance(b, list)
            return [a, *b]
        if isinstance(a, str) and isinstance(b, str | int | float) and kb is not bool:
            return a + (b if isinstance(b, str) else to_text(b))  # Neo4j's "a" + 1 = "a1"
        if isinstance(b, str) and isinstance(a, int | float) and ka is not bool:
            return to_text(a) + b
    raise QueryError(f"cannot {_VERBS[op]} {type_name(a)} and {type_name(b)}")


_VERBS = {"+": "add", "-": "subtract", "*": "multiply", "/": "divide", "%": "take the remainder of", "^": "raise"}


def _int_div(a: int, b: int) -> int:
    if b == 0:
        raise QueryError(f"division by zero: {a} / 0; check the divisor, or divide floats (1.0 / 0 is Infinity)")
    quotient = abs(a) // abs(b)
    return check_int(quotient if (a < 0) == (b < 0) else -quotient, f"{a} / {b}")


def _int_mod(a: int, b: int) -> int:
    if b == 0:
        raise QueryError(f"division by zero: {a} % 0; check the divisor")
    rest = abs(a) % abs(b)
    return rest if a >= 0 else -rest  # the sign of the dividend, as Java's %


_INT_OPS: dict[str, Callable[[int, int], int]] = {
    "+": lambda a, b: check_int(a + b, f"{a} + {b}"),
    "-": lambda a, b: check_int(a - b, f"{a} - {b}"),
    "*": lambda a, b: check_int(a * b, f"{a} * {b}"),
    "/": _int_div,
    "%": _int_mod,
}


def _float_div(a: float, b: float) -> float:
    if b != 0:
        return a / b
    if a == 0 or a != a:
        return math.nan
    return math.copysign(math.inf, a) * math.copysign(1.0, b)


def _float_mod(a: float, b: float) -> float:
    try:
        return math.fmod(a, b)
    except ValueError:  # a zero divisor or an infinite dividend: NaN, as IEEE
        return math.nan


_FLOAT_OPS: dict[str, Callable[[float, float], float]] = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "/": _float_div,
    "%": _float_mod,
}


def _power(base: float, exponent: float) -> float:
    try:
        return math.pow(base, exponent)
    except OverflowError:
        odd = exponent.is_integer() and int(exponent) % 2 == 1
        return -math.inf if base < 0 and odd else math.inf
    except ValueError:  # a negative base to a fraction, or zero to a negative power
        return math.inf if base == 0 else math.nan


def negate(a: CypherValue) -> CypherValue:
    """Unary ``-``."""
    if a is None:
        return None
    if type(a) is int:
        assert isinstance(a, int)
        return check_int(-a, f"-({a})")
    if type(a) is float:
        assert isinstance(a, float)
        return -a
    raise QueryError(f"cannot negate {type_name(a)}; unary minus needs a number")


def to_text(value: int | float) -> str:
    """A number as openCypher's ``toString`` writes it (floats as Java does: ``1.0``, ``1.0E20``)."""
    if type(value) is int:
        return str(value)
    if value != value:
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0 or 1e-3 <= abs(value) < 1e7:
        return repr(float(value))  # plain in this range, as Java's
    sign, digits, exp = Decimal(repr(float(value))).as_tuple()  # the shortest digits that read back
    assert isinstance(exp, int)
    text = "".join(map(str, digits)).rstrip("0") or "0"
    return f"{'-' if sign else ''}{text[0]}.{text[1:] or '0'}E{len(digits) + exp - 1}"


# --------------------------------------------------------------------------- strings and lists


def string_predicate(op: str, a: CypherValue, b: CypherValue) -> bool | None:
    """``CONTAINS``, ``STARTS WITH``, ``ENDS WITH``: null unless both sides are strings."""
    if type(a) is not str or type(b) is not str:
        return None
    assert isinstance(a, str) and isinstance(b, str)
    if op == "CONTAINS":
        return b in a
    if op == "STARTS WITH":
        return a.startswith(b)
    return a.endswith(b)


@lru_cache(maxsize=256)
def _regex(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise QueryError(f"invalid regular expression {pattern!r} ({exc}); fix the pattern after =~") from None


def regex_match(a: CypherValue, pattern: CypherValue) -> bool | None:
    """``a =~ pattern``: the whole string must match; null unless both are strings."""
    if type(a) is not str or type(pattern) is not str:
        return None
    assert isinstance(a, str) and isinstance(pattern, str)
    return _regex(pattern).fullmatch(a) is not None


def membership(needle: CypherValue, haystack: CypherValue) -> bool | None:
    """``needle IN haystack``: true if an item equals it; null if none does but a comparison was
    null; false otherwise. The right side must be a list (or null)."""
    if haystack is None:
        return None
    if type(haystack) is not list:
        hint = "; for a map's keys write x IN keys(m)" if isinstance(haystack, dict) else ""
        raise QueryError(f"IN needs a list on its right, got {type_name(haystack)}{hint}")
    assert isinstance(haystack, list)
    if needle is None:
        return None if haystack else False
    unknown = False
    for item in haystack:
        same = equals(needle, item)
        if same:
            return True
        if same is None:
            unknown = True
    return None if unknown else False


# ------------------------------------------------------------------------ three-valued logic


def _boolean(op: str, value: CypherValue) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    raise QueryError(f"{op} needs booleans, got {type_name(value)}")


def logic(op: str, a: CypherValue, b: CypherValue) -> bool | None:
    """``AND``, ``OR``, ``XOR`` in three-valued logic (both operands already evaluated)."""
    x, y = _boolean(op, a), _boolean(op, b)
    if op == "AND":
        if x is False or y is False:
            return False
        return None if x is None or y is None else True
    if op == "OR":
        if x is True or y is True:
            return True
        return None if x is None or y is None else False
    return None if x is None or y is None else x != y


def logical_not(a: CypherValue) -> bool | None:
    x = _boolean("NOT", a)
    return None if x is None else not x


# ------------------------------------------------------------------------------ store values


_SCALARS: Final = frozenset({str, int, float, bool, type(None), bytes})


def from_store(value: Value) -> CypherValue:
    """A stored property as a Cypher value: a vector is a list of floats, a described value its
    value, bytes stay bytes."""
    if type(value) in _SCALARS:  # the common case, read on every property access: one set lookup
        return cast("CypherValue", value)  # a str, int, float, bool, bytes or None, as the set says
    if isinstance(value, list):
        return [from_store(item) for item in value]
    if isinstance(value, dict):
        return {k: from_store(v) for k, v in value.items()}
    if isinstance(value, Vector):
        return [component for component in value.tolist()]
    if isinstance(value, Described):
        return from_store(value.value)
    return value


def to_store(value: CypherValue, where: str = "a property") -> Value:
    """A Cypher value to store (``SET``): lists stay lists (not vectors); a node, relationship or
    path, and NaN or infinity, are refused."""
    if isinstance(value, list):
        return [to_store(item, where) for item in value]
    if isinstance(value, dict):
        return {k: to_store(v, where) for k, v in value.items()}
    if isinstance(value, float):
        if not math.isfinite(value):
            raise QueryError(f"{where} cannot hold {to_text(value)}; store null or a finite number")
        return value
    if isinstance(value, NodeRef | RelRef | PathValue):
        what = type_name(value)
        raise QueryError(f"{where} cannot hold {what}; store its id (id(x)) or key (key(n)) instead")
    return value
