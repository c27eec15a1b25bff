"""Walking and checking Cypher expressions at compile time (pure).

What every clause's compiler asks of an expression: the variables it reads (each must be in
scope), its function calls (each known, with the right number of arguments), its aggregates
(only where a projection allows them, never nested), and where it was written, for the message.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import fields, is_dataclass

from drsg.kernel.errors import QueryError
from drsg.plan.cypher import ast
from drsg.plan.cypher.graph import CypherValue

#: a variable's kind: a node, a relationship, a var-length relationship's list, a path, any other value
Kind = str
NODE, REL, RELS, PATH, VALUE = "node", "relationship", "relationship list", "path", "value"


def at(node: object) -> str:
    """`` at line L, column C`` for a tree node the parser placed ('' for one a compiler made)."""
    line, column = getattr(node, "at", (0, 0))
    return f" at line {line}, column {column}" if line else ""


def literal_value(expr: ast.Expr) -> CypherValue:
    """A literal's value (lists and maps of literals too); QueryError for anything else."""
    match expr:
        case ast.Literal(value):
            return value
        case ast.Unary("-", ast.Literal(int() | float() as value)) if not isinstance(value, bool):
            return -value
        case ast.ListLiteral(items):
            return [literal_value(item) for item in items]
        case ast.MapLiteral(entries):
            return {key: literal_value(value) for key, value in entries}
    raise QueryError(f"a literal value is needed{at(expr)}")


def children(expr: ast.Expr) -> Iterator[ast.Expr]:
    """An expression's direct sub-expressions (a pattern predicate's property maps included)."""
    if isinstance(expr, ast.PatternPredicate):
        elements: list[ast.NodePattern | ast.RelPattern] = [*expr.pattern.nodes, *expr.pattern.rels]
        yield from (element.properties for element in elements if element.properties is not None)
        return
    for f in fields(expr):
        value = getattr(expr, f.name)
        yield from _exprs_in(value)


def _exprs_in(value: object) -> Iterator[ast.Expr]:
    if isinstance(value, ast.EXPR_TYPES):
        yield value
    elif isinstance(value, tuple):
        for item in value:
            yield from _exprs_in(item)


def walk(expr: ast.Expr) -> Iterator[ast.Expr]:
    """Every sub-expression, ``expr`` first."""
    yield expr
    for child in children(expr):
        yield from walk(child)


def is_aggregate(expr: ast.Expr) -> bool:
    from drsg.plan.cypher.functions import AGGREGATES  # (the functions load where a statement is compiled)

    return isinstance(expr, ast.CountStar) or (isinstance(expr, ast.FunctionCall) and expr.name in AGGREGATES)


def has_aggregate(expr: ast.Expr) -> bool:
    return any(is_aggregate(e) for e in walk(expr))


def parameters(tree: object) -> Iterator[str]:
    """The name of every ``$parameter`` anywhere in a syntax tree."""
    if isinstance(tree, ast.Parameter):
        yield tree.name
    elif isinstance(tree, tuple):
        for item in tree:
            yield from parameters(item)
    elif is_dataclass(tree) and not isinstance(tree, type):
        for f in fields(tree):
            yield from parameters(getattr(tree, f.name))


def check_expr(expr: ast.Expr, scope: Mapping[str, Kind], *, aggregates: bool = False, what: str = "") -> None:
    """Refuse an unknown variable, an unknown function or arity, an aggregate where none may be
    (``aggregates`` False) or inside another."""
    _check(expr, scope, frozenset(), aggregates, False, what)


def _check(
    expr: ast.Expr, scope: Mapping[str, Kind], local: frozenset[str], aggregates: bool, inside: bool, what: str
) -> None:
    match expr:
        case ast.Variable(name):
            if name not in scope and name not in local:
                raise QueryError(
                    f"variable `{name}` is not defined{at(expr)}; bind it in a MATCH, WITH or UNWIND first"
                )
        case ast.FunctionCall() | ast.CountStar() if is_aggregate(expr):
            if not aggregates:
                where = f" in {what}" if what else ""
                raise QueryError(
                    f"aggregate {_name(expr)}(){where}{at(expr)} is not allowed here; "
                    "aggregate in a RETURN or WITH item"
                )
            if inside:
                raise QueryError(f"aggregate {_name(expr)}(){at(expr)} is nested in another; aggregates cannot nest")
            if isinstance(expr, ast.FunctionCall):
                check_arity(expr)
            for child in children(expr):
                _check(child, scope, local, aggregates, True, what)
            return
        case ast.FunctionCall():
            check_arity(expr)
        case ast.ListComprehension(variable, source) | ast.Quantified(_, variable, source):
            _check(source, scope, local, aggregates, inside, what)
            inner = local | {variable}
            more: tuple[ast.Expr | None, ...] = (expr.predicate,)
            if isinstance(expr, ast.ListComprehension):
                more = (expr.predicate, expr.projection)
            for part in more:
                if part is not None:
                    _check(part, scope, inner, aggregates, inside, what)
            return
        case ast.PatternPredicate(pattern):
            check_pattern_predicate(pattern, scope, local)
    for child in children(expr):
        _check(child, scope, local, aggregates, inside, what)


def check_pattern_predicate(pattern: ast.PatternPart, scope: Mapping[str, Kind], local: frozenset[str]) -> None:
    """A pattern used as a predicate may only name variables bound already (openCypher 9)."""
    if pattern.shortest is not None:
        raise QueryError(f"{pattern.shortest}(){at(pattern)} is not supported; match the paths and order by length")
    elements: list[ast.NodePattern | ast.RelPattern] = [*pattern.nodes, *pattern.rels]
    for element in elements:
        name = element.variable
        if name is not None and name not in scope and name not in local:
            raise QueryError(
                f"variable `{name}` in a pattern predicate{at(element)} is not defined; a pattern used as a "
                "condition can only name variables bound before it"
            )


def _name(expr: ast.FunctionCall | ast.CountStar) -> str:
    return "count" if isinstance(expr, ast.CountStar) else expr.name


def check_arity(call: ast.FunctionCall) -> None:
    from drsg.plan.cypher.functions import check_call

    check_call(call.name, len(call.args), call.distinct, at(call))
