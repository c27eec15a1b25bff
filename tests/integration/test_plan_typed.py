"""A plan built from the typed classes, with no JSON (what a front end such as Cypher compiles to),
is checked and run by the same code as upstream's wire JSON, on a real LMDB graph."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import drsg as drsg_api
from drsg.kernel.errors import UsageError
from drsg.plan import expr as x
from drsg.plan import logical as lp
from drsg.plan.query import Plan, plan_from_json
from drsg.plan.schema import LabelInfo, PropertyInfo, SoftSchema, check_plan
from drsg.store.database import Database
from drsg.workers.plans import run_plan, run_plan_subgraph
from drsg.workers.search import Searcher
from tests.support.small_graph import fill_people


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    database = drsg_api.open(tmp_path / "g.drsg")

    database.write(fill_people)
    try:
        yield database
    finally:
        database.close()


# people born after 1900 who worked where someone worked, youngest first, once each
TYPED = lp.LogicalPlan(
    lp.SeekKeys(("ada", "alan")),
    (
        lp.Expand("Out", "WORKED_AT"),
        lp.Expand("In", "WORKED_AT"),
        lp.Filter(x.Compare("Gt", x.Property("born"), x.Literal("Int", 1900))),
        lp.Distinct(),
        lp.Sort((lp.SortKey(x.Property("born"), descending=True),)),
        lp.Limit(5),
    ),
)


def test_a_typed_plan_runs_as_its_wire_json_does(db: Database) -> None:
    searcher = Searcher(db)
    typed = [hit.node.key for hit in run_plan(searcher, "p", Plan.of(TYPED))]
    assert typed == ["alan", "grace"]
    wire = [hit.node.key for hit in run_plan(searcher, "p", plan_from_json(TYPED.to_json()))]
    assert wire == typed
    rows, nodes, edges = run_plan_subgraph(searcher, "p", Plan.of(TYPED))
    assert [row.hops for row in rows] == [2, 2]
    assert {node.key for node in nodes} >= {"alan", "grace", "lab"} and edges


def test_a_typed_plan_is_held_to_the_schema() -> None:
    schema = SoftSchema(
        labels={"Person": LabelInfo(3, {"born": PropertyInfo("Int")}), "Place": LabelInfo(1)},
        edges={"WORKED_AT": [("Person", "Place")]},
    )
    check_plan(TYPED, schema)
    wrong = TYPED.then(lp.Filter(x.HasLabel("Persn")))
    with pytest.raises(UsageError, match="label 'Persn' does not exist in this plane; did you mean 'Person'"):
        check_plan(wrong, schema)
