"""The Cypher parser read back what a printer writes: random expressions built from the syntax
tree's own classes — every operator, literals of every type to their 64-bit bounds, strings with
quotes, backslashes and control characters, backquoted names, calls, CASE, comprehensions,
quantifiers, slices, label tests — printed fully parenthesised, parse back equal, and the column's
text is the printed text."""

from __future__ import annotations

import typing

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from drsg.plan.cypher import ast
from drsg.plan.cypher.parser import parse


def show(e: ast.Expr) -> str:
    """Cypher text for an expression, every operand in parentheses and every name in backquotes."""

    def p(x: ast.Expr) -> str:
        return f"({show(x)})"

    def q(name: str) -> str:
        return "`" + name.replace("`", "``") + "`"

    match e:
        case ast.Literal(value=None):
            return "null"
        case ast.Literal(value=bool(b)):
            return "true" if b else "false"
        case ast.Literal(value=int(i) | float(i)):
            return repr(i)
        case ast.Literal(value=str(s)):
            out = s.replace("\\", "\\\\").replace("'", "\\'")
            return "'" + "".join(f"\\u{ord(c):04x}" if ord(c) < 32 else c for c in out) + "'"
        case ast.Parameter(name=name):
            return f"${name}"
        case ast.Variable(name=name):
            return q(name)
        case ast.PropertyAccess(subject=s, key=k):
            return f"{p(s)}.{q(k)}"
        case ast.ListLiteral(items=items):
            return "[" + ", ".join(p(i) for i in items) + "]"
        case ast.MapLiteral(entries=entries):
            return "{" + ", ".join(f"{q(k)}: {p(v)}" for k, v in entries) + "}"
        case ast.Index(subject=s, index=i):
            return f"{p(s)}[{p(i)}]"
        case ast.Slice(subject=s, start=a, end=b):
            return f"{p(s)}[{'' if a is None else p(a)}..{'' if b is None else p(b)}]"
        case ast.Unary(op=op, operand=x):
            return f"{op} {p(x)}"
        case ast.Binary(op=op, lhs=lhs, rhs=rhs):
            return f"{p(lhs)} {op} {p(rhs)}"
        case ast.IsNull(operand=x, negated=negated):
            return f"{p(x)} IS {'NOT ' if negated else ''}NULL"
        case ast.HasLabels(subject=s, labels=labels):
            return p(s) + "".join(f":{q(label)}" for label in labels)
        case ast.FunctionCall(name=name, args=args, distinct=distinct):
            return f"{name}({'DISTINCT ' if distinct else ''}{', '.join(p(a) for a in args)})"
        case ast.CountStar():
            return "count(*)"
        case ast.Case(subject=s, whens=whens, default=d):
            body = " ".join(f"WHEN {p(w)} THEN {p(t)}" for w, t in whens)
            return f"CASE {'' if s is None else p(s)} {body} {'' if d is None else 'ELSE ' + p(d)} END"
        case ast.ListComprehension(variable=v, source=src, predicate=pred, projection=proj):
            where = "" if pred is None else f" WHERE {p(pred)}"
            return f"[{q(v)} IN {p(src)}{where}{'' if proj is None else ' | ' + p(proj)}]"
        case ast.Quantified(quantifier=quantifier, variable=v, source=src, predicate=pred):
            return f"{quantifier.upper()}({q(v)} IN {p(src)} WHERE {p(pred)})"
    raise AssertionError(f"no printer for {e!r}")


#: characters a string or a name must escape, drawn often
SPECIAL = st.sampled_from(["'", '"', "\\", "`", "\n", "\t", "\x00", "é", "😀", "/", "*"])
CHARS = SPECIAL | st.characters(exclude_categories=("Cs",))
NAMES = st.lists(CHARS, min_size=1, max_size=6).map("".join)
FUNCTIONS = st.sampled_from(["f", "size", "tolower", "apoc.text.join", "exists", "score"])
OPS = st.sampled_from(typing.get_args(ast.BinaryOp))
LEAVES: st.SearchStrategy[ast.Expr] = st.one_of(
    st.builds(ast.Literal, st.integers(-(2**63), 2**63 - 1)),
    st.builds(ast.Literal, st.floats(allow_nan=False, allow_infinity=False)),
    st.builds(ast.Literal, st.lists(CHARS, max_size=8).map("".join)),
    st.builds(ast.Literal, st.sampled_from([True, False, None])),
    st.builds(ast.Parameter, st.from_regex(r"[a-z_][a-z0-9_]{0,5}|[0-9]{1,3}", fullmatch=True)),
    st.builds(ast.Variable, NAMES),
    st.just(ast.CountStar()),
)


def _unary(operand: ast.Expr, op: ast.UnaryOp) -> ast.Expr:
    numeric = isinstance(operand, ast.Literal) and type(operand.value) in (int, float)
    return ast.Unary("NOT" if numeric and op == "-" else op, operand)  # `-1` reads as the literal -1


def _extend(inner: st.SearchStrategy[ast.Expr]) -> st.SearchStrategy[ast.Expr]:
    small = st.lists(inner, max_size=3).map(tuple)
    return st.one_of(
        st.builds(ast.Binary, OPS, inner, inner),
        st.builds(_unary, inner, st.sampled_from(typing.get_args(ast.UnaryOp))),
        st.builds(ast.IsNull, inner, st.booleans()),
        st.builds(ast.PropertyAccess, inner, NAMES),
        st.builds(ast.ListLiteral, small),
        st.builds(ast.MapLiteral, st.dictionaries(NAMES, inner, max_size=3).map(lambda d: tuple(d.items()))),
        st.builds(ast.Index, inner, inner),
        st.builds(ast.Slice, inner, st.none() | inner, st.none() | inner),
        st.builds(ast.HasLabels, inner, st.lists(NAMES, min_size=1, max_size=2).map(tuple)),
        st.builds(ast.FunctionCall, FUNCTIONS, small, st.booleans()),
        st.builds(ast.Case, st.none() | inner, st.lists(st.tuples(inner, inner), min_size=1, max_size=2).map(tuple),
                  st.none() | inner),
        st.builds(ast.ListComprehension, NAMES, inner, st.none() | inner, st.none() | inner),
        st.builds(ast.Quantified, st.sampled_from(typing.get_args(ast.Quantifier)), NAMES, inner, inner),
    )  # fmt: skip


EXPRESSIONS = st.recursive(LEAVES, _extend, max_leaves=12)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(EXPRESSIONS)
def test_a_printed_expression_parses_back_equal(e: ast.Expr) -> None:
    text = show(e)
    returned = ast.Return(ast.Projection((ast.ProjectionItem(e, None, text),)))
    assert parse.__wrapped__(f"RETURN {text}").parts[0].clauses == (returned,)
