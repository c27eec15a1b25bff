"""Matching a pattern's pieces on a snapshot: a node's labels and properties, one relationship hop
or a variable-length trail from a bound node.

openCypher's rules: a relationship is used at most once in a MATCH (the relationships the
expansion must not reuse come with it), a variable-length relationship walks a trail (no
relationship twice), and an undirected hop over a self-loop finds it once. The adjacency comes
from the snapshot (``Snapshot.neighbors``), the labels and properties from the statement's
:class:`~drsg.plan.cypher.graph.GraphView`, so a write statement sees its own changes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

from drsg.kernel.errors import QueryError
from drsg.plan.cypher import ast, rows
from drsg.plan.cypher.graph import KEY_PROPERTY, CypherValue, GraphView, NodeRef, RelRef, Row
from drsg.plan.cypher.values import equals, from_store, type_name
from drsg.store.records import Edge
from drsg.store.snapshot import Snapshot

#: an expression's value on a row (the evaluator, with the statement's context)
Value = Callable[[ast.Expr, Row], CypherValue]


class Matcher:
    """Pattern pieces on one snapshot and plane; ``tick`` is called per candidate (the limits)."""

    def __init__(self, snap: Snapshot, plane: int, graph: GraphView, value: Value, tick: Callable[[int], None]) -> None:
        self.snap = snap
        self.plane = plane
        self.graph = graph
        self.value = value
        self.tick = tick
        self._remember: Callable[[Edge], None] | None = getattr(graph, "remember_edge", None)

    # ------------------------------------------------------------------ nodes

    def wanted(self, properties: ast.MapLiteral | ast.Parameter | None, row: Row) -> Mapping[str, CypherValue]:
        """A pattern's ``{k: v}`` as values (a parameter must hold a map)."""
        if properties is None:
            return {}
        got = self.value(properties, row)
        if not isinstance(got, dict):
            raise QueryError(f"a pattern's properties must be a map, not {type_name(got)}")
        return got

    def node_ok(self, check: rows.NodeCheck, node: int, row: Row) -> bool:
        if check.labels:
            labels = self.graph.labels(node)
            if any(label not in labels for label in check.labels):
                return False
        if check.properties is not None:
            props = self.graph.properties(node)
            for key, want in self.wanted(check.properties, row).items():
                if key == KEY_PROPERTY and isinstance(want, str):  # the external key (graph.KEY_PROPERTY)
                    if self.graph.key(node) != want:
                        return False
                elif equals(props.get(key), want) is not True:
                    return False
        return True

    # ------------------------------------------------------------------ relationships

    def _neighbors(self, node: int, direction: str, types: tuple[str, ...]) -> Iterator[tuple[Edge, int]]:
        seen_loops: set[int] = set()
        for edge_type in types or (None,):
            for neighbor in self.snap.neighbors(self.plane, node, direction, edge_type):
                edge = neighbor.edge
                if direction == "both" and edge.src == edge.dst:
                    if edge.id in seen_loops:
                        continue  # a self-loop sits in both tables; an undirected hop finds it once
                    seen_loops.add(edge.id)
                if self._remember is not None:
                    self._remember(edge)
                yield edge, neighbor.node

    def _rel_ok(self, edge: Edge, want: Mapping[str, CypherValue]) -> bool:
        for key, value in want.items():
            stored = edge.props.get(key)
            if equals(None if stored is None else from_store(stored), value) is not True:
                return False
        return True

    def expand(self, op: rows.Expand, row: Row) -> Iterator[tuple[RelRef | list[CypherValue], int, int]]:
        """Each way ``op`` continues from the row: (the relationship or the trail's list of them,
        the node reached, the hops taken)."""
        start = row.get(op.start)
        if start is None:
            return
        if not isinstance(start, NodeRef):
            raise QueryError(f"`{op.start}` holds {type_name(start)}, not a node: it cannot start a relationship")
        used = _used(row, op.unique_with)
        want = self.wanted(op.properties, row)
        target: int | None = None
        if op.end_bound:
            bound = row.get(op.end.variable)
            if bound is None:
                return
            if not isinstance(bound, NodeRef):
                raise QueryError(f"`{op.end.variable}` holds {type_name(bound)}, not a node")
            target = bound.id
        only: int | None = None
        if op.rel_bound:  # bound by an earlier clause: the hop must be that relationship
            rel = row.get(op.rel)
            if rel is None:
                return
            if not isinstance(rel, RelRef):
                raise QueryError(f"`{op.rel}` holds {type_name(rel)}, not a relationship")
            only = rel.id
        if not op.var_length:
            for edge, other in self._neighbors(start.id, op.direction, op.types):
                self.tick(1)
                if edge.id in used or (target is not None and other != target) or not self._rel_ok(edge, want):
                    continue
                if only is not None and edge.id != only:
                    continue
                if self.node_ok(op.end, other, row):
                    yield RelRef(edge.id), other, 1
            return
        yield from self._trails(op, row, start.id, used, want, target)

    def _trails(
        self,
        op: rows.Expand,
        row: Row,
        start: int,
        used: set[int],
        want: Mapping[str, CypherValue],
        target: int | None,
    ) -> Iterator[tuple[list[CypherValue], int, int]]:
        """Depth-first trails from ``start`` of ``op.min_hops`` to ``op.max_hops`` relationships
        (None: no bound but the statement's limits)."""
        stack: list[tuple[int, list[int]]] = [(start, [])]
        while stack:
            node, trail = stack.pop()
            depth = len(trail)
            if depth >= op.min_hops and (target is None or node == target) and self.node_ok(op.end, node, row):
                yield [RelRef(rel) for rel in trail], node, depth
            if op.max_hops is not None and depth >= op.max_hops:
                continue
            on_trail = set(trail)
            nexts = []
            for edge, other in self._neighbors(node, op.direction, op.types):
                self.tick(1)
                if edge.id in on_trail or edge.id in used or not self._rel_ok(edge, want):
                    continue
                nexts.append((other, [*trail, edge.id]))
            stack.extend(reversed(nexts))  # the first neighbour is walked first

    def path_nodes(self, start: NodeRef, rels: list[RelRef]) -> list[NodeRef]:
        """The nodes a chain of relationships passes through from ``start``."""
        nodes = [start]
        at = start.id
        for rel in rels:
            record = self.graph.relationship(rel.id)
            at = record.dst if record.src == at else record.src
            nodes.append(NodeRef(at))
        return nodes


def _used(row: Row, names: tuple[str, ...]) -> set[int]:
    """The ids of the relationships bound to ``names`` (single ones and var-length lists)."""
    used: set[int] = set()
    for name in names:
        value = row.get(name)
        if isinstance(value, RelRef):
            used.add(value.id)
        elif isinstance(value, list):
            used.update(item.id for item in value if isinstance(item, RelRef))
    return used
