"""Cypher's write statements on a real LMDB file: each clause's effect and counts, read back
through the store and the log; one commit per statement; all or nothing on an error; MERGE by key
through the key index; the index workers and time travel see a write like any other."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import replace
from pathlib import Path

import pytest

import drsg
from drsg.kernel.errors import Conflict, NotFound, QueryError, QueryLimit
from drsg.kernel.values import Vector
from drsg.plan.cypher.graph import CypherValue
from drsg.plan.cypher.statement import prepare
from drsg.store.database import Database
from drsg.store.mutations import EdgeDelete, EdgePut, Mutation, NodeDelete, NodePut
from drsg.store.snapshot import Snapshot
from drsg.workers.cypher.result import CypherResult, WriteCounts
from drsg.workers.cypher.writes import run_write
from tests.support.cli import Drsg
from tests.support.kafka_broker import Broker

P = "people"


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    database = Database(tmp_path / "graph.drsg")
    database.write(lambda tx: tx.create_plane(P))
    yield database
    database.close()


def run(
    db: Database, text: str, params: Mapping[str, CypherValue] | None = None, *, plane: str = P, **limits: float
) -> CypherResult:
    """The statement as one commit function, as the API runs it; its seq is the commit's."""
    prepared = prepare(text)
    done = db.write(lambda tx: run_write(tx, plane, prepared, params, **limits))  # type: ignore[arg-type]
    return done.value if done.seq is None else replace(done.value, seq=done.seq)


def nodes_of(db: Database, label: str | None = None) -> list[tuple[str | None, list[str], dict[str, object]]]:
    with db.snapshot() as snap:
        return [(n.key, n.labels, dict(n.props)) for n in snap.nodes(snap.plane(P).id, label)]


def last_commit(db: Database) -> list[Mutation]:
    (commit,) = list(db.commits(db.head()))
    return list(commit.mutations)


def unchanged(db: Database) -> tuple[int, list[tuple[str | None, list[str], dict[str, object]]]]:
    return db.head(), nodes_of(db)


# ---------------------------------------------------------------------------- CREATE


def test_create_makes_nodes_and_a_relationship_in_one_commit(db: Database) -> None:
    head = db.head()
    out = run(
        db,
        'CREATE p = (a:Person {key: "ada", name: "Ada", nick: null})-[r:KNOWS {since: 1843}]->'
        '(b:Person:Engineer {name: "Babbage"}) RETURN a, r, b, p',
    )
    assert out.counts == WriteCounts(nodes_created=2, edges_created=1, labels_added=3, props_set=3)
    assert db.head() == head + 1 and out.seq == head + 1
    mutations = last_commit(db)
    assert [type(m) for m in mutations] == [NodePut, NodePut, EdgePut]
    # the key entry is the external key, not a property; a null property is left out
    assert nodes_of(db) == [("ada", ["Person"], {"name": "Ada"}), (None, ["Engineer", "Person"], {"name": "Babbage"})]
    ((a, r, b, _),) = out.rows
    edge = mutations[2]
    assert isinstance(edge, EdgePut) and (edge.src, edge.dst, edge.type) == (a.id, b.id, "KNOWS")  # type: ignore[union-attr]
    assert edge.props == {"since": 1843} and r.id == edge.id  # type: ignore[union-attr]
    answer = out.to_json()
    assert answer["rows"][0][3] == {
        "nodes": [answer["rows"][0][0], answer["rows"][0][2]],
        "edges": [answer["rows"][0][1]],
    }  # type: ignore[index]
    assert [n["external_key"] for n in answer["nodes"]] == ["ada", None]  # type: ignore[index,union-attr]
    assert answer["write"] is True and answer["count"] == 1


def test_a_write_without_return_answers_its_counts_and_what_it_created(db: Database) -> None:
    out = run(db, 'CREATE (:Hub {key: "hub"})-[:HAS]->(:Leaf)')
    assert out.columns == () and out.rows == ()
    assert [n.key for n in out.nodes] == ["hub", None] and [e.type for e in out.edges] == ["HAS"]
    assert out.to_json()["count"] == 0


def test_the_feed_sends_a_write_as_one_message(db: Database) -> None:
    from drsg.feed.subscription import Subscription

    out = run(db, 'MATCH (n) DETACH DELETE n WITH count(*) AS gone CREATE (:A {key: "a"})-[:T]->(:B)')
    (message,) = Subscription(db, P, out.seq, follow=False, resolved_every=None)
    changes = message["changes"]  # type: ignore[index]
    assert message["seq"] == out.seq  # type: ignore[index]
    assert [(c["kind"], c["op"]) for c in changes] == [("node", "created"), ("node", "created"), ("edge", "created")]
    assert changes[0]["record"]["external_key"] == "a"


def test_create_reuses_bound_nodes_and_makes_a_node_per_row(db: Database) -> None:
    out = run(db, "CREATE (h:Hub) WITH h UNWIND [1, 2, 3] AS x CREATE (h)-[:HAS]->(s:Spoke {v: x}) RETURN h, s")
    assert out.counts == WriteCounts(nodes_created=4, edges_created=3, labels_added=4, props_set=3)
    assert len(nodes_of(db, "Hub")) == 1 and sorted(p["v"] for _, _, p in nodes_of(db, "Spoke")) == [1, 2, 3]  # type: ignore[type-var]
    assert len({row[0].id for row in out.rows}) == 1 and len({row[1].id for row in out.rows}) == 3  # type: ignore[union-attr]


def test_create_refuses_a_taken_key_and_writes_nothing(db: Database) -> None:
    run(db, 'CREATE (:Person {key: "ada"})')
    before = unchanged(db)
    with pytest.raises(Conflict, match=r"key 'ada' already exists in plane 'people'; use MERGE"):
        run(db, 'CREATE (:Person {key: "bob"}), (:Person {key: "ada"})')
    assert unchanged(db) == before


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("CREATE (a)-[:T]-(b)", "needs a direction"),
        ("CREATE (a)-->(b)", "exactly one type"),
        ("CREATE (a)-[:T|U]->(b)", "exactly one type"),
        ("CREATE (a)-[:T*1..2]->(b)", "variable-length"),
        ("CREATE (n {mixed: [1, 'a']})", r"list of mixed types \(a string, an integer\)"),
        ("CREATE (n {holes: [1, null]})", "null in it"),
        ("CREATE (a), (b) SET a.friend = b", "cannot hold a node"),
        ("CREATE (n:P) AS OF 1", "AS OF .* cannot pin a write"),
    ],
)
def test_what_a_write_cannot_make_is_refused_and_nothing_written(db: Database, text: str, message: str) -> None:
    before = unchanged(db)
    with pytest.raises(QueryError, match=message):
        run(db, "CREATE (:Seed) WITH 1 AS one " + text if not text.endswith("AS OF 1") else text)
    assert unchanged(db) == before


def test_the_plane_must_exist(db: Database) -> None:
    with pytest.raises(NotFound, match=r"no plane named 'nope'.*`drsg plane create nope`"):
        run(db, "CREATE (n)", plane="nope")


# ---------------------------------------------------------------------------- one commit, all or nothing


def test_a_match_after_a_create_sees_what_the_statement_created(db: Database) -> None:
    out = run(db, "CREATE (a:N {v: 1}) WITH a MATCH (b:N) SET b.seen = true RETURN a = b AS same, count(*) AS n")
    assert out.records() == [{"same": True, "n": 1}]
    assert nodes_of(db, "N") == [(None, ["N"], {"v": 1, "seen": True})]
    assert [type(m) for m in last_commit(db)] == [NodePut, NodePut]  # one commit holds both


def test_an_error_in_a_later_row_or_clause_writes_nothing(db: Database) -> None:
    run(db, 'CREATE (:Hub {key: "hub"})-[:HAS]->(:Leaf)')
    before = unchanged(db)
    commits = [c.seq for c in db.commits()]
    with pytest.raises(QueryError, match=r"node #\d+ still has 1 relationship; use DETACH DELETE"):
        run(db, "UNWIND [1, 2, 3] AS x CREATE (:N {v: x}) WITH count(*) AS made MATCH (h:Hub) DELETE h")
    with pytest.raises(QueryError, match="division by zero"):
        run(db, "UNWIND [1, 0] AS x CREATE (:N {v: 1 / x})")
    with pytest.raises(QueryLimit, match="more than 2 rows"):
        run(db, "UNWIND [1, 2, 3] AS x CREATE (:N {v: x})", max_rows=2)
    assert unchanged(db) == before and [c.seq for c in db.commits()] == commits


def test_a_write_is_seen_by_time_travel_from_its_seq_on(db: Database) -> None:
    before = db.head()
    out = run(db, "CREATE (:N {v: 1})")
    with db.snapshot(before) as snap:
        assert list(snap.nodes(snap.plane(P).id)) == []
    with db.snapshot(out.seq) as snap:
        assert [n.props for n in snap.nodes(snap.plane(P).id)] == [{"v": 1}]


# ---------------------------------------------------------------------------- MERGE


def test_merge_creates_once_and_rows_see_earlier_rows(db: Database) -> None:
    text = "UNWIND [1, 1, 2] AS x MERGE (n:N {v: x}) RETURN id(n) AS id"
    out = run(db, text)
    assert out.counts == WriteCounts(nodes_created=2, labels_added=2, props_set=2)
    ids = [row[0] for row in out.rows]
    assert ids[0] == ids[1] != ids[2]
    head = db.head()
    again = run(db, text)  # idempotent: nothing to write, no commit; the seq is the head it ran at
    assert again.counts == WriteCounts() and again.seq == head == db.head()
    assert [row[0] for row in again.rows] == ids


def test_merge_on_create_and_on_match(db: Database) -> None:
    text = 'MERGE (n:Person {key: "ada"}) ON CREATE SET n.visits = 1 ON MATCH SET n.visits = n.visits + 1'
    assert run(db, text).counts == WriteCounts(nodes_created=1, labels_added=1, props_set=1)
    assert run(db, text).counts == WriteCounts(props_set=1)
    assert nodes_of(db) == [("ada", ["Person"], {"visits": 2})]


def test_merge_by_key_uses_the_key_index_not_a_scan(db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    run(db, 'UNWIND range(1, 20) AS x CREATE (:Person {n: x}) WITH 1 AS one LIMIT 1 CREATE (:Person {key: "ada"})')

    def no_scan(*args: object, **kwargs: object) -> None:
        raise AssertionError("MERGE by key scanned the plane")

    monkeypatch.setattr(Snapshot, "nodes", no_scan)
    monkeypatch.setattr(Snapshot, "node_ids_with_label", no_scan)
    assert run(db, 'MERGE (n:Person {key: "ada"}) RETURN n').counts == WriteCounts()
    assert run(db, 'MERGE (n:Person {key: "bob"})').counts == WriteCounts(nodes_created=1, labels_added=1)
    monkeypatch.undo()
    assert sorted(k for k, _, _ in nodes_of(db) if k) == ["ada", "bob"]


def test_merge_of_a_key_held_by_an_unlike_node_is_a_conflict(db: Database) -> None:
    run(db, 'CREATE (:Person {key: "ada"})')
    with pytest.raises(Conflict, match="key 'ada'"):
        run(db, 'MERGE (n:Robot {key: "ada"})')


def test_merge_a_relationship_between_bound_nodes(db: Database) -> None:
    run(db, 'CREATE (:P {key: "a"}), (:P {key: "b"})')
    ends = 'MATCH (a:P), (b:P) WHERE key(a) = "a" AND key(b) = "b" '
    first = run(db, ends + "MERGE (a)-[r:KNOWS]-(b) RETURN a, b, r")
    assert first.counts == WriteCounts(edges_created=1)
    ((a, b, r),) = first.rows
    (edge,) = last_commit(db)
    assert isinstance(edge, EdgePut) and (edge.src, edge.dst) == (a.id, b.id)  # type: ignore[union-attr]  # left to right
    # undirected: found either way round
    second = run(db, 'MATCH (a:P), (b:P) WHERE key(a) = "b" AND key(b) = "a" MERGE (a)-[r:KNOWS]-(b) RETURN r')
    assert second.counts == WriteCounts() and second.rows[0][0].id == r.id  # type: ignore[union-attr]
    assert run(db, ends + "MERGE (a)<-[:KNOWS]-(b)").counts == WriteCounts(edges_created=1)
    assert run(db, ends + "MERGE (a)-[:KNOWS]->(b)").counts == WriteCounts()


def test_merge_a_whole_path_creates_all_of_it_when_any_part_is_missing(db: Database) -> None:
    run(db, 'CREATE (:P {name: "a"})')
    out = run(db, 'MERGE (a:P {name: "a"})-[:T]->(b:P {name: "b"})')
    assert out.counts == WriteCounts(nodes_created=2, edges_created=1, labels_added=2, props_set=2)
    assert run(db, 'MERGE (a:P {name: "a"})-[:T]->(b:P {name: "b"})').counts == WriteCounts()


def test_merge_finds_a_path_from_its_keyed_node_either_way(db: Database) -> None:
    # the find starts at the keyed middle node and walks left along <-[:U]- and -[:T]->
    text = 'MERGE p = (a:P {name: "a"})-[:T]->(b:P {key: "b"})<-[:U]-(c:Q) RETURN length(p) AS hops, key(b) AS k'
    first = run(db, text)
    assert first.counts == WriteCounts(nodes_created=3, edges_created=2, labels_added=3, props_set=1)
    again = run(db, text)
    assert again.counts == WriteCounts() and again.records() == first.records() == [{"hops": 2, "k": "b"}]
    loop = 'MATCH (a:P {name: "a"}) MERGE (a)-[:SELF]->(a) RETURN count(*) AS rows'
    assert run(db, loop).counts == WriteCounts(edges_created=1)
    # a self-loop is found once, directed or not
    assert run(db, loop).records() == [{"rows": 1}]
    assert run(db, loop.replace("]->", "]-")).records() == [{"rows": 1}]


def test_merge_refuses_a_null_property(db: Database) -> None:
    with pytest.raises(QueryError, match="null value for property 'v'"):
        run(db, "MERGE (n:N {v: null})")


# ---------------------------------------------------------------------------- SET and REMOVE

ADA = 'MATCH (n:Person) WHERE key(n) = "ada" '


def _ada(db: Database) -> None:
    run(db, 'CREATE (:Person {key: "ada", name: "Ada", born: 1815, city: "London"})')


def test_set_a_property_and_null_removes_it(db: Database) -> None:
    _ada(db)
    out = run(db, ADA + "SET n.born = 1816, n.city = null, n.absent = null")
    assert out.counts == WriteCounts(props_set=1, props_removed=1)
    assert nodes_of(db) == [("ada", ["Person"], {"name": "Ada", "born": 1816})]


def test_set_replace_keeps_the_key_and_set_merge_adds(db: Database) -> None:
    _ada(db)
    out = run(db, ADA + 'SET n = {name: "A.", title: "Countess"}')
    assert out.counts == WriteCounts(props_set=2, props_removed=2)
    assert nodes_of(db) == [("ada", ["Person"], {"name": "A.", "title": "Countess"})]
    out = run(db, ADA + "SET n += {title: null, born: $born}", {"born": 1815})
    assert out.counts == WriteCounts(props_set=1, props_removed=1)
    assert nodes_of(db) == [("ada", ["Person"], {"name": "A.", "born": 1815})]


def test_labels_are_counted_only_when_they_change(db: Database) -> None:
    _ada(db)
    assert run(db, ADA + "SET n:Person:Countess:Writer").counts == WriteCounts(labels_added=2)
    out = run(db, ADA + "REMOVE n:Writer:Nope, n.city")
    assert out.counts == WriteCounts(labels_removed=1, props_removed=1)
    assert nodes_of(db) == [("ada", ["Countess", "Person"], {"name": "Ada", "born": 1815})]
    head = db.head()
    assert run(db, ADA + "REMOVE n:Writer").counts == WriteCounts()
    assert db.head() == head  # nothing changed: no commit


def test_set_and_remove_on_a_relationship(db: Database) -> None:
    run(db, 'CREATE (:P {key: "a"})-[:KNOWS]->(:P {key: "b"})')
    out = run(db, "MATCH (:P)-[r:KNOWS]->() SET r.w = 0.5, r += {x: 1} RETURN r.w AS w")
    assert out.counts == WriteCounts(props_set=2) and out.records() == [{"w": 0.5}]
    edge = last_commit(db)[-1]  # each SET item puts the edge: the last one holds both
    assert isinstance(edge, EdgePut) and edge.props == {"w": 0.5, "x": 1}
    assert run(db, "MATCH ()-[r:KNOWS]->() REMOVE r.w").counts == WriteCounts(props_removed=1)


def test_set_on_a_null_does_nothing(db: Database) -> None:
    _ada(db)
    head = db.head()
    out = run(db, "OPTIONAL MATCH (n:Nobody) SET n.x = 1, n:L REMOVE n.y RETURN n")
    assert out.counts == WriteCounts() and out.records() == [{"n": None}] and db.head() == head


# ---------------------------------------------------------------------------- DELETE


def test_detach_delete_removes_the_relationships_first(db: Database) -> None:
    run(db, 'CREATE (:P {key: "a"})-[:T]->(:P {key: "b"})-[:T]->(:P {key: "c"})')
    b = 'MATCH (n:P) WHERE key(n) = "b" '
    before = unchanged(db)
    with pytest.raises(QueryError, match=r"node #\d+ still has 2 relationships; use DETACH DELETE"):
        run(db, b + "DELETE n")
    assert unchanged(db) == before
    out = run(db, b + "DETACH DELETE n, n RETURN count(*) AS rows")  # twice: fine
    assert out.counts == WriteCounts(nodes_deleted=1, edges_deleted=2)
    assert sorted(type(m).__name__ for m in last_commit(db)) == ["EdgeDelete", "EdgeDelete", "NodeDelete"]
    assert sorted(k for k, _, _ in nodes_of(db) if k) == ["a", "c"]


def test_delete_a_relationship_and_its_node_in_one_clause(db: Database) -> None:
    run(db, 'CREATE (:P {key: "a"})-[:T]->(:P {key: "b"})')
    out = run(db, 'MATCH (a:P)-[r:T]->() WHERE key(a) = "a" DELETE a, r RETURN a')
    assert out.counts == WriteCounts(nodes_deleted=1, edges_deleted=1)
    assert [type(m) for m in last_commit(db)] == [EdgeDelete, NodeDelete]
    assert out.rows[0][0].key == "a"  # type: ignore[union-attr]  # a deleted node answers its last record


def test_delete_a_path(db: Database) -> None:
    run(db, "CREATE (:P)-[:T]->(:P)-[:T]->(:P)")
    out = run(db, "MATCH p = (:P)-[:T]->(:P)-[:T]->(:P) DELETE p")
    assert out.counts == WriteCounts(nodes_deleted=3, edges_deleted=2) and nodes_of(db) == []


def test_reading_a_deleted_node_later_in_the_statement_is_an_error(db: Database) -> None:
    _ada(db)
    before = unchanged(db)
    with pytest.raises(QueryError, match=r"node #\d+ was deleted earlier in this statement"):
        run(db, ADA + "DELETE n SET n.copy = n.name")
    with pytest.raises(QueryError, match=r"node #\d+ was deleted earlier in this statement"):
        run(db, ADA + "DELETE n RETURN n.name")
    assert unchanged(db) == before


def test_delete_refuses_what_is_not_an_entity(db: Database) -> None:
    with pytest.raises(QueryError, match="DELETE removes nodes, relationships and paths, not an integer"):
        run(db, "WITH 1 AS x DELETE x")


# ---------------------------------------------------------------------------- the index workers


def test_a_vector_written_by_create_is_searchable(db: Database) -> None:
    from drsg.workers.search import Searcher

    db.write(lambda tx: tx.declare_index(tx.plane(P), "vector", "Doc", "embedding", {"metric": "cosine"}))
    docs = [{"key": "north", "embedding": [1.0, 0.0, 0.0]}, {"key": "east", "embedding": [0.0, 1.0, 0.0]}]
    run(db, "UNWIND $docs AS d CREATE (:Doc {key: d.key, embedding: d.embedding, tags: [1, 2]})", {"docs": docs})  # type: ignore[dict-item]
    with db.snapshot() as snap:
        stored = snap.node_by_key(snap.plane(P).id, "east")
    assert stored is not None and stored.props["embedding"] == Vector.of([0.0, 1.0, 0.0])
    assert stored.props["tags"] == [1, 2]  # a list elsewhere stays a list
    searcher = Searcher(db)
    try:
        searcher.indexes.catch_up()
        hits = searcher.vector(P, "Doc", "embedding", Vector.of([0.1, 0.9, 0.0]), k=1)
        assert [hit.node.key for hit in hits] == ["east"]
    finally:
        searcher.indexes.close()


# ---------------------------------------------------------------------------- limits


def test_a_write_past_its_time_limit_writes_nothing(db: Database) -> None:
    before = unchanged(db)
    with pytest.raises(QueryLimit, match=r"\[query\] timeout_secs"):
        run(db, "UNWIND range(1, 10) AS x CREATE (:N {v: x})", timeout=1e-9)
    assert unchanged(db) == before


# ---------------------------------------------------------------------------- a Kafka node


def test_merge_racing_on_two_kafka_nodes_makes_the_node_once(tmp_path: Path, kafka_broker: Broker) -> None:
    """A Kafka node runs the commit function on its copy and runs it again when another node's
    commit landed first: the statement depends on nothing outside its transaction, so the second
    run matches what the first node made."""
    url = kafka_broker.url(f"cypher-{uuid.uuid4().hex[:12]}")
    nodes = [drsg.open(tmp_path / f"{name}.drsg", log=url) for name in ("a", "b")]
    merge = prepare('UNWIND range(1, 10) AS i MERGE (n:Person {key: "ada"}) ON CREATE SET n.by = $by')
    made: list[int] = []
    errors: list[BaseException] = []

    def race(db: Database, name: str) -> None:
        try:
            for _ in range(5):
                done = db.write(lambda tx: run_write(tx, "startup", merge, {"by": name}))
                made.append(done.value.counts.nodes_created)  # type: ignore[union-attr]
        except BaseException as exc:  # shown by the assertion below
            errors.append(exc)

    try:
        threads = [threading.Thread(target=race, args=(db, name)) for db, name in zip(nodes, "ab", strict=True)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        assert not errors and sorted(made) == [0] * 9 + [1]
        head = max(db.kafka.head() for db in nodes)  # type: ignore[attr-defined]
        for db in nodes:
            db.catch_up(head)  # type: ignore[attr-defined]
            with db.snapshot() as snap:
                (ada,) = list(snap.nodes(0, "Person"))
                assert ada.key == "ada" and ada.props["by"] in ("a", "b")
        stale = [c for c in nodes[0].commits() if str(c.origin.get("skipped", "")).startswith("stale")]
        assert stale, "the race made no stale commit: no statement ran again"
    finally:
        for db in nodes:
            db.close()


# ---------------------------------------------------------------------------- end to end: `drsg cypher`


def test_cli_write_errors_exit_with_their_codes_and_write_nothing(drsg: Drsg) -> None:
    assert drsg("plane", "create", P).code == 0
    assert drsg("cypher", 'CREATE (:Person {key: "ada"})', "--plane", P).code == 0
    head = drsg("stats", "--json").json_lines()[0]["commit_seq"]
    cases = [
        ("CREATE (:N) AS OF 1", 2, "cannot pin a write"),  # usage: the statement
        ('CREATE (:Person {key: "ada"})', 1, "use MERGE"),  # runtime: a conflict
        ("MATCH (n:Person) CREATE (:N {v: 1 / 0})", 2, "division by zero"),
        ("CREATE (:N)", 1, "drsg plane create nope"),  # runtime: no such plane
    ]
    for text, code, message in cases:
        plane = "nope" if "plane create" in message else P
        done = drsg("cypher", text, "--plane", plane)
        assert done.code == code, (text, done.err)
        assert done.err.startswith("error: ") and message in done.err and done.err.count("\n") == 1, done.err
    assert drsg("stats", "--json").json_lines()[0]["commit_seq"] == head
