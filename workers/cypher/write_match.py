"""Finding a pattern inside a write: what ``MERGE`` matches before it creates.

One pattern part (``(a)-[:T]->(b {k: v})``) with the row's variables bound, on the write
transaction's view, so a row sees what earlier rows created. The walk starts where the fewest
candidates are: a bound node, else a node with a string ``key`` (the key index, one seek), else the
rarest label (the label index; the label tally picks it), else the plane; it then follows the
relationships by adjacency. Each relationship is used once per match (openCypher's relationship
isomorphism).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from drsg.kernel.errors import QueryError
from drsg.kernel.values import Value
from drsg.plan.cypher import ast
from drsg.plan.cypher.graph import KEY_PROPERTY, CypherValue
from drsg.plan.cypher.values import equals, from_store
from drsg.store.records import Node
from drsg.workers.cypher.write_graph import TxGraph


@dataclass(frozen=True, slots=True)
class NodeWant:
    """What a pattern node asks of a node: its variable's binding, labels, property values."""

    bound: int | None
    labels: tuple[str, ...]
    props: Mapping[str, CypherValue]

    @property
    def key(self) -> str | None:
        key = self.props.get(KEY_PROPERTY)
        return key if isinstance(key, str) else None


@dataclass(frozen=True, slots=True)
class RelWant:
    types: tuple[str, ...]
    direction: ast.Direction
    props: Mapping[str, CypherValue]


def match_part(
    graph: TxGraph, part: ast.PatternPart, nodes: list[NodeWant], rels: list[RelWant]
) -> Iterator[tuple[list[int], list[int]]]:
    """Every ``(node ids, relationship ids)`` where ``part`` (its wants already evaluated) is found."""
    for rel in part.rels:
        if rel.length is not None:
            raise QueryError("MERGE cannot use a variable-length relationship (*); give each hop")
    start = min(range(len(nodes)), key=lambda i: _cost(graph, nodes[i]))
    found_nodes: list[int | None] = [None] * len(nodes)
    found_rels: list[int | None] = [None] * len(rels)
    for candidate in _candidates(graph, nodes[start]):
        found_nodes[start] = candidate
        if _same_variables(part, found_nodes):
            yield from _extend(graph, part, nodes, rels, start, start, found_nodes, found_rels)
        found_nodes[start] = None


def _cost(graph: TxGraph, want: NodeWant) -> tuple[int, int]:
    if want.bound is not None:
        return (0, 0)
    if want.key is not None:
        return (1, 0)
    if want.labels:
        tally = graph.tx.view.tally(graph.plane.id, b"L")
        return (2, min(tally.get(label, 0) for label in want.labels))
    return (3, 0)


def _candidates(graph: TxGraph, want: NodeWant) -> Iterator[int]:
    view, plane = graph.tx.view, graph.plane.id
    if want.bound is not None:
        node = _live(graph, want.bound)
        if node is not None and _node_fits(node, want):
            yield node.id
        return
    if want.key is not None:
        node = view.node_by_key(plane, want.key)
        if node is not None and _node_fits(node, want):
            yield node.id
        return
    if want.labels:
        tally = view.tally(plane, b"L")
        rarest = min(want.labels, key=lambda label: tally.get(label, 0))
        ids = list(view.node_ids_with_label(plane, rarest))  # listed first: a create may follow
        for node_id in ids:
            node = view.node(plane, node_id)
            if node is not None and _node_fits(node, want):
                yield node_id
        return
    for node in list(view.nodes(plane)):
        if _node_fits(node, want):
            yield node.id


def _extend(
    graph: TxGraph,
    part: ast.PatternPart,
    nodes: list[NodeWant],
    rels: list[RelWant],
    left: int,
    right: int,
    found_nodes: list[int | None],
    found_rels: list[int | None],
) -> Iterator[tuple[list[int], list[int]]]:
    """Grow the match from nodes ``left..right`` (found) one relationship at a time: rightwards
    first, then leftwards."""
    if right < len(rels):
        step, at, ahead = right, right, right + 1
        forward = True
    elif left > 0:
        step, at, ahead = left - 1, left, left - 1
        forward = False
    else:
        yield [n for n in found_nodes if n is not None], [r for r in found_rels if r is not None]
        return
    want = rels[step]
    direction = want.direction if forward else _reverse(want.direction)
    from_id = found_nodes[at]
    assert from_id is not None
    view, plane = graph.tx.view, graph.plane.id
    for edge_type in want.types or (None,):
        for neighbor in list(view.neighbors(plane, from_id, direction, edge_type)):
            edge = neighbor.edge
            if edge.id in found_rels or edge.id in graph.deleted_rels:
                continue
            if direction == "both" and neighbor.direction == "in" and edge.src == edge.dst:
                continue  # a self-loop is listed both ways: match it once
            if not _props_fit(edge.props, want.props):
                continue
            other = _live(graph, neighbor.node)
            if other is None or not _node_fits(other, nodes[ahead]):
                continue
            if nodes[ahead].bound is not None and other.id != nodes[ahead].bound:
                continue
            found_rels[step], found_nodes[ahead] = edge.id, other.id
            if _same_variables(part, found_nodes):
                yield from _extend(
                    graph,
                    part,
                    nodes,
                    rels,
                    left if forward else ahead,
                    ahead if forward else right,
                    found_nodes,
                    found_rels,
                )
            found_rels[step], found_nodes[ahead] = None, None


def _reverse(direction: ast.Direction) -> ast.Direction:
    return "in" if direction == "out" else "out" if direction == "in" else "both"


def _live(graph: TxGraph, node_id: int) -> Node | None:
    if node_id in graph.deleted_nodes:
        return None
    return graph.tx.view.node(graph.plane.id, node_id)


def _same_variables(part: ast.PatternPart, found: list[int | None]) -> bool:
    """A variable written twice in one pattern (``(a)-->(b)-->(a)``) names one node."""
    seen: dict[str, int] = {}
    for pattern, node_id in zip(part.nodes, found, strict=True):
        if pattern.variable is None or node_id is None:
            continue
        if seen.setdefault(pattern.variable, node_id) != node_id:
            return False
    return True


def _node_fits(node: Node, want: NodeWant) -> bool:
    if any(label not in node.labels for label in want.labels):
        return False
    wanted = {name: value for name, value in want.props.items() if name != KEY_PROPERTY or want.key is None}
    if want.key is not None and node.key != want.key:
        return False
    return _props_fit(node.props, wanted)


def _props_fit(stored: Mapping[str, Value], wanted: Mapping[str, CypherValue]) -> bool:
    for name, value in wanted.items():
        if name not in stored:
            return False
        if equals(from_store(stored[name]), value) is not True:
            return False
    return True
