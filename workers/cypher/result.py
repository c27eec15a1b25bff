"""What a Cypher statement answers: its rows, the subgraph they touch, and a write's counts.

Rows hold resolved values — a node is its :class:`~drsg.store.records.Node` record, a
relationship its :class:`~drsg.store.records.Edge`, a path a :class:`Path` of both — read inside
the statement's snapshot or write, so the answer outlives them. :meth:`CypherResult.to_json` is
the one wire form every surface prints (``drsg cypher --json``, ``plane.cypher``, the MCP tool):

    {"columns": [...], "rows": [[...], ...], "nodes": [...], "edges": [...], "count": N}
    + {"write": true, "nodes_created": …, …} for a write

A node in a row is ``{"id", "labels", "properties"}``, a relationship ``{"id", "type", "src",
"dst", "properties"}``, a path ``{"nodes", "edges"}``; the subgraph's nodes and edges are upstream's
records (``external_key`` included). ``lean`` replaces vectors with upstream's placeholder.

A float that is not finite (``0.0 / 0``, ``log(0)``) has no JSON number: it is written in the JSON
dialect's marker form ``{"$float": "NaN" | "Infinity" | "-Infinity"}``, so every answer is strict
JSON (JSON-RPC's encoder and browsers' ``JSON.parse`` refuse a bare ``NaN``). A write's answer also
carries upstream's ``labels_set`` (the labels it added) beside ``labels_added``/``labels_removed``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import TypeAlias

from drsg.kernel.values import Json, Value, lean_vectors, props_to_json, to_json
from drsg.store.records import Edge, Node


@dataclass(frozen=True, slots=True)
class Path:
    nodes: tuple[Node, ...]
    edges: tuple[Edge, ...] = ()


#: a value in an answered row: a store value, a node, a relationship, a path, or lists and maps of them
Answer: TypeAlias = "Value | Node | Edge | Path | list[Answer] | dict[str, Answer]"


@dataclass(frozen=True, slots=True)
class WriteCounts:
    """What a write statement changed (every field 0 for a write that matched nothing)."""

    nodes_created: int = 0
    nodes_deleted: int = 0
    edges_created: int = 0
    edges_deleted: int = 0
    labels_added: int = 0
    labels_removed: int = 0
    props_set: int = 0
    props_removed: int = 0

    def to_json(self) -> dict[str, Json]:
        """Every count, and upstream's name for the labels a write added (``labels_set``)."""
        counts: dict[str, Json] = {f.name: getattr(self, f.name) for f in fields(self)}
        return counts | {"labels_set": self.labels_added}


@dataclass(frozen=True, slots=True)
class CypherResult:
    """One statement's answer. ``seq``: the commit a read ran at, or the commit a write made (a
    write that changed nothing: the head it ran at)."""

    columns: tuple[str, ...]
    rows: tuple[tuple[Answer, ...], ...]
    nodes: tuple[Node, ...] = ()
    edges: tuple[Edge, ...] = ()
    counts: WriteCounts | None = None
    seq: int = 0

    @property
    def write(self) -> bool:
        return self.counts is not None

    def records(self) -> list[dict[str, Answer]]:
        """Each row as a map from column to value."""
        return [dict(zip(self.columns, row, strict=True)) for row in self.rows]

    def to_json(self, *, lean: bool = False) -> dict[str, Json]:
        vectors: bool | str = "lean" if lean else True
        answer: dict[str, Json] = {
            "columns": list(self.columns),
            "rows": [[answer_json(value, lean=lean) for value in row] for row in self.rows],
            "nodes": [node.to_json(vectors=vectors) for node in self.nodes],
            "edges": [edge.to_json(vectors=vectors) for edge in self.edges],
            "count": len(self.rows),
        }
        if self.counts is not None:
            answer |= {"write": True} | self.counts.to_json()
        return answer


def answer_json(value: Answer, *, lean: bool = False) -> Json:
    """One row value in the wire form (see the module)."""
    if isinstance(value, Node):
        return {"id": value.id, "labels": list(value.labels), "properties": _props(value.props, lean)}
    if isinstance(value, Edge):
        record: dict[str, Json] = {"id": value.id, "type": value.type, "src": value.src, "dst": value.dst}
        return record | {"properties": _props(value.props, lean)}
    if isinstance(value, Path):
        nodes = [answer_json(node, lean=lean) for node in value.nodes]
        return {"nodes": nodes, "edges": [answer_json(edge, lean=lean) for edge in value.edges]}
    if isinstance(value, list):
        return [answer_json(item, lean=lean) for item in value]
    if isinstance(value, dict):
        return {key: answer_json(item, lean=lean) for key, item in value.items()}
    if isinstance(value, float) and not math.isfinite(value):
        return {"$float": "NaN" if math.isnan(value) else "Infinity" if value > 0 else "-Infinity"}
    return to_json(value)


def _props(props: Mapping[str, Value], lean: bool) -> dict[str, Json]:
    rendered: dict[str, Json] = props_to_json(lean_vectors(props) if lean else props)
    return rendered
