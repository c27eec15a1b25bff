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
from dataclasses import dataclass, field
from typing import Any

from drsg.kernel.asof import AsOf, parse_as_of
from drsg.kernel.errors import BadValue, QuerySyntaxError, UsageError
from drsg.kernel.metrics import check_metric, plan_metric

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


@dataclass
class Plan:
    """A logical plan: one source and its steps, plus the AS OF it runs at."""

    source: dict[str, Any] | str
    steps: list[dict[str, Any] | str] = field(default_factory=list)
    as_of: AsOf | None = None

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "steps": self.steps}


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
        source: dict[str, Any] = {
            "label": label,
            "property": prop or "embedding",
            "metric": plan_metric(metric),
            "k": k,
        }
        source["query_text" if isinstance(query, str) else "query"] = query
        return self._tail(var, {"VectorTopK": source})

    def _keyword(self, var: str, label: str | None, prop: str | None) -> Plan:
        self.take("MATCHING")
        text = json.loads(self.take(kind="string", what="a quoted string after MATCHING").text)
        if label is None or prop is None:
            raise QuerySyntaxError('a keyword SEARCH needs a label and ON: SEARCH (d:Doc) ON body MATCHING "…"')
        k = 10
        if self.peek("TOPK"):
            self.take("TOPK")
            k = self.number("TOPK")
        return self._tail(var, {"KeywordTopK": {"label": label, "property": prop, "query": text, "k": k}})

    def _near_value(self) -> str | list[float]:
        """What NEAR is followed by: a text to embed, or a vector's numbers."""
        tok = self.peek()
        if tok is None:
            raise QuerySyntaxError('NEAR needs a "text", a [vector] or a $param')
        if tok.kind == "string":
            self.i += 1
            return str(json.loads(tok.text))
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

    def _tail(self, var: str, source: dict[str, Any]) -> Plan:
        plan = Plan(source)
        if self.peek("RETURN"):
            self.take("RETURN")
            tok = self.take(what=f"RETURN {var} or RETURN *")
            if tok.text not in (var, "*"):
                raise QuerySyntaxError(f"RETURN can name only {var} (or *), not {tok.text}")
        if self.peek("LIMIT"):
            self.take("LIMIT")
            plan.steps.append({"Limit": self.number("LIMIT")})
        if self.peek("AS"):
            self.take("AS")
            self.take("OF", what="OF after AS")
            tok = self.take(what="a seq, a quoted time or TIME ms")
            if tok.text.upper() == "TIME":
                plan.as_of = AsOf(ms=self.number("TIME"))
            elif tok.kind == "string":
                plan.as_of = parse_as_of(json.loads(tok.text))
            elif tok.kind == "number" and tok.text.isdigit():
                plan.as_of = parse_as_of(int(tok.text))
            else:
                raise QuerySyntaxError(f"AS OF takes a seq, a quoted RFC 3339 time or TIME ms, not {tok.text}")
        if self.i < len(self.tokens):
            tok = self.tokens[self.i]
            raise QuerySyntaxError(
                f"unexpected {tok.text!r} {_excerpt(self.text, tok.pos)}; this form is not supported"
            )
        return plan


def _floats(value: Any, what: str) -> list[float]:
    if not isinstance(value, list) or not value or not all(isinstance(v, (int, float)) for v in value):
        raise QuerySyntaxError(f"{what} must be a list of numbers or a string")
    return [float(v) for v in value]


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
    except ValueError as exc:
        raise UsageError(f'the plan is not valid JSON ({exc}); pass {{"source": …, "steps": […]}}') from None
    if not isinstance(obj, dict) or "source" not in obj:
        raise UsageError('a plan is a JSON object with "source" (and optional "steps")')
    steps = obj.get("steps", [])
    if not isinstance(steps, list):
        raise UsageError('"steps" must be a list')
    return Plan(obj["source"], steps)
