"""The graph a write statement runs on: its write transaction's own view, with what it deleted.

Every read goes to ``tx.view`` (a snapshot at the transaction's seq), so each clause and row sees
the statement's earlier creations, changes and deletions. An entity the statement deleted stays
nameable (a row may still hold it, ``RETURN`` answers its last record), but reading its labels or
properties is an error, as openCypher says.
"""

from __future__ import annotations

from collections.abc import Mapping

from drsg.kernel.errors import QueryError
from drsg.kernel.values import Value
from drsg.plan.cypher.graph import CypherValue, RelRecord
from drsg.plan.cypher.values import from_store
from drsg.store.records import Edge, Node, Plane
from drsg.store.transaction import WriteTx


class TxGraph:
    """:class:`~drsg.plan.cypher.graph.GraphView` over a write transaction (see the module)."""

    def __init__(self, tx: WriteTx, plane: Plane) -> None:
        self.tx = tx
        self.plane = plane
        #: what this statement deleted, as last read: a row may still name them
        self.deleted_nodes: dict[int, Node] = {}
        self.deleted_rels: dict[int, Edge] = {}

    # ------------------------------------------------------------------ records

    def node(self, node: int) -> Node:
        """The node's record now; QueryError when this statement deleted it (or it is gone)."""
        if node in self.deleted_nodes:
            raise QueryError(
                f"node #{node} was deleted earlier in this statement; its labels and properties "
                "can no longer be read (read them before the DELETE)"
            )
        record = self.tx.view.node(self.plane.id, node)
        if record is None:
            raise QueryError(f"node #{node} does not exist in plane {self.plane.name!r}")
        return record

    def edge(self, rel: int) -> Edge:
        if rel in self.deleted_rels:
            raise QueryError(
                f"relationship #{rel} was deleted earlier in this statement; its type and properties "
                "can no longer be read (read them before the DELETE)"
            )
        record = self.tx.view.edge(self.plane.id, rel)
        if record is None:
            raise QueryError(f"relationship #{rel} does not exist in plane {self.plane.name!r}")
        return record

    def last_node(self, node: int) -> Node:
        """The node's record, or its last one if this statement deleted it (what ``RETURN`` answers)."""
        return self.deleted_nodes.get(node) or self.node(node)

    def last_edge(self, rel: int) -> Edge:
        return self.deleted_rels.get(rel) or self.edge(rel)

    # ------------------------------------------------------------------ GraphView

    def labels(self, node: int) -> tuple[str, ...]:
        return tuple(self.node(node).labels)

    def properties(self, node: int) -> Mapping[str, CypherValue]:
        return cypher_props(self.node(node).props)

    def key(self, node: int) -> str | None:
        return self.node(node).key

    def relationship(self, rel: int) -> RelRecord:
        edge = self.edge(rel)
        return RelRecord(edge.type, edge.src, edge.dst, cypher_props(edge.props))


class LastRecords:
    """The records an answer resolves its rows with: an entity the statement deleted answers its
    last record (``MATCH (n) DELETE n RETURN n``), every other one its record now."""

    def __init__(self, graph: TxGraph) -> None:
        self.graph = graph

    def node(self, node: int) -> Node:
        return self.graph.last_node(node)

    def edge(self, rel: int) -> Edge:
        return self.graph.last_edge(rel)


def cypher_props(props: Mapping[str, Value]) -> dict[str, CypherValue]:
    return {name: from_store(value) for name, value in props.items()}
