"""The logical plan as types: its sources and steps, read once from upstream's serde shape (pure).

    {"source": <Source>, "steps": [<Step>, …]}

    Sources  "ScanAll"   {"ScanLabel": "L"}   {"SeekIds": [1, 2]}   {"SeekKeys": ["k"]}
             {"VectorTopK": {"label", "property", "metric", "k", "query" | "query_text"}}
             {"KeywordTopK": {"label", "property", "query", "k"}}   {"Hybrid": {…}}   {"Algo": {…}}
    Steps    {"Expand": {"dir": "Out"|"In"|"Both", "edge_type": "T"|null}}
             {"ExpandVar": {"dir", "edge_type", "min": 1, "max": 3}}       walk semantics: nodes may repeat
             {"Filter": <Expr>}   "Distinct"   {"Sort": [{"expr": <Expr>, "descending": false}]}
             {"Skip": n}   {"Limit": n}

:func:`parse_plan` checks a wire plan against that shape (each field's type, ``k`` and counts in
[0, MAX_K]) and gives a :class:`LogicalPlan`; a malformed plan is one UsageError naming the field,
never a failure where it runs. ``to_json()`` gives back exactly the wire JSON it was read from:
fields a body may leave out (a ``k``, a ``dir``, ``descending``) are written back only when they
were there, in their order (``wire``, not compared). Everything that runs a plan — the executor
(:mod:`drsg.workers.plans`), the schema check, ``ask`` — dispatches on these classes.

Two sources are held as upstream's body: ``Hybrid`` (its :class:`drsg.plan.hybrid.HybridSpec` is
read where the plan runs, as it always was: a bad body fails there) and ``Algo`` (checked here
into an :class:`AlgoSpec`, the body kept to write back). A front end such as openCypher (issue 36)
compiles to these classes directly; upstream's ``ExpandBeam``/``FrontierTopK`` steps and
``Distance``/``Similarity`` expressions would be new variants of the unions.
"""

from __future__ import annotations

import typing
from collections.abc import Mapping
from dataclasses import field

from drsg.kernel.errors import QuerySyntaxError, UsageError
from drsg.kernel.frozen import hashable
from drsg.kernel.metrics import check_metric
from drsg.kernel.values import MAX_ID, Json, check_utf8
from drsg.plan.algo import AlgoSpec
from drsg.plan.expr import Expr, parse_expr

#: most results one search may ask for (k, TOPK, a Limit)
MAX_K = 10_000
#: most hops one ExpandVar may walk (a walk grows with the fan-out to this power)
MAX_HOPS = 6
Direction = typing.Literal["Out", "In", "Both"]
#: a step's direction → the snapshot's spelling
DIRECTIONS: dict[str, str] = {"Out": "out", "In": "in", "Both": "both"}
SOURCES = ("ScanAll", "ScanLabel", "SeekIds", "SeekKeys", "VectorTopK", "KeywordTopK", "Hybrid", "Algo")
STEPS = ("Expand", "ExpandVar", "Filter", "Distinct", "Sort", "Skip", "Limit")
Wire = tuple[str, ...] | None  # a body's fields as written, in order; None: all of them, upstream's order


def _body(wire: Wire, canonical: tuple[str, ...], values: Mapping[str, Json]) -> dict[str, Json]:
    return {name: values[name] for name in (canonical if wire is None else wire)}


def _given(body: Mapping[str, object], canonical: tuple[str, ...]) -> Wire:
    fields = tuple(body)
    return None if fields == canonical else fields


# ---------------------------------------------------------------------------- sources


@hashable
class ScanAll:
    def to_json(self) -> Json:
        return "ScanAll"


@hashable
class ScanLabel:
    label: str

    def to_json(self) -> Json:
        return {"ScanLabel": self.label}


@hashable
class SeekIds:
    ids: tuple[int, ...]

    def to_json(self) -> Json:
        return {"SeekIds": list(self.ids)}


@hashable
class SeekKeys:
    keys: tuple[str, ...]

    def to_json(self) -> Json:
        return {"SeekKeys": list(self.keys)}


@hashable
class VectorTopK:
    """The ``k`` nearest by ``property``: to ``query``'s numbers, or to ``query_text`` once a
    surface embeds it (one of the two)."""

    label: str | None = None
    property: str = "embedding"
    metric: str = "Cosine"  # as written; check_metric reads either spelling
    k: int = 10
    query: tuple[float, ...] | None = None
    query_text: str | None = None
    wire: Wire = field(default=None, compare=False, repr=False)

    def to_json(self) -> Json:
        last = "query" if self.query is not None else "query_text"
        values: dict[str, Json] = {"label": self.label, "property": self.property, "metric": self.metric}
        query: Json = None if self.query is None else list(self.query)
        values |= {"k": self.k, "query": query, "query_text": self.query_text}
        return {"VectorTopK": _body(self.wire, ("label", "property", "metric", "k", last), values)}


@hashable
class KeywordTopK:
    label: str
    property: str
    query: str
    k: int = 10
    wire: Wire = field(default=None, compare=False, repr=False)

    def to_json(self) -> Json:
        values: dict[str, Json] = {"label": self.label, "property": self.property, "query": self.query, "k": self.k}
        return {"KeywordTopK": _body(self.wire, _KEYWORD, values)}


_KEYWORD = ("label", "property", "query", "k")


@hashable
class Hybrid:
    """A hybrid query's body as written: ``HybridSpec.from_plan_json(body)`` where it runs."""

    body: Json

    def to_json(self) -> Json:
        return {"Hybrid": self.body}


@hashable
class Algo:
    spec: AlgoSpec
    #: the body as written (defaults left out); None: the spec's own
    wire: Json = field(default=None, compare=False, repr=False)

    def to_json(self) -> Json:
        return {"Algo": self.spec.to_plan_json()["Algo"] if self.wire is None else self.wire}


Source = ScanAll | ScanLabel | SeekIds | SeekKeys | VectorTopK | KeywordTopK | Hybrid | Algo
SOURCE_TYPES = typing.get_args(Source)

# ---------------------------------------------------------------------------- steps


@hashable
class Expand:
    direction: Direction = "Out"
    edge_type: str | None = None
    wire: Wire = field(default=None, compare=False, repr=False)

    def to_json(self) -> Json:
        return {"Expand": _body(self.wire, ("dir", "edge_type"), {"dir": self.direction, "edge_type": self.edge_type})}


@hashable
class ExpandVar:
    direction: Direction = "Out"
    edge_type: str | None = None
    min_hops: int = 1
    max_hops: int = 1
    wire: Wire = field(default=None, compare=False, repr=False)

    def to_json(self) -> Json:
        values: dict[str, Json] = {"dir": self.direction, "edge_type": self.edge_type}
        values |= {"min": self.min_hops, "max": self.max_hops}
        return {"ExpandVar": _body(self.wire, ("dir", "edge_type", "min", "max"), values)}


@hashable
class Filter:
    expr: Expr

    def to_json(self) -> Json:
        return {"Filter": self.expr.to_json()}


@hashable
class Distinct:
    def to_json(self) -> Json:
        return "Distinct"


@hashable
class SortKey:
    expr: Expr
    descending: bool = False
    wire: Wire = field(default=None, compare=False, repr=False)

    def to_json(self) -> Json:
        return _body(self.wire, ("expr", "descending"), {"expr": self.expr.to_json(), "descending": self.descending})


@hashable
class Sort:
    keys: tuple[SortKey, ...]

    def to_json(self) -> Json:
        return {"Sort": [key.to_json() for key in self.keys]}


@hashable
class Skip:
    count: int

    def to_json(self) -> Json:
        return {"Skip": self.count}


@hashable
class Limit:
    count: int

    def to_json(self) -> Json:
        return {"Limit": self.count}


Step = Expand | ExpandVar | Filter | Distinct | Sort | Skip | Limit
STEP_TYPES = typing.get_args(Step)


@hashable
class LogicalPlan:
    """One source and the steps after it (upstream's ``LogicalPlan``)."""

    source: Source
    steps: tuple[Step, ...] = ()

    def then(self, step: Step) -> LogicalPlan:
        return LogicalPlan(self.source, (*self.steps, step))

    def to_json(self) -> dict[str, Json]:
        return {"source": self.source.to_json(), "steps": [step.to_json() for step in self.steps]}


# ---------------------------------------------------------------------------- reading the wire form


def parse_plan(obj: object) -> LogicalPlan:
    """A logical plan from its wire JSON, checked against upstream's shape (the steps first)."""
    if not isinstance(obj, dict) or "source" not in obj:
        raise UsageError('a plan is a JSON object with "source" (and optional "steps")')
    unknown = set(obj) - {"source", "steps"}
    if unknown:
        raise UsageError(f"a plan has only source and steps, not {', '.join(sorted(map(str, unknown)))}")
    steps = obj.get("steps", [])
    if not isinstance(steps, list):
        raise UsageError('"steps" must be a list')
    parsed = tuple(parse_step(step, MAX_K) for step in steps)
    return LogicalPlan(parse_source(obj["source"]), parsed)


def parse_source(source: object) -> Source:
    if source == "ScanAll":
        return ScanAll()
    if not isinstance(source, dict) or len(source) != 1 or next(iter(source)) not in SOURCES[1:]:
        raise UsageError(f"plan source {source!r:.80} is not supported; use one of {', '.join(SOURCES)}")
    ((kind, body),) = source.items()
    if kind == "ScanLabel":
        return ScanLabel(_text(body, "ScanLabel's label"))
    if kind == "SeekIds":
        if not isinstance(body, list) or not all(_whole(i) and 0 <= i <= MAX_ID for i in body):
            raise UsageError("SeekIds takes a list of node ids (whole numbers from 0), e.g. [1, 2]")
        return SeekIds(tuple(body))
    if kind == "SeekKeys":
        if not isinstance(body, list) or not all(isinstance(key, str) for key in body):
            raise UsageError('SeekKeys takes a list of keys (strings), e.g. ["ada"]')
        return SeekKeys(tuple(body))
    if kind == "VectorTopK":
        return _vector(body)
    if kind == "KeywordTopK":
        return _keyword(body)
    if kind == "Algo":
        return Algo(AlgoSpec.from_plan_json(body), body)
    return Hybrid(body)


_TOPK_FIELDS = {
    "VectorTopK": ({"property", "query", "query_text", "k", "metric", "label"}, ()),
    "KeywordTopK": ({"property", "query", "k", "label"}, ("label", "property", "query")),
}


def _topk_body(kind: str, body: object) -> dict[str, object]:
    fields, required = _TOPK_FIELDS[kind]
    if not isinstance(body, dict):
        raise UsageError(f"{kind} takes an object with {', '.join(sorted(fields))}")
    unknown = set(body) - fields
    missing = [name for name in required if name not in body]
    if unknown or missing:
        what = f"has no field {sorted(map(str, unknown))[0]!r}" if unknown else f"needs {missing[0]!r}"
        raise UsageError(f"{kind} {what}; its fields are {', '.join(sorted(fields))}")
    return body


def _keyword(raw: object) -> KeywordTopK:
    body = _topk_body("KeywordTopK", raw)
    label = _text(body.get("label"), "KeywordTopK's label")
    prop = _text(body.get("property", "embedding"), "KeywordTopK's property")
    k = _count(body.get("k", 10), "KeywordTopK's k")
    return KeywordTopK(label, prop, _text(body["query"], "KeywordTopK's query"), k, _given(body, _KEYWORD))


def _vector(raw: object) -> VectorTopK:
    body = _topk_body("VectorTopK", raw)
    label = None if body.get("label") is None else _text(body.get("label"), "VectorTopK's label")
    prop = _text(body.get("property", "embedding"), "VectorTopK's property")
    k = _count(body.get("k", 10), "VectorTopK's k")
    metric = _text(body.get("metric", "Cosine"), "VectorTopK's metric")
    check_metric(metric)
    if ("query" in body) == ("query_text" in body):
        raise UsageError('VectorTopK takes "query" (a list of numbers) or "query_text" (text to embed), one of them')
    query, text = None, None
    if "query" in body:
        query = tuple(check_floats(body["query"], "VectorTopK's query"))
        last = "query"
    else:
        text, last = _text(body["query_text"], "VectorTopK's query_text"), "query_text"
    wire = _given(body, ("label", "property", "metric", "k", last))
    return VectorTopK(label, prop, metric, k, query, text, wire)


def parse_step(step: object, max_count: int) -> Step:
    """One typed step, or a UsageError naming what is wrong with it."""
    if step == "Distinct":
        return Distinct()
    if not isinstance(step, dict) or len(step) != 1 or next(iter(step)) not in STEPS:
        raise UsageError(f"plan step {step!r:.60} is not supported; the steps are {', '.join(STEPS)}")
    ((name, body),) = step.items()
    if name in ("Limit", "Skip"):
        if not (_whole(body) and 0 <= body <= max_count):
            raise UsageError(f"{name} must be a whole number from 0 to {max_count}, not {body!r:.40}")
        return Limit(body) if name == "Limit" else Skip(body)
    if name in ("Expand", "ExpandVar"):
        return _expand(name, body)
    if name == "Filter":
        return Filter(parse_expr(body))
    if name == "Sort":
        return Sort(_sort_keys(body))
    raise UsageError('Distinct takes no argument: write "Distinct"')


def _sort_keys(body: object) -> tuple[SortKey, ...]:
    if not isinstance(body, list) or not body:
        raise UsageError('Sort takes a list of keys: [{"expr": {"Property": "born"}, "descending": false}]')
    keys = []
    for key in body:
        if not isinstance(key, dict) or "expr" not in key or set(key) - {"expr", "descending"}:
            raise UsageError(f'a Sort key is {{"expr": …, "descending": bool}}, not {key!r:.60}')
        descending = key.get("descending", False)
        if not isinstance(descending, bool):
            raise UsageError("a Sort key's descending must be true or false")
        keys.append(SortKey(parse_expr(key["expr"]), descending, _given(key, ("expr", "descending"))))
    return tuple(keys)


def _expand(name: str, body: object) -> Expand | ExpandVar:
    fields = {"dir", "edge_type"} | ({"min", "max"} if name == "ExpandVar" else set())
    if not isinstance(body, dict) or set(body) - fields:
        raise UsageError(f"{name} takes an object with {', '.join(sorted(fields))}")
    direction = _direction(body.get("dir", "Out"))
    if direction is None:
        raise UsageError(f"{name}'s dir must be Out, In or Both, not {body.get('dir')!r:.30}")
    edge_type = body.get("edge_type")
    if edge_type is not None and (not isinstance(edge_type, str) or not edge_type):
        raise UsageError(f"{name}'s edge_type must be an edge type's name or null")
    if edge_type is not None:
        check_utf8(edge_type, f"{name}'s edge_type")  # a JSON "\ud800" is a str, but no key can hold it
    if name == "Expand":
        return Expand(direction, edge_type, _given(body, ("dir", "edge_type")))
    low, high = body.get("min", 1), body.get("max", 1)
    if not (_whole(low) and _whole(high) and 0 <= low <= high <= MAX_HOPS):
        raise UsageError(f"ExpandVar needs whole numbers 0 ≤ min ≤ max ≤ {MAX_HOPS}, not {low!r:.10}..{high!r:.10}")
    wire = _given(body, ("dir", "edge_type", "min", "max"))
    return ExpandVar(direction, edge_type, low, high, wire)


def _direction(value: object) -> Direction | None:
    match value:
        case "Out" | "In" | "Both":
            return value
    return None


def check_floats(value: object, what: str) -> list[float]:
    """A query vector's numbers as written (a ``QuerySyntaxError`` for anything else)."""
    if not isinstance(value, list) or not value or not all(_number(v) for v in value):
        raise QuerySyntaxError(f"{what} must be a list of numbers or a string")
    return value


def _whole(value: object) -> typing.TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _number(value: object) -> typing.TypeGuard[float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _count(value: object, what: str) -> int:
    if not _whole(value) or not 0 <= value <= MAX_K:
        raise UsageError(f"{what} must be a whole number from 0 to {MAX_K}, not {value!r:.40}")
    return value


def _text(value: object, what: str) -> str:
    if not isinstance(value, str) or not value:
        raise UsageError(f"{what} must be a non-empty string, not {value!r:.40}")
    check_utf8(value, what)  # a JSON "\ud800" is a str, but no key or index can hold it
    return value
