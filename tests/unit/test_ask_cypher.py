"""The pure parts of a Cypher answer to `ask`: the protocol's `{"cypher": …}`, the checks before it
runs (parse, read only, no AS OF, no parameters, the soft schema, compile), the ask's limit and
what a run's error may show the model."""

from __future__ import annotations

import json

import pytest

from drsg.kernel.errors import QueryError, QuerySyntaxError, UsageError
from drsg.pipeline.ask.prompts import system_prompt
from drsg.pipeline.ask.protocol import MAX_CYPHER_CHARS, Refused, Statement, parse_answer
from drsg.pipeline.ask.statement import checked, hide_values, limited
from drsg.plan.cypher.parser import parse
from drsg.plan.schema import SoftSchema, check_cypher, cypher_names
from tests.support.ask_schema import SCHEMA

READ = "MATCH (p:Person)-[:WORKED_AT]->(w:Place) WHERE p.born > 1900 RETURN key(w) AS place, count(p) AS n"


def test_a_cypher_answer_is_one_statement() -> None:
    assert parse_answer('{"cypher": "  MATCH (n) RETURN n "}') == Statement("MATCH (n) RETURN n")
    assert parse_answer('```json\n{"cypher": "MATCH (n) RETURN n"}\n```') == Statement("MATCH (n) RETURN n")


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ('{"cypher": "MATCH (n) RETURN n", "params": {"k": 1}}', "write values into the statement"),
        ('{"cypher": ["MATCH (n) RETURN n"]}', '"cypher" must be one statement as a string'),
        ('{"cypher": "  "}', '"cypher" must be one statement'),
        ('{"cypher": "' + "x" * (MAX_CYPHER_CHARS + 1) + '"}', f"keep it under {MAX_CYPHER_CHARS}"),
    ],
)
def test_a_cypher_answer_outside_the_protocol_is_refused(text: str, reason: str) -> None:
    answer = parse_answer(text)
    assert isinstance(answer, Refused) and reason in answer.reason, answer


@pytest.mark.parametrize(
    ("text", "error", "message"),
    [
        ("MATCH (n:Person RETURN n", QuerySyntaxError, "line 1, column 17: expected"),
        ("MATCH (n) DETACH DELETE n", UsageError, "ask answers must only read; drop CREATE"),
        ("MATCH (n:Person) SET n.born = 1 RETURN n", UsageError, "ask answers must only read"),
        ("MATCH (n:Person) RETURN n AS OF 3", UsageError, "drop the statement's AS OF"),
        ("EXPLAIN MATCH (n:Person) RETURN n", UsageError, "drop EXPLAIN"),
        ("MATCH (n:Person) WHERE n.born > $year RETURN n", UsageError, "takes no parameters ($year)"),
        ("MATCH (n:Persn) RETURN n", UsageError, "label 'Persn' does not exist in this plane; did you mean 'Person'?"),
        (
            "MATCH (n) WHERE n:Plac RETURN n",
            UsageError,
            "did you mean 'Place'",
        ),
        ("MATCH (n)-[:WORKS_AT]->(m) RETURN m", UsageError, "edge type 'WORKS_AT' does not exist in this plane; did"),
        ("MATCH (n:Person) WHERE n.bron > 1 RETURN n", UsageError, "property 'bron' does not exist in this plane; did"),
        ("MATCH (n:Person {bron: 1}) RETURN n", UsageError, "property 'bron' does not exist"),
        ("MATCH (n:Person) RETURN n._source", UsageError, "property '_source' is provenance"),
        ("MATCH (n:Person) RETURN nope(n)", QueryError, "unknown function nope() at line 1"),
    ],
)
def test_a_statement_is_checked_before_it_runs(text: str, error: type[UsageError], message: str) -> None:
    with pytest.raises(error) as caught:
        checked(text, SCHEMA)
    assert type(caught.value) is error and message in caught.value.message


def test_a_statement_that_fits_the_schema_is_prepared() -> None:
    prepared = checked(READ, SCHEMA)
    assert not prepared.writes and prepared.columns == ("place", "n")
    # a map's keys, a relationship's properties and a value a WITH made are not the schema's names
    checked("MATCH (p:Person)-[r:WORKED_AT]->(w) WITH {k: p.born} AS m, r RETURN m.k, r.since", SCHEMA)


def test_the_names_a_statement_mentions() -> None:
    query = parse(
        "SEARCH (d:Place) NEAR 'x' TOPK 3 MATCH (d)<-[:WORKED_AT]-(p {born: 1}) WHERE p:Person RETURN d.country"
    )
    assert sorted(cypher_names(query)) == [
        ("edge type", "WORKED_AT"),
        ("label", "Person"),
        ("label", "Place"),
        ("property", "born"),
        ("property", "country"),
    ]


def test_a_property_the_sample_may_have_missed_is_not_refused_in_cypher() -> None:
    sampled = SoftSchema(labels=SCHEMA.labels, edges=SCHEMA.edges, complete=False)
    check_cypher(parse("MATCH (n:Person) WHERE n.age > 1 RETURN n"), sampled)
    with pytest.raises(UsageError, match="label 'City' does not exist"):
        check_cypher(parse("MATCH (n:City) RETURN n"), sampled)


def test_a_statement_without_a_limit_gets_the_asks() -> None:
    capped = limited(checked("MATCH (n:Person) RETURN n", SCHEMA), 7)
    assert capped.text == "MATCH (n:Person) RETURN n /* LIMIT 7 */"
    assert capped.explain() == {"source": {"ScanLabel": "Person"}, "steps": [{"Limit": 7}]}
    own = checked("MATCH (n:Person) RETURN n LIMIT 2", SCHEMA)
    assert limited(own, 7) is own and limited(checked(READ, SCHEMA), 0).text == READ
    union = limited(checked("MATCH (n:Person) RETURN n UNION MATCH (n:Place) RETURN n LIMIT 3", SCHEMA), 7)
    text = json.dumps(union.explain())
    assert text.count('{"Limit": "7"}') == 1 and text.count('{"Limit": "3"}') == 1 and text.count("Limit") == 2
    # each part of a UNION: its own LIMIT, else the ask's


def test_a_runs_error_shows_the_model_no_value() -> None:
    message = "invalid regular expression 'hunter2(x' (missing ), unterminated subpattern at position 7); fix it"
    assert (
        hide_values(message)
        == "invalid regular expression … (missing ), unterminated subpattern at position …); fix it"
    )
    assert hide_values('division by zero: 12345 / 0; check "the" divisor') == "division by zero: … / …; check … divisor"


def test_the_prompt_offers_a_cypher_answer() -> None:
    prompt = system_prompt(SCHEMA, False)
    assert '{"cypher": "<statement>"}' in prompt and "key(n)" in prompt and "SEARCH (n:Label) NEAR" in prompt
    assert "No writes" in prompt and len(prompt) < 4000
