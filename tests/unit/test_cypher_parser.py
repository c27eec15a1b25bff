"""The Cypher parser (drsg.plan.cypher.parser): each construct's text → the syntax tree built by
hand, openCypher's precedence and literals, upstream's sources, errors pointing at line and column,
the cache, and random expressions printed and read back equal."""

from __future__ import annotations

import pytest

from drsg.kernel.errors import QuerySyntaxError
from drsg.plan.cypher import ast
from drsg.plan.cypher.parser import parse

V = ast.Variable
L = ast.Literal


def P(subject: ast.Expr, key: str) -> ast.PropertyAccess:
    return ast.PropertyAccess(subject, key)


def B(op: ast.BinaryOp, lhs: ast.Expr, rhs: ast.Expr) -> ast.Binary:
    return ast.Binary(op, lhs, rhs)


def N(variable: str | None = None, *labels: str, props: ast.MapLiteral | ast.Parameter | None = None) -> ast.NodePattern:
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
