"""Cypher text → :class:`drsg.plan.cypher.ast.Query` (pure), cached by the text.

The grammar (``grammar.lark``) is openCypher 9 plus upstream's SEARCH, HYBRID, CALL, BEAM and
AS OF, read by lark's LALR parser; :class:`_Build` turns lark's tree into the syntax tree and
checks what a grammar cannot say (an integer past 64 bits, an unknown string escape, HYBRID's
parts at most once each). Every error is one :class:`QuerySyntaxError` whose first line says
where (line, column), what was expected and what was found; the statement's line and a caret
under the column follow on the next two lines.
"""

from __future__ import annotations

import functools
import re
import typing
from collections.abc import Callable

from drsg.kernel import imports

# lark imports `regex` when installed (≈8 ms) for what drsg's grammar never asks: Unicode categories
# (\p{…}) in a terminal and its `regex=True` option; the stdlib `re` reads the grammar as before. It
# binds tempfile (with shutil, bz2, lzma: ≈4 ms) for its `cache=` option, which drsg never passes
imports.lean("lark", hide=("regex",), defer=("tempfile",))

from lark import Lark  # noqa: E402  # after the import above, which is what makes this one cheap
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken, VisitError  # noqa: E402

from drsg.kernel.errors import QueryError, QuerySyntaxError  # noqa: E402
from drsg.plan.cypher import ast, tables  # noqa: E402
from drsg.plan.cypher.build import Build, SyntaxProblem  # noqa: E402
from drsg.plan.cypher.tables import TABLES, tables_key, write_tables  # noqa: E402, F401  # the tables' file, here as before

#: statements parsed and kept, by their text: a repeated (parameterised) statement is not parsed again
CACHE_SIZE = 512


@functools.cache
def _lark() -> Lark:
    grammar = tables.GRAMMAR.read_text(encoding="utf-8")
    # missing or stale tables are built (~1 s; a test holds the shipped ones to the grammar)
    return tables.load(grammar) or Lark(grammar, **tables.OPTIONS)


@functools.lru_cache(maxsize=CACHE_SIZE)
def parse(text: str) -> ast.Query:
    """The statement's syntax tree; the same object for the same text while it stays cached."""
    return parse_by(_lark(), text)


def parse_by(reader: Lark, text: str) -> ast.Query:
    """:func:`parse` by the given lark parser, uncached (a test reads by the grammar less a part)."""
    try:
        tree = reader.parse(text)
    except UnexpectedInput as exc:
        construct = None if _unsupported(text) else _construct_at(text, exc)  # FOREACH etc. are named first
        if construct is not None:  # openCypher drsg does not run: one line, as every QueryError
            name, (line, column) = construct
            raise QueryError(f"line {line}, column {column}: {name} is not supported") from None
        raise QuerySyntaxError(_syntax_message(text, exc)) from None
    try:
        query = Build(text).transform(tree)
    except VisitError as exc:
        if isinstance(exc.orig_exc, SyntaxProblem):
            problem = exc.orig_exc
            if problem.unsupported:  # it parses; drsg does not run it: one line, as every QueryError
                raise QueryError(f"line {problem.line}, column {problem.column}: {problem.message}") from None
            raise QuerySyntaxError(message_at(text, problem.line, problem.column, problem.message)) from None
        raise
    assert isinstance(query, ast.Query)
    return query


def message_at(text: str, line: int, column: int, what: str) -> str:
    """``line L, column C: what`` and, on the next lines, the statement's line with a caret under C."""
    lines = text.splitlines() or [""]
    source = lines[line - 1] if 0 < line <= len(lines) else ""
    caret = " " * (len(source[: column - 1].expandtabs(1)) if column > 0 else 0) + "^"
    return f"line {line}, column {column}: {what}\n  {source.expandtabs(1)}\n  {caret}"


# ---------------------------------------------------------------------------- syntax errors

#: openCypher 9 constructs drsg does not run: named when a statement using one does not parse
_UNSUPPORTED = (
    (re.compile(r"(?<![.:$])\bFOREACH\s*\(", re.I), "FOREACH"),
    (re.compile(r"\bLOAD\s+CSV\b", re.I), "LOAD CSV"),
    (re.compile(r"\b(?:CREATE|DROP)\s+(?:INDEX|CONSTRAINT)\b", re.I), ""),
    (re.compile(r"\bUSING\s+(?:INDEX|SCAN|JOIN|PERIODIC)\b", re.I), "USING hints"),
    (re.compile(r"\bCALL\s*\{", re.I), "CALL { … } subqueries"),
    (re.compile(r"\)\s*(YIELD)\b", re.I), "CALL … YIELD"),
    (re.compile(r"^\s*(?:EXPLAIN\s+)?(START)\b", re.I), "START"),
)
#: what the user wrote lark's terminals for, in words
_WORDS = {
    "NAME": "a name",
    "ESC_NAME": "a name",
    "PARAM": "a $parameter",
    "INT": "an integer",
    "FLOAT": "a number",
    "STRING": "a quoted string",
    "AS_OF": "AS OF",
    "COMP_OP": "a comparison",
    "LEFT_OPEN": "'<-['",
    "DASH_OPEN": "'-['",
    "RIGHT_CLOSE": "']->'",
    "DASH_CLOSE": "']-'",
    "$END": "the end of the statement",
}
#: a set of expected tokens holding three of a group is said as the group's name
_EXPRESSION_START = {"INT", "STRING", "PARAM", "LSQB", "LBRACE", "LPAR", "NULL", "CASE"}
_OPERATORS = {"AND", "OR", "XOR", "IN", "CONTAINS", "STARTS", "ENDS", "IS", "REGEX", "COMP_OP", "EQ", "PLUS", "MINUS"}
_CLAUSES = {"MATCH", "OPTIONAL", "UNWIND", "WITH", "RETURN", "CREATE", "MERGE", "SET", "REMOVE", "DELETE", "DETACH"}
_GROUP_REST = {
    "an expression": {"NAME", "ESC_NAME", "FLOAT", "TRUE", "FALSE", "PLUS", "MINUS", "NOT", "ALL", "ANY", "NONE"}
    | {"SINGLE", "LSQB", "NUMBERS", "LEFT_RIGHT", "LEFT_OPEN", "DASH_OPEN", "LEFT_ARROW", "RIGHT_ARROW", "DASHES"},
    "an operator": {"STAR", "SLASH", "PERCENT", "CARET", "DOT", "LSQB", "COLON", "LEFT_OPEN", "DASH_OPEN", "DASHES"}
    | {"LEFT_RIGHT", "LEFT_ARROW", "RIGHT_ARROW"},
    "a clause": {"WHERE", "ORDER", "SKIP", "LIMIT", "SEARCH", "HYBRID", "CALL", "BEAM", "UNION", "EXPLAIN", "SEMI"},
}
_AS_OF_VALUES = {"INT", "STRING", "PARAM", "TIME"}
_STRINGS_AND_COMMENTS = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|`[^`]*`|//[^\n]*|/\*.*?\*/", re.S)


def _syntax_message(text: str, exc: UnexpectedInput) -> str:
    line, column = max(exc.line, 1), max(exc.column, 1)
    if not text.strip(" \t\r\n;"):
        return message_at(text, 1, 1, "the statement is empty: write one such as MATCH (n) RETURN n LIMIT 10")
    unsupported = _unsupported(text)
    if unsupported is not None:
        name, (line, column) = unsupported
        return message_at(text, line, column, f"{name} is not supported")
    if isinstance(exc, UnexpectedCharacters):
        pos = exc.pos_in_stream or 0
        char = text[pos] if pos < len(text) else ""
        if char and char in "'\"":
            return message_at(text, line, column, f"the string starting here is not closed; end it with {char}")
        if char == "`":
            return message_at(text, line, column, "the `name` starting here is not closed; end it with `")
        expected = _expected(text, pos, set(exc.allowed or ()))
        return message_at(text, line, column, f"expected {expected} but found {char!r}")
    if isinstance(exc, UnexpectedToken | UnexpectedEOF):
        token = exc.token
        at_end = token.type == "$END"
        if at_end:  # lark puts the end at (1, 1) on some paths: point after the last character
            line = text.count("\n", 0, len(text.rstrip())) + 1
            column = len(text.rstrip().rsplit("\n", 1)[-1]) + 1
        found = "the end of the statement" if at_end else repr(str(token))
        pos = len(text.rstrip()) if at_end else (token.start_pos or 0)
        names = set(exc.expected)
        if exc.interactive_parser is not None:  # LALR merges states: ask which tokens really go on
            accepts = typing.cast(Callable[[], set[str]], exc.interactive_parser.accepts)
            names = accepts() or names
        return message_at(text, line, column, f"expected {_expected(text, pos, names)} but found {found}")
    return message_at(text, line, column, "this does not parse")  # pragma: no cover - lark's other errors


def _unsupported(text: str) -> tuple[str, tuple[int, int]] | None:
    blank = _STRINGS_AND_COMMENTS.sub(lambda m: " " * len(m.group(0)), text)
    for pattern, name in _UNSUPPORTED:
        found = pattern.search(blank)
        if found is not None:
            start = found.start(1) if pattern.groups else found.start()  # a group marks the word itself
            line = text.count("\n", 0, start) + 1
            name = name or " ".join(found.group(0).upper().split())  # the words as written
            return name, (line, start - (text.rfind("\n", 0, start) + 1) + 1)
    return None


_ARROW = re.compile(r"-->|<--|--|<?-\s*\[")
_BRACKETS = {"(": ")", "[": "]", "{": "}"}


def _construct_at(text: str, exc: UnexpectedInput) -> tuple[str, tuple[int, int]] | None:
    """The openCypher construct drsg does not read that a statement failing at ``exc`` was
    writing — a map projection (``n {.k}``), a pattern comprehension (``[(a)-->(b) | b.v]``) or
    ``reduce(acc = 0, x IN l | …)`` — and the (line, column) where it starts."""
    if not isinstance(exc, UnexpectedToken):
        return None
    found = _construct_start(text, exc.token.start_pos or 0, exc.token.type)
    if found is None:
        return None
    name, start = found
    return name, (text.count("\n", 0, start) + 1, start - (text.rfind("\n", 0, start) + 1) + 1)


def _construct_start(text: str, pos: int, found: str) -> tuple[str, int] | None:
    before = _STRINGS_AND_COMMENTS.sub(lambda m: " " * len(m.group(0)), text[:pos])
    if found == "LBRACE" and re.search(r"[\w`]\s*$", before):
        return "a map projection (v {.key, …})", pos
    if found not in ("PIPE", "WHERE"):
        return None
    opened: list[int] = []  # where each bracket still open at pos opened
    for i, char in enumerate(before):
        if char in _BRACKETS:
            opened.append(i)
        elif char in _BRACKETS.values() and opened:
            opened.pop()
    if not opened:
        return None
    start = opened[-1]
    if before[start] == "[" and _ARROW.search(before, start):
        return "a pattern comprehension ([(a)-->(b) | …])", start
    reduce = re.search(r"\breduce\s*$", before[:start], re.I)
    if before[start] == "(" and reduce is not None:
        return "reduce(…)", reduce.start()
    return None


def _expected(text: str, pos: int, names: set[str]) -> str:
    """What the parser could take at ``pos``, in the user's words."""
    before = text[:pos].rstrip()
    if names and names <= {"NAME", "ESC_NAME"}:
        if before.endswith(":"):
            opener = max(before.rfind("["), before.rfind("("))
            in_rel = opener >= 0 and before[opener] == "[" and before[:opener].rstrip().endswith("-")
            return "a relationship type after ':'" if in_rel else "a label after ':'"
        if before.endswith("."):
            return "a property name after '.'"
        return "a name"
    if names == _AS_OF_VALUES:
        return "a seq, a quoted RFC 3339 time, TIME ms or a $parameter after AS OF"
    words: list[str] = []
    groups = (("an expression", _EXPRESSION_START), ("an operator", _OPERATORS), ("a clause", _CLAUSES))
    for word, group in groups:
        if len(names & group) >= 3:
            words.append(word)
            names = names - group - _GROUP_REST[word]
    ends = "$END" in names
    for name in sorted(names - {"$END"}):
        word = _WORDS.get(name) or _terminal_text(name)
        if word not in words:
            words.append(word)
    if len(words) > 6:
        words = [*words[:6], "…"]
    if ends:
        words.append("the end of the statement")
    if not words:
        return "something else"
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


def _terminal_text(name: str) -> str:
    terminal = next((t for t in _lark().terminals if t.name == name), None)
    if terminal is None or terminal.pattern.type != "str":
        return name.lower().replace("_", " ")
    value = str(terminal.pattern.value)
    return value.upper() if value.isalpha() else repr(value)


if __name__ == "__main__":
    print(f"wrote {write_tables()}")
