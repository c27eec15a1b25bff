"""A graph held in memory behind the Cypher evaluator's protocols (GraphView, EvalContext), for
unit tests of drsg.plan.cypher's functions and evaluator without a store."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from drsg.plan.cypher.ast import PatternPart
from drsg.plan.cypher.graph import CypherValue, NodeRef, PathValue, RelRecord, Row


@dataclass
class MemoryNode:
    labels: tuple[str, ...] = ()
    properties: dict[str, CypherValue] = field(default_factory=dict)
    key: str | None = None


@dataclass
class MemoryGraph:
    nodes: dict[int, MemoryNode] = field(default_factory=dict)
    rels: dict[int, RelRecord] = field(default_factory=dict)

    def labels(self, node: int) -> tuple[str, ...]:
        return self.nodes[node].labels

    def properties(self, node: int) -> Mapping[str, CypherValue]:
        return self.nodes[node].properties

    def key(self, node: int) -> str | None:
        return self.nodes[node].key

    def relationship(self, rel: int) -> RelRecord:
        return self.rels[rel]


def _no_patterns(pattern: PatternPart, row: Row) -> bool:
    raise AssertionError("this test has no pattern predicates")


@dataclass
class MemoryContext:
    graph: MemoryGraph = field(default_factory=MemoryGraph)
    params: Mapping[str, CypherValue] = field(default_factory=dict)
    patterns: Callable[[PatternPart, Row], bool] = _no_patterns

    def pattern_exists(self, pattern: PatternPart, row: Row) -> bool:
        return self.patterns(pattern, row)

    def pattern_paths(self, pattern: PatternPart, row: Row) -> list[PathValue]:
        """One path per match: the pattern's first node as bound in the row (enough to count)."""
        start = row.get(pattern.nodes[0].variable or "")
        node = start if isinstance(start, NodeRef) else NodeRef(0)
        return [PathValue((node,))] if self.patterns(pattern, row) else []
