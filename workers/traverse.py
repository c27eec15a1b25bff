"""A plan's steps over one snapshot: walks (Expand, ExpandVar), Filter, Distinct, Sort, Skip, Limit.

Each row is a node reached by a walk from one of the source's hits, with the edges the walk took,
so a result can be shown as a subgraph (the rows' nodes, the nodes they were reached from, and the
edges between). Expansion follows upstream's walk semantics: a node reached twice is two rows,
until a ``Distinct``. A walk that would hold more than ``MAX_ROWS`` rows is refused with an error
naming the step, instead of filling memory.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import assert_never

from drsg.kernel.errors import UsageError
from drsg.plan.logical import DIRECTIONS, Distinct, Expand, ExpandVar, Filter, Limit, Skip, Sort, SortKey, Step
from drsg.plan.traversal import Row, sort_key, truthy, value_of
from drsg.store.records import Edge, Node
from drsg.store.snapshot import Snapshot

#: most rows a plan's walk may hold at once
MAX_ROWS = 200_000


@dataclass(slots=True)
class Walked:
    """One row: the node it ends at, the source's score, the hops taken and the edges on the way."""

    node: Node
    score: float | None = None
    hops: int = 0
    path: tuple[Edge, ...] = ()

    def row(self) -> Row:
        return Row(self.node.key, tuple(self.node.labels), self.node.props, self.score, self.hops)


@dataclass
class Subgraph:
    """The rows a plan ended with, and the subgraph they were reached through."""

    rows: list[Walked] = field(default_factory=list)

    def nodes_and_edges(self, snap: Snapshot, plane: int) -> tuple[list[Node], list[Edge]]:
        """The result nodes first (in row order), then the nodes on the way; edges by id, once each."""
        nodes: dict[int, Node] = {}
        edges: dict[int, Edge] = {}
        for walked in self.rows:
            nodes.setdefault(walked.node.id, walked.node)
        for walked in self.rows:
            for edge in walked.path:
                edges.setdefault(edge.id, edge)
                for end in (edge.src, edge.dst):
                    if end not in nodes:
                        found = snap.node(plane, end)
                        if found is not None:
                            nodes[end] = found
        return list(nodes.values()), list(edges.values())


def run_steps(snap: Snapshot, plane: int, rows: list[Walked], steps: Iterable[Step]) -> list[Walked]:
    for step in steps:
        match step:
            case Distinct():
                first: dict[int, Walked] = {}
                for r in rows:
                    first.setdefault(r.node.id, r)  # the first row to reach a node, in order
                rows = list(first.values())
            case Limit(count):
                rows = rows[:count]
            case Skip(count):
                rows = rows[count:]
            case Filter(expr):
                rows = [r for r in rows if truthy(value_of(expr, r.row()))]
            case Sort(keys):
                rows = _sort(rows, keys)
            case Expand(direction, edge_type):
                rows = _expand(snap, plane, rows, DIRECTIONS[direction], edge_type, 1, 1)
            case ExpandVar(direction, edge_type, low, high):
                rows = _expand(snap, plane, rows, DIRECTIONS[direction], edge_type, low, high)
            case _:
                assert_never(step)  # a new step type: mypy says here that it must be run
    return rows


def _sort(rows: list[Walked], keys: tuple[SortKey, ...]) -> list[Walked]:
    """Stable, key by key from the last; rows without a value go last in either direction."""
    for key in reversed(keys):
        valued = [(r, value_of(key.expr, r.row())) for r in rows]
        present = [(r, v) for r, v in valued if sort_key(v)[0] < 3]
        absent = [r for r, v in valued if sort_key(v)[0] == 3]
        present.sort(key=lambda rv: sort_key(rv[1]), reverse=key.descending)
        rows = [r for r, _ in present] + absent
    return rows


def _expand(
    snap: Snapshot, plane: int, rows: list[Walked], direction: str, edge_type: str | None, low: int, high: int
) -> list[Walked]:
    out = [r for r in rows] if low == 0 else []
    frontier = rows
    cache: dict[int, Node | None] = {}
    for hop in range(1, high + 1):
        step: list[Walked] = []
        for walked in frontier:
            for neighbor in snap.neighbors(plane, walked.node.id, direction, edge_type):
                if neighbor.node not in cache:
                    cache[neighbor.node] = snap.node(plane, neighbor.node)
                node = cache[neighbor.node]
                if node is None:
                    continue
                step.append(Walked(node, walked.score, walked.hops + 1, (*walked.path, neighbor.edge)))
            if len(step) + len(out) > MAX_ROWS:
                raise UsageError(
                    f"the walk {'ExpandVar' if high > 1 else 'Expand'} on {edge_type or 'any edge'} passed "
                    f"{MAX_ROWS} rows at hop {hop}; name an edge type, add a Filter or lower max"
                )
        if hop >= low:
            out.extend(step)
        frontier = step
        if not frontier:
            break
    return out
