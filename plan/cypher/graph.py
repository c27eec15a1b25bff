"""What a Cypher value is, and what the evaluator may ask of the graph it runs on (pure).

A node or a relationship in a row is a reference (:class:`NodeRef`, :class:`RelRef`): its
labels and properties are read through :class:`GraphView` when an expression asks, so a write
statement's ``SET`` is seen by every later clause and row, and a read pays only for what it uses.
Two references are equal when their ids are. A path is its nodes and relationships in order.

The executor (``drsg.workers.cypher``) implements :class:`GraphView` over a snapshot (a read) or
a write transaction's view (a write), and :class:`EvalContext` around it; the evaluator
(:mod:`drsg.plan.cypher.evaluate`) only ever sees these protocols.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, TypeAlias

if TYPE_CHECKING:
    from drsg.plan.cypher.ast import PatternPart


@dataclass(frozen=True, slots=True)
class NodeRef:
    id: int


@dataclass(frozen=True, slots=True)
class RelRef:
    id: int


@dataclass(frozen=True, slots=True)
class PathValue:
    """``nodes[i]`` and ``nodes[i + 1]`` are joined by ``rels[i]`` (either way round)."""

    nodes: tuple[NodeRef, ...]
    rels: tuple[RelRef, ...] = ()


#: a value in a row: openCypher's boolean, integer (64-bit), float, string, list, map, node,
#: relationship, path, null. A stored vector reads as a list of floats; stored bytes stay ``bytes``
#: (equal only to the same bytes, printed in the JSON dialect's form).
CypherValue: TypeAlias = (
    "bool | int | float | str | bytes | list[CypherValue] | dict[str, CypherValue] | NodeRef | RelRef"
    " | PathValue | None"
)
#: a row: variable name → value (reserved names for a row's score and hops start with a space)
Row: TypeAlias = Mapping[str, CypherValue]
SCORE = " score"
HOPS = " hops"
#: upstream's rule: a string ``key`` entry in a node pattern's map is the node's external key, not a
#: property — in CREATE and MERGE (it sets it) and in MATCH (it matches it, through the key index)
KEY_PROPERTY = "key"


@dataclass(frozen=True, slots=True)
class RelRecord:
    type: str
    src: int
    dst: int
    properties: Mapping[str, CypherValue]


class GraphView(Protocol):
    """The graph one statement runs on (at its snapshot, or inside its write)."""

    def labels(self, node: int) -> tuple[str, ...]: ...

    def properties(self, node: int) -> Mapping[str, CypherValue]:
        """A node's properties as Cypher values (a vector as a list of floats)."""
        ...

    def key(self, node: int) -> str | None:
        """A node's external key (``key(n)``)."""
        ...

    def relationship(self, rel: int) -> RelRecord: ...


class EvalContext(Protocol):
    """What evaluating an expression needs beyond the row."""

    @property
    def graph(self) -> GraphView: ...

    @property
    def params(self) -> Mapping[str, CypherValue]: ...

    def pattern_exists(self, pattern: PatternPart, row: Row) -> bool:
        """Whether ``pattern`` matches with the row's variables bound (a pattern predicate)."""
        ...

    def pattern_paths(self, pattern: PatternPart, row: Row) -> list[PathValue]:
        """Every path ``pattern`` matches with the row's variables bound (a pattern as a value)."""
        ...
