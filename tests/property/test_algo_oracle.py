"""The graph algorithms (drsg.workers.algo) over a real LMDB graph, held to networkx as the oracle.

Hypothesis draws a small directed multigraph (labels A/B, edges with an integer weight ``w``,
parallel edges and self-loops allowed), writes it in one commit through ``drsg.open``, reads the
frame back from a snapshot and compares each algorithm with networkx on the same edge list:
PageRank scores (both dangling-mass rules are networkx's default), weakly connected components,
shortest-path lengths (unit and weighted, each direction), and Louvain's modularity (never a
partition that is not one, never much below networkx's own Louvain).
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import hypothesis.strategies as st
import networkx as nx
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import drsg as drsg_api
from drsg.kernel.errors import UsageError
from drsg.workers.algo import Frame, components, louvain, pagerank, shortest_path

Edges = list[tuple[int, int, int]]  # (src index, dst index, weight)
Graph = tuple[list[str], Edges]

graphs = st.integers(1, 14).flatmap(
    lambda size: st.tuples(
        st.lists(st.sampled_from("AB"), min_size=size, max_size=size),
        st.lists(st.tuples(st.integers(0, size - 1), st.integers(0, size - 1), st.integers(0, 9)), max_size=30),
    )
)
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@contextmanager
def stored(graph: Graph, label: str | None = None) -> Iterator[tuple[Frame, list[int], list[int]]]:
    """The graph in a real database: (its frame, node ids by index, edge ids by index)."""
    labels, edges = graph
    with tempfile.TemporaryDirectory() as tmp:
        db = drsg_api.open(str(Path(tmp) / "g.drsg"))
        try:

            def write(tx: object) -> tuple[list[int], list[int]]:
                plane = tx.plane("startup")  # type: ignore[attr-defined]
                ids = [tx.create_node(plane, f"n{i}", [lab], {}).id for i, lab in enumerate(labels)]  # type: ignore[attr-defined]
                made = [tx.link(plane, ids[s], ids[d], "R", {"w": w}).id for s, d, w in edges]  # type: ignore[attr-defined]
                return ids, made

            node_ids, edge_ids = db.write(write).value
            with db.snapshot() as snap:
                frame = Frame.read(snap, snap.plane("startup").id, label)
            yield frame, node_ids, edge_ids
        finally:
            db.close()


def oracle(graph: Graph, label: str | None = None) -> nx.MultiDiGraph:
    labels, edges = graph
    g = nx.MultiDiGraph()
    kept = [i for i, lab in enumerate(labels) if label is None or lab == label]
    g.add_nodes_from(kept)
    for s, d, w in edges:
        if s in kept and d in kept:
            g.add_edge(s, d, w=w)
    return g


def networkx_pagerank(g: nx.MultiDiGraph, damping: float) -> dict[int, float]:
    """PageRank as the stationary vector of networkx's Google matrix (``nx.pagerank`` itself needs
    scipy): parallel edges counted, dangling rows uniform — networkx's defaults."""
    order = list(g)
    google = nx.google_matrix(g, alpha=damping, nodelist=order, weight=None)
    values, vectors = np.linalg.eig(google.T)
    stationary = np.real(vectors[:, int(np.argmin(np.abs(values - 1.0)))])
    stationary = stationary / stationary.sum()
    return {node: float(score) for node, score in zip(order, stationary, strict=True)}


@SETTINGS
@given(graphs, st.sampled_from([None, "A"]), st.sampled_from([0.85, 0.5, 0.99]))
def test_pagerank_equals_networkx(graph: Graph, label: str | None, damping: float) -> None:
    with stored(graph, label) as (frame, ids, _):
        ours = dict(pagerank(frame, damping=damping, max_iters=5000, tolerance=1e-13))
    g = oracle(graph, label)
    if not g:
        assert ours == {}
        return
    theirs = networkx_pagerank(g, damping)
    assert set(ours) == {ids[i] for i in theirs}
    for i, score in theirs.items():
        assert ours[ids[i]] == pytest.approx(score, abs=1e-8)
    assert sum(ours.values()) == pytest.approx(1.0)


@SETTINGS
@given(graphs)
def test_pagerank_is_ranked_with_ties_by_id(graph: Graph) -> None:
    with stored(graph) as (frame, _, _):
        ranked = pagerank(frame)
    assert ranked == sorted(ranked, key=lambda item: (-item[1], item[0]))


@SETTINGS
@given(graphs, st.sampled_from([None, "B"]))
def test_components_equal_weakly_connected_components(graph: Graph, label: str | None) -> None:
    with stored(graph, label) as (frame, ids, _):
        ours = components(frame)
    expected = {frozenset(ids[i] for i in part) for part in nx.weakly_connected_components(oracle(graph, label))}
    groups: dict[int, set[int]] = {}
    for node, rep in ours.items():
        groups.setdefault(rep, set()).add(node)
    assert {frozenset(members) for members in groups.values()} == expected
    assert all(rep == min(members) for rep, members in groups.items())  # upstream's representative


def test_shortest_path_both_ways_takes_the_cheaper_of_two_reciprocal_edges() -> None:
    # the case that showed networkx's to_undirected() merging u→v with v→u (the oracle was wrong)
    graph = (["A", "A", "A"], [(0, 2, 0), (1, 2, 5), (2, 0, 1)])
    with stored(graph) as (frame, ids, edge_ids):
        path = shortest_path(frame, ids[0], ids[1], "both", "w")
    assert path is not None and path.cost == 5 and path.edges == [edge_ids[0], edge_ids[1]]


@SETTINGS
@given(graphs, st.sampled_from(["out", "in", "both"]), st.booleans(), st.data())
def test_shortest_paths_equal_networkx(graph: Graph, direction: str, weighted: bool, data: st.DataObject) -> None:
    labels, edges = graph
    src = data.draw(st.integers(0, len(labels) - 1))
    dst = data.draw(st.integers(0, len(labels) - 1))
    with stored(graph) as (frame, ids, edge_ids):
        path = shortest_path(frame, ids[src], ids[dst], direction, "w" if weighted else None)
    g = oracle(graph)
    if direction == "in":
        g = g.reverse(copy=True)
    elif direction == "both":  # every edge either way, each its own: to_undirected() merges u→v with v→u
        undirected = nx.MultiGraph()
        undirected.add_nodes_from(g)
        undirected.add_edges_from((s, d, attrs) for s, d, attrs in g.edges(data=True))
        g = undirected
    try:
        expected = nx.shortest_path_length(g, src, dst, weight="w" if weighted else None)
    except nx.NetworkXNoPath:
        assert path is None
        return
    assert path is not None
    assert path.cost == pytest.approx(expected)
    # the path is a real walk: consecutive nodes joined by the edges it names, costing what it says
    by_id = {edge_ids[e]: (ids[s], ids[d], w) for e, (s, d, w) in enumerate(edges)}
    assert path.nodes[0] == ids[src] and path.nodes[-1] == ids[dst]
    assert len(path.edges) == len(path.nodes) - 1
    total = 0.0
    for (a, b), edge in zip(zip(path.nodes, path.nodes[1:], strict=False), path.edges, strict=True):
        s, d, w = by_id[edge]
        allowed = {"out": [(s, d)], "in": [(d, s)], "both": [(s, d), (d, s)]}[direction]
        assert (a, b) in allowed
        total += w if weighted else 1
    assert total == pytest.approx(path.cost)


def _modularity(graph: Graph, partition: list[set[int]]) -> float:
    labels, edges = graph
    g = nx.Graph()
    g.add_nodes_from(range(len(labels)))
    for s, d, _ in edges:  # unit weights, parallel edges adding up, direction ignored (upstream's view)
        weight = g[s][d]["weight"] + 1 if g.has_edge(s, d) else 1
        g.add_edge(s, d, weight=weight)
    return float(nx.community.modularity(g, partition, weight="weight"))


# Louvain is a heuristic, so the modularity bound is a margin measured, not a theorem: the same 60
# graphs every run (derandomized), so a graph past the margin cannot fail a run at random.
@settings(SETTINGS, derandomize=True)
@given(graphs)
def test_louvain_is_a_partition_near_networkx_modularity(graph: Graph) -> None:
    labels, edges = graph
    with stored(graph) as (frame, ids, _):
        ours = louvain(frame)
        again = louvain(frame)
    assert ours == again  # deterministic
    index = {node_id: i for i, node_id in enumerate(ids)}
    assert set(ours) == set(ids)  # every node in exactly one community
    groups: dict[int, set[int]] = {}
    for node, rep in ours.items():
        groups.setdefault(rep, set()).add(index[node])
    assert all(index[rep] == min(members) for rep, members in groups.items())
    if not any(s != d for s, d, _ in edges):
        return  # no edge between two nodes: nothing to compare
    g = nx.Graph()
    g.add_nodes_from(range(len(labels)))
    for s, d, _ in edges:
        g.add_edge(s, d, weight=(g[s][d]["weight"] + 1) if g.has_edge(s, d) else 1)
    theirs = max(
        _modularity(graph, [set(c) for c in nx.community.louvain_communities(g, weight="weight", seed=seed)])
        for seed in range(3)
    )
    # deterministic local moving vs networkx's best of three shuffled runs: the widest gap measured on 5,000
    # random graphs of this size was 0.081
    assert _modularity(graph, list(groups.values())) >= theirs - 0.1


def test_louvain_separates_two_bridged_triangles() -> None:
    edges = [(0, 1, 1), (1, 2, 1), (0, 2, 1), (3, 4, 1), (4, 5, 1), (3, 5, 1), (2, 3, 1)]
    with stored((["A"] * 6, edges)) as (frame, ids, _):
        ours = louvain(frame)
    assert len(set(ours.values())) == 2
    assert ours[ids[0]] == ours[ids[1]] == ours[ids[2]] == ids[0]
    assert ours[ids[3]] == ours[ids[4]] == ours[ids[5]] == ids[3]


@pytest.mark.parametrize(
    ("call", "fix"),
    [
        (lambda f: pagerank(f, damping=-0.1), "damping must be a number from 0 to 1"),
        (lambda f: pagerank(f, damping=1.5), "damping must be a number from 0 to 1"),
        (lambda f: pagerank(f, tolerance=-1.0), "tolerance"),
        (lambda f: louvain(f, min_gain=-1.0), "min_gain"),
        (lambda f: shortest_path(f, 1, 2, "sideways"), "dir must be out, in or both"),
        (lambda f: shortest_path(f, 1, 2, "out", "label"), "not a number"),
    ],
)
def test_bad_input_names_the_fix(call: object, fix: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        db = drsg_api.open(str(Path(tmp) / "g.drsg"))
        try:

            def write(tx: object) -> None:
                plane = tx.plane("startup")  # type: ignore[attr-defined]
                a = tx.create_node(plane, "a", ["A"], {})  # type: ignore[attr-defined]
                b = tx.create_node(plane, "b", ["A"], {})  # type: ignore[attr-defined]
                tx.link(plane, a.id, b.id, "R", {"label": "heavy"})  # type: ignore[attr-defined]

            db.write(write)
            with db.snapshot() as snap:
                frame = Frame.read(snap, snap.plane("startup").id)
        finally:
            db.close()
    with pytest.raises(UsageError, match=fix) as raised:
        call(frame)  # type: ignore[operator]
    assert "\n" not in raised.value.message
