"""The typed logical plan and upstream's wire JSON are one thing read two ways.

For generated valid wire plans (optional fields left out or present, in any order), reading a plan
and writing it back gives the same JSON, key for key and in order: ``ask`` answers the plans a
model wrote, so a field it left out must not appear. For generated typed plans (what a front end
such as Cypher would build, without JSON), writing and reading back gives the same plan.
"""

from __future__ import annotations

import json
from typing import Any

import hypothesis.strategies as st
from hypothesis import given, settings

from drsg.plan import expr as x
from drsg.plan import logical as lp
from drsg.plan.algo import AlgoSpec
from drsg.plan.query import plan_from_json

names = st.text("abcdefghXYZ_é", min_size=1, max_size=6)
ints = st.integers(-(2**40), 2**40)
floats = st.floats(allow_nan=False, allow_infinity=False)
scalars = st.one_of(st.none(), names, ints, floats, st.booleans())


def _some_of(required: dict[str, Any], optional: dict[str, st.SearchStrategy[Any]]) -> st.SearchStrategy[Any]:
    """An object with ``required``'s fields and any of ``optional``'s, its keys in any order."""
    drawn = st.fixed_dictionaries(required, optional=optional)
    return drawn.flatmap(lambda body: st.permutations(list(body.items())).map(dict))


# ---------------------------------------------------------------------------- wire JSON

wire_literals = st.one_of(
    st.just({"Literal": "Null"}),
    ints.map(lambda v: {"Literal": {"Int": v}}),
    st.one_of(floats, ints).map(lambda v: {"Literal": {"Float": v}}),  # a Float may be written 1
    names.map(lambda v: {"Literal": {"Str": v}}),
    st.booleans().map(lambda v: {"Literal": {"Bool": v}}),
    st.lists(scalars, max_size=3).map(lambda v: {"Literal": {"List": v}}),
)
wire_leaves = st.one_of(
    names.map(lambda n: {"Property": n}),
    names.map(lambda n: {"HasLabel": n}),
    st.sampled_from(["ExternalKey", "Score", "Hops"]),
    wire_literals,
)


def _wire_compound(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    binary = st.sampled_from(
        [("Compare", op) for op in ("Eq", "Ne", "Lt", "Le", "Gt", "Ge")]
        + [("Logic", "And"), ("Logic", "Or")]
        + [("Arith", op) for op in ("Add", "Sub", "Mul", "Div")]
        + [("StringMatch", op) for op in ("Contains", "StartsWith", "EndsWith")]
    )
    return st.one_of(
        inner.map(lambda e: {"IsNull": e}),
        inner.map(lambda e: {"Not": e}),
        st.builds(lambda kind_op, a, b: {kind_op[0]: {"op": kind_op[1], "lhs": a, "rhs": b}}, binary, inner, inner),
        st.builds(lambda a, b: {"In": {"needle": a, "haystack": b}}, inner, inner),
    )


wire_exprs = st.recursive(wire_leaves, _wire_compound, max_leaves=8)
dirs = st.sampled_from(["Out", "In", "Both"])
hops = st.integers(0, lp.MAX_HOPS)
edge_types = st.one_of(st.none(), names)
wire_steps = st.one_of(
    _some_of({}, {"dir": dirs, "edge_type": edge_types}).map(lambda b: {"Expand": b}),
    _some_of({}, {"dir": dirs, "edge_type": edge_types, "min": st.integers(0, lp.MAX_HOPS), "max": hops})
    .filter(lambda b: b.get("min", 1) <= b.get("max", 1))
    .map(lambda b: {"ExpandVar": b}),
    wire_exprs.map(lambda e: {"Filter": e}),
    st.just("Distinct"),
    st.lists(_some_of({"expr": wire_exprs}, {"descending": st.booleans()}), min_size=1, max_size=3).map(
        lambda keys: {"Sort": keys}
    ),
    st.integers(0, lp.MAX_K).map(lambda n: {"Skip": n}),
    st.integers(0, lp.MAX_K).map(lambda n: {"Limit": n}),
)
counts = st.integers(0, lp.MAX_K)
metrics = st.sampled_from(["Cosine", "Dot", "L2", "cosine", "dot", "l2"])
vector_query = st.one_of(
    st.lists(st.one_of(floats, ints), min_size=1, max_size=4).map(lambda q: ("query", q)),
    names.map(lambda t: ("query_text", t)),
)
json_values = st.recursive(
    scalars, lambda inner: st.one_of(st.lists(inner), st.dictionaries(names, inner)), max_leaves=6
)
node_refs = st.one_of(names.map(lambda k: {"Key": k}), st.integers(0, 1000).map(lambda i: {"Id": i}))
algos = st.one_of(
    st.just("ConnectedComponents"),
    _some_of({}, {"damping": st.floats(0, 1), "max_iters": st.integers(1, 100), "tolerance": st.floats(0, 1)}).map(
        lambda b: {"PageRank": b}
    ),
    _some_of({}, {"max_levels": st.integers(1, 100), "min_gain": st.floats(0, 1)}).map(lambda b: {"Louvain": b}),
    _some_of({"from": node_refs, "to": node_refs}, {"dir": dirs, "weight": st.one_of(st.none(), names)}).map(
        lambda b: {"ShortestPath": b}
    ),
)
wire_sources = st.one_of(
    st.just("ScanAll"),
    names.map(lambda n: {"ScanLabel": n}),
    st.lists(st.integers(0, 2**40)).map(lambda ids: {"SeekIds": ids}),
    st.lists(st.text(max_size=5)).map(lambda keys: {"SeekKeys": keys}),
    st.builds(
        lambda body, query: {"VectorTopK": dict([*body.items(), query])},
        _some_of({}, {"label": st.one_of(st.none(), names), "property": names, "metric": metrics, "k": counts}),
        vector_query,
    ),
    _some_of({"label": names, "property": names, "query": names}, {"k": counts}).map(lambda b: {"KeywordTopK": b}),
    json_values.map(lambda body: {"Hybrid": body}),  # checked where it runs, as it always was
    _some_of({"algo": algos}, {"label": st.one_of(st.none(), names)}).map(lambda b: {"Algo": b}),
)
wire_plans = st.builds(lambda s, steps: {"source": s, "steps": steps}, wire_sources, st.lists(wire_steps, max_size=5))


@settings(max_examples=300, deadline=None)
@given(wire=wire_plans)
def test_a_wire_plan_reads_and_writes_back_exactly(wire: dict[str, Any]) -> None:
    plan = lp.parse_plan(wire)
    assert plan.to_json() == wire
    assert json.dumps(plan.to_json()) == json.dumps(wire)  # and in the same key order
    assert plan_from_json(wire).to_json() == wire  # what ask answers and a surface shows
    assert lp.parse_plan(plan.to_json()) == plan


@given(source=wire_sources)
def test_steps_may_be_left_out(source: Any) -> None:
    assert lp.parse_plan({"source": source}).to_json() == {"source": source, "steps": []}


# ---------------------------------------------------------------------------- typed plans

typed_literals = st.one_of(
    st.just(x.Literal("Null")),
    st.builds(x.Literal, st.just("Int"), ints),
    st.builds(x.Literal, st.just("Float"), floats),
    st.builds(x.Literal, st.just("Str"), names),
    st.builds(x.Literal, st.just("Bool"), st.booleans()),
    st.builds(x.Literal, st.just("List"), st.lists(scalars, max_size=3).map(tuple)),
)
typed_leaves = st.one_of(
    st.builds(x.Property, names),
    st.builds(x.HasLabel, names),
    st.sampled_from([x.ExternalKey(), x.Score(), x.Hops()]),
    typed_literals,
)


def _typed_compound(inner: st.SearchStrategy[x.Expr]) -> st.SearchStrategy[x.Expr]:
    return st.one_of(
        st.builds(x.IsNull, inner),
        st.builds(x.Not, inner),
        st.builds(x.Compare, st.sampled_from(["Eq", "Ne", "Lt", "Le", "Gt", "Ge"]), inner, inner),
        st.builds(x.Logic, st.sampled_from(["And", "Or"]), inner, inner),
        st.builds(x.Arith, st.sampled_from(["Add", "Sub", "Mul", "Div"]), inner, inner),
        st.builds(x.StringMatch, st.sampled_from(["Contains", "StartsWith", "EndsWith"]), inner, inner),
        st.builds(x.In, inner, inner),
    )


typed_exprs = st.recursive(typed_leaves, _typed_compound, max_leaves=8)
typed_steps = st.one_of(
    st.builds(lp.Expand, dirs, edge_types),
    st.integers(0, lp.MAX_HOPS).flatmap(
        lambda low: st.builds(lp.ExpandVar, dirs, edge_types, st.just(low), st.integers(low, lp.MAX_HOPS))
    ),
    st.builds(lp.Filter, typed_exprs),
    st.just(lp.Distinct()),
    st.builds(lp.Sort, st.lists(st.builds(lp.SortKey, typed_exprs, st.booleans()), min_size=1, max_size=3).map(tuple)),
    st.builds(lp.Skip, counts),
    st.builds(lp.Limit, counts),
)
typed_sources = st.one_of(
    st.just(lp.ScanAll()),
    st.builds(lp.ScanLabel, names),
    st.builds(lp.SeekIds, st.lists(st.integers(0, 2**40)).map(tuple)),
    st.builds(lp.SeekKeys, st.lists(st.text(max_size=5)).map(tuple)),
    st.builds(
        lambda label, prop, metric, k, q: lp.VectorTopK(label, prop, metric, k, *q),
        st.one_of(st.none(), names),
        names,
        metrics,
        counts,
        st.one_of(
            st.lists(floats, min_size=1, max_size=4).map(lambda v: (tuple(v), None)), names.map(lambda t: (None, t))
        ),
    ),
    st.builds(lp.KeywordTopK, names, names, names, counts),
    st.builds(lp.Hybrid, json_values),
    st.builds(
        lambda label, damping: lp.Algo(AlgoSpec("pagerank", label, damping=damping)),
        st.one_of(st.none(), names),
        st.floats(0, 1),
    ),
    st.builds(lambda src, dst: lp.Algo(AlgoSpec("shortest_path", src=src, dst=dst)), names, st.integers(0, 99)),
)
typed_plans = st.builds(lp.LogicalPlan, typed_sources, st.lists(typed_steps, max_size=5).map(tuple))


@settings(max_examples=300, deadline=None)
@given(plan=typed_plans)
def test_a_typed_plan_writes_and_reads_back_the_same(plan: lp.LogicalPlan) -> None:
    assert lp.parse_plan(plan.to_json()) == plan
    assert lp.parse_plan(json.loads(json.dumps(plan.to_json()))) == plan  # through the wire's text too


def test_a_left_out_field_is_the_default_in_the_typed_plan() -> None:
    """What a consumer reads does not depend on how the wire wrote it; only to_json remembers."""
    terse = lp.parse_step({"ExpandVar": {"max": 2}}, lp.MAX_K)
    assert terse == lp.ExpandVar("Out", None, 1, 2)
    assert terse.to_json() == {"ExpandVar": {"max": 2}}
    full = {"ExpandVar": {"dir": "Out", "edge_type": None, "min": 1, "max": 2}}
    assert lp.ExpandVar("Out", None, 1, 2).to_json() == full
    vector = lp.parse_source({"VectorTopK": {"query_text": "t"}})
    assert vector == lp.VectorTopK(query_text="t")
    assert (vector.property, vector.metric, vector.k, vector.label) == ("embedding", "Cosine", 10, None)
