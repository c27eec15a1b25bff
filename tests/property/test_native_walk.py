"""The C walk (store/_walk.c) returns exactly what the Python walk returns, row for row (the
neighbours with their edge records, and the other ends from the adjacency alone), its lookup by
key the same node, its node reads by id the same nodes, and its checks that a node or a plane is
there the same answer — in a read and in a write transaction, which sees its own writes.

Random workloads — nodes (keyed or not, a key held again after its node is deleted) and edges
created, nodes and edges given new properties, edges retyped, edges and nodes deleted, over several
commits in two planes — then every node (and one that never was) read at every seq, in every
direction, with each edge type filter and none, every key looked up, and every node read by id
(nodes_at, ids no node has too) and by label, once by each path; the lookups by key and the checks
again inside each commit after its operations, and the planes' at every seq (one made and dropped)."""

from __future__ import annotations

import struct
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import drsg
from drsg.api.database import Database
from drsg.kernel.values import Vector
from drsg.store import keys, native, snapshot
from drsg.store.records import Neighbor
from drsg.store.snapshot import Snapshot
from tests.support.values import values

TYPES = ("A", "B", "C")
PLANES = ("p", "q")
KEYS = ("k0", "k1", "k2", "ключ", "k" * 40)  # a key may be held again once its node is deleted
# Property values of every kind the store keeps, long ones too (str 8/16, array 16, map 16, ext 8/16
# headers): what the C walk decodes itself, vectors included, and described values, which it leaves
# to Python.
_long = st.one_of(
    st.text(min_size=32, max_size=300),
    st.lists(st.integers(-(2**63), 2**63 - 1), min_size=16, max_size=20),
    st.lists(st.floats(width=32, allow_nan=False, allow_infinity=False), min_size=5, max_size=130).map(Vector.of),
)
_props = st.dictionaries(st.sampled_from(["w", "Ω", "x" * 40]), st.one_of(values, _long), max_size=3)

_op = st.one_of(
    st.tuples(st.just("node"), st.sampled_from(PLANES), st.sampled_from([None, *KEYS])),
    st.tuples(st.just("renode"), st.integers(0, 99), _props, st.lists(st.sampled_from(["N", "M", "Ω"]), max_size=2)),
    st.tuples(st.just("edge"), st.integers(0, 99), st.integers(0, 99), st.sampled_from(TYPES), st.integers(0, 9)),
    st.tuples(st.just("retype"), st.integers(0, 99), st.sampled_from(TYPES)),
    st.tuples(st.just("reprop"), st.integers(0, 99), _props),
    st.tuples(st.just("delete_edge"), st.integers(0, 99)),
    st.tuples(st.just("delete_node"), st.integers(0, 99)),
)
_commits = st.lists(st.lists(_op, min_size=1, max_size=12), min_size=1, max_size=6)


class Graph:
    """What the workload made so far, to pick live nodes and edges by a drawn number."""

    def __init__(self) -> None:
        self.nodes: dict[int, tuple[str, int]] = {}  # node id -> (plane name, plane id)
        self.edges: dict[int, tuple[str, int, int]] = {}  # edge id -> (plane name, src, dst)
        self.ever: set[tuple[int, int]] = set()  # (plane id, node id) of every node made


def apply(tx: Any, g: Graph, op: tuple[Any, ...]) -> None:
    kind = op[0]
    if kind == "node":
        plane = tx.plane(op[1])
        if op[2] is not None and tx.view.node_id_by_key(plane.id, op[2]) is not None:
            return  # held
        node = tx.create_node(plane, op[2], ["N"], {})
        g.nodes[node.id] = (op[1], plane.id)
        g.ever.add((plane.id, node.id))
        return
    if kind == "edge":
        live = sorted(g.nodes)
        if not live:
            return
        src = live[op[1] % len(live)]
        name = g.nodes[src][0]
        same = [n for n in live if g.nodes[n][0] == name]  # an edge joins two nodes of one plane
        dst = same[op[2] % len(same)]
        edge = tx.create_edge(tx.plane(name), src, dst, op[3], {"w": op[4]})
        g.edges[edge.id] = (name, src, dst)
        return
    if not (g.nodes if kind in ("delete_node", "renode") else g.edges):
        return
    if kind == "renode":
        node_id = sorted(g.nodes)[op[1] % len(g.nodes)]
        tx.update_node(tx.plane(g.nodes[node_id][0]), node_id, op[2], labels=op[3])
        return
    if kind == "delete_node":
        node_id = sorted(g.nodes)[op[1] % len(g.nodes)]
        tx.delete_node(tx.plane(g.nodes.pop(node_id)[0]), node_id)
        g.edges = {e: v for e, v in g.edges.items() if node_id not in v[1:]}
        return
    edge_id = sorted(g.edges)[op[1] % len(g.edges)]
    plane = tx.plane(g.edges[edge_id][0])
    if kind == "retype":
        tx.update_edge(plane, edge_id, edge_type=op[2])
    elif kind == "reprop":
        tx.update_edge(plane, edge_id, op[2])
    else:
        tx.delete_edge(plane, edge_id)
        del g.edges[edge_id]


def walks(
    snap: Snapshot, plane: int, node: int, direction: str, edge_type: str | None
) -> tuple[tuple[list[Neighbor], list[int]], ...]:
    """Each walk's rows and other ends (``neighbors`` and ``neighbor_ids``): the Python path's, then C's."""
    out = []
    for in_c in (False, True):
        native.use_native(in_c)
        rows = list(snap.neighbors(plane, node, direction, edge_type))
        out.append((rows, list(snap.neighbor_ids(plane, node, direction, edge_type))))
    return out[0], out[1]


@pytest.fixture(autouse=True)
def native_on() -> Iterator[None]:
    native.use_native(True)
    assert native.walker() is not None, "the C walk did not bind: is store/_walk.c built?"
    yield
    native.use_native(True)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_commits, st.sampled_from([1, 2, 3, 256]))
def test_the_c_walk_returns_what_the_python_walk_returns(commits: list[list[tuple[Any, ...]]], batch: int) -> None:
    """``batch``: rows a C call makes (snapshot._BATCH), small so that walks go on across calls."""
    saved = snapshot._BATCH
    with tempfile.TemporaryDirectory() as tmp:
        db = drsg.open(Path(tmp) / "g.drsg")
        try:
            snapshot._BATCH = batch
            run(db, commits)
        finally:
            snapshot._BATCH = saved
            db.close()


def answer(read: Callable[[int, str], object], plane: int, key: str) -> object:
    """What a lookup returns, or the type of error it raises (a key that does not encode)."""
    try:
        return read(plane, key)
    except (UnicodeEncodeError, struct.error) as exc:
        return type(exc)


def lookups(snap: Snapshot, planes: set[int], probes: list[tuple[int, int]]) -> None:
    """By key, node by id and plane by id: the C answers are the Python path's."""
    for plane in planes:
        for key in (*KEYS, "never", "", "k0\x00", "\ud800"):
            native.use_native(False)
            python_node = answer(snap.node_by_key, plane, key)
            python_id = answer(snap.node_id_by_key, plane, key)
            native.use_native(True)
            assert answer(snap.node_by_key, plane, key) == python_node, (snap.at, plane, key)
            assert answer(snap.node_id_by_key, plane, key) == python_id, (snap.at, plane, key)
    for plane_id, node_id in probes:
        native.use_native(False)
        python_has = (snap.has_node(plane_id, node_id), snap.has_plane(plane_id))
        native.use_native(True)
        assert (snap.has_node(plane_id, node_id), snap.has_plane(plane_id)) == python_has, (snap.at, plane_id)


def run(db: Database, commits: list[list[tuple[Any, ...]]]) -> None:
    g = Graph()
    db.write(lambda tx: tx.create_plane("gone"))
    db.write(lambda tx: tx.drop_plane("gone"))
    db.write(lambda tx: [tx.create_plane(name) for name in PLANES])
    first = db.head()
    for ops in commits:

        def commit(tx: Any, ops: list[tuple[Any, ...]] = ops) -> None:
            for op in ops:
                apply(tx, g, op)
            probes = [*sorted(g.ever), (0, 1), (4, 1), (1, 10**6), (1, -1)]
            lookups(tx.view, {p for p, _ in probes}, probes)  # a write transaction, its own writes in it

        db.write(commit)
    for at in range(1, db.head() + 1):  # planes: none, then "gone" made and dropped, then p and q
        with db.snapshot(at) as snap:
            lookups(snap, set(), [(plane, 1) for plane in range(5)])
    probes = sorted(g.ever) + [(pid, 10**6) for pid in {p for p, _ in g.ever}]  # and a node that never was
    seen = 0
    for at in range(first, db.head() + 1):
        with db.snapshot(at) as snap:
            walk = native.walker()
            assert walk is not None
            for plane, node in probes:
                for direction in ("out", "in", "both"):
                    for edge_type in (None, *TYPES, "Z"):
                        python, c = walks(snap, plane, node, direction, edge_type)
                        assert c == python, (at, plane, node, direction, edge_type)
                        assert [n.node for n in c[0]] == c[1]  # an edge's ends and its adjacency agree
                        seen += len(c[0])
            for plane in {p for p, _ in probes}:
                ids = [node for p, node in probes if p == plane] + [-1, 2**64, 2**64 - 1]  # and ids no node has
                native.use_native(False)
                python_nodes = (snap.nodes_at(plane, ids), list(snap.nodes(plane, "N")), list(snap.nodes(plane, "Ω")))
                native.use_native(True)
                c_nodes = (snap.nodes_at(plane, ids), list(snap.nodes(plane, "N")), list(snap.nodes(plane, "Ω")))
                assert c_nodes == python_nodes, (at, plane)
            lookups(snap, {p for p, _ in probes}, probes)
            for plane in (-1, 2**32, True):  # planes the C lookup leaves to the Python path
                reads = (snap.node_by_key, snap.node_id_by_key)
                native.use_native(False)
                python_answers = [answer(read, plane, "k0") for read in reads]
                native.use_native(True)
                assert [answer(read, plane, "k0") for read in reads] == python_answers, plane
    if g.edges:
        assert seen > 0  # the walks were not all empty


def test_a_write_transaction_is_looked_up_in_c(tmp_path: Path) -> None:
    """A write's key and plane checks run in C (not left to the Python path), and see its own writes."""
    walk = native.walker()
    assert walk is not None
    with drsg.open(tmp_path / "g.drsg") as db:

        def commit(tx: Any) -> None:
            plane = tx.plane("startup")
            keys_db, planes_db = tx.dbs["keys"], tx.dbs["planes"]
            inv_at = keys.inv(tx.seq)
            assert walk.node_id_by_key(tx.txn, keys_db, plane.id, "ada", inv_at) is None
            assert walk.has_version(tx.txn, planes_db, keys.plane_group(plane.id), inv_at) is True
            node = tx.create_node(plane, "ada", ["Person"])
            assert walk.node_id_by_key(tx.txn, keys_db, plane.id, "ada", inv_at) == node.id
            assert walk.has_version(tx.txn, planes_db, keys.plane_group(99), inv_at) is False

        db.write(commit)
