"""drsg.api.cypher's pure parts: a call's ``$parameters`` checked against the data model, and the
vector property a statement's text ``NEAR`` is embedded for."""

from __future__ import annotations

import pytest

from drsg.api.cypher import near_properties, parameters, statement
from drsg.kernel.errors import BadValue
from drsg.kernel.values import Vector


def test_parameters_are_the_data_models_values_as_cypher_reads_them() -> None:
    given = {"n": 1, "x": 2.5, "s": "a", "b": True, "none": None, "l": [1, [2]], "m": {"k": "v"}}
    assert parameters(given) == given
    assert parameters({"v": Vector.of([1, 2])}) == {"v": [1.0, 2.0]}  # a vector is a list of floats
    assert parameters(None) == {}


@pytest.mark.parametrize(
    ("value", "why"),
    [
        (float("nan"), "not a finite number"),
        (2**63, "does not fit in 64 bits"),
        (object(), "not a storable value"),
        ({1: "a"}, "map keys must be strings"),
        ([1, float("inf")], "not a finite number"),
    ],
)
def test_a_value_outside_the_data_model_names_its_parameter(value: object, why: str) -> None:
    with pytest.raises(BadValue, match=rf"parameter \$p: .*{why}"):
        parameters({"p": value})


def test_params_must_be_a_mapping_of_names() -> None:
    with pytest.raises(BadValue, match="mapping"):
        parameters([1, 2])  # type: ignore[arg-type]  # what a caller might pass by mistake
    with pytest.raises(BadValue, match="non-empty string"):
        parameters({"": 1})


@pytest.mark.parametrize(
    ("text", "props"),
    [
        ('SEARCH (d:Doc) NEAR "x" RETURN d', ["embedding"]),
        ("SEARCH (d:Doc) ON body_vec NEAR $q TOPK 3 RETURN d", ["body_vec"]),
        ('SEARCH (d:Doc) ON body MATCHING "x" RETURN d', []),  # keywords: nothing to embed
        ('HYBRID (d:Doc) VECTOR ON v NEAR "x" KEYWORD ON body MATCHING "x" RETURN d', ["v"]),
        ("MATCH (d:Doc) RETURN d", []),
        ('SEARCH (a) ON p NEAR "x" RETURN a UNION SEARCH (a) ON q NEAR "y" RETURN a', ["p", "q"]),
    ],
)
def test_the_property_a_text_near_is_embedded_for(text: str, props: list[str]) -> None:
    assert near_properties(statement(text).prepared.query) == props
