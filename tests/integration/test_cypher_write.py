"""Cypher's write clauses on a real LMDB file: each clause's effect and counts, read back through
the store and the log; one commit per statement; all or nothing on an error; MERGE by key through
the key index."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

from drsg.kernel.errors import Conflict, QueryError, QueryLimit
from drsg.kernel.values import Vector
from drsg.plan.cypher import ast
from drsg.plan.cypher.graph import CypherValue, EvalContext, NodeRef, RelRef, Row
from drsg.store.database import Database
from drsg.store.mutations import EdgeDelete, EdgePut, NodeDelete, NodePut
from drsg.store.snapshot import Snapshot
from drsg.store.transaction import WriteTx
from drsg.workers.cypher.result import WriteCounts
from drsg.workers.cypher.write_match import match_part
from drsg.workers.cypher.writes import Limits, WriteSession, apply_write

P = "people"


# ---------------------------------------------------------------------------- a small driver

# Until the executor runs whole statements, the clauses are driven here: UNWIND, a MATCH of one
# pattern part (through the write path's own matcher) and the write clauses, each over all rows.


def evaluate(expr: ast.Expr, row: Row, ctx: EvalContext) -> CypherValue:
    if isinstance(expr, ast.Literal):
        return expr.value
    if isinstance(expr, ast.Parameter):
        return ctx.params[expr.name]
    if isinstance(expr, ast.Variable):
        return row[expr.name]
    if isinstance(expr, ast.MapLiteral):
        return {k: evaluate(v, row, ctx) for k, v in expr.entries}
    if isinstance(expr, ast.ListLiteral):
        return [evaluate(v, row, ctx) for v in expr.items]
    if isinstance(expr, ast.PropertyAccess):
        subject = evaluate(expr.subject, row, ctx)
        assert isinstance(subject, NodeRef)
        return ctx.graph.properties(subject.id).get(expr.key)
    raise AssertionError(f"the test driver does not evaluate {expr}")


@dataclass
class Outcome:
    rows: list[Row]
    counts: WriteCounts
    seq: int | None


def run(db: Database, *clauses: ast.Clause, params: Mapping[str, CypherValue] | None = None, **limits: int) -> Outcome:
    def statement(tx: WriteTx) -> tuple[list[Row], WriteCounts]:
        session = WriteSession(tx, tx.plane(P), params or {}, evaluate, Limits(**limits))
        rows: list[Row] = [{}]
        for clause in clauses:
            if isinstance(clause, ast.Unwind):
                rows = [
                    {**row, clause.variable: item}
                    for row in rows
                    for item in evaluate(clause.expr, row, session)  # type: ignore[union-attr]
                ]
            elif isinstance(clause, ast.Match):
                rows = _match(session, clause, rows)
            else:
                assert isinstance(clause, (ast.Create, ast.Merge, ast.SetClause, ast.Remove, ast.Delete))
                rows = apply_write(clause, rows, session)
        return rows, session.tally.counts()

    done = db.write(statement)
    rows, counts = done.value
    return Outcome(rows, counts, done.seq)


def _match(session: WriteSession, clause: ast.Match, rows: list[Row]) -> list[Row]:
    from drsg.workers.cypher.writes import _wants

    out: list[Row] = []
    for row in rows:
        (part,) = clause.pattern
        nodes, rels = _wants(session, part, row, "MATCH")
        for node_ids, rel_ids in match_part(session.view, part, nodes, rels):
            bound = dict(row)
            for pattern, node_id in zip(part.nodes, node_ids, strict=True):
                if pattern.variable:
                    bound[pattern.variable] = NodeRef(node_id)
            for rel_pattern, rel_id in zip(part.rels, rel_ids, strict=True):
                if rel_pattern.variable:
                    bound[rel_pattern.variable] = RelRef(rel_id)
            out.append(bound)
    return out


def node(var: str | None = None, *labels: str, **props: CypherValue | ast.Expr) -> ast.NodePattern:
    entries = tuple((k, _lit(v)) for k, v in props.items())
    return ast.NodePattern(var, labels, ast.MapLiteral(entries) if props else None)


def _lit(value: CypherValue | ast.Expr) -> ast.Expr:
    if isinstance(value, ast.EXPR_TYPES):
        return value  # type: ignore[return-value]
    if isinstance(value, list):
        return ast.ListLiteral(tuple(_lit(v) for v in value))
    assert value is None or isinstance(value, (bool, int, float, str))
    return ast.Literal(value)


def rel(type_: str, direction: ast.Direction = "out", var: str | None = None) -> ast.RelPattern:
    return ast.RelPattern(var, (type_,), direction)


def path(*items: ast.NodePattern | ast.RelPattern, name: str | None = None) -> ast.PatternPart:
    nodes = tuple(i for i in items if isinstance(i, ast.NodePattern))
    rels = tuple(i for i in items if isinstance(i, ast.RelPattern))
    return ast.PatternPart(nodes, rels, name)


def prop(var: str, key: str) -> ast.PropertyAccess:
    return ast.PropertyAccess(ast.Variable(var), key)


@pytest.fixture
def db(tmp_path: Path) -> Database:
    database = Database(tmp_path / "graph.drsg")
    database.write(lambda tx: tx.create_plane(P))
    yield database  # type: ignore[misc]
    database.close()


def nodes_of(db: Database, label: str | None = None) -> list[tuple[str | None, list[str], dict[str, object]]]:
    with db.snapshot() as snap:
        plane = snap.plane(P)
        return [(n.key, n.labels, dict(n.props)) for n in snap.nodes(plane.id, label)]


def last_commit(db: Database) -> list[object]:
    (commit,) = list(db.commits(db.head()))
    return list(commit.mutations)


# ---------------------------------------------------------------------------- CREATE


def test_create_makes_nodes_and_a_relationship_in_one_commit(db: Database) -> None:
    head = db.head()
    ada = node("a", "Person", key="ada", name="Ada", nick=None)
    babbage = node("b", "Engineer", "Person", name="Babbage")
    knows = ast.RelPattern("r", ("KNOWS",), "out", properties=ast.MapLiteral((("since", ast.Literal(1843)),)))
    out = run(db, ast.Create((path(ada, knows, babbage, name="p"),)))

    assert out.counts == WriteCounts(nodes_created=2, edges_created=1, labels_added=3, props_set=3)
    assert db.head() == head + 1 and out.seq == head + 1
    mutations = last_commit(db)
    assert [type(m) for m in mutations] == [NodePut, NodePut, EdgePut]
    # the key entry is the external key, not a property; a null property is left out
    assert nodes_of(db) == [("ada", ["Person"], {"name": "Ada"}), (None, ["Engineer", "Person"], {"name": "Babbage"})]
    (row,) = out.rows
    a, b, r = row["a"], row["b"], row["r"]
    assert isinstance(a, NodeRef) and isinstance(b, NodeRef)
    edge = mutations[2]
    assert isinstance(edge, EdgePut) and (edge.src, edge.dst, edge.type, edge.props) == (
        a.id,
        b.id,
        "KNOWS",
        {"since": 1843},
    )
    assert row["p"] == ast_path_value(row)
    assert r is not None


def ast_path_value(row: Row) -> object:
    from drsg.plan.cypher.graph import PathValue

    return PathValue((row["a"], row["b"]), (row["r"],))  # type: ignore[arg-type]


def test_create_reuses_bound_nodes_and_makes_a_node_per_row(db: Database) -> None:
    xs = ast.Unwind(ast.ListLiteral((ast.Literal(1), ast.Literal(2), ast.Literal(3))), "x")
    hub = ast.Create((path(node("h", "Hub")),))
    spoke = ast.Create((path(node("h"), rel("HAS"), node("s", "Spoke", v=0)),))
    out = run(db, hub, xs, spoke)
    assert out.counts == WriteCounts(nodes_created=4, edges_created=3, labels_added=4, props_set=3)
    assert len(nodes_of(db, "Hub")) == 1 and len(nodes_of(db, "Spoke")) == 3
    assert len({row["h"] for row in out.rows}) == 1 and len({row["s"] for row in out.rows}) == 3


def test_create_refuses_a_taken_key_and_writes_nothing(db: Database) -> None:
    run(db, ast.Create((path(node(None, "Person", key="ada")),)))
    head = db.head()
    with pytest.raises(Conflict, match=r"key 'ada' already exists.*MERGE"):
        run(db, ast.Create((path(node(None, "Person", key="bob")), path(node(None, "Person", key="ada")))))
    assert db.head() == head and [k for k, _, _ in nodes_of(db)] == ["ada"]


@pytest.mark.parametrize(
    ("part", "message"),
    [
        (path(node("a"), rel("T", "both"), node("b")), "directed"),
        (path(node("a"), ast.RelPattern(None, (), "out"), node("b")), "exactly one type"),
        (path(node("a"), ast.RelPattern(None, ("T", "U"), "out"), node("b")), "exactly one type"),
        (path(node("a"), ast.RelPattern(None, ("T",), "out", ast.VarLength(1, 2)), node("b")), "variable-length"),
        (path(node(None, mixed=[1, "a"])), "mixed types"),
        (path(node(None, holes=[1, None])), "null in it"),
    ],
)
def test_create_refuses_what_it_cannot_make(db: Database, part: ast.PatternPart, message: str) -> None:
    head = db.head()
    with pytest.raises(QueryError, match=message):
        run(db, ast.Create((path(node("x", "Seed")),)), ast.Create((part,)))
    assert db.head() == head and nodes_of(db) == []


def test_a_node_is_not_a_property_value(db: Database) -> None:
    create = ast.Create((path(node("a")), path(node("b"))))
    set_ = ast.SetClause((ast.SetProperty(prop("a", "friend"), ast.Variable("b")),))
    with pytest.raises(QueryError, match="cannot hold a node"):
        run(db, create, set_)


# ---------------------------------------------------------------------------- one commit, all or nothing


def test_a_match_after_a_create_sees_what_the_statement_created(db: Database) -> None:
    create = ast.Create((path(node("a", "N", v=1)),))
    match = ast.Match((path(node("b", "N")),))
    set_ = ast.SetClause((ast.SetProperty(prop("b", "seen"), ast.Literal(True)),))
    out = run(db, create, match, set_)
    assert [row["b"] for row in out.rows] == [out.rows[0]["a"]]
    assert nodes_of(db, "N") == [(None, ["N"], {"v": 1, "seen": True})]
    assert [type(m) for m in last_commit(db)] == [NodePut, NodePut]  # one commit holds both


def test_an_error_in_a_later_row_or_clause_writes_nothing(db: Database) -> None:
    run(db, ast.Create((path(node("a", "Hub", key="hub"), rel("HAS"), node(None, "Leaf")),)))
    head, before = db.head(), nodes_of(db)
    xs = ast.Unwind(ast.ListLiteral((ast.Literal(1), ast.Literal(2), ast.Literal(3))), "x")
    create = ast.Create((path(node(None, "N", v=ast.Variable("x"))),))
    hub = ast.Match((path(node("h", "Hub")),))
    with pytest.raises(QueryError, match=r"node #\d+ still has 1 relationship; use DETACH DELETE"):
        run(db, xs, create, hub, ast.Delete((ast.Variable("h"),)))
    with pytest.raises(QueryLimit, match=r"more than 2 rows \(\[query\] max_rows\)"):
        run(db, xs, create, max_rows=2)
    assert db.head() == head and nodes_of(db) == before
    assert [c.seq for c in db.commits()][-1] == head  # no commit appended


def test_a_write_is_invisible_as_of_the_seq_before_it(db: Database) -> None:
    before = db.head()
    out = run(db, ast.Create((path(node(None, "N", v=1)),)))
    with db.snapshot(before) as snap:
        assert list(snap.nodes(snap.plane(P).id)) == []
    with db.snapshot(out.seq) as snap:
        assert [n.props for n in snap.nodes(snap.plane(P).id)] == [{"v": 1}]


# ---------------------------------------------------------------------------- MERGE


def unwind(*values: CypherValue) -> ast.Unwind:
    return ast.Unwind(ast.ListLiteral(tuple(_lit(v) for v in values)), "x")


def test_merge_creates_once_and_rows_see_earlier_rows(db: Database) -> None:
    merge = ast.Merge(path(ast.NodePattern("n", ("N",), ast.MapLiteral((("v", ast.Variable("x")),)))))
    out = run(db, unwind(1, 1, 2), merge)
    assert out.counts == WriteCounts(nodes_created=2, labels_added=2, props_set=2)
    assert len(out.rows) == 3 and out.rows[0]["n"] == out.rows[1]["n"] != out.rows[2]["n"]
    head = db.head()
    again = run(db, unwind(1, 1, 2), merge)  # idempotent: nothing to write, no commit
    assert again.counts == WriteCounts() and again.seq is None and db.head() == head
    assert [r["n"] for r in again.rows] == [r["n"] for r in out.rows]


def test_merge_on_create_and_on_match(db: Database) -> None:
    merge = ast.Merge(
        path(node("n", "Person", key="ada")),
        on_create=(ast.SetProperty(prop("n", "visits"), ast.Literal(1)),),
        on_match=(ast.SetProperty(prop("n", "visits"), ast.Literal(2)),),
    )
    first = run(db, merge)
    assert first.counts == WriteCounts(nodes_created=1, labels_added=1, props_set=1)
    second = run(db, merge)
    assert second.counts == WriteCounts(props_set=1)
    assert nodes_of(db) == [("ada", ["Person"], {"visits": 2})]


def test_merge_by_key_uses_the_key_index_not_a_scan(db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    run(db, unwind(*range(20)), ast.Create((path(ast.NodePattern(None, ("Person",), None)),)))
    run(db, ast.Create((path(node(None, "Person", key="ada")),)))

    def no_scan(*args: object, **kwargs: object) -> None:
        raise AssertionError("MERGE by key scanned the plane")

    monkeypatch.setattr(Snapshot, "nodes", no_scan)
    monkeypatch.setattr(Snapshot, "node_ids_with_label", no_scan)
    found = run(db, ast.Merge(path(node("n", "Person", key="ada"))))
    assert found.counts == WriteCounts()
    made = run(db, ast.Merge(path(node("n", "Person", key="bob"))))
    assert made.counts == WriteCounts(nodes_created=1, labels_added=1)
    monkeypatch.undo()
    assert sorted(k for k, _, _ in nodes_of(db) if k) == ["ada", "bob"]


def test_merge_of_a_key_held_by_an_unlike_node_is_a_conflict(db: Database) -> None:
    run(db, ast.Create((path(node(None, "Person", key="ada")),)))
    with pytest.raises(Conflict, match="key 'ada'"):
        run(db, ast.Merge(path(node("n", "Robot", key="ada"))))


def test_merge_a_relationship_between_bound_nodes(db: Database) -> None:
    run(db, ast.Create((path(node(None, "P", key="a")), path(node(None, "P", key="b")))))
    a = ast.Match((path(node("a", "P", key="a")),))
    b = ast.Match((path(node("b", "P", key="b")),))
    merge = ast.Merge(path(node("a"), rel("KNOWS", "both", "r"), node("b")))
    first = run(db, a, b, merge)
    assert first.counts == WriteCounts(edges_created=1)
    edge = last_commit(db)[0]
    assert isinstance(edge, EdgePut) and edge.type == "KNOWS"
    (row,) = first.rows
    assert (edge.src, edge.dst) == (row["a"].id, row["b"].id)  # type: ignore[union-attr]  # left to right
    second = run(db, b, a, merge)  # undirected: the edge is found either way round
    assert second.counts == WriteCounts() and second.rows[0]["r"] == row["r"]
    assert run(db, a, b, ast.Merge(path(node("a"), rel("KNOWS", "in"), node("b")))).counts.edges_created == 1


def test_merge_refuses_a_null_property(db: Database) -> None:
    with pytest.raises(QueryError, match="null value for property 'v'"):
        run(db, ast.Merge(path(node("n", "N", v=None))))


# ---------------------------------------------------------------------------- SET and REMOVE


def _ada(db: Database) -> ast.Match:
    run(db, ast.Create((path(node(None, "Person", key="ada", name="Ada", born=1815, city="London")),)))
    return ast.Match((path(node("n", "Person", key="ada")),))


def test_set_a_property_and_null_removes_it(db: Database) -> None:
    n = _ada(db)
    out = run(
        db,
        n,
        ast.SetClause(
            (
                ast.SetProperty(prop("n", "born"), ast.Literal(1816)),
                ast.SetProperty(prop("n", "city"), ast.Literal(None)),
                ast.SetProperty(prop("n", "absent"), ast.Literal(None)),
            )
        ),
    )
    assert out.counts == WriteCounts(props_set=1, props_removed=1)
    assert nodes_of(db) == [("ada", ["Person"], {"name": "Ada", "born": 1816})]


def test_set_replace_keeps_the_key_and_set_merge_adds(db: Database) -> None:
    n = _ada(db)
    replace = ast.SetProperties("n", ast.MapLiteral((("name", ast.Literal("A.")), ("title", ast.Literal("Countess")))))
    out = run(db, n, ast.SetClause((replace,)))
    assert out.counts == WriteCounts(props_set=2, props_removed=2)
    assert nodes_of(db) == [("ada", ["Person"], {"name": "A.", "title": "Countess"})]
    merge = ast.SetProperties(
        "n", ast.MapLiteral((("title", ast.Literal(None)), ("born", ast.Literal(1815)))), merge=True
    )
    out = run(db, n, ast.SetClause((merge,)))
    assert out.counts == WriteCounts(props_set=1, props_removed=1)
    assert nodes_of(db) == [("ada", ["Person"], {"name": "A.", "born": 1815})]


def test_labels_are_counted_only_when_they_change(db: Database) -> None:
    n = _ada(db)
    out = run(db, n, ast.SetClause((ast.SetLabels("n", ("Person", "Countess", "Writer")),)))
    assert out.counts == WriteCounts(labels_added=2)
    out = run(db, n, ast.Remove((ast.RemoveLabels("n", ("Writer", "Nope")), ast.RemoveProperty(prop("n", "city")))))
    assert out.counts == WriteCounts(labels_removed=1, props_removed=1)
    assert nodes_of(db) == [("ada", ["Countess", "Person"], {"name": "Ada", "born": 1815})]
    head = db.head()
    assert run(db, n, ast.Remove((ast.RemoveLabels("n", ("Writer",)),))).counts == WriteCounts()
    assert db.head() == head  # nothing changed: no commit


def test_set_and_remove_on_a_relationship(db: Database) -> None:
    run(db, ast.Create((path(node(None, "P", key="a"), rel("KNOWS"), node(None, "P", key="b")),)))
    r = ast.Match((path(node(None, "P", key="a"), rel("KNOWS", "out", "r"), node()),))
    out = run(
        db,
        r,
        ast.SetClause((ast.SetProperty(ast.PropertyAccess(ast.Variable("r"), "w"), ast.Literal(0.5)),)),
    )
    assert out.counts == WriteCounts(props_set=1)
    (edge,) = last_commit(db)
    assert isinstance(edge, EdgePut) and edge.props == {"w": 0.5}
    out = run(db, r, ast.Remove((ast.RemoveProperty(ast.PropertyAccess(ast.Variable("r"), "w")),)))
    assert out.counts == WriteCounts(props_removed=1)


# ---------------------------------------------------------------------------- DELETE


def _chain(db: Database) -> None:
    run(
        db,
        ast.Create(
            (path(node(None, "P", key="a"), rel("T"), node(None, "P", key="b"), rel("T"), node(None, "P", key="c")),)
        ),
    )


def test_detach_delete_removes_the_relationships_first(db: Database) -> None:
    _chain(db)
    b = ast.Match((path(node("n", "P", key="b")),))
    head = db.head()
    with pytest.raises(QueryError, match=r"node #\d+ still has 2 relationships; use DETACH DELETE"):
        run(db, b, ast.Delete((ast.Variable("n"),)))
    assert db.head() == head
    out = run(db, b, ast.Delete((ast.Variable("n"), ast.Variable("n")), detach=True))  # twice: fine
    assert out.counts == WriteCounts(nodes_deleted=1, edges_deleted=2)
    assert sorted(type(m).__name__ for m in last_commit(db)) == ["EdgeDelete", "EdgeDelete", "NodeDelete"]
    assert sorted(k for k, _, _ in nodes_of(db)) == ["a", "c"]  # type: ignore[type-var]


def test_delete_a_relationship_and_its_node_in_one_clause(db: Database) -> None:
    run(db, ast.Create((path(node(None, "P", key="a"), rel("T"), node(None, "P", key="b")),)))
    m = ast.Match((path(node("a", "P", key="a"), rel("T", "out", "r"), node()),))
    out = run(db, m, ast.Delete((ast.Variable("a"), ast.Variable("r"))))
    assert out.counts == WriteCounts(nodes_deleted=1, edges_deleted=1)
    assert [type(x) for x in last_commit(db)] == [EdgeDelete, NodeDelete]


def test_reading_a_deleted_node_later_in_the_statement_is_an_error(db: Database) -> None:
    n = _ada(db)
    head = db.head()
    later = ast.SetClause((ast.SetProperty(prop("n", "copy"), prop("n", "name")),))
    with pytest.raises(QueryError, match=r"node #\d+ was deleted earlier in this statement"):
        run(db, n, ast.Delete((ast.Variable("n"),)), later)
    assert db.head() == head


# ---------------------------------------------------------------------------- the index workers


def test_a_vector_written_by_create_is_searchable(db: Database) -> None:
    from drsg.workers.search import Searcher

    db.write(lambda tx: tx.declare_index(tx.plane(P), "vector", "Doc", "embedding", {"metric": "cosine"}))
    docs = [("north", [1.0, 0.0, 0.0]), ("east", [0.0, 1.0, 0.0]), ("up", [0.0, 0.0, 1.0])]
    for name, vec in docs:
        run(db, ast.Create((path(node(None, "Doc", key=name, embedding=vec)),)))
    with db.snapshot() as snap:
        stored = snap.node_by_key(snap.plane(P).id, "east")
    assert stored is not None and stored.props["embedding"] == Vector.of([0.0, 1.0, 0.0])
    searcher = Searcher(db)
    searcher.indexes.catch_up()
    hits = searcher.vector(P, "Doc", "embedding", Vector.of([0.1, 0.9, 0.0]), k=1)
    assert [hit.node.key for hit in hits] == ["east"]
    searcher.indexes.close()
