"""The openCypher 9 conformance suite: every scenario in tests/conformance/cypher/*.yaml run against
drsg (the format: tests/support/cypher_scenarios.py).

One database for the session (``[query] max_rows`` 1000; a database per scenario took twice as
long) and a fresh plane per scenario — but the reads without a setup, which share an empty one: the setup runs through
``plane.cypher(…)`` itself, then the query with its params; the answer's wire form
(``CypherResult.to_json()``) is compared with the expected table, a write's counts with its
effects, and a failing statement's error with its class and message — and an error or a read
leaves the head where it was.

``KNOWN_FAILING`` names the scenarios the engine does not pass yet, each with the defect, grouped
by cause. They run as strict xfails: one that starts passing fails the run, so the list stays true.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import drsg
from drsg.kernel import errors
from tests.support.cypher_scenarios import COUNTS, Scenario, compare, load_all

SCENARIOS = load_all()
MAX_ROWS = 1000

# openCypher 9 constructs drsg leaves out (scenario id → what the error names). Each scenario says
# what openCypher answers; until drsg answers it, the test holds the house rule instead: compiling
# fails with a QueryError naming the construct. One that starts answering fails: move it out.
UNSUPPORTED: dict[str, str] = {
    "return_with::a map projection of a node": "map projection",
    "return_with::a pattern comprehension": "pattern comprehension",
    "return_with::reduce folds a list": "reduce",
    "arithmetic::the trigonometric functions": "cos()",
    "arithmetic::degrees and radians": "degrees()",
    "aggregation::percentileDisc and percentileCont": "percentileDisc()",
    "functions::timestamp is milliseconds since the epoch": "timestamp()",
    "functions::rand is at least zero and below one": "rand()",
}

# scenario id → the engine defect it shows (one line), grouped by cause
KNOWN_FAILING: dict[str, str] = {}


def _params() -> Iterator[Any]:
    for scenario in SCENARIOS:
        marks = []
        if scenario.id in KNOWN_FAILING:
            marks.append(pytest.mark.xfail(strict=True, reason=KNOWN_FAILING[scenario.id]))
        yield pytest.param(scenario, id=scenario.id, marks=marks)


@pytest.fixture(scope="module")
def database() -> Iterator[drsg.Database]:
    # A low row limit, so the QueryLimit scenarios cross it in a few thousand rows. The suite's time
    # is its commits' fsyncs (8 s of 10 on a disk): in memory (tmpfs) the same LMDB file costs none.
    settings = {"query.max_rows": MAX_ROWS}
    shm = Path("/dev/shm")
    with tempfile.TemporaryDirectory(prefix="drsg-conformance-", dir=shm if os.access(shm, os.W_OK) else None) as d:
        db = drsg.open(Path(d) / "graph.drsg", settings=settings)
        with db:
            yield db


@pytest.fixture(scope="module")
def empty_plane(database: drsg.Database) -> Any:
    """One plane every read without a setup shares (a plane each costs a commit: the suite's time)."""
    return database.create_plane("conformance-empty")


_planes = itertools.count(1)


def test_every_known_failure_names_a_scenario() -> None:
    assert set(KNOWN_FAILING) | set(UNSUPPORTED) <= {s.id for s in SCENARIOS}


@pytest.mark.parametrize("scenario", list(_params()))
def test_scenario(database: drsg.Database, empty_plane: Any, scenario: Scenario) -> None:
    shared = not scenario.setup and scenario.effects is None and scenario.error is None
    plane = empty_plane if shared else database.create_plane(f"conformance-{next(_planes)}")
    for statement in scenario.setup:
        plane.cypher(statement, {})
    head = database.head()
    if scenario.id in UNSUPPORTED:
        raised = _compile_error(scenario.query)
        assert raised is not None, f"{scenario.id} compiles: take it out of UNSUPPORTED"
        assert type(raised) is errors.QueryError, f"an unsupported construct is a QueryError, not {raised!r}"
        assert UNSUPPORTED[scenario.id].lower() in str(raised).lower(), raised
        return
    if scenario.error is not None:
        _expect_error(database, plane, scenario)
        return
    answer = plane.cypher(scenario.query, scenario.params).to_json()
    # the one wire form every surface prints: strict JSON (JSON-RPC's encoder refuses NaN, Infinity)
    json.dumps(answer, allow_nan=False)
    assert scenario.result is not None
    differs = compare(scenario.result, answer["columns"], answer["rows"])
    assert differs is None, f"{scenario.query}\n{differs}"
    if scenario.effects is None:
        assert "write" not in answer, f"a read answered as a write: {answer}"
        assert database.head() == head, "a read moved the head"
    else:
        assert answer.get("write") is True, f"a write answered as a read: {answer}"
        counts = {name: answer[name] for name in COUNTS}
        assert counts == {name: scenario.effects.get(name, 0) for name in COUNTS}
    if scenario.check is not None:
        query, expected = scenario.check
        after = plane.cypher(query, {}).to_json()
        differs = compare(expected, after["columns"], after["rows"])
        assert differs is None, f"after the statement, {query}\n{differs}"


def _expect_error(database: drsg.Database, plane: Any, scenario: Scenario) -> None:
    assert scenario.error is not None
    cls: type[Exception] = getattr(errors, scenario.error.cls)
    head = database.head()
    if scenario.error.phase is not None:
        raised = _compile_error(scenario.query)
        if scenario.error.phase == "compile":
            assert isinstance(raised, cls), f"expected {cls.__name__} at compile time, got {raised!r}"
        else:
            assert raised is None, f"expected an error at run time, compiling raised {raised!r}"
    with pytest.raises(errors.DrsgError) as caught:
        plane.cypher(scenario.query, scenario.params)
    assert type(caught.value) is cls, f"expected {cls.__name__}, got {caught.value!r}"
    message = str(caught.value)
    assert scenario.error.message.lower() in message.lower(), message
    if cls is errors.QuerySyntaxError:  # the line, the column, then the statement with a caret under it
        assert re.match(r"line \d+, column \d+: ", message), message
    else:
        assert "\n" not in message.strip(), f"an error message is one line: {message!r}"
    assert database.head() == head, "a failing statement wrote something"


def _compile_error(query: str) -> Exception | None:
    """What compiling (not running) the statement raises, or None."""
    from drsg.plan.cypher.statement import prepare

    try:
        prepare(query)
    except errors.DrsgError as error:
        return error
    return None
