"""A row as the executor carries it: its values, and what its patterns bound on the way."""

from __future__ import annotations

from dataclasses import dataclass, field

from drsg.plan.cypher.graph import CypherValue, NodeRef, RelRef

Ref = NodeRef | RelRef


@dataclass(slots=True)
class Rec:
    """One row: its values, and the nodes and relationships its pattern bound on the way."""

    values: dict[str, CypherValue]
    seen: frozenset[Ref] = field(default_factory=frozenset)
