"""A small soft schema the ask tests check plans and Cypher answers against."""

from __future__ import annotations

from drsg.plan.schema import LabelInfo, PropertyInfo, SoftSchema

SCHEMA = SoftSchema(
    labels={
        "Person": LabelInfo(2, {"born": PropertyInfo("Int", ["1815"]), "password": PropertyInfo("Str", [], True)}),
        "Place": LabelInfo(1, {"country": PropertyInfo("Str", ["'UK'"])}),
    },
    edges={"WORKED_AT": [("Person", "Place")]},
    edge_counts={"WORKED_AT": 1},
)
