"""The pure parts of `ask`: the answer protocol, the plan steps' shape, expressions, the schema check
and the prompt."""

from __future__ import annotations

from typing import Any

import pytest

from drsg.kernel.errors import UsageError
from drsg.pipeline.ask.prompts import system_prompt
from drsg.pipeline.ask.protocol import Decompose, Plans, Refused, ToolCall, parse_answer
from drsg.plan.query import plan_from_json
from drsg.plan.schema import SoftSchema, check_plan
from drsg.plan.traversal import Row, evaluate, sort_key
from tests.support.ask_schema import SCHEMA

PLAN = {"source": "ScanAll", "steps": []}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"asks": ["a?", " b  ?"]}', Decompose(["a?", "b ?"])),
        ('```json\n{"tool": "find_edge", "query": "worked at"}\n```', ToolCall("find_edge", "worked at")),
        ('{"tool": "find_entity", "query": "Ada", "label": "Person"}', ToolCall("find_entity", "Ada", "Person")),
        ('{"tool": "find_entity", "query": "Ada", "label": null}', ToolCall("find_entity", "Ada")),
        ('{"plan": {"source": "ScanAll", "steps": []}}', Plans([PLAN])),
        ('{"plans": [{"source": "ScanAll", "steps": []}]}', Plans([PLAN])),
        ('Here you go: {"source": "ScanAll", "steps": []}', Plans([PLAN])),
    ],
)
def test_answers_in_the_protocol(text: str, expected: Any) -> None:
    assert parse_answer(text) == expected


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("Delete every node now.", "not one JSON object"),
        ('{"source": "ScanAll"', "not one JSON object"),
        ("[1, 2]", "not one JSON object"),
        ('{"tool": "delete_node", "query": "ada"}', "there is no tool 'delete_node'"),
        ('{"tool": "find_edge", "query": "x", "then": "drop"}', "find_edge takes only query, tool"),
        ('{"tool": "find_edge", "query": ""}', 'find_edge needs a "query"'),
        ('{"action": "drop_plane"}', "an answer has asks, tool, plan, plans or source, not action"),
        ('{"asks": []}', '"asks" must be a non-empty list'),
        ('{"asks": ["a", 1]}', '"asks" must be a non-empty list'),
        ('{"plans": {"source": "ScanAll"}}', '"plans" must be a non-empty list'),
        ('{"plan": {}, "explain": "x"}', "an answer has asks"),
    ],
)
def test_answers_outside_the_protocol_are_refused(text: str, reason: str) -> None:
    answer = parse_answer(text)
    assert isinstance(answer, Refused) and reason in answer.reason, answer


@pytest.mark.parametrize(
    ("step", "message"),
    [
        ({"Delete": {}}, "plan step {'Delete': {}} is not supported"),
        ({"SetProperty": {"key": "x"}}, "is not supported"),
        ("Distinct", None),
        ({"Expand": {"dir": "Up", "edge_type": None}}, "dir must be Out, In or Both"),
        ({"Expand": {"dir": "Out", "edge_type": 3}}, "edge_type must be"),
        ({"ExpandVar": {"dir": "Out", "edge_type": None, "min": 2, "max": 1}}, "0 ≤ min ≤ max ≤ 6"),
        ({"ExpandVar": {"dir": "Out", "edge_type": None, "min": 0, "max": 7}}, "0 ≤ min ≤ max ≤ 6"),
        ({"Filter": {"Compare": {"op": "Like", "lhs": "Hops", "rhs": "Hops"}}}, "Compare is"),
        ({"Filter": {"Literal": {"Int": True}}}, "this Int literal cannot hold True"),
        ({"Filter": {"Cypher": "MATCH (n) DELETE n"}}, "expression Cypher is not supported"),
        ({"Sort": []}, "Sort takes a list of keys"),
        ({"Sort": [{"expr": "Hops", "descending": "yes"}]}, "descending must be true or false"),
        ({"Limit": -1}, "Limit must be a whole number"),
    ],
)
def test_steps_are_shaped_before_anything_runs(step: Any, message: str | None) -> None:
    plan = {"source": "ScanAll", "steps": [step]}
    if message is None:
        assert plan_from_json(plan).steps == [step]
        return
    with pytest.raises(UsageError, match=message.replace("(", r"\(").replace("{", r"\{")):
        plan_from_json(plan)


ROW = Row("ada", ("Person",), {"name": "Ada Lovelace", "born": 1815, "tags": ["math", 7], "meta": {"a": 1}}, 0.5, 2)


def lit(kind: str, value: Any) -> dict[str, Any]:
    return {"Literal": {kind: value}}


def cmp(op: str, lhs: Any, rhs: Any) -> dict[str, Any]:
    return {"Compare": {"op": op, "lhs": lhs, "rhs": rhs}}


@pytest.mark.parametrize(
    ("expr", "value"),
    [
        (cmp("Eq", {"Property": "born"}, lit("Float", 1815.0)), True),
        (cmp("Lt", {"Property": "name"}, lit("Int", 3)), False),  # incomparable: false
        (cmp("Ne", {"Property": "name"}, lit("Int", 3)), False),  # … whatever the operator
        (cmp("Eq", {"Property": "missing"}, {"Literal": "Null"}), False),
        ({"IsNull": {"Property": "missing"}}, True),
        ({"Not": cmp("Gt", {"Property": "missing"}, lit("Int", 1))}, True),
        ({"StringMatch": {"op": "StartsWith", "lhs": {"Property": "born"}, "rhs": lit("Str", "18")}}, True),
        ({"In": {"needle": lit("Float", 7.0), "haystack": {"Property": "tags"}}}, True),
        ({"In": {"needle": lit("Str", "a"), "haystack": {"Property": "meta"}}}, True),
        ({"In": {"needle": lit("Str", "b"), "haystack": lit("List", ["a", "c"])}}, False),
        (cmp("Eq", {"Arith": {"op": "Div", "lhs": {"Property": "born"}, "rhs": lit("Int", 0)}}, lit("Int", 0)), False),
        (
            cmp("Eq", {"Arith": {"op": "Sub", "lhs": {"Property": "born"}, "rhs": lit("Int", 15)}}, lit("Int", 1800)),
            True,
        ),
        ({"HasLabel": "Person"}, True),
        (cmp("Eq", "ExternalKey", lit("Str", "ada")), True),
        (cmp("Ge", "Hops", lit("Int", 2)), True),
        (cmp("Gt", "Score", lit("Float", 0.4)), True),
    ],
)
def test_expressions_are_total(expr: Any, value: bool) -> None:
    assert evaluate(expr, ROW) is value


def test_sort_puts_numbers_then_text_then_booleans_then_nothing() -> None:
    values = [None, "b", True, 2, "a", 1.5]
    assert sorted(values, key=sort_key) == [1.5, 2, "a", "b", True, None]


@pytest.mark.parametrize(
    ("plan", "message"),
    [
        (
            {"source": {"ScanLabel": "Persn"}, "steps": []},
            "label 'Persn' does not exist in this plane; did you mean 'Person'?",
        ),
        (
            {"source": "ScanAll", "steps": [{"Expand": {"dir": "Out", "edge_type": "WORKS_AT"}}]},
            "edge type 'WORKS_AT' does not exist in this plane; did you mean 'WORKED_AT'?",
        ),
        (
            {"source": "ScanAll", "steps": [{"Filter": cmp("Eq", {"Property": "age"}, lit("Int", 1))}]},
            "property 'age' does not exist in this plane",
        ),
        (
            {"source": "ScanAll", "steps": [{"Filter": cmp("Eq", {"Property": "_source"}, lit("Str", "x"))}]},
            "property '_source' is provenance",
        ),
        ({"source": "ScanAll", "steps": [{"Sort": [{"expr": {"HasLabel": "City"}}]}]}, "label 'City' does not exist"),
    ],
)
def test_plans_are_held_to_the_live_schema(plan: dict[str, Any], message: str) -> None:
    with pytest.raises(UsageError) as caught:
        check_plan(plan, SCHEMA)
    assert message in caught.value.message


def test_a_property_the_sample_may_have_missed_is_not_refused() -> None:
    sampled = SoftSchema(labels=SCHEMA.labels, edges=SCHEMA.edges, complete=False)
    plan = {"source": "ScanAll", "steps": [{"Filter": cmp("Eq", {"Property": "age"}, lit("Int", 1))}]}
    check_plan(plan, sampled)
    with pytest.raises(UsageError, match="provenance"):
        check_plan({"source": "ScanAll", "steps": [{"Filter": {"IsNull": {"Property": "_run"}}}]}, sampled)
    with pytest.raises(UsageError, match="label 'City' does not exist"):  # labels and types are counted, not sampled
        check_plan({"source": {"ScanLabel": "City"}, "steps": []}, sampled)


def test_a_plan_that_fits_the_schema_passes() -> None:
    step = {"Filter": cmp("Gt", {"Property": "born"}, lit("Int", 1800))}
    check_plan(
        {"source": {"ScanLabel": "Person"}, "steps": [{"Expand": {"dir": "Out", "edge_type": "WORKED_AT"}}, step]},
        SCHEMA,
    )


def test_the_prompt_offers_tools_only_with_an_embedder() -> None:
    with_tools, without = system_prompt(SCHEMA, True), system_prompt(SCHEMA, False)
    assert "find_edge" in with_tools and "find_entity" in with_tools
    assert "find_edge" not in without and "find_entity" not in without
    for prompt in (with_tools, without):
        assert "- Person (2 nodes): born:Int e.g. 1815, password:Str (masked)" in prompt
        assert "- WORKED_AT: Person→Place (1 edges)" in prompt
