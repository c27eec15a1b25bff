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
from typing import Any

from drsg.kernel.errors import UsageError
from drsg.plan.traversal import DIRECTIONS, Row, evaluate, sort_key, truthy
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


def run_steps(snap: Snapshot, plane: int, rows: list[Walked], steps: Iterable[Any]) -> list[Walked]:
    for step in steps:
        if step == "Distinct":
            seen: set[int] = set()
            rows = [r for r in rows if not (r.node.id in seen or seen.add(r.node.id))]  # type: ignore[func-returns-value]
            continue
        ((name, body),) = step.items()
        if name == "Limit":
            rows = rows[: int(body)]
        elif name == "Skip":
            rows = rows[int(body) :]
        elif name == "Filter":
            rows = [r for r in rows if truthy(evaluate(body, r.row()))]
        elif name == "Sort":
            rows = _sort(rows, body)
        elif name == "Expand":
            rows = _expand(snap, plane, rows, body, 1, 1)
        elif name == "ExpandVar":
            rows = _expand(snap, plane, rows, body, int(body.get("min", 1)), int(body.get("max", 1)))
        else:
            raise UsageError(f"plan step {name} is not supported here")
    return rows


def _sort(rows: list[Walked], keys: list[dict[str, Any]]) -> list[Walked]:
    """Stable, key by key from the last; rows without a value go last in either direction."""
    for key in reversed(keys):
        valued = [(r, evaluate(key["expr"], r.row())) for r in rows]
        present = [(r, v) for r, v in valued if sort_key(v)[0] < 3]
        absent = [r for r, v in valued if sort_key(v)[0] == 3]
        present.sort(key=lambda rv: sort_key(rv[1]), reverse=bool(key.get("descending", False)))
        rows = [r for r, _ in present] + absent
    return rows


def _expand(snap: Snapshot, plane: int, rows: list[Walked], body: dict[str, Any], low: int, high: int) -> list[Walked]:
    direction, edge_type = DIRECTIONS[body.get("dir", "Out")], body.get("edge_type")
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
