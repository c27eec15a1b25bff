"""Graph algorithms over one snapshot: PageRank, weakly connected components, shortest path, Louvain.

Upstream's four (``compute/algo.rs``), with its definitions and defaults, read-only and transient.
The universe is a plane, or one label's nodes and the edges among them (an edge leaving the label
is dropped). It is read once into a :class:`Frame` (nodes renumbered ``0..n`` in id order, directed
out-adjacency in edge-id order) that every algorithm shares; every order below is fixed by node
and edge ids, so the same snapshot always gives the same answer.

Where drsg is stricter than upstream, a bad input is a :class:`UsageError` naming the fix instead
of a silent fallback: a damping outside [0, 1], a negative tolerance, a weight property holding
something other than a finite non-negative number.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass
from typing import Any

from drsg.kernel.errors import UsageError
from drsg.kernel.values import Described
from drsg.plan.algo import (
    DAMPING,
    MAX_ITERS,
    MAX_LEVELS,
    MIN_GAIN,
    TOLERANCE,
    AlgoSpec,
    check_direction,
    check_louvain,
    check_pagerank,
)
from drsg.store.records import Edge, Node
from drsg.store.snapshot import Snapshot

_MAX_PASSES = 1_000  # local-moving passes per Louvain level: a bound, never reached with min_gain > 0


@dataclass
class Frame:
    """The universe, index-compact: ``nodes[i]`` is node ``i``'s id; ``out[i]`` its out-edges as
    ``(target index, edge)``, in edge-id order."""

    nodes: list[int]
    out: list[list[tuple[int, Edge]]]

    @classmethod
    def read(cls, snap: Snapshot, plane: int, label: str | None = None) -> Frame:
        nodes = list(snap.node_ids_with_label(plane, label)) if label is not None else None
        if nodes is None:
            nodes = [node.id for node in snap.nodes(plane)]
        nodes.sort()
        index = {node_id: i for i, node_id in enumerate(nodes)}
        out: list[list[tuple[int, Edge]]] = [[] for _ in nodes]
        if label is None:
            for edge in snap.edges(plane):  # one scan of the plane's edges, in id order
                if edge.src in index and edge.dst in index:
                    out[index[edge.src]].append((index[edge.dst], edge))
        else:
            for i, node_id in enumerate(nodes):
                for hop in snap.neighbors(plane, node_id, "out"):
                    if hop.node in index:
                        out[i].append((index[hop.node], hop.edge))
                out[i].sort(key=lambda item: item[1].id)
        return cls(nodes, out)

    def successors(self, direction: str) -> list[list[tuple[int, Edge]]]:
        """The adjacency followed in ``direction``: out-edges, in-edges, or both."""
        if direction == "out":
            return self.out
        incoming: list[list[tuple[int, Edge]]] = [[] for _ in self.nodes]
        for i, adjacent in enumerate(self.out):
            for j, edge in adjacent:
                incoming[j].append((i, edge))
        if direction == "in":
            return incoming
        return [self.out[i] + incoming[i] for i in range(len(self.nodes))]


# --------------------------------------------------------------------------- PageRank


def pagerank(
    frame: Frame, damping: float = DAMPING, max_iters: int = MAX_ITERS, tolerance: float = TOLERANCE
) -> list[tuple[int, float]]:
    """``(node id, rank)``, best first (ties by id). Upstream's definition, which is also networkx's
    default: a dangling node (no out-edge in the universe) spreads its rank over every node, so the
    ranks sum to 1; parallel edges and self-loops count with their multiplicity. Iteration stops
    after ``max_iters`` or once the summed absolute change falls below ``tolerance``."""
    check_pagerank(damping, max_iters, tolerance)
    n = len(frame.nodes)
    if n == 0:
        return []
    rank = [1.0 / n] * n
    teleport = (1.0 - damping) / n
    dangling_nodes = [i for i in range(n) if not frame.out[i]]
    for _ in range(max_iters):
        base = teleport + damping * sum(rank[i] for i in dangling_nodes) / n
        following = [base] * n
        for i, adjacent in enumerate(frame.out):
            if adjacent:
                share = damping * rank[i] / len(adjacent)
                for j, _ in adjacent:
                    following[j] += share
        delta = sum(abs(a - b) for a, b in zip(following, rank, strict=True))
        rank = following
        if delta < tolerance:
            break
    return sorted(zip(frame.nodes, rank, strict=True), key=lambda item: (-item[1], item[0]))


# --------------------------------------------------------------------------- components


def components(frame: Frame) -> dict[int, int]:
    """Weakly connected components (edge direction ignored): node id → the smallest node id in its
    component (upstream's representative)."""
    parent = list(range(len(frame.nodes)))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for i, adjacent in enumerate(frame.out):
        for j, _ in adjacent:
            a, b = find(i), find(j)
            if a != b:
                parent[max(a, b)] = min(a, b)  # the lower index (= the smaller id) stays the root
    return {node_id: frame.nodes[find(i)] for i, node_id in enumerate(frame.nodes)}


def dense(groups: dict[int, int]) -> dict[int, int]:
    """Node id → a 0-based group index, groups numbered in the order of their smallest node id
    (the query language's ``score()`` for components and louvain)."""
    order = {rep: k for k, rep in enumerate(sorted(set(groups.values())))}
    return {node_id: order[rep] for node_id, rep in groups.items()}


# --------------------------------------------------------------------------- shortest path


@dataclass(frozen=True)
class Path:
    nodes: list[int]
    edges: list[int]
    cost: float

    def to_json(self) -> dict[str, Any]:
        return {"nodes": self.nodes, "edges": self.edges, "cost": self.cost}


def edge_weight(edge: Edge, prop: str) -> float:
    """The edge's weight: ``prop``'s number, 1.0 when the edge lacks it (upstream's rule). Anything
    but a finite number of 0 or more is refused, naming the edge (Dijkstra needs it)."""
    value = edge.props.get(prop)
    if isinstance(value, Described):
        value = value.value
    if value is None:
        return 1.0
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise UsageError(
            f"weight property {prop!r} of edge {edge.id} is {value!r:.40}, not a number of 0 or more; "
            "name a numeric edge property as the weight, or leave weight out (every edge costs 1)"
        )
    return float(value)


def shortest_path(frame: Frame, src: int, dst: int, direction: str = "out", weight: str | None = None) -> Path | None:
    """The cheapest path from node ``src`` to ``dst`` following ``direction`` (Dijkstra; unit costs
    without ``weight``), or None when either end is outside the universe or ``dst`` is unreachable.
    Ties go to the lower node index, then the lower edge id, so the path is always the same one."""
    succ = frame.successors(check_direction(direction))
    costs: dict[int, float] = {}
    if weight is not None:  # every weight checked up front: an error never depends on the search order
        for adjacent in frame.out:
            for _, edge in adjacent:
                costs[edge.id] = edge_weight(edge, weight)
    index = {node_id: i for i, node_id in enumerate(frame.nodes)}
    if src not in index or dst not in index:
        return None
    s, t = index[src], index[dst]
    dist = [math.inf] * len(frame.nodes)
    prev: list[tuple[int, int] | None] = [None] * len(frame.nodes)
    dist[s] = 0.0
    heap = [(0.0, s)]
    while heap:
        cost, i = heapq.heappop(heap)
        if i == t:
            break
        if cost > dist[i]:
            continue
        for j, edge in succ[i]:
            through = cost + costs.get(edge.id, 1.0)
            if through < dist[j]:
                dist[j], prev[j] = through, (i, edge.id)
                heapq.heappush(heap, (through, j))
    if math.isinf(dist[t]):
        return None
    nodes, edges, at = [frame.nodes[t]], [], t
    while (step := prev[at]) is not None:
        at, edge_id = step
        nodes.append(frame.nodes[at])
        edges.append(edge_id)
    return Path(nodes[::-1], edges[::-1], dist[t])


# --------------------------------------------------------------------------- Louvain


class _Weighted:
    """An undirected weighted graph for Louvain: ``adj[i]`` neighbour → summed weight (no self
    entries), ``loops[i]`` the self-loop weight."""

    def __init__(self, adj: list[dict[int, float]], loops: list[float]) -> None:
        self.adj, self.loops = adj, loops

    def degree(self, i: int) -> float:
        return sum(self.adj[i].values()) + 2.0 * self.loops[i]  # a self-loop counts twice

    def total(self) -> float:
        return sum(sum(a.values()) for a in self.adj) / 2.0 + sum(self.loops)

    def one_level(self, min_gain: float) -> list[int]:
        """Local moving in node order until no move gains more than ``min_gain``; a dense 0..k
        membership numbered in first-seen order."""
        n = len(self.adj)
        two_m = 2.0 * self.total()
        community = list(range(n))
        if two_m == 0.0:
            return community
        degree = [self.degree(i) for i in range(n)]
        totals = degree[:]
        for _ in range(_MAX_PASSES):
            moved = False
            for i in range(n):
                here = community[i]
                into: dict[int, float] = {}
                for j, w in self.adj[i].items():
                    into[community[j]] = into.get(community[j], 0.0) + w
                totals[here] -= degree[i]
                best, best_gain = here, into.get(here, 0.0) - totals[here] * degree[i] / two_m
                for c in sorted(into):  # a fixed order: the same graph always gives the same partition
                    gain = into[c] - totals[c] * degree[i] / two_m
                    if gain > best_gain + min_gain:
                        best, best_gain = c, gain
                totals[best] += degree[i]
                if best != here:
                    community[i], moved = best, True
            if not moved:
                break
        numbering: dict[int, int] = {}
        return [numbering.setdefault(c, len(numbering)) for c in community]

    def condense(self, membership: list[int]) -> _Weighted:
        k = max(membership, default=-1) + 1
        adj: list[dict[int, float]] = [{} for _ in range(k)]
        loops = [0.0] * k
        for i, neighbours in enumerate(self.adj):
            ci = membership[i]
            loops[ci] += self.loops[i]
            for j, w in neighbours.items():
                cj = membership[j]
                if ci == cj:
                    loops[ci] += w / 2.0  # seen from both ends
                else:
                    adj[ci][cj] = adj[ci].get(cj, 0.0) + w
        return _Weighted(adj, loops)


def louvain(frame: Frame, max_levels: int = MAX_LEVELS, min_gain: float = MIN_GAIN) -> dict[int, int]:
    """Communities by Louvain over the undirected, unit-weighted view (direction ignored, parallel
    edges add up): node id → the smallest node id in its community. Deterministic: nodes visited in
    id order, candidate communities in index order, no randomness."""
    check_louvain(max_levels, min_gain)
    n = len(frame.nodes)
    adj: list[dict[int, float]] = [{} for _ in range(n)]
    loops = [0.0] * n
    for i, adjacent in enumerate(frame.out):
        for j, _ in adjacent:
            if i == j:
                loops[i] += 1.0
            else:
                adj[i][j] = adj[i].get(j, 0.0) + 1.0
                adj[j][i] = adj[j].get(i, 0.0) + 1.0
    level = _Weighted(adj, loops)
    community = list(range(n))
    for _ in range(max_levels):
        membership = level.one_level(min_gain)
        community = [membership[c] for c in community]
        if all(c == i for i, c in enumerate(membership)):
            break
        level = level.condense(membership)
    smallest: dict[int, int] = {}
    for node_id, c in zip(frame.nodes, community, strict=True):
        smallest.setdefault(c, node_id)  # nodes are in id order: the first seen is the smallest
    return {node_id: smallest[c] for node_id, c in zip(frame.nodes, community, strict=True)}


# --------------------------------------------------------------------------- one call, upstream's answer


def _resolve(snap: Snapshot, plane: int, ref: int | str | None) -> int | None:
    if ref is None or isinstance(ref, int):
        return ref
    return snap.node_id_by_key(plane, ref)


def _path(snap: Snapshot, plane: int, frame: Frame, spec: AlgoSpec) -> Path | None:
    src, dst = _resolve(snap, plane, spec.src), _resolve(snap, plane, spec.dst)
    return None if src is None or dst is None else shortest_path(frame, src, dst, spec.direction, spec.weight)


def _groups(frame: Frame, spec: AlgoSpec) -> dict[int, int]:
    """components or louvain: node id → the smallest node id of its group."""
    return components(frame) if spec.algo == "components" else louvain(frame, spec.max_levels, spec.min_gain)


def run_algo(snap: Snapshot, plane: int, spec: AlgoSpec) -> dict[str, Any]:
    """``spec`` on one snapshot, answered in upstream's shape: ``{algo, results, count}`` with rows
    ``{id, score}`` (pagerank, best ``limit``), ``{id, component}`` or ``{id, community}`` (the
    smallest id of the group; ``count`` = groups), or ``{algo, found, path: {nodes, edges, cost} | null}``."""
    frame = Frame.read(snap, plane, spec.label)
    if spec.algo == "pagerank":
        ranked = pagerank(frame, spec.damping, spec.max_iters, spec.tolerance)
        rows = [{"id": node_id, "score": score} for node_id, score in ranked[: spec.limit]]
        return {"algo": "pagerank", "results": rows, "count": len(ranked)}
    if spec.algo == "shortest_path":
        path = _path(snap, plane, frame, spec)
        return {"algo": "shortest_path", "found": path is not None, "path": None if path is None else path.to_json()}
    field = "component" if spec.algo == "components" else "community"
    groups = _groups(frame, spec)
    rows = [{"id": node_id, field: rep} for node_id, rep in sorted(groups.items())[: spec.limit]]
    return {"algo": spec.algo, "results": rows, "count": len(set(groups.values()))}


def algo_rows(snap: Snapshot, plane: int, spec: AlgoSpec) -> list[tuple[Node, float]]:
    """``spec`` as a plan source: the nodes with upstream's ``score()`` — the rank (best first),
    the dense 0-based group index (by id), or the position on the path (in path order)."""
    frame = Frame.read(snap, plane, spec.label)
    if spec.algo == "pagerank":
        scored = pagerank(frame, spec.damping, spec.max_iters, spec.tolerance)
    elif spec.algo == "shortest_path":
        path = _path(snap, plane, frame, spec)
        scored = [] if path is None else [(node_id, float(i)) for i, node_id in enumerate(path.nodes)]
    else:
        scored = [(node_id, float(index)) for node_id, index in sorted(dense(_groups(frame, spec)).items())]
    nodes = snap.nodes_at(plane, [node_id for node_id, _ in scored])
    return [(node, score) for node, (_, score) in zip(nodes, scored, strict=True) if node is not None]
