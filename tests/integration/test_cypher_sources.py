"""Cypher's upstream sources end to end on a real LMDB file with real indexes: SEARCH (vector and
keyword) and HYBRID continued by a relationship tail, WHERE and ORDER BY score(); BEAM; and a
search AS OF an earlier commit, which reads that snapshot exactly."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import drsg as drsg_api
from drsg.kernel.errors import QueryError
from drsg.kernel.values import Vector
from drsg.plan.cypher.statement import prepare
from drsg.store.database import Database
from drsg.workers.cypher.result import CypherResult
from drsg.workers.cypher.run import run_read
from drsg.workers.search import Searcher

DOCS = {  # key: (vector, body, topic)
    "d1": ([1.0, 0.0, 0.0], "graph databases store edges", "graphs"),
    "d2": ([0.9, 0.1, 0.0], "graph queries walk edges", "graphs"),
    "d3": ([0.0, 1.0, 0.0], "vector search finds neighbours", "search"),
    "d4": ([0.0, 0.9, 0.1], "keyword search ranks words", "search"),
}


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    database = drsg_api.open(tmp_path / "g.drsg")

    def fill(tx: Any) -> None:
        plane = tx.create_plane("p")
        topics = {name: tx.create_node(plane, name, ["Topic"], {"name": name}).id for name in ("graphs", "search")}
        for key, (vector, body, topic) in DOCS.items():
            doc = tx.create_node(plane, key, ["Doc"], {"body": body, "embedding": Vector.of(vector)}).id
            tx.link(plane, doc, topics[topic], "ABOUT")
        tx.declare_index(plane, "vector", "Doc", "embedding", {"metric": "cosine"})
        tx.declare_index(plane, "keyword", "Doc", "body", {})

    database.write(fill)
    try:
        yield database
    finally:
        database.close()


def read(db: Database, text: str, params: dict[str, Any] | None = None) -> CypherResult:
    return run_read(Searcher(db), "p", prepare(text), params, max_rows=10_000, timeout=30.0)


def column(result: CypherResult, i: int = 0) -> list[Any]:
    rows = result.to_json()["rows"]
    assert isinstance(rows, list)
    return [row[i] for row in rows if isinstance(row, list)]


def test_a_vector_search_continues_along_its_tail_filtered_and_ordered_by_score(db: Database) -> None:
    text = (
        "SEARCH (d:Doc) NEAR [1.0, 0.0, 0.0] TOPK 3 MATCH (d)-[:ABOUT]->(t:Topic) WHERE t.name = 'graphs' "
        "RETURN key(d) AS doc, score() AS s ORDER BY s DESC"
    )
    result = read(db, text)
    assert column(result) == ["d1", "d2"]
    scores = column(result, 1)
    assert scores[0] == pytest.approx(1.0) and scores[0] > scores[1]
    assert {node.key for node in result.nodes} == {"d1", "d2", "graphs"}  # the matched subgraph
    assert len(result.edges) == 2


def test_a_vector_search_by_parameter_and_the_subset_form_run_the_same_search(db: Database) -> None:
    subset = "SEARCH (d:Doc) NEAR [0.0, 1.0, 0.0] TOPK 2 RETURN d ORDER BY score() DESC"
    assert prepare(subset).compiled.logical is not None  # upstream's VectorTopK plan
    by_param = "SEARCH (d:Doc) NEAR $v TOPK 2 RETURN d ORDER BY score() DESC"
    assert prepare(by_param).compiled.logical is None  # the row plan, built with $v when it runs
    assert [n.key for n in read(db, subset).nodes] == [n.key for n in read(db, by_param, {"v": [0.0, 1.0, 0.0]}).nodes]
    assert [n.key for n in read(db, subset).nodes] == ["d3", "d4"]


def test_keyword_and_hybrid_sources(db: Database) -> None:
    keyword = read(db, 'SEARCH (d:Doc) ON body MATCHING "search" RETURN key(d) AS k ORDER BY k')
    assert column(keyword) == ["d3", "d4"]
    hybrid = read(
        db,
        'HYBRID (d:Doc) VECTOR NEAR [1.0, 0.0, 0.0] KEYWORD ON body MATCHING "edges" TOPK 2 '
        "RETURN key(d) AS k, score() AS s ORDER BY s DESC",
    )
    assert sorted(column(hybrid)) == ["d1", "d2"]
    assert all(isinstance(s, float) for s in column(hybrid, 1))


def test_beam_keeps_the_nearest_at_each_hop(db: Database) -> None:
    text = (
        "MATCH (t:Topic {name: 'search'}) BEAM (t) IN :ABOUT NEAR [0.0, 0.0, 1.0] WIDTH 1 DEPTH 1 "
        "RETURN key(t) AS k, hops() AS h"
    )
    assert column(read(db, text)) == ["d4"]  # d4 leans towards the third axis; d3 not at all
    assert column(read(db, text), 1) == [1]
    with pytest.raises(QueryError, match="BEAM NEAR takes a list of numbers"):
        read(db, text.replace("[0.0, 0.0, 1.0]", "'text'"))


def test_a_search_as_of_an_earlier_commit_reads_that_snapshot(db: Database) -> None:
    before = db.head()
    db.write(lambda tx: tx.delete_node(tx.plane("p"), "d1"))
    text = "SEARCH (d:Doc) NEAR [1.0, 0.0, 0.0] TOPK 1 RETURN key(d) AS k"
    assert column(read(db, text)) == ["d2"]
    assert column(read(db, f"{text} AS OF {before}")) == ["d1"]
