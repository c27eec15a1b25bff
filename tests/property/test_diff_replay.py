"""`plane.diff` against a replay of the log: for random histories over two planes and every pair
of ends, the diff read from the touched records equals the difference of two whole states
replayed from the log's mutations (which never looks at the projection)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from drsg.store.database import Database
from drsg.store.diff import diff_plane
from drsg.store.mutations import EdgeDelete, EdgePut, NodeDelete, NodePut, PlaneCreate
from drsg.store.transaction import WriteTx

PLANES = ("alpha", "beta")
values = st.one_of(
    st.integers(-3, 3),
    st.sampled_from([1.0, 0.5, True, False, None]),
    st.text("ab", max_size=2),
    st.lists(st.integers(0, 2), max_size=2),
)
props = st.dictionaries(st.sampled_from(["a", "b", "_src"]), values, max_size=3)
op = st.one_of(
    st.tuples(st.just("node"), st.sampled_from(PLANES), st.sampled_from(["k1", "k2", "k3", None]), props),
    st.tuples(st.just("update"), st.sampled_from(PLANES), st.integers(0, 9), props),
    st.tuples(st.just("relabel"), st.sampled_from(PLANES), st.integers(0, 9), st.sampled_from(["A", "B"])),
    st.tuples(st.just("delete"), st.sampled_from(PLANES), st.integers(0, 9)),
    st.tuples(st.just("edge"), st.sampled_from(PLANES), st.integers(0, 9), st.integers(0, 9), props),
    st.tuples(st.just("edge_update"), st.sampled_from(PLANES), st.integers(0, 9), props),
    st.tuples(st.just("edge_delete"), st.sampled_from(PLANES), st.integers(0, 9)),
)
commits = st.lists(st.lists(op, min_size=1, max_size=3), min_size=1, max_size=8)


def _pick(items: list[int], i: int) -> int | None:
    return items[i % len(items)] if items else None


def apply(tx: WriteTx, o: tuple[Any, ...]) -> None:
    plane = tx.plane(o[1])
    nodes = [n.id for n in tx.view.nodes(plane.id)]
    edges = [e.id for e in tx.view.edges(plane.id)]
    kind = o[0]
    if kind == "node":
        if o[2] is None or tx.view.node_id_by_key(plane.id, o[2]) is None:
            tx.create_node(plane, o[2], ["A"], o[3])
    elif kind == "update" and (n := _pick(nodes, o[2])) is not None:
        tx.update_node(plane, n, o[3], [] if o[3] else ["a"], None)
    elif kind == "relabel" and (n := _pick(nodes, o[2])) is not None:
        tx.update_node(plane, n, {}, [], [o[3]])
    elif kind == "delete" and (n := _pick(nodes, o[2])) is not None:
        tx.delete_node(plane, n)
    elif kind == "edge" and (s := _pick(nodes, o[2])) is not None and (d := _pick(nodes, o[3])) is not None:
        tx.create_edge(plane, s, d, "R", o[4])
    elif kind == "edge_update" and (e := _pick(edges, o[2])) is not None:
        tx.update_edge(plane, e, o[3], [], None)
    elif kind == "edge_delete" and (e := _pick(edges, o[2])) is not None:
        tx.delete_edge(plane, e)


def canon(v: Any) -> Any:
    """A value with its type, so 1, 1.0 and True differ as the store keeps them apart."""
    if isinstance(v, dict):
        return ("map", tuple(sorted((k, canon(x)) for k, x in v.items())))
    if isinstance(v, list | tuple):
        return ("list", tuple(canon(x) for x in v))
    return (type(v).__name__, v)


def replay(db: Database, plane_id: int, upto: int) -> tuple[dict[int, Any], dict[int, Any]]:
    """The plane's nodes and edges after commit ``upto``, from the log's mutations alone."""
    nodes: dict[int, Any] = {}
    edges: dict[int, Any] = {}
    for commit in db.commits(1, upto) if upto else []:
        for m in commit.mutations:
            if getattr(m, "plane", None) != plane_id or isinstance(m, PlaneCreate):
                continue
            if isinstance(m, NodePut):
                nodes[m.id] = (m.key, tuple(sorted(m.labels)), canon(m.props))
            elif isinstance(m, NodeDelete):
                nodes.pop(m.id, None)
            elif isinstance(m, EdgePut):
                edges[m.id] = (m.src, m.dst, m.type, canon(m.props))
            elif isinstance(m, EdgeDelete):
                edges.pop(m.id, None)
    return nodes, edges


def expected(before: dict[int, Any], after: dict[int, Any]) -> tuple[list[int], list[int], list[int]]:
    created = sorted(after.keys() - before.keys())
    deleted = sorted(before.keys() - after.keys())
    changed = sorted(i for i in before.keys() & after.keys() if before[i] != after[i])
    return created, deleted, changed


def node_state(n: Any) -> Any:
    return (n.key, tuple(sorted(n.labels)), canon(n.props))


def edge_state(e: Any) -> Any:
    return (e.src, e.dst, e.type, canon(e.props))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(history=commits, plane=st.sampled_from(PLANES))
def test_diff_equals_the_difference_of_two_replayed_states(history: list[list[tuple[Any, ...]]], plane: str) -> None:
    with tempfile.TemporaryDirectory() as tmp, Database(Path(tmp) / "g.drsg") as db:
        db.write(lambda tx: [tx.create_plane(name) for name in PLANES])
        for batch in history:
            db.write(lambda tx, batch=batch: [apply(tx, o) for o in batch])
        head = db.head()
        plane_id = db.plane(plane).id
        states = {seq: replay(db, plane_id, seq) for seq in range(head + 1)}
        for a in range(head + 1):
            for b in range(head + 1):
                with db.read() as reader:
                    if min(a, b) < 2 and max(a, b) < 2:
                        continue  # the plane does not exist yet at either end
                    d = diff_plane(reader, plane, a, b)
                (na, ea), (nb, eb) = states[a], states[b]
                assert ([n.id for n in d.nodes_created], [n.id for n in d.nodes_deleted]) == expected(na, nb)[:2]
                assert [c.id for c in d.nodes_changed] == expected(na, nb)[2]
                assert ([e.id for e in d.edges_created], [e.id for e in d.edges_deleted]) == expected(ea, eb)[:2]
                assert [c.id for c in d.edges_changed] == expected(ea, eb)[2]
                for n in d.nodes_created:
                    assert node_state(n) == nb[n.id]
                for n in d.nodes_deleted:
                    assert node_state(n) == na[n.id]
                for c in d.nodes_changed:
                    assert (node_state(c.before), node_state(c.after)) == (na[c.id], nb[c.id])
                for c in d.edges_changed:
                    assert (edge_state(c.before), edge_state(c.after)) == (ea[c.id], eb[c.id])
                assert d.commits == abs(b - a)
