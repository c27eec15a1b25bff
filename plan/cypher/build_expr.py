"""lark's parse tree → the syntax tree's patterns, expressions and literals (pure); the clauses'
half is :mod:`drsg.plan.cypher.build`, which inherits this.

Literals are checked as openCypher defines them: an integer fits signed 64 bits (decimal, ``0x``
hex, ``0o`` or a leading ``0`` octal; ``-9223372036854775808`` is the one literal whose digits alone do not fit), a
float is finite, a string's escapes are ``\\\\ \\' \\" \\b \\f \\n \\r \\t \\uXXXX \\UXXXXXXXX``.
A minus before a number literal is folded into it (``-1`` is the literal -1).
"""

from __future__ import annotations

import math
import re
import typing
from dataclasses import replace
from typing import Any, NoReturn

from lark import Token, Transformer, v_args
from lark.tree import Meta

from drsg.kernel.frozen import hashable
from drsg.plan.cypher import ast

_MAX_INT = 2**63 - 1
_ESCAPE = re.compile(r"\\(u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|.)", re.S)
#: the blanks the grammar allows between a NUMBERS token's numbers (WS: no \v, no Unicode spaces)
_BLANK = " \t\f\r\n"
_ESCAPES = {"\\": "\\", "'": "'", '"': '"', "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


class SyntaxProblem(Exception):
    """What the grammar accepted but a statement may not say, at (line, column); ``unsupported``:
    it is openCypher a drsg statement cannot say (a QueryError naming it), not a syntax error."""

    def __init__(self, at: ast.Position, message: str, unsupported: bool = False) -> None:
        super().__init__(message)
        self.line, self.column, self.message, self.unsupported = at[0], at[1], message, unsupported


def fail(at: ast.Position, message: str) -> NoReturn:
    raise SyntaxProblem(at, message)


def at_of(meta: Meta) -> ast.Position:
    return (getattr(meta, "line", 0), getattr(meta, "column", 0))


def tok_at(tok: Token) -> ast.Position:
    return (tok.line or 0, tok.column or 0)


def is_tok(child: object, *types: str) -> bool:
    return isinstance(child, Token) and child.type in types


def values(children: list[Any]) -> list[Any]:
    """The children that are not keyword or punctuation tokens."""
    return [c for c in children if not isinstance(c, Token)]


# Pieces of a rule that its parent assembles.
@hashable
class Name:
    text: str
    at: ast.Position


@hashable
class Dotted:
    """``a.b.c``: a variable and its properties, or a function's namespaced name."""

    names: tuple[Name, ...]
    at: ast.Position

    def expr(self) -> ast.Expr:
        head = self.names[0]
        out: ast.Expr = ast.Variable(head.text, at=head.at)
        for key in self.names[1:]:
            out = ast.PropertyAccess(out, key.text, at=self.at)
        return out


@hashable
class Labels:
    names: tuple[str, ...]


@hashable
class Props:
    value: ast.MapLiteral | ast.Parameter


@hashable
class Types:
    names: tuple[str, ...]


@hashable
class RelDetail:
    variable: str | None = None
    types: tuple[str, ...] = ()
    length: ast.VarLength | None = None
    properties: ast.MapLiteral | ast.Parameter | None = None


def _node_of(expr: ast.Expr, at: ast.Position) -> ast.NodePattern:
    """A pattern predicate's first node written like an expression: ``(v)``, ``(v:L)``, ``({k: 1})``."""
    match expr:
        case ast.Variable(name=name):
            return ast.NodePattern(name, at=at)
        case ast.HasLabels(subject=ast.Variable(name=name), labels=labels):
            return ast.NodePattern(name, labels, at=at)
        case ast.MapLiteral() | ast.Parameter():
            return ast.NodePattern(properties=expr, at=at)
    fail(at, "expected a node pattern such as (v), (v:Label) or (v {key: value}) before the relationship")


_SHORTEST: dict[str, typing.Literal["shortestPath", "allShortestPaths"]] = {
    "shortestpath": "shortestPath",
    "allshortestpaths": "allShortestPaths",
}
_COMPARISONS = {"=": "=", "<>": "<>", "!=": "<>", "<": "<", "<=": "<=", ">": ">", ">=": ">="}


@v_args(meta=True)
class ExprBuild(Transformer[Token, Any]):
    text = ""

    # ------------------------------------------------------------------------ names
    def name(self, meta: Meta, children: list[Token]) -> Name:
        tok = children[0]
        text = str(tok)
        if tok.type == "ESC_NAME":
            text = text[1:-1].replace("``", "`")
        return Name(text, tok_at(tok))

    def key(self, meta: Meta, children: list[Name]) -> Name:
        return children[0]

    def dotted(self, meta: Meta, children: list[Name]) -> Dotted:
        return Dotted(tuple(children), at_of(meta))

    # ------------------------------------------------------------------------ patterns
    def pattern(self, meta: Meta, children: list[ast.PatternPart]) -> ast.Pattern:
        return tuple(children)

    def pattern_part(self, meta: Meta, children: list[Any]) -> ast.PatternPart:
        part: ast.PatternPart = children[-1]
        path = children[0].text if isinstance(children[0], Name) else None
        return replace(part, path_variable=path, at=at_of(meta))

    def shortest_part(self, meta: Meta, children: list[Any]) -> ast.PatternPart:
        names = [c for c in children if isinstance(c, Name)]
        function = names[-1]
        shortest = _SHORTEST.get(function.text.lower())
        if shortest is None:
            fail(function.at, f"expected a node pattern or shortestPath(…), not {function.text}(…)")
        part: ast.PatternPart = children[-1]
        path = names[0].text if len(names) > 1 else None
        return replace(part, path_variable=path, shortest=shortest, at=at_of(meta))

    def chain(self, meta: Meta, children: list[Any]) -> ast.PatternPart:
        return ast.PatternPart(tuple(children[0::2]), tuple(children[1::2]), at=at_of(meta))

    def node_pattern(self, meta: Meta, children: list[Any]) -> ast.NodePattern:
        variable = next((c.text for c in children if isinstance(c, Name)), None)
        labels = next((c.names for c in children if isinstance(c, Labels)), ())
        props = next((c.value for c in children if isinstance(c, Props)), None)
        return ast.NodePattern(variable, labels, props, at=at_of(meta))

    def node_labels(self, meta: Meta, children: list[Name]) -> Labels:
        return Labels(tuple(c.text for c in children))

    def properties(self, meta: Meta, children: list[Any]) -> Props:
        value = children[0]
        return Props(self.param(meta, [value]) if isinstance(value, Token) else value)

    def _rel(self, meta: Meta, children: list[Any], direction: ast.Direction) -> ast.RelPattern:
        detail = next((c for c in children if isinstance(c, RelDetail)), RelDetail())
        return ast.RelPattern(
            detail.variable, detail.types, direction, detail.length, detail.properties, at=at_of(meta)
        )

    def rel_both_arrows(self, meta: Meta, children: list[Any]) -> ast.RelPattern:
        return self._rel(meta, children, "both")  # `<-->` matches either way, as no arrow does

    def rel_in(self, meta: Meta, children: list[Any]) -> ast.RelPattern:
        return self._rel(meta, children, "in")

    def rel_out(self, meta: Meta, children: list[Any]) -> ast.RelPattern:
        return self._rel(meta, children, "out")

    def rel_both(self, meta: Meta, children: list[Any]) -> ast.RelPattern:
        return self._rel(meta, children, "both")

    def rel_detail(self, meta: Meta, children: list[Any]) -> RelDetail:
        return RelDetail(
            next((c.text for c in children if isinstance(c, Name)), None),
            next((c.names for c in children if isinstance(c, Types)), ()),
            next((c for c in children if isinstance(c, ast.VarLength)), None),
            next((c.value for c in children if isinstance(c, Props)), None),
        )

    def rel_types(self, meta: Meta, children: list[Any]) -> Types:
        return Types(tuple(c.text for c in children if isinstance(c, Name)))

    def var_length(self, meta: Meta, children: list[Token]) -> ast.VarLength:
        ints = [(i, self._int(c)) for i, c in enumerate(children) if c.type == "INT"]
        dots = next((i for i, c in enumerate(children) if c.type == "DOTDOT"), None)
        if dots is None:
            hops = ints[0][1] if ints else None
            return ast.VarLength(hops, hops, at=at_of(meta))
        low = next((v for i, v in ints if i < dots), None)
        high = next((v for i, v in ints if i > dots), None)
        return ast.VarLength(low, high, at=at_of(meta))

    # ------------------------------------------------------------------------ operators
    def binary(self, meta: Meta, children: list[Any]) -> ast.Binary:
        lhs, op, rhs = children
        if op == "-" and isinstance(rhs, ast.Literal) and rhs.value == _MAX_INT + 1:
            fail(rhs.at, f"the integer {rhs.value} does not fit in 64 bits")
        return ast.Binary(str(op).upper(), lhs, rhs, at=at_of(meta))  # type: ignore[arg-type]  # the grammar's ops

    def not_(self, meta: Meta, children: list[Any]) -> ast.Unary:
        return ast.Unary("NOT", children[-1], at=at_of(meta))

    def comparison(self, meta: Meta, children: list[Any]) -> ast.Expr:
        """``a < b <= c`` is ``a < b AND b <= c``, as openCypher defines a chain."""
        operands, ops = children[0::2], children[1::2]
        out: ast.Expr | None = None
        for lhs, op, rhs in zip(operands, ops, operands[1:], strict=False):
            pair = ast.Binary(_COMPARISONS[str(op)], lhs, rhs, at=lhs.at)  # type: ignore[arg-type]
            out = pair if out is None else ast.Binary("AND", out, pair, at=out.at)
        assert out is not None
        return out

    def starts_with(self, meta: Meta, children: list[Any]) -> ast.Binary:
        return ast.Binary("STARTS WITH", children[0], children[-1], at=at_of(meta))

    def ends_with(self, meta: Meta, children: list[Any]) -> ast.Binary:
        return ast.Binary("ENDS WITH", children[0], children[-1], at=at_of(meta))

    def is_null(self, meta: Meta, children: list[Any]) -> ast.IsNull:
        return ast.IsNull(children[0], negated=any(is_tok(c, "NOT") for c in children), at=at_of(meta))

    def unary(self, meta: Meta, children: list[Any]) -> ast.Expr:
        op, operand = children
        at = at_of(meta)
        if op == "-" and isinstance(operand, ast.Literal) and type(operand.value) in (int, float):
            value = -operand.value  # type: ignore[operator]  # an int or a float, checked above
            if isinstance(value, int) and not -_MAX_INT - 1 <= value <= _MAX_INT:
                fail(operand.at, f"the integer {abs(value)} does not fit in 64 bits")
            return ast.Literal(value, at=at)
        if isinstance(operand, ast.Literal) and operand.value == _MAX_INT + 1:
            fail(operand.at, f"the integer {operand.value} does not fit in 64 bits")
        return ast.Unary(str(op), operand, at=at)  # type: ignore[arg-type]  # "-" or "+"

    def prop(self, meta: Meta, children: list[Any]) -> ast.PropertyAccess:
        return ast.PropertyAccess(children[0], children[-1].text, at=at_of(meta))

    def index(self, meta: Meta, children: list[Any]) -> ast.Index:
        subject, index = values(children)
        return ast.Index(subject, index, at=at_of(meta))

    def slice(self, meta: Meta, children: list[Any]) -> ast.Slice:
        dots = next(i for i, c in enumerate(children) if is_tok(c, "DOTDOT"))
        start = next((c for c in children[1:dots] if not isinstance(c, Token)), None)
        end = next((c for c in children[dots + 1 :] if not isinstance(c, Token)), None)
        return ast.Slice(children[0], start, end, at=at_of(meta))

    def has_labels(self, meta: Meta, children: list[Any]) -> ast.HasLabels:
        return ast.HasLabels(children[0], children[1].names, at=at_of(meta))

    # ------------------------------------------------------------------------ atoms
    def var_or_prop(self, meta: Meta, children: list[Dotted]) -> ast.Expr:
        return children[0].expr()

    def param(self, meta: Meta, children: list[Token]) -> ast.Parameter:
        return ast.Parameter(str(children[0])[1:], at=tok_at(children[0]))

    def call(self, meta: Meta, children: list[Any]) -> ast.FunctionCall:
        name: Dotted = children[0]
        args = tuple(values(children[1:]))
        distinct = any(is_tok(c, "DISTINCT") for c in children)
        return ast.FunctionCall(".".join(n.text for n in name.names).lower(), args, distinct, at=at_of(meta))

    def count_star(self, meta: Meta, children: list[Any]) -> ast.CountStar:
        name: Dotted = children[0]
        if ".".join(n.text for n in name.names).lower() != "count":
            fail(name.at, "only count(*) takes *: give the function its arguments")
        return ast.CountStar(at=at_of(meta))

    def case(self, meta: Meta, children: list[Any]) -> ast.Case:
        whens = tuple(c for c in children if isinstance(c, tuple))
        first = children[1]
        subject = None if isinstance(first, tuple) else first
        default = next((children[i + 1] for i, c in enumerate(children) if is_tok(c, "ELSE")), None)
        return ast.Case(subject, whens, default, at=at_of(meta))

    def case_when(self, meta: Meta, children: list[Any]) -> tuple[ast.Expr, ast.Expr]:
        when, then = values(children)
        return (when, then)

    def list_comp(self, meta: Meta, children: list[Any]) -> ast.ListComprehension:
        variable: Name = children[1]
        after = {c.type: children[i + 1] for i, c in enumerate(children) if is_tok(c, "IN", "WHERE", "PIPE")}
        return ast.ListComprehension(variable.text, after["IN"], after.get("WHERE"), after.get("PIPE"), at=at_of(meta))

    def list_lit(self, meta: Meta, children: list[Any]) -> ast.ListLiteral:
        return ast.ListLiteral(tuple(values(children)), at=at_of(meta))

    def number_list(self, meta: Meta, children: list[Token]) -> ast.ListLiteral:
        """``[0.1, -2, 3e-5]`` read as one NUMBERS token: the tree list_lit, int_lit, float_lit and
        unary's minus fold make of the same text, positions included, in one step."""
        tok = children[0]
        text, line, column = str(tok), tok.line or 0, tok.column or 0
        multiline = "\n" in text
        items: list[ast.Expr] = []
        offset = 1  # where the part after "[" or "," starts in text: the grammar checked the shape
        for part in text[1:-1].split(","):
            number = part.lstrip(_BLANK)
            start, offset = offset + len(part) - len(number), offset + len(part) + 1
            number = number.rstrip(_BLANK)
            sign = number[0] == "-"
            digits = number[1:] if sign else number
            at = (line, column + start) if not multiline else self._at_in(text, line, column, start)
            if "." in digits or "e" in digits or "E" in digits:
                value: int | float = float(digits)
                if math.isinf(value):
                    fail(self._at_in(text, line, column, start + sign), f"the number {digits} is too large for a float")
            elif len(digits) < 19 and (digits[0] != "0" or digits == "0"):
                value = int(digits)  # decimal and inside 64 bits: _int's checks cannot fail
            else:  # a leading 0 (octal) or long digits: _int's checks, where the INT token would be
                at_digits = self._at_in(text, line, column, start + sign)
                where = {"start_pos": (tok.start_pos or 0) + start + sign, "line": at_digits[0], "column": at_digits[1]}
                value = self._int(Token("INT", digits, **where), minus_ok=True)
            items.append(ast.Literal(-value if sign else value, at=at))
        return ast.ListLiteral(tuple(items), at=(line, column))

    @staticmethod
    def _at_in(text: str, line: int, column: int, offset: int) -> ast.Position:
        """The (line, column) of ``offset`` in a token that starts at (line, column)."""
        newlines = text.count("\n", 0, offset)
        return (line, column + offset) if not newlines else (line + newlines, offset - text.rfind("\n", 0, offset))

    def map_lit(self, meta: Meta, children: list[Any]) -> ast.MapLiteral:
        items = values(children)
        entries: list[tuple[str, ast.Expr]] = []
        for key, value in zip(items[0::2], items[1::2], strict=True):
            if any(k == key.text for k, _ in entries):
                fail(key.at, f"the key {key.text!r} appears twice in the map")
            entries.append((key.text, value))
        return ast.MapLiteral(tuple(entries), at=at_of(meta))

    def quantified(self, meta: Meta, children: list[Any]) -> ast.Quantified:
        quantifier = str(children[0]).lower()
        variable, source, predicate = values(children)
        return ast.Quantified(quantifier, variable.text, source, predicate, at=at_of(meta))  # type: ignore[arg-type]

    def paren(self, meta: Meta, children: list[Any]) -> ast.Expr:
        return values(children)[0]  # type: ignore[no-any-return]

    def paren_node(self, meta: Meta, children: list[Any]) -> ast.NodePattern:
        at = at_of(meta)
        labels = next((c.names for c in children if isinstance(c, Labels)), ())
        props = next((c.value for c in children if isinstance(c, Props)), None)
        exprs = [c for c in values(children) if not isinstance(c, Labels | Props)]
        if exprs:
            node = _node_of(exprs[0], at)
            if node.properties is not None:
                fail(at, "expected a node pattern such as (v:Label {key: value})")
            return replace(node, properties=props)
        return ast.NodePattern(None, labels, props, at=at)

    def pattern_pred(self, meta: Meta, children: list[Any]) -> ast.PatternPredicate:
        first = children[0]
        at = at_of(meta)
        head = first if isinstance(first, ast.NodePattern) else _node_of(first, at)
        part = ast.PatternPart((head, *children[2::2]), tuple(children[1::2]), at=at)
        return ast.PatternPredicate(part, at=at)

    # ------------------------------------------------------------------------ literals
    def int_lit(self, meta: Meta, children: list[Token]) -> ast.Literal:
        tok = children[0]
        value = self._int(tok, minus_ok=True)
        return ast.Literal(value, at=tok_at(tok))

    def _int(self, tok: Token, minus_ok: bool = False) -> int:
        text = str(tok)
        if text[:2] == "0x":
            value = int(text[2:], 16)
        elif text[:2] == "0o" or (len(text) > 1 and text[0] == "0"):  # openCypher 9: 017 is octal too
            digits = text[2:] if text[1] == "o" else text[1:]
            if not set(digits) <= set("01234567"):
                fail(tok_at(tok), f"{text} starts with 0, so it is octal, and 8 and 9 are not octal digits")
            value = int(digits, 8)
        else:
            value = int(text)
        # -9223372036854775808 is a minus before 9223372036854775808: kept until the minus folds it
        allowed = _MAX_INT + 1 if minus_ok and self.text[: tok.start_pos].rstrip().endswith("-") else _MAX_INT
        if value > allowed:
            fail(tok_at(tok), f"the integer {text} does not fit in 64 bits (at most {_MAX_INT})")
        return value

    def float_lit(self, meta: Meta, children: list[Token]) -> ast.Literal:
        value = float(children[0])
        if math.isinf(value):
            fail(tok_at(children[0]), f"the number {children[0]} is too large for a float")
        return ast.Literal(value, at=tok_at(children[0]))

    def string_lit(self, meta: Meta, children: list[Token]) -> ast.Literal:
        return ast.Literal(self._string(children[0]), at=tok_at(children[0]))

    def _string(self, tok: Token) -> str:
        def escape(match: re.Match[str]) -> str:
            code = match.group(1)
            if len(code) > 1:
                return chr(int(code[1:], 16)) if int(code[1:], 16) <= 0x10FFFF else fail(at, "no such code point")
            out = _ESCAPES.get(code) or _ESCAPES.get(code.lower())
            if out is None:
                fail(at, f"unknown escape \\{code} in a string; write a backslash as \\\\")
            return out

        at = tok_at(tok)
        text = _ESCAPE.sub(escape, str(tok)[1:-1])
        try:  # a surrogate pair written as two \\u escapes is one character
            return text.encode("utf-16", "surrogatepass").decode("utf-16")
        except UnicodeDecodeError:
            fail(at, "a string holds half of a \\u surrogate pair; write the character whole")

    def bool_lit(self, meta: Meta, children: list[Token]) -> ast.Literal:
        return ast.Literal(children[0].type == "TRUE", at=tok_at(children[0]))

    def null_lit(self, meta: Meta, children: list[Token]) -> ast.Literal:
        return ast.Literal(None, at=tok_at(children[0]))
