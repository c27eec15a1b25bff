"""The Cypher parser (drsg.plan.cypher.parser): each construct's text → the syntax tree built by
hand, openCypher's precedence and literals, upstream's sources, errors pointing at line and column,
the cache (random expressions printed and read back: test_cypher_parser_roundtrip.py)."""

from __future__ import annotations

import dataclasses
import zlib
from pathlib import Path

import pytest

from drsg.kernel.errors import QueryError, QuerySyntaxError
from drsg.plan.cypher import ast, parser
from drsg.plan.cypher.parser import parse
from tests.bench.cypher_parsers import STATEMENTS

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
    )
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
        ("42", 42), ("0x1F", 31), ("0o17", 15), ("017", 15), ("0", 0), ("9223372036854775807", 2**63 - 1),
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


# ---------------------------------------------------------------------------- upstream's forms


def test_search_near_with_tail_where_and_as_of() -> None:
    query = parse(
        "SEARCH (d:Doc) ON emb NEAR [0.5, 1] METRIC dot TOPK 5 -[:CITES]->(e:Doc) WHERE e.y > 1 RETURN e AS OF 42"
    )
    search = ast.Search("d", "Doc", "emb", near=ast.ListLiteral((L(0.5), L(1))), metric="dot", topk=L(5))
    tail = match(part(N("d"), rel("out", "CITES"), N("e", "Doc")), where=B(">", P(V("e"), "y"), L(1)))
    assert query.parts[0].clauses == (search, tail, ret(item(V("e"), "e")))
    assert query.as_of == ast.AsOfClause("seq", L(42))


def test_search_matching_where_without_tail_and_bare_limit() -> None:
    got = clauses('SEARCH (d:Doc) ON body MATCHING "graph" TOPK 3 WHERE d.x = 1 LIMIT 2')
    assert got == (
        ast.Search("d", "Doc", "body", matching=L("graph"), topk=L(3)),
        match(part(N("d")), where=B("=", P(V("d"), "x"), L(1))),
        ast.Return(ast.Projection(star=True, limit=L(2))),
    )
    assert clauses("SEARCH (d) NEAR $q")[0] == ast.Search("d", near=ast.Parameter("q"))


def test_hybrid_parts_in_any_order() -> None:
    (hybrid, _) = clauses(
        "HYBRID (d:Doc) TOPK 5 GRAPH HOPS 2 DECAY 0.3 SEEDS 4 WEIGHT 0.2 KEYWORD ON body MATCHING $t WEIGHT 2 "
        'VECTOR ON emb NEAR "text" METRIC l2 WEIGHT 0.5 CANDIDATES 50 FUSION RRF K 30 RETURN d'
    )
    assert hybrid == ast.HybridSearch(
        "d", "Doc",
        vector=ast.HybridVector("emb", L("text"), "l2", L(0.5)),
        keyword=ast.HybridKeyword("body", ast.Parameter("t"), L(2)),
        graph=ast.HybridGraph(L(2), L(0.3), L(4), L(0.2)),
        candidates=L(50), topk=L(5), fusion="rrf", fusion_k=L(30),
    )  # fmt: skip
    assert clauses('HYBRID (d) VECTOR NEAR "x"')[0] == ast.HybridSearch("d", vector=ast.HybridVector(None, L("x")))


def test_call_algorithms() -> None:
    got = clauses(
        "CALL pagerank(damping: 0.85, iterations: 20) ON (n:Person) -[:KNOWS]-(m) RETURN m ORDER BY score() DESC"
    )
    assert got[:2] == (
        ast.CallAlgo("pagerank", (("damping", L(0.85)), ("iterations", L(20))), "n", "Person"),
        match(part(N("n"), rel("both", "KNOWS"), N("m"))),
    )
    assert clauses("CALL connected_components()")[0] == ast.CallAlgo("components")
    assert clauses('CALL shortest_path(from: "a", to: $b, dir: "both") WHERE n.x RETURN n')[:2] == (
        ast.CallAlgo("shortest_path", (("from", L("a")), ("to", ast.Parameter("b")), ("dir", L("both")))),
        match(part(N("n")), where=P(V("n"), "x")),  # no ON: upstream's variable is n
    )


def test_beam_after_a_source() -> None:
    got = clauses("MATCH (a:Doc) BEAM (a) OUT :CITES ON emb NEAR $v METRIC dot WIDTH 3 DEPTH 2 WHERE a.ok RETURN a")
    assert got == (
        match(part(N("a", "Doc"))),
        ast.Beam("a", "out", "CITES", ast.Parameter("v"), L(3), L(2), "emb", "dot"),
        match(part(N("a")), where=P(V("a"), "ok")),
        ret(item(V("a"), "a")),
    )
    assert clauses("MATCH (a) BEAM (a) in NEAR [1] WIDTH 1 DEPTH 1 RETURN a")[1] == ast.Beam(
        "a", "in", None, ast.ListLiteral((L(1),)), L(1), L(1)
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("AS OF 7", ast.AsOfClause("seq", L(7))),
        ('AS OF "2026-01-02T03:04:05Z"', ast.AsOfClause("time", L("2026-01-02T03:04:05Z"))),
        ("as of time 1767323045000", ast.AsOfClause("ms", L(1767323045000))),
        ("AS OF $at", ast.AsOfClause("seq", ast.Parameter("at"))),
        ("AS OF TIME $ms", ast.AsOfClause("ms", ast.Parameter("ms"))),
    ],
)
def test_as_of(text: str, expected: ast.AsOfClause) -> None:
    assert parse(f"MATCH (n) RETURN n {text};").as_of == expected


# ---------------------------------------------------------------------------- errors


def syntax_error(text: str) -> str:
    with pytest.raises(QuerySyntaxError) as caught:
        parse(text)
    return caught.value.message


def test_an_error_points_at_line_and_column_with_a_caret() -> None:
    message = syntax_error("MATCH (a)\n  -[:]->(b)\nRETURN a")
    assert message == (
        "line 2, column 6: expected a relationship type after ':' but found ']->'\n"
        "    -[:]->(b)\n"
        "       ^"
    )  # fmt: skip
    first, *_ = message.splitlines()
    assert first.startswith("line 2, column 6: ")  # the first line says everything a one-line surface shows


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("MATCH (a:) RETURN a", "line 1, column 10: expected a label after ':' but found ')'"),
        ("RETURN a.", "line 1, column 10: expected a property name after '.' but found the end of the statement"),
        ("MATCH (a) RETURN a ORDER BY", "line 1, column 28: expected an expression but found the end of the statement"),
        ("MATCH (a) RETURN a b", "line 1, column 20: expected an operator, a clause, AS, AS OF, ',', '(' or the end"),
        ("RETURN 'abc", "line 1, column 8: the string starting here is not closed; end it with '"),
        ("", "line 1, column 1: the statement is empty"),
        ("RETURN 9223372036854775808", "line 1, column 8: the integer 9223372036854775808 does not fit in 64 bits"),
        ("RETURN 1 - 9223372036854775808", "line 1, column 12: the integer 9223372036854775808 does not fit"),
        ("RETURN 0x8000000000000000", "line 1, column 8: the integer 0x8000000000000000 does not fit"),
        ("RETURN 1e999", "line 1, column 8: the number 1e999 is too large"),
        ("RETURN 019", "line 1, column 8: 019 starts with 0, so it is octal, and 8 and 9 are not octal digits"),
        (r"RETURN '\q'", r"line 1, column 8: unknown escape \q in a string"),
        (r"RETURN '\ud83d'", "line 1, column 8: a string holds half of a \\u surrogate pair"),
        ("RETURN {a: 1, a: 2}", "line 1, column 15: the key 'a' appears twice in the map"),
        ("RETURN foo(*)", "line 1, column 8: only count(*) takes *"),
        ("RETURN 1 RETURN 2", "line 1, column 10: RETURN ends a query"),
        ("MATCH (n) WHERE n.a WHERE n.b RETURN n", "line 1, column 21: a second WHERE"),
        ("UNWIND [1] AS x WHERE x RETURN x", "line 1, column 17: WHERE follows MATCH"),
        ("MATCH (n) LIMIT 1", "line 1, column 11: ORDER BY, SKIP and LIMIT follow RETURN or WITH"),
        ("MATCH (n) SEARCH (d) NEAR 'x'", "line 1, column 11: SEARCH starts a statement"),
        ("MATCH (n) SET n.a += 1", "line 1, column 15: += sets a variable's properties from a map"),
        ("MATCH p = foo((a)) RETURN p", "line 1, column 11: expected a node pattern or shortestPath(…), not foo(…)"),
        ("RETURN (a.b)-->(c)", "line 1, column 8: expected a node pattern such as (v)"),
        # upstream's own rules and messages (plan/hybrid.py, plan/call.py, plan/query.py)
        ('HYBRID (d) VECTOR NEAR "x" VECTOR NEAR "y"', "line 1, column 28: VECTOR appears twice; each part of HYBRID"),
        ("HYBRID (d:D) TOPK 3", "line 1, column 1: HYBRID needs VECTOR … NEAR … and/or KEYWORD ON … MATCHING …"),
        ('HYBRID (d) KEYWORD ON b MATCHING "x"', "line 1, column 12: HYBRID KEYWORD needs a label"),
        ('HYBRID (d:D) KEYWORD ON b MATCHING "x" FUSION foo', "line 1, column 47: unknown FUSION 'foo'"),
        ('HYBRID (d) VECTOR NEAR "x" GRAPH HOPS 1 DECAY 2', "line 1, column 47: DECAY must be in [0, 1], not 2"),
        ("CALL nope()", "line 1, column 6: unknown algo 'nope'"),
        ("CALL pagerank(foo: 1)", "line 1, column 15: CALL pagerank has no argument 'foo'; its arguments: damping"),
        ("CALL pagerank(damping: 1, damping: 2)", "line 1, column 27: CALL pagerank: the argument 'damping' is given"),
        ("CALL shortest_path(from: 1)", "line 1, column 6: CALL shortest_path needs from: and to:"),
        ('SEARCH (d) ON p MATCHING "x"', "line 1, column 1: a keyword SEARCH needs a label and ON"),
        ('SEARCH (d) NEAR "x" METRIC bogus', "line 1, column 28: unknown metric 'bogus'"),
        ('SEARCH (d) NEAR "x" TOPK 1 TOPK 2', "line 1, column 28: TOPK appears twice in SEARCH"),
        ("MATCH (n) RETURN n AS OF", "line 1, column 25: expected a seq, a quoted RFC 3339 time, TIME ms or a"),
    ],
)
def test_error_messages(text: str, expected: str) -> None:
    assert syntax_error(text).startswith(expected)


@pytest.mark.parametrize(
    ("text", "construct", "column"),
    [
        ("MATCH (n) FOREACH (x IN [1] | SET n.x = x)", "FOREACH", 11),
        ("LOAD CSV FROM 'f' AS l RETURN l", "LOAD CSV", 1),
        ("CREATE INDEX ON :L(p)", "CREATE INDEX", 1),
        ("drop constraint c", "DROP CONSTRAINT", 1),
        ("MATCH (n) USING INDEX n:L(p) RETURN n", "USING hints", 11),
        ("CALL db.labels() YIELD label RETURN label", "CALL … YIELD", 18),
        ("MATCH (n) CALL { RETURN 1 } RETURN n", "CALL { … } subqueries", 11),
        ("START n = node(1) RETURN n", "START", 1),
        ("EXPLAIN START n = node(1) RETURN n", "START", 9),
    ],
)
def test_unsupported_openCypher_constructs_are_named(text: str, construct: str, column: int) -> None:
    assert syntax_error(text).startswith(f"line 1, column {column}: {construct} is not supported")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("MATCH (n) RETURN n {.name, k: 1}", "line 1, column 20: a map projection (v {.key, …}) is not supported"),
        ("MATCH (a)\nRETURN [(a)-[:T]->(b) | b.v]", "line 2, column 8: a pattern comprehension ([(a)-->(b) | …]) is"),
        ("MATCH (a) RETURN [(a)-->(b) WHERE b.x | b.v]", "line 1, column 18: a pattern comprehension ("),
        ("RETURN reduce(acc = 0, x IN [1, 2] | acc + x)", "line 1, column 8: reduce(…) is not supported"),
    ],
)
def test_openCypher_expressions_drsg_does_not_run_are_a_one_line_query_error(text: str, expected: str) -> None:
    with pytest.raises(QueryError) as caught:
        parse(text)
    assert caught.value.message.startswith(expected) and "\n" not in caught.value.message


def test_a_procedure_call_parses_and_is_refused_by_name_in_one_line() -> None:
    with pytest.raises(QueryError) as caught:
        parse("CALL db.labels()")
    assert caught.value.message == (
        "line 1, column 6: CALL db.labels(): procedures are not supported; "
        "CALL runs drsg's algorithms: pagerank, components, shortest_path, louvain"
    )
    assert syntax_error("CALL nope()").startswith("line 1, column 6: unknown algo 'nope'")  # upstream's message


def test_a_reserved_looking_word_inside_a_string_or_a_valid_statement_is_not_refused() -> None:
    assert expr("'FOREACH x'") == L("FOREACH x")
    assert expr("n.yield") == P(V("n"), "yield")
    # a statement that does not parse for another reason is not blamed on a name that looks like one
    assert syntax_error("RETURN n.foreach, n.yield +").startswith("line 1, column 28: expected an expression")


# ---------------------------------------------------------------------------- the cache


def test_a_repeated_statement_is_not_parsed_again() -> None:
    text = "MATCH (n:Cached) WHERE n.k = $k RETURN n"
    first = parse(text)
    hits = parse.cache_info().hits
    assert parse(text) is first
    assert parse.cache_info().hits == hits + 1
    assert parse(text + " ") == first and parse(text + " ") is not first  # another text, the same tree


def test_the_shipped_parse_tables_are_the_grammars() -> None:
    """grammar.tables is built from grammar.lark by this lark: after a grammar change, run
    ``.venv/bin/python -m drsg.plan.cypher.parser`` (a stale file is ignored, at ~1 s a process)."""
    key, _, _ = zlib.decompress(parser.TABLES.read_bytes()).partition(b"\n")
    grammar = Path(parser.__file__).with_name("grammar.lark").read_text(encoding="utf-8")
    assert key.decode() == parser.tables_key(grammar), "grammar.tables is stale: python -m drsg.plan.cypher.parser"
    assert parser.tables_key(grammar + " ") != parser.tables_key(grammar)


def _unplaced(node: object, path: str = "query") -> list[str]:
    """Paths to the nodes under ``node`` whose ``at`` is left at NOWHERE."""
    if isinstance(node, tuple):
        return [p for i, child in enumerate(node) for p in _unplaced(child, f"{path}[{i}]")]
    if not dataclasses.is_dataclass(node):
        return []
    out = [path] if getattr(node, "at", None) == ast.NOWHERE else []
    for f in dataclasses.fields(node):
        if f.name != "at":
            out += _unplaced(getattr(node, f.name), f"{path}.{f.name}")
    return out


@pytest.mark.parametrize("text", STATEMENTS)
def test_every_node_says_where_it_was_written(text: str) -> None:
    query = parse(text)
    assert _unplaced(query) == []
    for part in query.parts:
        for clause in part.clauses:
            line, column = clause.at
            assert text.splitlines()[line - 1][column - 1 :].strip()  # a position inside the text
