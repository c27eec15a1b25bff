"""A canonical export depends on the graph alone: the same keyed graph written into two fresh
databases in two different orders — the second with history on top (wrong values corrected, a
node and an edge made and deleted, property maps built in another key order) — exports the same
bytes under ``canonical=True``, and importing it into a new plane exports them again.

Oracle: the other database's canonical export. The default export is in id order, so it differs
between the two (the deterministic test below shows it does for a fixed pair).
"""

from __future__ import annotations

import json
import random
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import event, given, settings
from hypothesis import strategies as st

import drsg
from drsg.store.database import Database
from drsg.store.jsonl import export_lines, import_jsonl
from drsg.store.transaction import WriteTx

# Keys across UTF-8 widths: code-point order puts "ｱ" (U+FF71) before the emoji, UTF-16 order after.
KEY_CHARS = "aAbZé日ｱ\U0001f600 "
NAMES = ["x", "y", "z", "é", "Ab"]

scalars = st.one_of(st.integers(-3, 3), st.text("ab", max_size=2), st.booleans(), st.none())
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(NAMES), inner, max_size=3),
    max_leaves=6,
)
props = st.dictionaries(st.sampled_from(NAMES), values, max_size=4)


@dataclass
class Graph:
    nodes: list[tuple[str, list[str], dict[str, Any]]]  # key, labels, properties
    edges: list[tuple[int, str, int, dict[str, Any]]]  # src index, type, dst index, properties


@st.composite
def graphs(draw: st.DrawFn) -> Graph:
    node_keys = draw(st.lists(st.text(KEY_CHARS, min_size=1, max_size=3), min_size=1, max_size=6, unique=True))
    nodes = [(key, draw(st.lists(st.sampled_from("ABC"), unique=True, max_size=2)), draw(props)) for key in node_keys]
    ends = st.integers(0, len(nodes) - 1)
    edge = st.tuples(ends, st.sampled_from(["R", "S"]), ends, props)
    edges = draw(st.lists(edge, max_size=8))
    if edges and draw(st.booleans()):
        edges.append(edges[0])  # a parallel edge, the same in every way
    return Graph(nodes, edges)


def reordered(value: Any, rng: random.Random) -> Any:
    """The same value with every map's keys in another order."""
    if isinstance(value, dict):
        names = list(value)
        rng.shuffle(names)
        return {k: reordered(value[k], rng) for k in names}
    if isinstance(value, list):
        return [reordered(v, rng) for v in value]
    return value


def write_plain(db: Database, graph: Graph, order: list[int], edge_order: list[int]) -> None:
    def fill(tx: WriteTx) -> None:
        plane = tx.ensure_plane("p")
        for i in order:
            key, labels, node_props = graph.nodes[i]
            tx.create_node(plane, key, labels, node_props)
        for j in edge_order:
            src, edge_type, dst, edge_props = graph.edges[j]
            tx.create_edge(plane, f"@{graph.nodes[src][0]}", f"@{graph.nodes[dst][0]}", edge_type, edge_props)

    db.write(fill)


def write_with_history(db: Database, graph: Graph, order: list[int], edge_order: list[int], rng: random.Random) -> None:
    """The same graph, one commit per step, each node and edge first written wrong and then corrected,
    with a node and an edge that come and go."""
    db.write(lambda tx: tx.ensure_plane("p"))
    plane_of = lambda tx: tx.plane("p")  # noqa: E731
    db.write(lambda tx: tx.create_node(plane_of(tx), "ghost", ["Ghost"], {"x": 1}))
    for i in order:
        key, labels, node_props = graph.nodes[i]
        wrong = {"stale": True, **{k: "wrong" for k in reordered(node_props, rng)}}  # the order the node keeps
        right = reordered(node_props, rng)

        def create(tx: WriteTx, key: str = key, wrong: dict[str, Any] = wrong) -> None:
            tx.create_node(plane_of(tx), key, ["Wrong"], wrong)

        def correct(
            tx: WriteTx, key: str = key, labels: list[str] = labels, right: Any = right, wrong: Any = wrong
        ) -> None:
            tx.update_node(plane_of(tx), f"@{key}", right, unset=set(wrong) - set(right), labels=labels)

        db.write(create)
        db.write(correct)
    first = graph.nodes[order[0]][0]
    db.write(lambda tx: tx.create_edge(plane_of(tx), "@ghost", f"@{first}", "R", {}))
    for j in edge_order:
        src, edge_type, dst, edge_props = graph.edges[j]
        right = reordered(edge_props, rng)

        def link(
            tx: WriteTx,
            src_ref: str = f"@{graph.nodes[src][0]}",
            dst_ref: str = f"@{graph.nodes[dst][0]}",
            edge_type: str = edge_type,
            right: Any = right,
        ) -> None:
            plane = plane_of(tx)
            extra = tx.create_edge(plane, src_ref, dst_ref, edge_type, {"extra": 1})
            made = tx.create_edge(plane, src_ref, dst_ref, edge_type, {"stale": 0})
            tx.update_edge(plane, made.id, right, unset={"stale"} - set(right))
            tx.delete_edge(plane, extra.id)

        db.write(link)
    db.write(lambda tx: tx.delete_node(plane_of(tx), "@ghost"))  # and the edge at it


def normal(line: str | dict[str, Any]) -> str:
    return json.dumps(json.loads(line) if isinstance(line, str) else line, sort_keys=True)


def canonical(db: Database, plane: str = "p") -> str:
    return "\n".join(export_lines(db, plane, canonical=True))


def default(db: Database, plane: str = "p") -> str:
    return "\n".join(export_lines(db, plane))


@settings(max_examples=100, deadline=None)
@given(graph=graphs(), data=st.data(), rng=st.randoms(use_true_random=False))
def test_same_graph_written_differently_exports_the_same_canonical_bytes(
    graph: Graph, data: st.DataObject, rng: random.Random
) -> None:
    n, m = len(graph.nodes), len(graph.edges)
    orders = [data.draw(st.permutations(range(n))) for _ in range(2)]
    edge_orders = [data.draw(st.permutations(range(m))) for _ in range(2)]
    with tempfile.TemporaryDirectory() as tmp:
        one, two = drsg.open(Path(tmp) / "one.drsg"), drsg.open(Path(tmp) / "two.drsg")
        try:
            write_plain(one, graph, orders[0], edge_orders[0])
            write_with_history(two, graph, orders[1], edge_orders[1], rng)
            exported = canonical(one)
            lines = [json.loads(line) for line in exported.splitlines()]
            assert [line["external_key"] for line in lines[:n]] == sorted(key for key, _, _ in graph.nodes)
            assert sorted(map(normal, lines)) == sorted(map(normal, default(one).splitlines())), "not the same graph"
            assert canonical(two) == exported
            event("default exports differ" if default(one) != default(two) else "default exports agree")

            path = Path(tmp) / "canonical.jsonl"
            path.write_text(exported + "\n", encoding="utf-8")
            import_jsonl(two, path, "copy", create_plane=True)
            assert canonical(two, "copy") == exported
        finally:
            one.close()
            two.close()


def test_default_export_differs_where_the_canonical_one_agrees(tmp_path: Path) -> None:
    """The fixed pair: the default export shows the order and history; the canonical one does not."""
    graph = Graph(
        nodes=[("b", ["B"], {"m": {"y": 1, "x": [{"q": 1, "p": 2}]}}), ("a", ["A", "C"], {"z": 1, "y": 2})],
        edges=[(0, "R", 1, {"w": 1, "v": 2}), (1, "S", 0, {}), (0, "R", 1, {"w": 1, "v": 2})],
    )
    one, two = drsg.open(tmp_path / "one.drsg"), drsg.open(tmp_path / "two.drsg")
    try:
        write_plain(one, graph, [0, 1], [0, 1, 2])
        write_with_history(two, graph, [1, 0], [2, 1, 0], random.Random(7))
        assert default(one) != default(two)
        assert canonical(one) == canonical(two)
    finally:
        one.close()
        two.close()
