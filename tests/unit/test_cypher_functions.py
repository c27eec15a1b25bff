"""openCypher's scalar functions, upstream's own and the aggregators (drsg.plan.cypher.functions):
each against openCypher 9's results, null in and wrong types included, on a small graph held in
memory behind the GraphView protocol (the evaluator's only view of a graph)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from drsg.kernel.errors import QueryError
from drsg.kernel.values import Vector
from drsg.plan.cypher.functions import AGGREGATES, FUNCTIONS, MAX_RANGE, check_call, make_aggregator
from drsg.plan.cypher.graph import HOPS, SCORE, CypherValue, NodeRef, PathValue, RelRecord, RelRef, Row
from drsg.plan.cypher.values import INT_MAX, group_key
from tests.support.cypher_memory import MemoryContext, MemoryGraph, MemoryNode


def graph() -> MemoryGraph:
    """Two nodes joined by one relationship."""
    return MemoryGraph(
        nodes={1: MemoryNode(("Person", "Admin"), {"name": "Ada", "age": 36}, "ada"), 2: MemoryNode()},
        rels={7: RelRecord("KNOWS", 1, 2, {"since": 1843})},
    )


def context() -> MemoryContext:
    return MemoryContext(graph())


def call(name: str, *args: CypherValue, row: Row | None = None) -> CypherValue:
    spec = FUNCTIONS[name.lower()]
    check_call(name.lower(), len(args))
    return spec.call(args, row or {}, context())


ADA, EMPTY, KNOWS = NodeRef(1), NodeRef(2), RelRef(7)
PATH = PathValue((ADA, EMPTY), (KNOWS,))


@pytest.mark.parametrize(
    ("name", "args", "expected"),
    [
        ("id", (ADA,), 1),
        ("id", (KNOWS,), 7),
        ("labels", (ADA,), ["Person", "Admin"]),
        ("labels", (EMPTY,), []),
        ("type", (KNOWS,), "KNOWS"),
        ("properties", (ADA,), {"name": "Ada", "age": 36}),
        ("properties", (KNOWS,), {"since": 1843}),
        ("properties", ({"a": 1},), {"a": 1}),
        ("keys", (ADA,), ["name", "age"]),
        ("keys", ({"a": None, "b": 1},), ["a", "b"]),
        ("startNode", (KNOWS,), ADA),
        ("endNode", (KNOWS,), EMPTY),
        ("key", (ADA,), "ada"),
        ("key", (EMPTY,), None),
        ("nodes", (PATH,), [ADA, EMPTY]),
        ("relationships", (PATH,), [KNOWS]),
        ("length", (PATH,), 1),
        ("length", (PathValue((ADA,)),), 0),
        ("size", ([1, 2, None],), 3),
        ("size", ("héllo",), 5),
        ("coalesce", (None, None, 2, 3), 2),
        ("coalesce", (None,), None),
        ("exists", (None,), False),
        ("exists", (0,), True),
        ("toString", (1,), "1"),
        ("toString", (1.0,), "1.0"),
        ("toString", (True,), "true"),
        ("toString", ("x",), "x"),
        ("toInteger", (1.9,), 1),
        ("toInteger", (-1.9,), -1),
        ("toInteger", ("42",), 42),
        ("toInteger", ("1.9",), 1),
        ("toInteger", ("x",), None),
        ("toInteger", ("",), None),
        ("toInteger", (math.nan,), None),
        ("toFloat", (1,), 1.0),
        ("toFloat", ("2.5",), 2.5),
        ("toFloat", ("1e3",), 1000.0),
        ("toFloat", ("inf",), None),
        ("toFloat", ("x",), None),
        ("toBoolean", ("TRUE",), True),
        ("toBoolean", ("false",), False),
        ("toBoolean", ("yes",), None),
        ("toBoolean", (False,), False),
        ("toLower", ("AbC",), "abc"),
        ("toUpper", ("AbC",), "ABC"),
        ("trim", ("  a b  ",), "a b"),
        ("lTrim", ("  a  ",), "a  "),
        ("rTrim", ("  a  ",), "  a"),
        ("substring", ("hello", 1), "ello"),
        ("substring", ("hello", 1, 3), "ell"),
        ("substring", ("hello", 10), ""),
        ("substring", (None, 1), None),
        ("split", ("a,b,,c", ","), ["a", "b", "", "c"]),
        ("split", ("abc", ""), ["a", "b", "c"]),
        ("split", (None, ","), None),
        ("split", ("a", None), None),
        ("replace", ("hello", "l", "L"), "heLLo"),
        ("replace", ("hello", None, "L"), None),
        ("left", ("hello", 2), "he"),
        ("left", ("hello", 10), "hello"),
        ("right", ("hello", 2), "lo"),
        ("right", ("hello", 0), ""),
        ("right", ("hi", 10), "hi"),
        ("left", (None, 2), None),
        ("reverse", ("abc",), "cba"),
        ("reverse", ([1, 2, 3],), [3, 2, 1]),
        ("head", ([1, 2],), 1),
        ("head", ([],), None),
        ("last", ([1, 2],), 2),
        ("last", ([],), None),
        ("tail", ([1, 2],), [2]),
        ("tail", ([],), []),
        ("range", (1, 4), [1, 2, 3, 4]),
        ("range", (0, 10, 3), [0, 3, 6, 9]),
        ("range", (5, 1, -2), [5, 3, 1]),
        ("range", (1, 0), []),
        ("abs", (-3,), 3),
        ("abs", (-2.5,), 2.5),
        ("ceil", (1.1,), 2.0),
        ("floor", (-1.1,), -2.0),
        ("round", (2.5,), 3.0),
        ("round", (-2.5,), -2.0),  # half up, as Java's Math.round
        ("round", (3,), 3.0),
        ("round", (0.49999999999999994,), 0.0),  # not 1.0: the half is tested exactly
        ("round", (-0.5,), 0.0),
        ("sqrt", (16,), 4.0),
        ("sign", (-3.5,), -1),
        ("sign", (0,), 0),
        ("sign", (7,), 1),
        ("exp", (0,), 1.0),
        ("log", (math.e,), 1.0),
        ("log", (0,), -math.inf),
        ("log10", (1000,), 3.0),
        ("e", (), math.e),
        ("pi", (), math.pi),
        ("score", (), None),
        ("hops", (), None),
    ],
)
def test_function(name: str, args: tuple[CypherValue, ...], expected: CypherValue) -> None:
    got = call(name, *args)
    assert got == expected
    assert type(got) is type(expected)


@pytest.mark.parametrize("name", sorted(n for n, s in FUNCTIONS.items() if s.min_args and n not in {"exists", "range"}))
def test_null_in_null_out(name: str) -> None:
    spec = FUNCTIONS[name]
    args: tuple[CypherValue, ...] = (None,) + (1,) * (spec.min_args - 1)
    assert spec.call(args, {}, context()) is None


def test_sqrt_and_log_of_a_negative_are_nan() -> None:
    assert math.isnan(call("sqrt", -1))
    assert math.isnan(call("log", -1))


def test_score_and_hops_read_the_rows_reserved_keys() -> None:
    row = {SCORE: 0.75, HOPS: 2, "n": ADA}
    assert call("score", row=row) == 0.75
    assert call("hops", row=row) == 2


@pytest.mark.parametrize(
    ("name", "args", "message"),
    [
        ("id", ("x",), r"id\(\) needs a node or a relationship, got a string"),
        ("labels", (KNOWS,), r"labels\(\) needs a node, got a relationship"),
        ("type", (ADA,), r"type\(\) needs a relationship, got a node"),
        ("length", ("abc",), r"length\(\) needs a path, got a string; use size\(\)"),
        ("size", (1,), r"size\(\) needs a list or a string, got an integer"),
        ("toString", ([1],), r"toString\(\) needs a number, a boolean or a string, got a list"),
        ("toInteger", (True,), r"toInteger\(\) needs a number or a string, got a boolean"),
        ("toInteger", (1e30,), "integer overflow"),
        ("toBoolean", (1,), r"toBoolean\(\) needs a boolean or a string, got an integer"),
        ("toLower", (1,), r"toLower\(\) needs a string, got an integer"),
        ("substring", ("abc", -1), r"substring\(\) needs a start of 0 or more"),
        ("substring", ("abc", 1, -1), r"substring\(\) needs a length of 0 or more"),
        ("substring", ("abc", None), r"substring\(\) needs an integer start, got null"),
        ("left", ("abc", None), r"left\(\) needs an integer length, got null"),
        ("head", ("abc",), r"head\(\) needs a list, got a string"),
        ("range", (1, 2, 0), "step other than 0"),
        ("range", (1.0, 2), r"range\(\) needs integers, got a float"),
        ("range", (0, MAX_RANGE), "more than"),
        ("abs", ("1",), r"abs\(\) needs a number, got a string"),
        ("abs", (-(2**63),), "integer overflow"),
        ("sqrt", (True,), r"sqrt\(\) needs a number, got a boolean"),
    ],
)
def test_function_errors(name: str, args: tuple[CypherValue, ...], message: str) -> None:
    with pytest.raises(QueryError, match=message):
        call(name, *args)


def test_vector_functions_follow_the_searches_scores() -> None:
    a, b = [1.0, 0.0], [0.0, 2.0]
    assert call("similarity", a, b) == 0.0
    assert call("similarity", a, [3, 0]) == pytest.approx(1.0)
    assert call("distance", a, [3, 0]) == pytest.approx(0.0)
    assert call("similarity", a, b, "dot") == 0.0
    assert call("distance", [1, 2], [3, 4], "dot") == -11.0
    assert call("similarity", a, b, "L2") == pytest.approx(-math.sqrt(5))
    assert call("distance", a, b, "l2") == pytest.approx(math.sqrt(5))
    assert call("similarity", [0.0, 0.0], a) == 0.0  # a zero vector: 0, as the exact search says
    assert call("similarity", None, a) is None
    assert call("similarity", [1.0], a) is None  # other sizes: not comparable
    stored = Vector.of([1.0, 0.0])
    assert FUNCTIONS["similarity"].call([stored, [2.0, 0.0]], {}, context()) == pytest.approx(1.0)
    with pytest.raises(QueryError, match="unknown metric 'manhattan'"):
        call("similarity", a, b, "manhattan")
    with pytest.raises(QueryError, match=r"similarity\(\) needs a vector"):
        call("similarity", ["x"], a)


@pytest.mark.parametrize(
    ("name", "count", "distinct", "message"),
    [
        ("tostrng", 1, False, r"unknown function tostrng\(\); did you mean toString\(\)\?"),
        ("colect", 1, False, r"did you mean collect\(\)\?"),
        ("zzzzzz", 1, False, "unknown function zzzzzz"),
        ("substring", 1, False, r"substring\(\) takes 2 to 3 argument\(s\), not 1"),
        ("coalesce", 0, False, "at least 1"),
        ("pi", 1, False, r"pi\(\) takes 0 argument\(s\), not 1"),
        ("sum", 2, False, r"sum\(\) takes 1 argument, not 2"),
        ("tolower", 1, True, "DISTINCT only goes inside an aggregate"),
    ],
)
def test_check_call(name: str, count: int, distinct: bool, message: str) -> None:
    with pytest.raises(QueryError, match=message):
        check_call(name, count, distinct)


def test_names_are_lower_cased_and_aggregates_are_not_scalars() -> None:
    assert all(name == name.lower() for name in FUNCTIONS)
    assert not AGGREGATES & set(FUNCTIONS)
    check_call("count", 1, distinct=True)
    check_call("tostring", 1)


# ---------------------------------------------------------------------------------- aggregators


def aggregate(name: str, values: list[CypherValue], distinct: bool = False) -> CypherValue:
    aggregator = make_aggregator(name, distinct)
    for value in values:
        aggregator.add(value)
    return aggregator.result()


@pytest.mark.parametrize(
    ("name", "values", "distinct", "expected"),
    [
        ("count", [1, None, 2], False, 2),
        ("count(*)", [1, None, 2], False, 3),
        ("count", [1, 1.0, 2, None, None], True, 2),
        ("count", [], False, 0),
        ("sum", [1, 2, None], False, 3),
        ("sum", [1, 2.5], False, 3.5),
        ("sum", [], False, 0),
        ("sum", [2, 2, 3], True, 5),
        ("avg", [1, 2], False, 1.5),
        ("avg", [1, None, 3], False, 2.0),
        ("avg", [], False, None),
        ("avg", [None], False, None),
        ("avg", [INT_MAX, INT_MAX], False, float(INT_MAX)),
        ("min", [3, 1, None, 2], False, 1),
        ("max", [3, 1, None, 2], False, 3),
        ("max", ["a", 1, [1]], False, 1),  # mixed: by ORDER BY's order, a number above a string
        ("min", ["a", 1, [1]], False, [1]),
        ("max", [1, "a", None, [1, 2], 0.2, "b"], False, 1),  # the TCK's Aggregation2 [11], [12], [9], [10]
        ("min", [1, "a", None, [1, 2], 0.2, "b"], False, [1, 2]),
        ("max", [[1], [2], [2, 1]], False, [2, 1]),
        ("min", [[1], [2], [2, 1]], False, [1]),
        ("min", [], False, None),
        ("max", [1.0, math.inf, -1], False, math.inf),
        ("collect", [1, None, 2], False, [1, 2]),
        ("collect", [1, 1.0, None, [1], [1]], True, [1, [1]]),
        ("collect", [], False, []),
        ("stdev", [2, 4, 4, 4, 5, 5, 7, 9], False, pytest.approx(2.138089935)),
        ("stdevp", [2, 4, 4, 4, 5, 5, 7, 9], False, 2.0),
        ("stdev", [1], False, 0.0),
    ],
)
def test_aggregators(name: str, values: list[CypherValue], distinct: bool, expected: object) -> None:
    got = aggregate(name, values, distinct)
    assert got == expected
    if not isinstance(expected, type(pytest.approx(0))):
        assert type(got) is type(expected)


def test_aggregator_errors() -> None:
    with pytest.raises(QueryError, match="integer overflow"):
        aggregate("sum", [INT_MAX, 1])
    with pytest.raises(QueryError, match=r"sum\(\) needs numbers, got a string"):
        aggregate("sum", [1, "2"])
    with pytest.raises(QueryError, match=r"avg\(\) needs numbers, got a boolean"):
        aggregate("avg", [True])
    with pytest.raises(QueryError, match="not an aggregating function"):
        make_aggregator("size")


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.none(), st.integers(-3, 3), st.sampled_from([1.0, 2.5, math.nan]), st.just("a"))))
def test_distinct_aggregates_see_one_of_each_equivalence_class(values: list[CypherValue]) -> None:
    classes = {group_key(v) for v in values if v is not None}
    assert aggregate("count", values, distinct=True) == len(classes)
    assert len(aggregate("collect", values, distinct=True)) == len(classes)
    assert aggregate("count", values) == sum(v is not None for v in values)
