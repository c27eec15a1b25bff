"""The Cypher parser (drsg.plan.cypher.parser): each construct's text → the syntax tree built by
hand, openCypher's precedence and literals, upstream's sources, errors pointing at line and column,
the cache, and random expressions printed and read back equal."""

from __future__ import annotations

import pytest

from drsg.plan.cypher import ast
from drsg.plan.cypher.parser import parse

V = ast.Variable
L = ast.Literal


def P(subject: ast.Expr, key: str) -> ast.PropertyAccess:
    return ast.PropertyAccess(subject, key)


def B(op: ast.BinaryOp, lhs: ast.Expr, rhs: ast.Expr) -> ast.Binary:
    return ast.Binary(op, lhs, rhs)


def N(
    variable: str | None = None, *labels: str, props: ast.MapLiteral | ast.Parameter | None = None
) -> ast.NodePattern:
    return ast.NodePattern(variable, labels, props)


def clauses(text: str) -> tuple[ast.Clause, ...]:
    query = parse(text)
    assert len(query.parts) == 1
    return query.parts[0].clauses


def expr(text: str) -> ast.Expr:
    """The expression ``text`` as ``RETURN text`` reads it."""
    (ret,) = clauses(f"RETURN {text}")
    assert isinstance(ret, ast.Return)
    return ret.projection.items[0].expr


def ret(*items: ast.ProjectionItem, **kw: object) -> ast.Return:
    return ast.Return(ast.Projection(items, **kw))  # type: ignore[arg-type]


def item(e: ast.Expr, text: str, alias: str | None = None) -> ast.ProjectionItem:
    return ast.ProjectionItem(e, alias, text)


def test_match_where_return() -> None:
    got = clauses("MATCH (a:Person {name: 'Ann'})-[r:KNOWS]->(b) WHERE a.age > 30 RETURN b.name AS name")
    pattern = ast.PatternPart(
        (N("a", "Person", props=ast.MapLiteral((("name", L("Ann")),))), N("b")),
        (ast.RelPattern("r", ("KNOWS",), "out"),),
    )
    assert got == (
        ast.Match((pattern,), where=B(">", P(V("a"), "age"), L(30))),
        ret(item(P(V("b"), "name"), "b.name", "name")),
    )


def rel(direction: ast.Direction = "both", *types: str, variable: str | None = None, **kw: object) -> ast.RelPattern:
    return ast.RelPattern(variable, types, direction, **kw)  # type: ignore[arg-type]


def part(*items: ast.NodePattern | ast.RelPattern, path: str | None = None) -> ast.PatternPart:
    nodes = tuple(i for i in items if isinstance(i, ast.NodePattern))
    rels = tuple(i for i in items if isinstance(i, ast.RelPattern))
    return ast.PatternPart(nodes, rels, path_variable=path)


def match(*parts: ast.PatternPart, where: ast.Expr | None = None, optional: bool = False) -> ast.Match:
    return ast.Match(parts, where, optional)


RETURN_N = ret(item(V("n"), "n"))
MAP_W1 = ast.MapLiteral((("w", L(1)),))
MAP_K1 = ast.MapLiteral((("k", L(1)),))

# ---------------------------------------------------------------------------- patterns


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("(a)-->(b)", part(N("a"), rel("out"), N("b"))),
        ("(a)<--(b)", part(N("a"), rel("in"), N("b"))),
        ("(a)--(b)", part(N("a"), rel("both"), N("b"))),
        ("(a)<-->(b)", part(N("a"), rel("both"), N("b"))),
        ("(a)-[r]->(b)", part(N("a"), rel("out", variable="r"), N("b"))),
        ("(a)<-[:A|B]-(b)", part(N("a"), rel("in", "A", "B"), N("b"))),
        ("(a)-[:A|:B]-(b)", part(N("a"), rel("both", "A", "B"), N("b"))),
        ("(a) - [r:T] -> (b)", part(N("a"), rel("out", "T", variable="r"), N("b"))),
        ("(a)-[*]->(b)", part(N("a"), rel("out", length=ast.VarLength()), N("b"))),
        ("(a)-[*2]->(b)", part(N("a"), rel("out", length=ast.VarLength(2, 2)), N("b"))),
        ("(a)-[*1..3]->(b)", part(N("a"), rel("out", length=ast.VarLength(1, 3)), N("b"))),
        ("(a)-[*..4]->(b)", part(N("a"), rel("out", length=ast.VarLength(None, 4)), N("b"))),
        ("(a)-[*2..]->(b)", part(N("a"), rel("out", length=ast.VarLength(2, None)), N("b"))),
        (
            "(a)-[r:T*1..2 {w: 1}]->(b)",
            part(N("a"), rel("out", "T", variable="r", length=ast.VarLength(1, 2), properties=MAP_W1), N("b")),
        ),
        ("p = (a)-->(b)", part(N("a"), rel("out"), N("b"), path="p")),
        ("(:A:B {k: $v})", part(N(None, "A", "B", props=ast.MapLiteral((("k", ast.Parameter("v")),))))),
        ("(n $props)", part(N("n", props=ast.Parameter("props")))),
        ("()", part(N())),
        ("(a)-->()<-[:R]-(c)", part(N("a"), rel("out"), N(), rel("in", "R"), N("c"))),
    ],
)
def test_patterns(text: str, expected: ast.PatternPart) -> None:
    assert clauses(f"MATCH {text} RETURN n") == (match(expected), RETURN_N)


def test_comma_separated_patterns_and_shortest_path() -> None:
    got = clauses("MATCH (a), p = shortestPath((a)-[*]-(b)) RETURN n")
    sp = ast.PatternPart((N("a"), N("b")), (rel(length=ast.VarLength()),), path_variable="p", shortest="shortestPath")
    assert got == (match(part(N("a")), sp), RETURN_N)


def test_optional_match_unwind_with_where() -> None:
    got = clauses("OPTIONAL MATCH (n) UNWIND [1, 2] AS x WITH n, x AS y WHERE y > 1 RETURN n")
    with_ = ast.With(ast.Projection((item(V("n"), "n"), item(V("x"), "x", "y"))), where=B(">", V("y"), L(1)))
    two = ast.ListLiteral((L(1), L(2)))
    assert got == (match(part(N("n")), optional=True), ast.Unwind(two, "x"), with_, RETURN_N)


def test_return_forms() -> None:
    got = clauses("MATCH (n) RETURN DISTINCT n.a AS a, count(*), n.b + 1 ORDER BY a DESC, n.b SKIP 1 LIMIT $k")
    (_, returned) = got
    assert returned == ret(
        item(P(V("n"), "a"), "n.a", "a"),
        item(ast.CountStar(), "count(*)"),
        item(B("+", P(V("n"), "b"), L(1)), "n.b + 1"),
        distinct=True,
        order=(ast.SortItem(V("a"), True), ast.SortItem(P(V("n"), "b"))),
        skip=L(1),
        limit=ast.Parameter("k"),
    )
    assert returned.projection.items[2].column == "n.b + 1"  # the text as written names the column
    assert clauses("MATCH (n) RETURN *, n.a ORDER BY n.a ASCENDING")[1] == ret(
        item(P(V("n"), "a"), "n.a"), star=True, order=(ast.SortItem(P(V("n"), "a")),)
    )


def test_union_explain_semicolon_comments() -> None:
    query = parse(
        "EXPLAIN // first\nMATCH (n) RETURN n /* two */ UNION ALL MATCH (n) RETURN n UNION MATCH (n) RETURN n;"
    )  # noqa: E501
    one = ast.SingleQuery((match(part(N("n"))), RETURN_N))
    assert query == ast.Query((one, one, one), (True, False), explain=True)
    assert not query.writes


def test_write_clauses() -> None:
    got = clauses(
        "MATCH (a) CREATE (a)-[:R {w: 1}]->(b:B) SET a.x = 1, a = {y: 2}, a += $m, a:T:U "
        "REMOVE a.x, a:T DETACH DELETE a, b"
    )
    created = part(N("a"), rel("out", "R", properties=ast.MapLiteral((("w", L(1)),))), N("b", "B"))
    assert got == (
        match(part(N("a"))),
        ast.Create((created,)),
        ast.SetClause((
            ast.SetProperty(P(V("a"), "x"), L(1)),
            ast.SetProperties("a", ast.MapLiteral((("y", L(2)),))),
            ast.SetProperties("a", ast.Parameter("m"), merge=True),
            ast.SetLabels("a", ("T", "U")),
        )),
        ast.Remove((ast.RemoveProperty(P(V("a"), "x")), ast.RemoveLabels("a", ("T",)))),
        ast.Delete((V("a"), V("b")), detach=True),
    )  # fmt: skip
    assert parse("MATCH (a) DELETE a").writes


def test_merge_actions() -> None:
    (merge,) = clauses("MERGE (a:P {k: 1}) ON CREATE SET a.c = 1 ON MATCH SET a.m = 2, a:Seen ON CREATE SET a.d = 3")
    assert merge == ast.Merge(
        part(N("a", "P", props=ast.MapLiteral((("k", L(1)),)))),
        on_create=(ast.SetProperty(P(V("a"), "c"), L(1)), ast.SetProperty(P(V("a"), "d"), L(3))),
        on_match=(ast.SetProperty(P(V("a"), "m"), L(2)), ast.SetLabels("a", ("Seen",))),
    )


# ---------------------------------------------------------------------------- expressions


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a OR b XOR c AND NOT d", B("OR", V("a"), B("XOR", V("b"), B("AND", V("c"), ast.Unary("NOT", V("d")))))),
        ("NOT a = b", ast.Unary("NOT", B("=", V("a"), V("b")))),
        ("a = b IS NULL", B("=", V("a"), ast.IsNull(V("b")))),
        ("a < b < c", B("AND", B("<", V("a"), V("b")), B("<", V("b"), V("c")))),
        ("a != b", B("<>", V("a"), V("b"))),
        ("a + 1 IN l", B("IN", B("+", V("a"), L(1)), V("l"))),
        ("a STARTS WITH b + c", B("STARTS WITH", V("a"), B("+", V("b"), V("c")))),
        ("a ENDS WITH 'x' =~ 'y'", B("=~", B("ENDS WITH", V("a"), L("x")), L("y"))),
        ("a CONTAINS b IS NOT NULL", ast.IsNull(B("CONTAINS", V("a"), V("b")), negated=True)),
        ("a + b * c", B("+", V("a"), B("*", V("b"), V("c")))),
        ("a - b - c", B("-", B("-", V("a"), V("b")), V("c"))),
        ("a * b ^ c % d", B("%", B("*", V("a"), B("^", V("b"), V("c"))), V("d"))),
        ("-a ^ 2", B("^", ast.Unary("-", V("a")), L(2))),
        ("-2 ^ 2", B("^", L(-2), L(2))),
        ("2 ^ 3 ^ 2", B("^", B("^", L(2), L(3)), L(2))),
        ("+a", ast.Unary("+", V("a"))),
        ("-n.x[0]", ast.Unary("-", ast.Index(P(V("n"), "x"), L(0)))),
        ("(a + b) * c", B("*", B("+", V("a"), V("b")), V("c"))),
        ("n:A:B AND n.x", B("AND", ast.HasLabels(V("n"), ("A", "B")), P(V("n"), "x"))),
        ("l[1..]", ast.Slice(V("l"), L(1), None)),
        ("l[..-1]", ast.Slice(V("l"), None, L(-1))),
        ("l[a..b]", ast.Slice(V("l"), V("a"), V("b"))),
        ("{a: 1}.a", P(ast.MapLiteral((("a", L(1)),)), "a")),
        ("f(x).y", P(ast.FunctionCall("f", (V("x"),)), "y")),
        ("n.a.b", P(P(V("n"), "a"), "b")),
    ],
)
def test_precedence(text: str, expected: ast.Expr) -> None:
    assert expr(text) == expected


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("42", 42), ("0x1F", 31), ("0o17", 15), ("9223372036854775807", 2**63 - 1),
        ("-9223372036854775808", -(2**63)), ("1.5", 1.5), ("1e3", 1000.0), (".5", 0.5), ("2.5E-1", 0.25),
        ("true", True), ("FALSE", False), ("Null", None), ("'single'", "single"), ('"double"', "double"),
        (r"'it\'s'", "it's"), (r'"say \"hi\""', 'say "hi"'), (r"'a\\b'", "a\\b"), (r"'\t\n\r\b\f'", "\t\n\r\b\f"),
        (r"'\u00e9\U0001F600'", "é😀"), (r"'\ud83d\ude00'", "😀"), ('"//not a comment"', "//not a comment"),
    ],
)  # fmt: skip
def test_literals(text: str, value: object) -> None:
    got = expr(text)
    assert isinstance(got, ast.Literal) and got.value == value and type(got.value) is type(value)


def test_calls_and_special_forms() -> None:
    assert expr("count(DISTINCT n.x)") == ast.FunctionCall("count", (P(V("n"), "x"),), distinct=True)
    assert expr("COUNT(*)") == ast.CountStar()
    assert expr("apoc.Text.Join(l, ',')") == ast.FunctionCall("apoc.text.join", (V("l"), L(",")))
    assert expr("score()") == ast.FunctionCall("score")
    assert expr("CASE n.x WHEN 1 THEN 'a' WHEN 2 THEN 'b' ELSE 'c' END") == ast.Case(
        P(V("n"), "x"), ((L(1), L("a")), (L(2), L("b"))), L("c")
    )
    assert expr("CASE WHEN a THEN 1 END") == ast.Case(None, ((V("a"), L(1)),))
    assert expr("[x IN l WHERE x > 1 | x * 2]") == ast.ListComprehension(
        "x", V("l"), B(">", V("x"), L(1)), B("*", V("x"), L(2))
    )
    assert expr("[x IN l]") == ast.ListComprehension("x", V("l"))
    assert expr("[x IN l | x]") == ast.ListComprehension("x", V("l"), None, V("x"))
    assert expr("[1, 'a', [], {}]") == ast.ListLiteral((L(1), L("a"), ast.ListLiteral(()), ast.MapLiteral(())))
    for q in ("all", "any", "none", "single"):
        assert expr(f"{q.upper()}(x IN l WHERE x)") == ast.Quantified(q, "x", V("l"), V("x"))  # type: ignore[arg-type]
    assert expr("$name") == ast.Parameter("name") and expr("$0") == ast.Parameter("0")
    assert expr("`weird name`.`odd``key`") == P(V("weird name"), "odd`key")


def test_pattern_predicates() -> None:
    pred = ast.PatternPredicate(part(N("a"), rel("out", "KNOWS"), N("b", "P")))
    (m, _) = clauses("MATCH (a) WHERE (a)-[:KNOWS]->(b:P) AND NOT (a:X)<--() RETURN n")
    negated = ast.Unary("NOT", ast.PatternPredicate(part(N("a", "X"), rel("in"), N())))
    assert m == match(part(N("a")), where=B("AND", pred, negated))
    a_to_b = ast.PatternPredicate(part(N("a"), rel("out"), N("b")))
    assert expr("exists((a)-->(b))") == ast.FunctionCall("exists", (a_to_b,))
    assert expr("(:L {k: 1})--()") == ast.PatternPredicate(part(N(None, "L", props=MAP_K1), rel(), N()))
    assert expr("(a {k: 1})--()") == ast.PatternPredicate(part(N("a", props=MAP_K1), rel(), N()))
    assert expr("(a) - 1") == B("-", V("a"), L(1))  # a space after '-' keeps it arithmetic


def test_keywords_are_case_insensitive_identifiers_are_not() -> None:
    assert parse("match (N) return N") == parse("MATCH (N) RETURN N") != parse("MATCH (n) RETURN n")


def test_keywords_still_name_properties_labels_and_keys() -> None:
    limit, weight, time = P(V("n"), "limit"), P(V("n"), "weight"), P(V("n"), "time")
    assert expr("n.limit + n.weight + n.time") == B("+", B("+", limit, weight), time)
    assert expr("{order: 1, k: 2}") == ast.MapLiteral((("order", L(1)), ("k", L(2))))
    assert clauses("MATCH (weight:Match)-[:Return]->(k) RETURN n")[0] == match(
        part(N("weight", "Match"), rel("out", "Return"), N("k"))
    )


def test_positions() -> None:
    query = parse("MATCH (a)\n  WHERE a.x = 1\nRETURN a.x AS x")
    m, r = query.parts[0].clauses
    assert isinstance(m, ast.Match) and isinstance(r, ast.Return)
    assert m.at == (1, 1) and m.pattern[0].nodes[0].at == (1, 7)
    assert m.where is not None and m.where.at == (2, 9)
    assert r.at == (3, 1) and r.projection.items[0].at == (3, 8)
