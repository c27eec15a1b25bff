"""The query language's SEARCH forms and the logical-plan JSON they compile to (pure).

    SEARCH (v[:Label]) [ON prop] NEAR <"text" | [1.0, 2.0] | $param> [METRIC cosine|dot|l2] [TOPK k]
        [RETURN v|*] [LIMIT n] [AS OF <seq | "RFC3339" | TIME ms>]
    SEARCH (d:Doc) ON body MATCHING "text" [TOPK k] [RETURN d|*] [LIMIT n] [AS OF …]

Plans follow upstream's serde shape: ``{"source": {"VectorTopK": {...}}, "steps": [{"Limit": n}]}``.
A ``NEAR "text"`` query carries the text until a surface embeds it (``query_text`` in the source).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from drsg.kernel.asof import AsOf, parse_as_of
from drsg.kernel.errors import BadValue, QuerySyntaxError, UsageError
from drsg.kernel.metrics import check_metric, plan_metric
from drsg.kernel.values import Json
from drsg.plan.logical import MAX_K as MAX_K  # re-exported: the bound surfaces check their params against
from drsg.plan.logical import (
    Algo,
    Distinct,
    Expand,
    ExpandVar,
    Filter,
    Hybrid,
    KeywordTopK,
    Limit,
    LogicalPlan,
    ScanAll,
    ScanLabel,
    SeekIds,
    SeekKeys,
    Skip,
    Sort,
    Source,
    Step,
    VectorTopK,
    check_floats,
    parse_plan,
    parse_source,
    parse_step,
)

_TOKEN = re.compile(
    r"""\s*(?:
        (?P<string>"(?:[^"\\]|\\.)*")
      | (?P<number>-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)
      | (?P<param>\$[A-Za-z_][A-Za-z0-9_]*)
      | (?P<word>[A-Za-z_][A-Za-z0-9_]*)
      | (?P<punct>[()\[\]:,*])
    )""",
    re.VERBOSE,
)


_SOURCE_TYPES = (ScanAll, ScanLabel, SeekIds, SeekKeys, VectorTopK, KeywordTopK, Hybrid, Algo)
_STEP_TYPES = (Expand, ExpandVar, Filter, Distinct, Sort, Skip, Limit)


@dataclass(frozen=True, slots=True, init=False)
class Plan:
    """A checked logical plan and the AS OF it runs at. ``logical`` is the typed plan every consumer
    runs; ``source`` and ``steps`` are its wire JSON (upstream's serde shape), for a surface to show.
    Made from typed parts, or from wire JSON, which is checked (:func:`drsg.plan.logical.parse_source`)."""

    logical: LogicalPlan
    as_of: AsOf | None

    def __init__(self, source: Source | Json, steps: Sequence[Step | Json] = (), as_of: AsOf | None = None) -> None:
        typed = source if isinstance(source, _SOURCE_TYPES) else parse_source(source)
        parsed = tuple(s if isinstance(s, _STEP_TYPES) else parse_step(s, MAX_K) for s in steps)
        object.__setattr__(self, "logical", LogicalPlan(typed, parsed))
        object.__setattr__(self, "as_of", as_of)

    @classmethod
    def of(cls, logical: LogicalPlan, as_of: AsOf | None = None) -> Plan:
        return cls(logical.source, logical.steps, as_of)

    @property
    def source(self) -> Json:
        return self.logical.source.to_json()

    @property
    def steps(self) -> list[Json]:
        return [step.to_json() for step in self.logical.steps]

    def to_json(self) -> dict[str, Json]:
        return self.logical.to_json()


@dataclass
class _Tok:
    kind: str
    text: str
    pos: int


def _tokenize(text: str) -> list[_Tok]:
    tokens, pos = [], 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        match = _TOKEN.match(text, pos)
        if match is None or match.end() == pos:
            raise QuerySyntaxError(f"unexpected character {text[pos:].lstrip()[:1]!r} at {pos}: {_excerpt(text, pos)}")
        kind = match.lastgroup or ""
        tokens.append(_Tok(kind, match.group(kind), match.start(kind)))
        pos = match.end()
    return tokens


def _excerpt(text: str, pos: int) -> str:
    return f"…{text[max(0, pos - 20) : pos]}⟨here⟩{text[pos : pos + 20]}…"


class _Parser:
    def __init__(self, text: str, params: dict[str, Any]) -> None:
        self.text = text
        self.tokens = _tokenize(text)
        self.i = 0
        self.params = params

    # helpers
    def peek(self, word: str | None = None) -> _Tok | None:
        tok = self.tokens[self.i] if self.i < len(self.tokens) else None
        if word is not None and (tok is None or tok.text.upper() != word):
            return None
        return tok

    def take(self, word: str | None = None, kind: str | None = None, what: str = "") -> _Tok:
        tok = self.tokens[self.i] if self.i < len(self.tokens) else None
        ok = tok is not None and (word is None or tok.text.upper() == word) and (kind is None or tok.kind == kind)
        if not ok:
            where = _excerpt(self.text, tok.pos) if tok else "at the end of the query"
            found = repr(tok.text) if tok else "nothing"
            raise QuerySyntaxError(f"expected {what or word or kind}, found {found} {where}")
        self.i += 1
        assert tok is not None
        return tok

    def string(self, tok: _Tok) -> str:
        """A quoted string's text, with JSON's escapes (``\\"``, ``\\n``, ``\\u00e9``)."""
        try:
            return str(json.loads(tok.text))
        except ValueError as exc:
            msg = getattr(exc, "msg", str(exc)).lower()
            problem = (
                "a backslash escape JSON does not know"
                if "escape" in msg
                else "a raw control character (a tab or a line break)"
                if "control" in msg
                else msg
            )
            raise QuerySyntaxError(
                f"the string {_excerpt(self.text, tok.pos)} has {problem}; "
                "escape a backslash as \\\\ and write a tab as \\t"
            ) from None

    def number(self, what: str) -> int:
        tok = self.take(kind="number", what=f"a number after {what}")
        if not tok.text.isdigit():
            raise QuerySyntaxError(f"{what} must be a whole number, not {tok.text}")
        return int(tok.text)

    def node_pattern(self, keyword: str) -> tuple[str, str | None]:
        """``KEYWORD (var[:Label])`` → (var, label)."""
        self.take(keyword)
        self.take("(", what=f"'(' after {keyword}")
        var = self.take(kind="word", what="a variable name").text
        label = None
        if self.peek(":"):
            self.take(":")
            label = self.take(kind="word", what="a label").text
        self.take(")", what="')'")
        return var, label

    def metric(self) -> str:
        """``METRIC name`` → the metric's name (``cosine``, ``dot``, ``l2``)."""
        self.take("METRIC")
        name = self.take(kind="word", what="a metric").text
        try:
            return check_metric(name)
        except BadValue as exc:
            raise QuerySyntaxError(exc.message) from None

    # grammar
    def search(self) -> Plan:
        var, label = self.node_pattern("SEARCH")
        prop = None
        if self.peek("ON"):
            self.take("ON")
            prop = self.take(kind="word", what="a property name").text
        if self.peek("MATCHING"):
            return self._keyword(var, label, prop)
        self.take("NEAR", what="NEAR or MATCHING")
        query = self._near_value()
        metric = "cosine"
        k = 10
        while True:
            if self.peek("METRIC"):
                metric = self.metric()
            elif self.peek("TOPK"):
                self.take("TOPK")
                k = self.number("TOPK")
            else:
                break
        text, numbers = (query, None) if isinstance(query, str) else (None, tuple(query))
        return self._tail(var, VectorTopK(label, prop or "embedding", plan_metric(metric), k, numbers, text))

    def _keyword(self, var: str, label: str | None, prop: str | None) -> Plan:
        self.take("MATCHING")
        text = self.string(self.take(kind="string", what="a quoted string after MATCHING"))
        if label is None or prop is None:
            raise QuerySyntaxError('a keyword SEARCH needs a label and ON: SEARCH (d:Doc) ON body MATCHING "…"')
        k = 10
        if self.peek("TOPK"):
            self.take("TOPK")
            k = self.number("TOPK")
        return self._tail(var, KeywordTopK(label, prop, text, k))

    def _near_value(self) -> str | list[float]:
        """What NEAR is followed by: a text to embed, or a vector's numbers."""
        tok = self.peek()
        if tok is None:
            raise QuerySyntaxError('NEAR needs a "text", a [vector] or a $param')
        if tok.kind == "string":
            self.i += 1
            return self.string(tok)
        if tok.kind == "param":
            self.i += 1
            name = tok.text[1:]
            if name not in self.params:
                raise QuerySyntaxError(f"parameter ${name} has no value; pass it with --param {name}=<json>")
            value = self.params[name]
            return value if isinstance(value, str) else _floats(value, f"${name}")
        if tok.text == "[":
            self.i += 1
            values: list[float] = []
            while True:
                values.append(float(self.take(kind="number", what="a number").text))
                if self.peek("]"):
                    self.take("]")
                    return values
                self.take(",", what="',' or ']'")
        raise QuerySyntaxError(f'NEAR needs a "text", a [vector] or a $param, not {tok.text!r}')

    def _tail(self, var: str, source: Source) -> Plan:
        """What follows a statement's source: RETURN, LIMIT, AS OF (unchecked against MAX_K, as always)."""
        steps: list[Step] = []
        as_of = None
        if self.peek("RETURN"):
            self.take("RETURN")
            tok = self.take(what=f"RETURN {var} or RETURN *")
            if tok.text not in (var, "*"):
                raise QuerySyntaxError(f"RETURN can name only {var} (or *), not {tok.text}")
        if self.peek("LIMIT"):
            self.take("LIMIT")
            steps.append(Limit(self.number("LIMIT")))
        if self.peek("AS"):
            self.take("AS")
            self.take("OF", what="OF after AS")
            tok = self.take(what="a seq, a quoted time or TIME ms")
            if tok.text.upper() == "TIME":
                as_of = AsOf(ms=self.number("TIME"))
            elif tok.kind == "string":
                as_of = parse_as_of(self.string(tok))
            elif tok.kind == "number" and tok.text.isdigit():
                as_of = parse_as_of(int(tok.text))
            else:
                raise QuerySyntaxError(f"AS OF takes a seq, a quoted RFC 3339 time or TIME ms, not {tok.text}")
        if self.i < len(self.tokens):
            tok = self.tokens[self.i]
            raise QuerySyntaxError(
                f"unexpected {tok.text!r} {_excerpt(self.text, tok.pos)}; this form is not supported"
            )
        return Plan(source, steps, as_of)


def _floats(value: Any, what: str) -> list[float]:
    return [float(v) for v in check_floats(value, what)]


def parse_search(text: str, params: dict[str, Any] | None = None) -> Plan:
    """Compile a SEARCH statement to a plan; errors are one line and point at the problem."""
    parser = _Parser(text.strip().rstrip(";"), params or {})
    if parser.peek("SEARCH") is None:
        raise QuerySyntaxError('a query here starts with SEARCH, e.g. SEARCH (d:Doc) ON body MATCHING "graph"')
    return parser.search()


def parse_plan_json(text: str) -> Plan:
    """Read upstream's logical-plan JSON (``{"source": …, "steps": […]}``)."""
    try:
        obj = json.loads(text)
    except (ValueError, RecursionError) as exc:
        reason = "it nests too deeply" if isinstance(exc, RecursionError) else str(exc)
        raise UsageError(f'the plan is not valid JSON ({reason}); pass {{"source": …, "steps": […]}}') from None
    return plan_from_json(obj)


def plan_from_json(obj: Any, as_of: AsOf | None = None) -> Plan:
    """A logical plan from its JSON, checked against upstream's shape: each source with the fields of
    its kind and their types, ``k`` and step counts in [0, MAX_K]. A malformed plan is one UsageError
    naming the field, never a failure where the plan runs."""
    return Plan.of(parse_plan(obj), as_of)
