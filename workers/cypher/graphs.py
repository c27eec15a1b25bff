"""The graph a read statement runs on: a snapshot's nodes and relationships as Cypher sees them.

:class:`SnapshotGraph` is :class:`~drsg.plan.cypher.graph.GraphView` over one
:class:`~drsg.store.snapshot.Snapshot` and plane. A snapshot never changes, so each record read is
kept for the rest of the statement (a row that asks ``n.name`` a thousand times reads it once),
and the records a scan or a walk read already are handed in (``remember``) rather than read again.
"""

from __future__ import annotations

import typing
from collections.abc import Mapping

from drsg.kernel.errors import QueryError
from drsg.plan.cypher.graph import CypherValue, RelRecord
from drsg.plan.cypher.values import from_store
from drsg.store.records import Edge, Node
from drsg.store.snapshot import Snapshot

_SCALARS = frozenset({str, int, float, bool, type(None), bytes})


class SnapshotGraph:
    """A snapshot's plane as a :class:`~drsg.plan.cypher.graph.GraphView` (see the module)."""

    def __init__(self, snap: Snapshot, plane: int) -> None:
        self.snap = snap
        self.plane = plane
        self._nodes: dict[int, Node] = {}
        self._edges: dict[int, Edge] = {}
        self._props: dict[int, Mapping[str, CypherValue]] = {}
        self._rels: dict[int, RelRecord] = {}

    # ------------------------------------------------------------------ records

    def remember(self, node: Node) -> None:
        self._nodes.setdefault(node.id, node)

    def remember_edge(self, edge: Edge) -> None:
        self._edges.setdefault(edge.id, edge)

    def node(self, node: int) -> Node:
        found = self._nodes.get(node)
        if found is None:
            record = self.snap.node(self.plane, node)
            if record is None:
                raise QueryError(f"node #{node} is not in this plane at seq {self.snap.at}")
            found = self._nodes[node] = record
        return found

    def edge(self, rel: int) -> Edge:
        found = self._edges.get(rel)
        if found is None:
            record = self.snap.edge(self.plane, rel)
            if record is None:
                raise QueryError(f"relationship #{rel} is not in this plane at seq {self.snap.at}")
            found = self._edges[rel] = record
        return found

    # ------------------------------------------------------------------ GraphView

    def labels(self, node: int) -> tuple[str, ...]:
        return tuple(self.node(node).labels)

    def properties(self, node: int) -> Mapping[str, CypherValue]:
        props = self._props.get(node)
        if props is None:
            stored = self.node(node).props
            # most stored values are scalars, the same as Cypher values: convert only what is not
            if all(type(v) in _SCALARS for v in stored.values()):
                props = typing.cast(Mapping[str, CypherValue], stored)
            else:
                props = {k: from_store(v) for k, v in stored.items()}
            self._props[node] = props
        return props

    def key(self, node: int) -> str | None:
        return self.node(node).key

    def relationship(self, rel: int) -> RelRecord:
        record = self._rels.get(rel)
        if record is None:
            edge = self.edge(rel)
            props = {k: from_store(v) for k, v in edge.props.items()}
            record = self._rels[rel] = RelRecord(edge.type, edge.src, edge.dst, props)
        return record
