"""`drsg query`'s statements read by the Cypher front end give the plans the hand-written parsers gave.

tests/data/query_plans.json was recorded with those parsers before they were removed: every
SEARCH/HYBRID/CALL statement the tests write, and edge forms, with the plan each made (its wire JSON
and AS OF) or that it was refused. ``parse_query`` now parses with ``drsg.plan.cypher`` and builds
the plan with ``plan/cypher/sources.py`` and ``upstream.py``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from drsg.kernel.errors import QueryError, QuerySyntaxError, UsageError
from drsg.plan.cypher.statement import prepare
from drsg.plan.statements import parse_query

DATA = json.loads((Path(__file__).resolve().parents[1] / "data" / "query_plans.json").read_text())
PARAMS: dict[str, Any] = DATA["params"]
PLANS = [(case["text"], case["plan"], case["as_of"]) for case in DATA["plans"]]
REFUSED = [case["text"] for case in DATA["refused"] if not case.get("now_a_plan")]
#: refused only because the hand parsers did not read that part of upstream's language (a $parameter
#: in MATCHING, ORDER BY score(), WHERE, a hop after the source, a tab inside a string)
NOW_PLANS = [case["text"] for case in DATA["refused"] if case.get("now_a_plan")]


def _as_of(text: str) -> list[int | None] | None:
    as_of = parse_query(text, PARAMS).as_of
    return None if as_of is None else [as_of.seq, as_of.ms]


@pytest.mark.parametrize(("text", "plan", "as_of"), PLANS, ids=[p[0][:60] for p in PLANS])
def test_every_statement_gives_the_plan_the_hand_parser_gave(text: str, plan: Any, as_of: Any) -> None:
    assert parse_query(text, PARAMS).to_json() == plan
    assert _as_of(text) == as_of


@pytest.mark.parametrize("text", REFUSED, ids=[t[:60] for t in REFUSED])
def test_every_statement_it_refused_is_refused_in_one_line(text: str) -> None:
    with pytest.raises(UsageError) as caught:
        parse_query(text, PARAMS)
    assert caught.value.message and "\n" not in caught.value.message


@pytest.mark.parametrize("text", NOW_PLANS, ids=[t[:60] for t in NOW_PLANS])
def test_upstreams_tails_are_the_plan_the_cypher_compiler_makes(text: str) -> None:
    plan = parse_query(text, PARAMS)
    if "$" not in text and ("RETURN" in text or "LIMIT" in text):  # then `drsg cypher` runs the same plan
        assert prepare(text).compiled.logical == plan.logical


def test_the_plans_are_many_and_cover_the_three_statements() -> None:
    assert len(PLANS) >= 60 and len(REFUSED) >= 50
    assert {text.split()[0].upper() for text, _, _ in PLANS} == {"SEARCH", "HYBRID", "CALL"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("SEARCH (d:Doc) NEAR [1.0] RETURN d.name", "drsg cypher"),
        ("CALL pagerank() ON (n:P) RETURN n.name AS name, score() AS s ORDER BY s DESC", "drsg cypher"),
        ('SEARCH (a) ON p NEAR "x" RETURN a UNION SEARCH (a) ON q NEAR "y" RETURN a', "drsg cypher"),
        ("MATCH (n) RETURN n", "starts with SEARCH, HYBRID or CALL"),
        ("SEARCH (d:Doc) NEAR [1.0] LIMIT 20000", "LIMIT at line 1, column 33 must be a whole number from 0 to 10000"),
        ("SEARCH (d:Doc) NEAR [1.0] TOPK 20000", "TOPK must be a whole number from 0 to 10000"),
        ('SEARCH (d) NEAR "x" TOPK 1 TOPK 2', "TOPK appears twice"),
        ("SEARCH (v:Doc) NEAR $missing", "parameter $missing has no value; pass it with --param missing=<json>"),
        ('CALL pagerank(damping: "x")', "CALL pagerank (line 1, column 1): damping must be a number"),
    ],
)
def test_what_is_not_a_plain_plan_is_refused_saying_what_to_do(text: str, message: str) -> None:
    with pytest.raises(UsageError) as caught:
        parse_query(text, PARAMS)
    assert message in caught.value.message and "\n" not in caught.value.message


def test_a_syntax_error_is_one_line_with_the_place_shown() -> None:
    with pytest.raises(QuerySyntaxError) as caught:
        parse_query("SEARCH (v:Doc NEAR [1]")
    assert caught.value.message == "line 1, column 15: expected ')' but found 'NEAR' — …SEARCH (v:Doc ⟨here⟩NEAR [1]…"


@given(
    k=st.integers(0, 10_000),
    limit=st.integers(0, 10_000),
    vector=st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=4),
    seq=st.integers(1, 2**40),
)
def test_a_parameter_gives_the_plan_its_literal_gives(k: int, limit: int, vector: list[float], seq: int) -> None:
    literal = parse_query(f"SEARCH (d:Doc) NEAR {json.dumps(vector)} TOPK {k} RETURN d LIMIT {limit} AS OF {seq}")
    given_ = parse_query(f"SEARCH (d:Doc) NEAR $v TOPK {k} RETURN d LIMIT {limit} AS OF $s", {"v": vector, "s": seq})
    assert literal.to_json() == given_.to_json() and literal.as_of == given_.as_of
    assert literal.to_json()["source"] == {
        "VectorTopK": {"label": "Doc", "property": "embedding", "metric": "Cosine", "k": k, "query": vector}
    }


@pytest.mark.parametrize("bad", [{"x": 1}, [10**400], [True], []], ids=["map", "huge int", "bool", "empty"])
def test_a_parameter_that_is_not_a_text_or_numbers_is_refused(bad: Any) -> None:
    """An integer past a float's range was an OverflowError (a crash, not a message) before."""
    for text in ("SEARCH (d:Doc) NEAR $v", "HYBRID (d:Doc) VECTOR NEAR $v"):
        with pytest.raises(QueryError, match="NEAR takes a text or a list of numbers"):
            parse_query(text, {"v": bad})
