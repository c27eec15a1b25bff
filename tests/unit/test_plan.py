"""The plan language on its own (pure: no database): the metric table, the hybrid spec, and what a
plan's query text is embedded for."""

from __future__ import annotations

import pytest

from drsg.kernel.errors import BadValue, QuerySyntaxError, UsageError
from drsg.kernel.metrics import METRICS, check_metric, plan_metric
from drsg.kernel.values import Vector
from drsg.plan.hybrid import (
    DEFAULT_WEIGHTS,
    GraphPart,
    HybridSpec,
    KeywordPart,
    VectorPart,
    text_property,
)
from drsg.plan.query import Plan, parse_plan_json
from drsg.plan.statements import parse_query


def test_one_metric_table_in_both_spellings() -> None:
    assert METRICS == ("cosine", "dot", "l2")
    assert [check_metric(m) for m in ("Cosine", "DOT", "l2")] == ["cosine", "dot", "l2"]
    assert [plan_metric(m) for m in METRICS] == ["Cosine", "Dot", "L2"]
    with pytest.raises(BadValue, match="unknown metric 'manhattan'; use one of cosine, dot, l2"):
        check_metric("manhattan")


def test_the_hybrid_form_compiles_to_the_spec_it_describes() -> None:
    plan = parse_query(
        'HYBRID (d:Doc) VECTOR ON emb NEAR [0.5, 1.5] METRIC l2 WEIGHT 0 KEYWORD ON body MATCHING "x" WEIGHT 2 '
        "GRAPH HOPS 2 DECAY 0.25 SEEDS 3 CANDIDATES 0 TOPK 7 FUSION rrf K 5"
    )
    assert isinstance(plan.source, dict)
    spec = HybridSpec.from_plan_json(plan.source["Hybrid"])
    assert spec == HybridSpec(
        label="Doc",
        vector=VectorPart("emb", Vector.of([0.5, 1.5]), "l2"),
        keyword=KeywordPart("body", "x"),
        graph=GraphPart(2, 0.25, 3),
        weights={"vector": 0.0, "keyword": 2.0, "graph": 0.5},  # a WEIGHT of 0 is kept, not defaulted
        candidates=1,  # upstream clamps CANDIDATES to ≥ 1
        k=7,
        fusion="rrf",
        rrf_k=5,
    )
    assert spec.to_plan_json() == plan.source


def test_the_spec_round_trips_its_plan_json() -> None:
    vector = VectorPart("emb", "some text", "dot")
    spec = HybridSpec(label="Doc", vector=vector, graph=GraphPart(1), graph_norm="minmax")
    body = spec.to_plan_json()["Hybrid"]
    assert body["vector"] == {"property": "emb", "metric": "Dot", "query_text": "some text"}
    assert body["graph"] == {"hops": 1, "decay": 0.5, "seeds": 10} and body["graph_norm"] == "minmax"
    assert body["weights"] == DEFAULT_WEIGHTS and "fusion" not in body
    assert HybridSpec.from_plan_json(body) == spec


@pytest.mark.parametrize(
    ("statement", "problem"),
    [
        ('HYBRID (d:Doc) KEYWORD ON b MATCHING "x" GRAPH HOPS 1 SEEDS 0', "graph seeds must be ≥ 1"),
        ('HYBRID (d:Doc) VECTOR NEAR "x" METRIC manhattan', "unknown metric 'manhattan'"),
    ],
)
def test_the_form_is_held_to_the_specs_checks(statement: str, problem: str) -> None:
    with pytest.raises(UsageError, match=problem):
        parse_query(statement)


def test_a_bad_metric_in_search_is_a_syntax_error() -> None:
    with pytest.raises(QuerySyntaxError, match="unknown metric 'taxicab'"):
        parse_query("SEARCH (v:Doc) NEAR [1.0] METRIC taxicab")
    assert parse_query("SEARCH (v:Doc) NEAR [1.0] METRIC DOT").source == {
        "VectorTopK": {"label": "Doc", "property": "embedding", "metric": "Dot", "k": 10, "query": [1.0]}
    }


@pytest.mark.parametrize(
    ("plan", "prop"),
    [
        (parse_query('SEARCH (v:Doc) ON vec NEAR "text"'), "vec"),
        (parse_query("SEARCH (v:Doc) ON vec NEAR [1.0, 2.0]"), None),
        (parse_query('HYBRID (d:Doc) VECTOR ON vec NEAR "text" KEYWORD ON body MATCHING "text"'), "vec"),
        (parse_query('HYBRID (d:Doc) KEYWORD ON body MATCHING "text"'), None),
        (parse_plan_json('{"source": {"Hybrid": {"vector": {"query_text": "t"}}}}'), "embedding"),
        (parse_plan_json('{"source": {"Hybrid": 5}}'), None),
        (parse_plan_json('{"source": "ScanAll"}'), None),
        (Plan({"KeywordTopK": {"label": "Doc", "property": "body", "query": "t"}}), None),
    ],
    ids=["search text", "search vector", "hybrid text", "hybrid keyword", "hybrid default", "malformed", "scan", "kw"],
)
def test_text_property_names_the_vectors_a_query_text_is_embedded_for(plan: Plan, prop: str | None) -> None:
    """The CLI and plane.query embed a plan's text with the embedder of this property's vectors
    (plane.query used to read VectorTopK only, and embedded a Hybrid text for `embedding`)."""
    assert text_property(plan) == prop
