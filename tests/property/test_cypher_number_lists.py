"""A list of plain numbers read as one NUMBERS token gives what the grammar without it gives.

``[0.1, -2, 3e-5]`` (a pasted vector) is one lexer token built into the list in one step, not
about twelve parser steps a number (issue #37: 33 ms to parse a 768-number vector). The reference
is the old path itself: lark's parser for the same grammar with the NUMBERS lines taken out. For
random lists — ints, floats, exponents, minus signs, hex/octal, 64-bit edges, nested lists,
expressions such as ``2+3`` or ``x``, blanks and comments, malformed ones — in statements where a
list is an expression or where ``[`` is an index, both give the same tree (positions, int against
float and -0.0 included) or the same error, word for word.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import hypothesis.strategies as st
from hypothesis import HealthCheck, example, given, settings
from lark import Lark, Token

from drsg.kernel.errors import QueryError, QuerySyntaxError
from drsg.plan.cypher import parser, tables


@functools.cache
def _reference() -> Lark:
    """The grammar without NUMBERS: every list literal goes through list_lit, as before."""
    grammar = tables.GRAMMAR.read_text(encoding="utf-8")
    kept = [line for line in grammar.splitlines() if "NUMBERS" not in line.split("//")[0]]
    assert len(kept) == len(grammar.splitlines()) - 2  # the atom's alternative and the terminal
    return Lark("\n".join(kept), **tables.OPTIONS)  # type: ignore[arg-type]  # lark's own options


def _shape(value: Any) -> Any:
    """A syntax tree as nested tuples, positions (compare=False in the tree) and types included."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return (type(value).__name__, *((f.name, _shape(getattr(value, f.name))) for f in dataclasses.fields(value)))
    if isinstance(value, tuple | list):
        return tuple(_shape(v) for v in value)
    return (type(value).__name__, repr(value))


def _outcome(reader: Lark, text: str) -> tuple[str, Any]:
    try:
        return "tree", _shape(parser.parse_by(reader, text))
    except (QueryError, QuerySyntaxError) as exc:
        return type(exc).__name__, str(exc)


digits = st.text("0123456789", min_size=1, max_size=22)
exponent = st.tuples(st.sampled_from("eE"), st.sampled_from(["", "-", "+"]), digits).map("".join)
plain = st.one_of(
    digits,
    st.integers(-(2**64), 2**64).map(str),
    st.sampled_from(["9223372036854775807", "9223372036854775808", "-9223372036854775808", "0", "-0", "00"]),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.tuples(digits, st.just("."), digits, st.one_of(st.just(""), exponent)).map("".join),
    st.tuples(st.just("."), digits).map("".join),
    st.tuples(digits, exponent).map("".join),
    st.sampled_from(["1e400", "-1e400", "1.", "0x1F", "0o17", "019", "017", "-.5", "1.5.3", "1e", "1_0"]),
)
signed = st.tuples(st.sampled_from(["", "", "-", "- ", "+", "--"]), plain).map("".join)
other = st.sampled_from(["2+3", "x", "$p", "'s'", "null", "true", "[]", "1 2", "", "n.v", "-x", "2 * 3"])
blank = st.sampled_from(["", "", " ", "  ", "\n", "\t", "\r\n ", "\f", "/* c */", " // c\n", "\v", "\u00a0"])


def _lists(element: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    around = st.tuples(blank, element, blank).map("".join)
    sep = st.sampled_from([",", ",", ",", ", ", " ,", ",,", ""])

    def join(parts: tuple[str, list[str], list[str], str]) -> str:
        before, items, seps, after = parts
        body = "".join(item + (seps[i] if i < len(items) - 1 else "") for i, item in enumerate(items))
        return f"[{before}{body}{after}]"

    lists = st.lists(around, min_size=0, max_size=8)
    return st.tuples(blank, lists, st.lists(sep, min_size=8, max_size=8), st.sampled_from(["", "", ",", " "])).map(join)


numbers_only = _lists(signed)
mixed = st.recursive(
    _lists(st.one_of(signed, signed, other)), lambda inner: _lists(st.one_of(signed, inner)), max_leaves=12
)
contexts = st.sampled_from(
    [
        "RETURN {}",
        "RETURN {} AS v",
        "MATCH (n) WHERE n.v = {} RETURN n",
        "\n  MATCH (n)\n  WHERE n.v IN {}\n  RETURN n",
        "WITH {} AS l RETURN l[0]",
        "WITH [0] AS l RETURN l{}",
        "RETURN -{}",
        "RETURN 1 - {}",
        "RETURN {}[1]",
        "MATCH (n) SEARCH (m:Doc) NEAR {} TOPK 3 RETURN m",
        "UNWIND {} AS x RETURN x",
        "RETURN {} +",
    ]
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(context=contexts, listed=st.one_of(numbers_only, mixed))
@example(context="RETURN {}", listed="[0.1, -2, 3e-5, 7]")
@example(context="RETURN {}", listed="[\n 1,\n  -9223372036854775808 , 9223372036854775808]")
@example(context="RETURN {}", listed="[1, 2, -1e400]")
@example(context="RETURN {}", listed="[017, -0010, 0]")
@example(context="RETURN {}", listed="[1, -019]")
@example(context="WITH [0] AS l RETURN l{}", listed="[0]")
def test_number_lists_read_as_the_grammar_without_numbers(context: str, listed: str) -> None:
    text = context.format(listed)
    assert _outcome(parser._lark(), text) == _outcome(_reference(), text)


def test_a_vector_is_one_token() -> None:
    """The fast path is taken: the 768 numbers reach the parser as one token."""
    vector = "[" + ", ".join(f"{(i % 7 - 3) / 7:.6f}" for i in range(768)) + "]"
    tree = parser._lark().parse(f"RETURN {vector}")
    assert [t.type for t in tree.scan_values(lambda v: isinstance(v, Token))] == ["RETURN", "NUMBERS"]
    old = _reference().parse(f"RETURN {vector}").scan_values(lambda v: isinstance(v, Token))
    assert sum(t.type == "FLOAT" for t in old) == 768  # before: a token (and a dozen steps) a number
