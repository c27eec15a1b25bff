"""Cypher reads end to end on a real LMDB database: ``prepare`` → ``run_read`` on one snapshot.

A statement in upstream's subset runs its logical plan through the executor ``drsg query`` uses
and answers the same nodes; every other runs as its row plan (MATCH, OPTIONAL MATCH, WITH, UNWIND,
aggregation, UNION, variable length, paths, pattern predicates, SEARCH/CALL sources), bounded by
the row and time limits, at the statement's AS OF or the caller's.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import drsg as drsg_api
from drsg.kernel.asof import AsOf
from drsg.kernel.errors import NotFound, QueryError, QueryLimit
from drsg.plan import logical as lp
from drsg.plan.cypher.statement import prepare
from drsg.plan.query import Plan
from drsg.store.database import Database
from drsg.store.records import Node
from drsg.workers.cypher import execute
from drsg.workers.cypher.execute import scan_source
from drsg.workers.cypher.graphs import SnapshotGraph
from drsg.workers.cypher.result import CypherResult
from drsg.workers.cypher.run import run_on
from drsg.workers.plans import run_plan_subgraph
from drsg.workers.search import Searcher
from tests.support.small_graph import fill_people


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    database = drsg_api.open(tmp_path / "g.drsg")

    database.write(lambda tx: fill_people(tx, self_loop=True))
    try:
        yield database
    finally:
        database.close()


def read(db: Database, text: str, params: dict[str, Any] | None = None, **kw: Any) -> CypherResult:
    kw.setdefault("max_rows", 10_000)
    kw.setdefault("timeout", 30.0)
    return drsg_read(Searcher(db), text, params, **kw)


def drsg_read(searcher: Searcher, text: str, params: dict[str, Any] | None, **kw: Any) -> CypherResult:
    from drsg.workers.cypher.run import run_read

    return run_read(searcher, "p", prepare(text), params, **kw)


def values(result: CypherResult) -> list[list[Any]]:
    rows = result.to_json()["rows"]
    assert isinstance(rows, list)
    return [row for row in rows if isinstance(row, list)]


def test_an_upstream_subset_statement_runs_its_logical_plan_and_answers_as_drsg_query(db: Database) -> None:
    text = 'MATCH (a)-[:WORKED_AT]->(l) WHERE key(a) = "alan" RETURN l'
    prepared = prepare(text)
    assert prepared.compiled.logical == lp.LogicalPlan(lp.SeekKeys(("alan",)), (lp.Expand("Out", "WORKED_AT"),))
    assert prepared.explain() == prepared.compiled.logical.to_json()
    result = read(db, text)
    walked, nodes, edges = run_plan_subgraph(Searcher(db), "p", Plan.of(prepared.compiled.logical))
    assert result.columns == ("l",)
    assert [row[0] for row in result.rows] == [w.node for w in walked]
    assert (list(result.nodes), list(result.edges)) == (nodes, edges)


SUBSET = [
    "MATCH (n) RETURN n",
    "MATCH (n:Person) WHERE n.born >= 1906 OR n.name = 'Lab' RETURN n",
    "MATCH (n) WHERE n.born IN [1815, 1912] AND n.name IS NOT NULL RETURN DISTINCT n",
    "MATCH (n) WHERE n.born IS NULL RETURN n SKIP 1 LIMIT 2",
    "MATCH (n) WHERE n.name < 'B' RETURN *",
    "MATCH (a)-[:WORKED_AT]->(l:Place) RETURN l",
    "MATCH (a)<-[:READ]-(b:Person {name: 'Alan'}) RETURN b",
    "MATCH (g)-[:ADMIRES]->(x) WHERE key(g) = 'grace' RETURN x",
    "MATCH (a)-[:READ*0..1]->(b) WHERE id(a) IN [1, 2] RETURN b",
    "MATCH (n:Person) WHERE key(n) IN ['ada', 'lab'] RETURN n",
]


@pytest.mark.parametrize("text", SUBSET)
def test_the_logical_plan_answers_the_rows_the_row_plan_does(db: Database, text: str) -> None:
    prepared = prepare(text)
    assert prepared.compiled.logical is not None
    planned = read(db, text)
    with db.snapshot() as snap:
        plane = snap.plane("p").id
        rowed = run_on(snap, plane, SnapshotGraph(snap, plane), prepared.compiled, {})
    assert planned.columns == rowed.columns
    assert sorted(n.id for (n,) in planned.rows) == sorted(n.id for (n,) in rowed.rows)  # type: ignore[union-attr]
    assert len(planned.rows) > 0 or "IS NULL" in text


def test_a_filtered_label_scan_keeps_the_rows_opencypher_keeps(db: Database) -> None:
    result = read(db, "MATCH (n:Person) WHERE n.born > 1900 RETURN n")
    assert prepare("MATCH (n:Person) WHERE n.born > 1900 RETURN n").compiled.logical is not None
    assert sorted(str(row[0].props["name"]) for row in result.rows if isinstance(row[0], Node)) == ["Alan", "Grace"]


def test_projection_order_and_aggregation(db: Database) -> None:
    assert values(read(db, "MATCH (n:Person) RETURN n.name AS name ORDER BY n.born DESC")) == [
        ["Alan"],
        ["Grace"],
        ["Ada"],
    ]
    grouped = read(db, "MATCH (a:Person)-[:WORKED_AT]->(l) RETURN l.name AS place, count(*) AS c, collect(a.name) AS w")
    assert values(grouped) == [["Lab", 3, ["Ada", "Alan", "Grace"]]]
    assert (grouped.nodes, grouped.edges) == ((), ())  # an aggregate answers what it returns: no node here
    by_place = read(db, "MATCH (a:Person)-[:WORKED_AT]->(l) RETURN l, count(*) AS c")
    assert [n.key for n in by_place.nodes] == ["lab"] and by_place.edges == ()  # the group's key, not its feeders
    assert values(read(db, "MATCH (n:Nobody) RETURN count(*) AS c")) == [[0]]


def test_relationship_isomorphism_within_one_match(db: Database) -> None:
    pairs = read(db, "MATCH (a)-[:WORKED_AT]->(l)<-[:WORKED_AT]-(b) RETURN a.name, b.name ORDER BY a.name, b.name")
    assert values(pairs) == [
        ["Ada", "Alan"],
        ["Ada", "Grace"],
        ["Alan", "Ada"],
        ["Alan", "Grace"],
        ["Grace", "Ada"],
        ["Grace", "Alan"],
    ]  # never a person with themself: the one WORKED_AT edge is not used twice
    # two MATCH clauses may reuse it
    again = read(db, "MATCH (a)-[:WORKED_AT]->(l) MATCH (b)-[:WORKED_AT]->(l) RETURN count(*) AS c")
    assert values(again) == [[9]]


def test_a_relationship_bound_by_an_earlier_clause_is_matched_again_as_itself(db: Database) -> None:
    again = read(db, "MATCH ()-[r:READ]->() MATCH (x)-[r]-(y) RETURN x.name, y.name ORDER BY x.name")
    assert values(again) == [["Ada", "Alan"], ["Alan", "Ada"]]


def test_a_node_held_by_a_projected_value_continues_a_match(db: Database) -> None:
    text = "MATCH (a:Person) WITH collect(a) AS people UNWIND people AS p MATCH (p)-[:READ]->(q) RETURN q.name"
    assert values(read(db, text)) == [["Ada"]]
    with pytest.raises(QueryError, match="holds an integer, not a node"):
        read(db, "UNWIND [1] AS p MATCH (p)-->(q) RETURN q")


def test_an_undirected_self_loop_is_found_once(db: Database) -> None:
    assert values(read(db, "MATCH (g {name: 'Grace'})-[:ADMIRES]-(x) RETURN x.name")) == [["Grace"]]


def test_variable_length_trails_and_paths(db: Database) -> None:
    result = read(db, "MATCH p = (a {name: 'Alan'})-[*1..2]->(b) RETURN length(p) AS l, b.name ORDER BY l, b.name")
    assert values(result) == [[1, "Ada"], [1, "Lab"], [2, "Lab"]]
    path = read(db, "MATCH p = (:Person {name: 'Alan'})-[:READ]->(:Person) RETURN p").to_json()["rows"]
    assert path[0][0]["nodes"][0]["properties"]["name"] == "Alan"  # type: ignore[index,call-overload]
    assert [e["type"] for e in path[0][0]["edges"]] == ["READ"]  # type: ignore[index,call-overload,union-attr]
    unbounded = read(db, "MATCH (a {name: 'Alan'})-[*]-(b) RETURN count(*) AS c")
    assert values(unbounded)[0][0] > 0  # a trail ends: no edge twice


def test_optional_match_pads_with_null_and_unwind_with_filter(db: Database) -> None:
    optional = read(db, "MATCH (a:Person) OPTIONAL MATCH (a)-[:READ]->(b) RETURN a.name, b.name ORDER BY a.name")
    assert values(optional) == [["Ada", None], ["Alan", "Ada"], ["Grace", None]]
    assert values(read(db, "UNWIND [1, 2, 3] AS x WITH x WHERE x > 1 RETURN sum(x) AS s")) == [[5]]


def test_union_and_union_all(db: Database) -> None:
    union = "MATCH (a:Person) RETURN 'x' AS n UNION MATCH (b:Place) RETURN 'y' AS n"
    assert values(read(db, union)) == [["x"], ["y"]]
    assert len(read(db, union.replace("UNION", "UNION ALL")).rows) == 4


def test_pattern_predicates_and_key_seeks_with_parameters(db: Database) -> None:
    assert values(read(db, "MATCH (a:Person) WHERE (a)-[:READ]->() RETURN a.name")) == [["Alan"]]
    bound = "MATCH (a)-[r]->(b) WHERE NOT (a)-[r:WORKED_AT]->() RETURN type(r) AS t ORDER BY t"
    assert values(read(db, bound)) == [["ADMIRES"], ["READ"]]  # r is the row's relationship, not any
    keyed = read(db, "MATCH (n) WHERE key(n) IN $ks RETURN n.name ORDER BY n.name", {"ks": ["lab", "ada", "ada"]})
    assert values(keyed) == [["Ada"], ["Lab"]]


def test_call_and_search_sources_carry_the_score(db: Database) -> None:
    ranked = read(db, "CALL pagerank() ON (n:Person) RETURN n.name AS name, score() AS s ORDER BY s DESC")
    scores = [row[1] for row in values(ranked)]
    assert len(scores) == 3 and scores == sorted(scores, reverse=True)
    tail = read(db, "CALL pagerank() MATCH (n)-[:WORKED_AT]->(l) RETURN DISTINCT l.name AS place")
    assert values(tail) == [["Lab"]]


def test_as_of_reads_that_snapshot(db: Database) -> None:
    head = db.head()
    db.write(lambda tx: tx.create_node(tx.plane("p"), "ida", ["Person"], {"name": "Ida"}))
    count = "MATCH (n:Person) RETURN count(*) AS c"
    assert values(read(db, count)) == [[4]]
    assert values(read(db, f"{count} AS OF {head}")) == [[3]]
    assert values(read(db, count, as_of=AsOf(seq=head))) == [[3]]
    assert values(read(db, f"{count} AS OF $at", {"at": head})) == [[3]]
    with pytest.raises(QueryError, match="give one of them"):
        read(db, f"{count} AS OF {head}", as_of=AsOf(seq=head + 1))


def test_the_row_limit_and_the_timeout_stop_a_runaway(db: Database) -> None:
    with pytest.raises(QueryLimit, match=r"more than 5 rows; narrow the MATCH or raise \[query\] max_rows"):
        read(db, "UNWIND range(1, 100) AS x RETURN x", max_rows=5)
    with pytest.raises(QueryLimit, match="timeout_secs"):
        read(db, "UNWIND range(1, 3000) AS x MATCH (a)-[*]-(b) RETURN count(*) AS c", timeout=0.0001)


class SteppedClock:
    """The executor's ``time``: each read of ``monotonic`` moves it on by a millisecond, so a
    deadline passes after a known number of reads, however loaded the machine is."""

    def __init__(self) -> None:
        self.reads = 0

    def monotonic(self) -> float:
        self.reads += 1
        return self.reads / 1000


def test_the_timeout_is_read_inside_a_step_over_many_rows(db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    """A step over a million rows (UNWIND, WHERE, RETURN, ORDER BY: seconds of work) reads the clock
    as it goes: the limit stops it inside the first step, not after it."""
    slow = "UNWIND range(1, 1000000) AS x WITH x WHERE x % 2 = 0 RETURN x ORDER BY x DESC"
    clock = SteppedClock()
    monkeypatch.setattr(execute, "time", clock)
    with pytest.raises(QueryLimit, match="timeout_secs"):
        read(db, slow, timeout=0.05, max_rows=10_000_000)
    # 50 ms are 50 reads: a check only between steps reads the clock a few times in all and never
    # gets there; the first step alone reads it once per batch of its million rows, and it stopped
    # before that many: inside the step
    assert clock.reads < 1_000_000 // execute._CLOCK_EVERY


def test_one_starts_unbounded_trails_stop_at_the_row_limit(tmp_path: Path) -> None:
    database = drsg_api.open(tmp_path / "dense.drsg")

    def clique(tx: Any) -> None:
        plane = tx.create_plane("p")
        ids = [tx.create_node(plane, f"k{i}", ["K"], {}).id for i in range(7)]
        for a in ids:
            for b in ids:
                if a != b:
                    tx.link(plane, a, b, "E")

    database.write(clique)
    try:
        with pytest.raises(QueryLimit, match="MATCH made more than 2000 rows"):
            read(database, "MATCH (a {}) WHERE key(a) = 'k0' MATCH (a)-[*]->(b) RETURN count(*) AS c", max_rows=2000)
    finally:
        database.close()


def test_a_write_statement_is_refused_on_the_read_path(db: Database) -> None:
    with pytest.raises(QueryError, match="writes"):
        read(db, "CREATE (n:X) RETURN n")


def test_an_optional_match_scans_its_source_once_not_once_per_row(db: Database) -> None:
    calls: list[object] = []
    prepared = prepare("MATCH (a:Person) OPTIONAL MATCH (p:Place) WHERE a.born > 1900 RETURN a.name, p.name")
    with db.snapshot() as snap:
        plane = snap.plane("p").id
        scan = scan_source(snap, plane)

        def counted(source: lp.Source) -> list[tuple[Node, float | None]]:
            calls.append(source)
            return scan(source)

        result = run_on(snap, plane, SnapshotGraph(snap, plane), prepared.compiled, {}, sources=counted)
    assert sorted(map(tuple, values(result))) == [("Ada", None), ("Alan", "Lab"), ("Grace", "Lab")]
    assert calls == [lp.ScanLabel("Person"), lp.ScanLabel("Place")]


def test_a_read_that_searches_nothing_waits_for_no_index(db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    """A MATCH reads the snapshot alone: it neither waits for the index workers to catch up nor holds
    them still (a plane's lagging index does not slow it); a SEARCH at the head does both."""
    searcher = Searcher(db)
    caught_up: list[tuple[int, object]] = []
    monkeypatch.setattr(searcher.indexes, "catch_up", lambda head, _plane, names: caught_up.append((head, names)))
    assert values(drsg_read(searcher, "MATCH (n:Person) RETURN count(n) AS c", None)) == [[3]]
    assert caught_up == []
    with pytest.raises(NotFound, match="no keyword index"):  # (none declared: the search itself fails)
        drsg_read(searcher, "SEARCH (d:Doc) ON body MATCHING 'engine' TOPK 1 RETURN d", None)
    assert caught_up == [(db.head(), (("keyword", "Doc", "body"),))]  # the one index the SEARCH names
