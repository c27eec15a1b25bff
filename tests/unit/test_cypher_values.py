"""openCypher 9's value semantics (drsg.plan.cypher.values): each relation and operator family
against the results the openCypher 9 specification (and the Neo4j manual's "Equality, ordering and
comparison of values") gives, nulls and type mismatches included; hypothesis holds the relations
to each other (order_key total and consistent with compare, group_key exactly equivalence, …)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from drsg.kernel.errors import QueryError
from drsg.kernel.values import Described, Vector
from drsg.plan.cypher.graph import CypherValue, NodeRef, PathValue, RelRef
from drsg.plan.cypher.values import (
    INT_MAX,
    INT_MIN,
    arithmetic,
    compare,
    comparison,
    equals,
    equivalent,
    from_store,
    group_key,
    logic,
    logical_not,
    membership,
    negate,
    order_key,
    regex_match,
    string_predicate,
    to_store,
    to_text,
)

NAN = math.nan
N1, N2, R1 = NodeRef(1), NodeRef(2), RelRef(1)


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        (None, None, None),
        (1, None, None),
        (None, "x", None),
        (1, 1.0, True),
        (1, 2, False),
        (NAN, NAN, False),
        ("a", "a", True),
        ("1", 1, False),
        (True, 1, False),  # a boolean is not an integer
        (False, 0, False),
        (True, True, True),
        ([1, 2], [1.0, 2], True),
        ([1, None], [1, None], None),
        ([1, None], [2, None], False),  # one unequal pair decides
        ([None], [1, 2], False),  # different lengths
        ([[1]], [[1]], True),
        ({"a": 1}, {"a": 1.0}, True),
        ({"a": 1}, {"a": 1, "b": 2}, False),
        ({"a": None}, {"a": None}, None),
        ({"a": 1, "b": None}, {"a": 2, "b": None}, False),
        (N1, NodeRef(1), True),
        (N1, N2, False),
        (N1, R1, False),  # same id, different kinds
        (PathValue((N1, N2), (R1,)), PathValue((N1, N2), (R1,)), True),
        (PathValue((N1,)), PathValue((N2,)), False),
        (b"\x00", b"\x00", True),
        (b"a", "a", False),
        ([1], 1, False),
    ],
)
def test_equals(a: CypherValue, b: CypherValue, expected: bool | None) -> None:
    assert equals(a, b) is expected
    assert equals(b, a) is expected


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        (None, None, True),
        (NAN, NAN, True),
        (1, 1.0, True),
        (True, 1, False),
        (False, 0, False),
        ([1, None], [1.0, None], True),
        ({"a": [NAN]}, {"a": [NAN]}, True),
        ({"a": 1, "b": 2}, {"b": 2, "a": 1}, True),
        ([1, 2], [2, 1], False),
        ([True], [1], False),
        (N1, R1, False),
        ("1", 1, False),
        (0.0, -0.0, True),
    ],
)
def test_equivalence(a: CypherValue, b: CypherValue, same: bool) -> None:
    assert equivalent(a, b) is same
    assert (group_key(a) == group_key(b)) is same
    if same:
        assert hash(group_key(a)) == hash(group_key(b))


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        (1, 2, -1),
        (2.5, 2, 1),
        (1, 1.0, 0),
        ("a", "b", -1),
        ("b", "ab", 1),
        ("x", "xy", -1),
        (False, True, -1),
        ([1, 2], [1, 3], -1),
        ([1], [1, 2], -1),
        ([2], [1, 5], 1),
        ([1, "a"], [2, "b"], -1),  # the first pair decides
        ([1, "a"], [1, 2], None),  # incomparable items
        ([None], [1], None),
        (1, "1", None),
        (True, 1, None),
        (None, 1, None),
        (None, None, None),
        ({"a": 1}, {"a": 1}, None),
        (N1, N2, None),
        (NAN, 1, None),
    ],
)
def test_compare(a: CypherValue, b: CypherValue, expected: int | None) -> None:
    assert compare(a, b) == expected if expected is not None else compare(a, b) is None


@pytest.mark.parametrize("op", ["<", "<=", ">", ">="])
def test_comparisons_with_nan_are_false_and_with_null_are_null(op: str) -> None:
    assert comparison(op, NAN, 1) is False
    assert comparison(op, 1, NAN) is False
    assert comparison(op, NAN, NAN) is False
    assert comparison(op, [NAN], [1]) is False
    assert comparison(op, None, 1) is None
    assert comparison(op, "a", 1) is None


# The openCypher TCK's own tables (Comparison1 [6], [7]; Comparison2 [4]), row for row.
TCK_LIST_EQUALITY: list[tuple[CypherValue, CypherValue, bool | None]] = [
    ([1, 2], [1], False),
    ([None], [1], None),
    (["a"], [1], False),
    ([[1]], [[1], [None]], False),
    ([[1], [2]], [[1], [None]], None),
    ([[1], [2, 3]], [[1], [None]], False),
]
TCK_MAP_EQUALITY: list[tuple[CypherValue, CypherValue, bool | None]] = [
    ({}, {}, True),
    ({"k": True}, {"k": True}, True),
    ({"k": 1.0}, {"k": 1.0}, True),
    ({"k": "a", "l": 2}, {"k": "a", "l": 2}, True),
    ({}, {"k": None}, False),
    ({"k": 1}, {"k": 1, "l": None}, False),
    ({"k": None, "l": 1}, {"l": 1}, False),
    ({"k": None}, {"k": None, "l": None}, False),
    ({"k": None}, {"k": None}, None),
    ({"k": 1}, {"k": None}, None),
    ({"k": 1, "l": None}, {"k": None, "l": None}, None),
    ({"k": 1, "l": None}, {"k": None, "l": 1}, None),
    ({"k": 1, "l": None}, {"k": 1, "l": 1}, None),
]


@pytest.mark.parametrize(("a", "b", "expected"), TCK_LIST_EQUALITY + TCK_MAP_EQUALITY)
def test_tck_equality(a: CypherValue, b: CypherValue, expected: bool | None) -> None:
    assert equals(a, b) is expected


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ([1, 0], [1], True),
        ([1, None], [1], True),
        ([1, 2], [1, None], None),
        ([1, "a"], [1, None], None),
        ([1, 2], [3, None], False),
    ],
)
def test_tck_list_comparison(a: CypherValue, b: CypherValue, expected: bool | None) -> None:
    assert comparison(">=", a, b) is expected


def test_tck_nan_against_a_string_is_null() -> None:
    assert comparison("<", NAN, "a") is None
    assert equals(NAN, "a") is False


def test_comparison_operators() -> None:
    assert comparison("<", 1, 2) is True
    assert comparison("<=", 2, 2.0) is True
    assert comparison(">", "b", "a") is True
    assert comparison(">=", [1], [1, 0]) is False


def test_order_key_follows_the_global_order() -> None:
    ascending: list[CypherValue] = [
        {},
        {"a": 1},
        {"a": 0, "b": 1},
        N1,
        N2,
        R1,
        [],
        [1, "foo"],  # 'foo' < 2: strings before numbers
        [1, 2],
        [1, 2, None],
        PathValue((N1,)),
        b"\x00",
        "",
        "a",
        False,
        True,
        -math.inf,
        -1,
        0.5,
        1,
        math.inf,
        NAN,
        None,
    ]
    shuffled = ascending[::2] + ascending[1::2]
    assert [group_key(v) for v in sorted(shuffled, key=order_key)] == [group_key(v) for v in ascending]
    descending = sorted(shuffled, key=order_key, reverse=True)
    assert descending[0] is None  # null first when descending


def test_descending_key_inside_a_tuple() -> None:
    rows = [(1, "b"), (1, "a"), (2, "a"), (None, "c")]
    ordered = sorted(rows, key=lambda r: (order_key(r[0], descending=True), order_key(r[1])))
    assert ordered == [(None, "c"), (2, "a"), (1, "a"), (1, "b")]


@pytest.mark.parametrize(
    ("op", "a", "b", "expected"),
    [
        ("+", 1, 2, 3),
        ("+", 1, 2.5, 3.5),
        ("+", "a", "b", "ab"),
        ("+", "a", 1, "a1"),
        ("+", 1.5, "a", "1.5a"),
        ("+", [1], [2], [1, 2]),
        ("+", [1], 2, [1, 2]),
        ("+", 0, [1], [0, 1]),
        ("+", [1], [[2]], [1, [2]]),
        ("+", None, 1, None),
        ("+", "a", None, None),
        ("-", 5, 7, -2),
        ("*", 3, 4, 12),
        ("*", 3, 0.5, 1.5),
        ("/", 7, 2, 3),
        ("/", -7, 2, -3),  # toward zero
        ("/", 7, -2, -3),
        ("/", 7.0, 2, 3.5),
        ("/", 1.0, 0, math.inf),
        ("/", -1, 0.0, -math.inf),
        ("%", 7, 3, 1),
        ("%", -7, 3, -1),  # the sign of the dividend
        ("%", 7, -3, 1),
        ("%", 7.5, 2, 1.5),
        ("%", -7.5, 2, -1.5),
        ("^", 2, 3, 8.0),
        ("^", 2, -1, 0.5),
        ("^", 10.0, 400, math.inf),
        ("-", None, None, None),
        ("^", None, 2, None),
    ],
)
def test_arithmetic(op: str, a: CypherValue, b: CypherValue, expected: CypherValue) -> None:
    got = arithmetic(op, a, b)
    assert got == expected
    assert type(got) is type(expected)


def test_float_division_by_zero_is_ieee() -> None:
    assert math.isnan(arithmetic("/", 0.0, 0))
    assert math.isnan(arithmetic("%", 1.0, 0))
    assert math.isnan(arithmetic("^", -8, 0.5))


@pytest.mark.parametrize(
    ("op", "a", "b", "message"),
    [
        ("+", True, 1, "cannot add a boolean and an integer"),
        ("+", "a", True, "cannot add a string and a boolean"),
        ("-", "a", "b", "cannot subtract a string and a string"),
        ("*", [1], 2, "cannot multiply a list and an integer"),
        ("+", {"a": 1}, 1, "cannot add a map and an integer"),
        ("+", N1, 1, "cannot add a node and an integer"),
        ("/", 1, 0, "division by zero"),
        ("%", 1, 0, "division by zero"),
        ("+", INT_MAX, 1, "integer overflow"),
        ("-", INT_MIN, 1, "integer overflow"),
        ("*", 2**62, 2, "integer overflow"),
        ("/", INT_MIN, -1, "integer overflow"),
    ],
)
def test_arithmetic_errors(op: str, a: CypherValue, b: CypherValue, message: str) -> None:
    with pytest.raises(QueryError, match=message):
        arithmetic(op, a, b)


def test_negate() -> None:
    assert negate(3) == -3
    assert negate(-1.5) == 1.5
    assert negate(None) is None
    with pytest.raises(QueryError, match="integer overflow"):
        negate(INT_MIN)
    with pytest.raises(QueryError, match="cannot negate a string"):
        negate("a")


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1.0, "1.0"),
        (0.5, "0.5"),
        (-0.0, "-0.0"),
        (1e20, "1.0E20"),
        (12345678.0, "1.2345678E7"),
        (1e-4, "1.0E-4"),
        (0.001, "0.001"),
        (-2.5e-10, "-2.5E-10"),
        (math.inf, "Infinity"),
        (NAN, "NaN"),
        (42, "42"),
    ],
)
def test_to_text_writes_numbers_as_java(value: float, text: str) -> None:
    assert to_text(value) == text


@pytest.mark.parametrize(
    ("op", "a", "b", "expected"),
    [
        ("CONTAINS", "abc", "b", True),
        ("CONTAINS", "abc", "d", False),
        ("CONTAINS", 1, "1", None),  # openCypher 9: not a string, null
        ("CONTAINS", None, "a", None),
        ("STARTS WITH", "abc", "ab", True),
        ("STARTS WITH", "abc", "", True),
        ("ENDS WITH", "abc", "bc", True),
        ("ENDS WITH", "abc", 1, None),
    ],
)
def test_string_predicates(op: str, a: CypherValue, b: CypherValue, expected: bool | None) -> None:
    assert string_predicate(op, a, b) is expected


def test_regex_matches_the_whole_string() -> None:
    assert regex_match("abc", "a.c") is True
    assert regex_match("abcd", "a.c") is False
    assert regex_match("ABC", "(?i)abc") is True
    assert regex_match(1, "1") is None
    assert regex_match("a", None) is None
    with pytest.raises(QueryError, match="invalid regular expression"):
        regex_match("a", "(")


@pytest.mark.parametrize(
    ("needle", "haystack", "expected"),
    [
        (1, [1, 2], True),
        (1.0, [1, 2], True),
        (3, [1, 2], False),
        (3, [1, None], None),
        (1, [None, 1], True),
        (None, [1], None),
        (None, [], False),
        (1, None, None),
        ([1], [[1], 2], True),
        ([1, None], [[1, None]], None),
        (True, [1], False),
    ],
)
def test_membership(needle: CypherValue, haystack: CypherValue, expected: bool | None) -> None:
    assert membership(needle, haystack) is expected


# The openCypher TCK's IN scenarios (list of lists, nulls, empty lists), row for row.
@pytest.mark.parametrize(
    ("needle", "haystack", "expected"),
    [
        (1, ["1", 2], False),
        ([1, 2], [1, [1, "2"]], False),
        ([1], [1, 2], False),
        ([1], [1, 2, [1]], True),
        ([1, 2], [1, [2, 1]], False),
        ([1, 2], [1, [[1, 2]]], False),
        ([[1, 2], [3, 4]], [5, [[1, 2], [3, 4]]], True),
        (None, [None], None),
        ([None], [[None]], None),
        ([None], [None], None),
        ([1], [[1, None]], False),
        (3, [1, None, 3], True),
        (4, [1, None, 3], None),
        ([1, 2], [[None, "foo"], [1, 2]], True),
        ([1, 2], [1, [1, 2], None], True),
        ([1, 2], [[None, "foo"]], False),
        ([1, 2], [[None, 2]], None),
        ([1, 2, None], [1, [1, 2, None]], None),
        ([1, 2], [[None, 2], [1, 3]], None),
        ([], [[]], True),
        ([], [], False),
        ([], [1, 2, None], None),
    ],
)
def test_tck_membership(needle: CypherValue, haystack: CypherValue, expected: bool | None) -> None:
    assert membership(needle, haystack) is expected


def test_in_needs_a_list() -> None:
    with pytest.raises(QueryError, match=r"got a map; for a map's keys write x IN keys\(m\)"):
        membership("k", {"k": 1})


T, F, U = True, False, None


@pytest.mark.parametrize(
    ("a", "b", "and_", "or_", "xor_"),
    [
        (T, T, T, T, F),
        (T, F, F, T, T),
        (F, F, F, F, F),
        (T, U, U, T, U),
        (F, U, F, U, U),
        (U, U, U, U, U),
    ],
)
def test_three_valued_logic(
    a: bool | None, b: bool | None, and_: bool | None, or_: bool | None, xor_: bool | None
) -> None:
    for x, y in ((a, b), (b, a)):
        assert logic("AND", x, y) is and_
        assert logic("OR", x, y) is or_
        assert logic("XOR", x, y) is xor_


def test_not_and_non_booleans() -> None:
    assert logical_not(True) is False
    assert logical_not(None) is None
    with pytest.raises(QueryError, match="AND needs booleans, got an integer"):
        logic("AND", True, 1)
    with pytest.raises(QueryError, match="NOT needs booleans, got a string"):
        logical_not("true")


def test_from_store_and_back() -> None:
    vector = Vector.of([0.5, 1.0])
    assert from_store(vector) == [0.5, 1.0]
    assert from_store(Described("d", 3)) == 3
    assert from_store({"a": [Described("d", vector)], "b": b"x"}) == {"a": [[0.5, 1.0]], "b": b"x"}
    assert to_store([0.5, 1.0]) == [0.5, 1.0]
    assert type(to_store([0.5, 1.0])) is list  # a list stays a list, not a vector
    assert to_store({"a": [1, "x", None]}) == {"a": [1, "x", None]}
    with pytest.raises(QueryError, match="cannot hold a node"):
        to_store(N1)
    with pytest.raises(QueryError, match="cannot hold a relationship"):
        to_store([R1])
    with pytest.raises(QueryError, match="cannot hold NaN"):
        to_store(NAN)


# ------------------------------------------------------------------------------- properties

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-5, max_value=5),
    st.sampled_from([0.0, -0.0, 1.0, 2.5, -1.5, math.inf, NAN]),
    st.sampled_from(["", "a", "b", "ab"]),
    st.sampled_from([N1, N2, R1, RelRef(2)]),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(["a", "b", "c"]), inner, max_size=3)
    ),
    max_leaves=8,
)


@settings(max_examples=200, deadline=None)
@given(values, values, values)
def test_order_key_is_a_total_order_consistent_with_compare(a: CypherValue, b: CypherValue, c: CypherValue) -> None:
    ka, kb, kc = order_key(a), order_key(b), order_key(c)
    assert (ka < kb) + (ka == kb) + (ka > kb) == 1
    if ka <= kb and kb <= kc:
        assert ka <= kc
    order = compare(a, b)
    if order is not None:
        assert order == (ka > kb) - (ka < kb)


@settings(max_examples=200, deadline=None)
@given(values, values)
def test_group_key_is_equivalence_and_equality_is_symmetric(a: CypherValue, b: CypherValue) -> None:
    assert equals(a, b) is equals(b, a)
    if equals(a, b) is True:
        assert group_key(a) == group_key(b)
    if group_key(a) == group_key(b):
        assert hash(group_key(a)) == hash(group_key(b))
        assert order_key(a) == order_key(b) or _has_nan(a)  # equivalent values sort together
        assert equals(a, b) is not False or _has_nan(a)
    assert group_key(a) == group_key(a)  # reflexive, NaN and null included


def _has_nan(value: CypherValue) -> bool:
    if isinstance(value, float):
        return value != value
    if isinstance(value, list):
        return any(_has_nan(v) for v in value)
    if isinstance(value, dict):
        return any(_has_nan(v) for v in value.values())
    return False


ints = st.integers(min_value=INT_MIN, max_value=INT_MAX)


@settings(max_examples=200, deadline=None)
@given(ints, ints, st.sampled_from(["+", "-", "*"]))
def test_integer_arithmetic_is_pythons_within_64_bits(a: int, b: int, op: str) -> None:
    exact = {"+": a + b, "-": a - b, "*": a * b}[op]
    if INT_MIN <= exact <= INT_MAX:
        assert arithmetic(op, a, b) == exact
    else:
        with pytest.raises(QueryError, match="integer overflow"):
            arithmetic(op, a, b)


@settings(max_examples=200, deadline=None)
@given(ints, ints.filter(lambda n: n != 0))
def test_integer_division_truncates_and_remainder_keeps_the_dividends_sign(a: int, b: int) -> None:
    if a == INT_MIN and b == -1:
        return
    quotient, rest = arithmetic("/", a, b), arithmetic("%", a, b)
    assert isinstance(quotient, int) and isinstance(rest, int)
    assert quotient * b + rest == a
    assert abs(rest) < abs(b)
    assert rest == 0 or (rest > 0) == (a > 0)
