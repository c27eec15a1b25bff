"""The Cypher expression evaluator (drsg.plan.cypher.evaluate): every expression class of the syntax
tree, built by hand, on a graph in memory, against openCypher 9's results (nulls, three-valued
logic, CASE, comprehensions, quantifiers, indexing and slicing, errors named)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from drsg.kernel.errors import QueryError
from drsg.plan.cypher import ast
from drsg.plan.cypher import evaluate as evaluation
from drsg.plan.cypher.evaluate import compile_expr, evaluate, evaluate_predicate, truthy
from drsg.plan.cypher.graph import SCORE, CypherValue, NodeRef, PathValue, RelRecord, RelRef, Row
from drsg.plan.cypher.parser import parse
from drsg.plan.cypher.values import logic
from tests.support.cypher_memory import MemoryContext, MemoryGraph, MemoryNode

ADA, BOB, KNOWS = NodeRef(1), NodeRef(2), RelRef(7)


def lit(value: bool | int | float | str | None) -> ast.Literal:
    return ast.Literal(value)


def var(name: str) -> ast.Variable:
    return ast.Variable(name)


def bin_(op: ast.BinaryOp, lhs: ast.Expr, rhs: ast.Expr) -> ast.Binary:
    return ast.Binary(op, lhs, rhs)


def lst(*items: ast.Expr) -> ast.ListLiteral:
    return ast.ListLiteral(items)


def fn(name: str, *args: ast.Expr, distinct: bool = False) -> ast.FunctionCall:
    return ast.FunctionCall(name, args, distinct)


def prop(subject: ast.Expr, key: str) -> ast.PropertyAccess:
    return ast.PropertyAccess(subject, key)


def context(params: dict[str, CypherValue] | None = None) -> MemoryContext:
    graph = MemoryGraph(
        nodes={1: MemoryNode(("Person",), {"name": "Ada", "age": 36}, "ada"), 2: MemoryNode(("Person", "Admin"))},
        rels={7: RelRecord("KNOWS", 1, 2, {"since": 1843})},
    )
    return MemoryContext(graph, params or {})


ROW: Row = {"a": ADA, "b": BOB, "r": KNOWS, "m": {"k": 1, "n": None}, "xs": [1, 2, 3], "nothing": None}


def run(expr: ast.Expr, row: Row = ROW, params: dict[str, CypherValue] | None = None) -> CypherValue:
    return evaluate(expr, row, context(params))


X = ast.Variable("x")
PRED = bin_(">", X, lit(1))  # x > 1

CASES: list[tuple[ast.Expr, CypherValue]] = [
    (lit(1), 1),
    (lit(None), None),
    (ast.Parameter("p"), 5),
    (var("a"), ADA),
    (prop(var("a"), "name"), "Ada"),
    (prop(var("a"), "missing"), None),
    (prop(var("b"), "name"), None),
    (prop(var("r"), "since"), 1843),
    (prop(var("m"), "k"), 1),
    (prop(var("m"), "zz"), None),
    (prop(var("nothing"), "k"), None),
    (lst(lit(1), lit(None)), [1, None]),
    (ast.MapLiteral((("a", lit(1)), ("b", prop(var("a"), "age")))), {"a": 1, "b": 36}),
    (ast.Index(var("xs"), lit(0)), 1),
    (ast.Index(var("xs"), lit(-1)), 3),
    (ast.Index(var("xs"), lit(3)), None),
    (ast.Index(var("xs"), lit(-4)), None),
    (ast.Index(var("xs"), lit(None)), None),
    (ast.Index(var("nothing"), lit(0)), None),
    (ast.Index(var("m"), lit("k")), 1),
    (ast.Index(var("a"), lit("name")), "Ada"),
    (ast.Slice(var("xs"), lit(1), None), [2, 3]),
    (ast.Slice(var("xs"), None, lit(-1)), [1, 2]),
    (ast.Slice(var("xs"), lit(-2), lit(10)), [2, 3]),
    (ast.Slice(var("xs"), lit(2), lit(1)), []),
    (ast.Slice(var("xs"), lit(None), lit(1)), None),
    (ast.Unary("-", lit(2)), -2),
    (ast.Unary("+", lit(2.5)), 2.5),
    (ast.Unary("NOT", lit(None)), None),
    (ast.Unary("NOT", lit(False)), True),
    (bin_("=", lit(1), lit(1.0)), True),
    (bin_("<>", lit(1), lit(2)), True),
    (bin_("<>", lit(1), lit(None)), None),
    (bin_("=", var("a"), var("a")), True),
    (bin_("=", var("a"), var("b")), False),
    (bin_("<", lit(1), lit(2)), True),
    (bin_("<", lit(1), lit("2")), None),
    (bin_(">=", lit("b"), lit("a")), True),
    (bin_("+", lit(1), lit(2)), 3),
    (bin_("/", lit(7), lit(2)), 3),
    (bin_("^", lit(2), lit(2)), 4.0),
    (bin_("IN", lit(2), var("xs")), True),
    (bin_("IN", lit(5), lst(lit(1), lit(None))), None),
    (bin_("CONTAINS", lit("abc"), lit("b")), True),
    (bin_("STARTS WITH", prop(var("a"), "name"), lit("A")), True),
    (bin_("ENDS WITH", prop(var("a"), "missing"), lit("a")), None),
    (bin_("=~", lit("abc"), lit("a.*")), True),
    (bin_("AND", lit(False), lit(None)), False),
    (bin_("AND", lit(True), lit(None)), None),
    (bin_("OR", lit(True), lit(None)), True),
    (bin_("OR", lit(None), lit(False)), None),
    (bin_("XOR", lit(True), lit(True)), False),
    (ast.IsNull(var("nothing")), True),
    (ast.IsNull(var("a"), negated=True), True),
    (ast.IsNull(prop(var("a"), "missing"), negated=True), False),
    (ast.HasLabels(var("a"), ("Person",)), True),
    (ast.HasLabels(var("a"), ("Person", "Admin")), False),
    (ast.HasLabels(var("b"), ("Person", "Admin")), True),
    (ast.HasLabels(var("nothing"), ("Person",)), None),
    (ast.HasLabels(var("r"), ("KNOWS",)), True),
    (fn("tostring", lit(1)), "1"),
    (fn("coalesce", prop(var("a"), "missing"), lit("x")), "x"),
    (fn("labels", var("b")), ["Person", "Admin"]),
    (fn("exists", prop(var("a"), "name")), True),
    (fn("exists", prop(var("a"), "missing")), False),
    (fn("key", var("a")), "ada"),
    (fn("score"), None),
    (fn("size", var("xs")), 3),
    (ast.Case(prop(var("a"), "age"), ((lit(30), lit("thirty")), (lit(36), lit("36"))), lit("other")), "36"),
    (ast.Case(lit(None), ((lit(None), lit("null")),), lit("no match")), "no match"),  # null never matches
    (ast.Case(lit(1), ((lit(2), lit("two")),)), None),
    (ast.Case(None, ((lit(None), lit("a")), (lit(True), lit("b"))), lit("c")), "b"),
    (ast.Case(None, ((lit(False), lit("a")),), lit("c")), "c"),
    (ast.ListComprehension("x", var("xs")), [1, 2, 3]),
    (ast.ListComprehension("x", var("xs"), PRED), [2, 3]),
    (ast.ListComprehension("x", var("xs"), PRED, bin_("*", X, lit(10))), [20, 30]),
    (ast.ListComprehension("x", var("xs"), None, bin_("+", X, prop(var("a"), "age"))), [37, 38, 39]),
    (ast.ListComprehension("x", lst(lit(1), lit(None)), PRED), []),
    (ast.ListComprehension("x", var("nothing")), None),
    (ast.ListComprehension("a", lst(lit(1)), None, var("a")), [1]),  # the inner a shadows the row's
    (ast.Quantified("all", "x", var("xs"), bin_(">", X, lit(0))), True),
    (ast.Quantified("all", "x", var("xs"), PRED), False),
    (ast.Quantified("all", "x", lst(lit(2), lit(None)), PRED), None),
    (ast.Quantified("all", "x", lst(lit(0), lit(None)), PRED), False),
    (ast.Quantified("all", "x", lst(), PRED), True),
    (ast.Quantified("any", "x", var("xs"), PRED), True),
    (ast.Quantified("any", "x", lst(lit(0), lit(None)), PRED), None),
    (ast.Quantified("any", "x", lst(), PRED), False),
    (ast.Quantified("none", "x", var("xs"), bin_(">", X, lit(5))), True),
    (ast.Quantified("none", "x", lst(lit(9), lit(None)), PRED), False),
    (ast.Quantified("none", "x", lst(lit(0), lit(None)), PRED), None),
    (ast.Quantified("single", "x", var("xs"), bin_(">", X, lit(2))), True),
    (ast.Quantified("single", "x", var("xs"), PRED), False),
    (ast.Quantified("single", "x", lst(lit(2), lit(None)), PRED), None),
    (ast.Quantified("single", "x", lst(lit(2), lit(3), lit(None)), PRED), False),
    (ast.Quantified("single", "x", lst(), PRED), False),
    (ast.Quantified("any", "x", var("nothing"), PRED), None),
]


@pytest.mark.parametrize(("expr", "expected"), CASES)
def test_evaluate(expr: ast.Expr, expected: CypherValue) -> None:
    got = run(expr, params={"p": 5})
    assert got == expected
    assert type(got) is type(expected)


def test_score_reads_the_row() -> None:
    assert run(fn("score"), {SCORE: 0.5}) == 0.5


def test_pattern_predicates_ask_the_context() -> None:
    pattern = ast.PatternPart((ast.NodePattern("a"), ast.NodePattern("b")), (ast.RelPattern(None, ("KNOWS",), "out"),))
    asked: list[tuple[ast.PatternPart, Row]] = []

    def exists(part: ast.PatternPart, row: Row) -> bool:
        asked.append((part, row))
        return row["a"] == ADA

    ctx = MemoryContext(MemoryGraph(), {}, exists)
    assert evaluate_predicate(ast.PatternPredicate(pattern), {"a": ADA}, ctx) is True  # a WHERE's test
    assert evaluate(fn("exists", ast.PatternPredicate(pattern)), {"a": BOB}, ctx) is False
    assert evaluate(ast.Unary("NOT", ast.PatternPredicate(pattern)), {"a": BOB}, ctx) is True
    both = bin_("AND", ast.PatternPredicate(pattern), lit(True))
    assert evaluate(both, {"a": ADA}, ctx) is True  # an operand of AND is a test too
    # as a value (openCypher 9), a pattern is the list of the paths it matches
    assert evaluate(ast.PatternPredicate(pattern), {"a": ADA}, ctx) == [PathValue((ADA,))]
    assert evaluate(fn("size", ast.PatternPredicate(pattern)), {"a": BOB}, ctx) == 0
    assert [part for part, _ in asked] == [pattern] * 6


def test_and_or_short_circuit() -> None:
    boom = bin_("+", lit(True), lit(1))  # a type error if it were evaluated
    assert run(bin_("AND", lit(False), boom)) is False
    assert run(bin_("OR", lit(True), boom)) is True
    with pytest.raises(QueryError, match="cannot add a boolean and an integer"):
        run(bin_("AND", lit(True), boom))


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        (var("zz"), "variable `zz` is not defined"),
        (ast.Parameter("limit"), r"parameter \$limit is not given; pass it with the statement \(--param limit=JSON"),
        (prop(lit(1), "k"), "cannot read property `k` of an integer"),
        (prop(var("xs"), "k"), "cannot read property `k` of a list"),
        (ast.Index(var("xs"), lit("0")), "a list index needs an integer, got a string"),
        (ast.Index(var("xs"), lit(True)), "a list index needs an integer, got a boolean"),
        (ast.Index(var("m"), lit(0)), "indexed by a string key, got an integer"),
        (ast.Index(lit("abc"), lit(0)), "cannot index a string"),
        (ast.Slice(lit("abc"), lit(0), None), "cannot slice a string"),
        (ast.Unary("+", lit("a")), r"unary \+ needs a number, got a string"),
        (ast.Unary("NOT", lit(1)), "NOT needs booleans, got an integer"),
        (bin_("OR", lit(False), lit("x")), "OR needs booleans, got a string"),
        (bin_("IN", lit(1), var("m")), "IN needs a list on its right, got a map"),
        (ast.HasLabels(lit(1), ("A",)), "a label test needs a node, got an integer"),
        (fn("count", var("a")), r"count\(\) is an aggregate; use it in RETURN or WITH"),
        (ast.CountStar(), r"count\(\*\) is an aggregate"),
        (fn("nosuch", lit(1)), r"unknown function nosuch\(\)"),
        (fn("tolower"), r"toLower\(\) takes 1 argument"),
        (fn("tolower", lit("A"), distinct=True), "DISTINCT only goes inside an aggregate"),
        (ast.Case(None, ((lit(1), lit("a")),)), "a condition needs a boolean, got an integer"),
        (ast.ListComprehension("x", lit(1)), "a list comprehension needs a list after IN, got an integer"),
        (ast.ListComprehension("x", var("xs"), X), "WHERE needs a boolean, got an integer"),
        (ast.Quantified("all", "x", lit("s"), PRED), r"all\(\) needs a list after IN, got a string"),
        (ast.Quantified("any", "x", var("xs"), X), "a condition needs a boolean, got an integer"),
    ],
)
def test_evaluate_errors(expr: ast.Expr, message: str) -> None:
    with pytest.raises(QueryError, match=message):
        run(expr)


def test_every_expression_class_has_a_handler() -> None:
    from drsg.plan.cypher.evaluate import _COMPILERS

    assert set(_COMPILERS) == set(ast.EXPR_TYPES)


def test_truthy() -> None:
    assert truthy(True) is True
    assert truthy(False) is False
    assert truthy(None) is False
    for value in (1, "true", [True], {}):
        with pytest.raises(QueryError, match="WHERE needs a boolean"):
            truthy(value)


truth = st.sampled_from([True, False, None])


@settings(max_examples=100, deadline=None)
@given(truth, truth, st.sampled_from(["AND", "OR", "XOR"]))
def test_short_circuit_agrees_with_three_valued_logic(a: bool | None, b: bool | None, op: ast.BinaryOp) -> None:
    assert run(bin_(op, lit(a), lit(b))) is logic(op, a, b)


# --------------------------------------------------------------------------- compiled closures


@pytest.mark.parametrize(("expr", "expected"), CASES)
def test_a_compiled_expression_answers_as_evaluate(expr: ast.Expr, expected: CypherValue) -> None:
    compiled = compile_expr(expr)
    ctx = context({"p": 5})
    assert compiled(ROW, ctx) == expected
    assert compiled({**ROW, "xs": [7]}, ctx) == evaluate(expr, {**ROW, "xs": [7]}, ctx)  # rows vary, not the tree


def test_compiling_refuses_what_needs_no_row() -> None:
    with pytest.raises(QueryError, match=r"unknown function nosuch\(\)"):
        compile_expr(ast.Case(None, ((lit(False), fn("nosuch")),)))  # a branch never taken is still checked
    with pytest.raises(QueryError, match=r"sum\(\) is an aggregate"):
        compile_expr(bin_("+", fn("sum", lit(1)), lit(1)))


def test_evaluate_compiles_a_tree_once_and_never_trusts_a_reused_id(monkeypatch: pytest.MonkeyPatch) -> None:
    compiled: list[ast.Expr] = []
    real = evaluation.compile_expr

    def counting(expr: ast.Expr) -> evaluation.Compiled:
        compiled.append(expr)
        return real(expr)

    monkeypatch.setattr(evaluation, "compile_expr", counting)
    monkeypatch.setattr(evaluation, "_CACHE", {})
    tree = bin_("+", var("x"), lit(1))
    assert [run(tree, {"x": n}) for n in range(3)] == [1, 2, 3]
    assert sum(e is tree for e in compiled) == 1  # (its parts are compiled with it)
    other = bin_("*", var("x"), lit(10))  # an entry under its id that holds another tree (an id reused)
    evaluation._CACHE[id(other)] = (tree, real(tree))
    assert run(other, {"x": 2}) == 20
    assert sum(e is tree for e in compiled) == 1 and sum(e is other for e in compiled) == 1


def test_the_cache_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(evaluation, "_CACHE", {})
    monkeypatch.setattr(evaluation, "_CACHE_SIZE", 8)
    trees = [lit(n) for n in range(20)]
    assert [run(tree) for tree in trees] == list(range(20))
    assert 0 < len(evaluation._CACHE) <= 8


# ------------------------------------------------------------------------ from the statement's text


def parsed(text: str) -> ast.Expr:
    clause = parse(f"RETURN {text} AS v").parts[0].clauses[0]
    assert isinstance(clause, ast.Return)
    return clause.projection.items[0].expr


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("12 / 4 * 3 - 2 * 4", 1),  # the TCK's precedence scenarios
        ("12 / 4 * (3 - 2 * 4)", -15),
        ("2 ^ 3 ^ 2", 64.0),  # ^ is left-associative in openCypher
        ("-2 ^ 2", 4.0),
        ("1 < 2 < 3", True),
        ("3 > 2 > 1.5", True),
        ("NOT true = false", True),
        ("true OR false AND false", True),
        ("[1, 2, 3][1..][0]", 2),
        ("'ab' + 'c' CONTAINS 'bc'", True),
        ("size([x IN range(1, 10) WHERE x % 2 = 0 | x * x])", 5),
        ("CASE WHEN null THEN 1 WHEN 1 = 1 THEN 2 END", 2),
        ("coalesce(null, a.missing, toUpper(a.name))", "ADA"),
        ("a:Person AND NOT b:Missing", True),
        ("{k: [1, {j: 2}]}.k[1].j", 2),
        ("0.0 / 0.0 = 0.0 / 0.0", False),
        ("[1, null] = [1, null]", None),
        ("null IN [null]", None),
        ("all(x IN [] WHERE false)", True),
        ("toString(1.0E20)", "1.0E20"),
        ("$p * 2", 10),
    ],
)
def test_parsed_expressions(text: str, expected: CypherValue) -> None:
    got = run(parsed(text), params={"p": 5})
    assert got == expected
    assert type(got) is type(expected)
