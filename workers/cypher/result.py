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

from drsg.kernel.values import Json, Props, Value, from_json, lean_vectors, props_from_json, props_to_json, to_json
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

    def to_outcome(self) -> dict[str, Json]:
        """The answer as a write intent's outcome (store/intents.py), which a Kafka node's caller
        reads back from its copy: lossless, unlike the wire form (a row's node keeps its key and
        plane, a map stays a map whatever its keys, a float need not be finite)."""
        counts = None if self.counts is None else [getattr(self.counts, f.name) for f in fields(self.counts)]
        return {
            "columns": list(self.columns),
            "rows": [[_tagged(value) for value in row] for row in self.rows],
            "nodes": [_tagged(node) for node in self.nodes],
            "edges": [_tagged(edge) for edge in self.edges],
            "counts": counts,
            "seq": self.seq,
        }

    @classmethod
    def from_outcome(cls, data: Json) -> CypherResult:
        """The answer :meth:`to_outcome` wrote (a ValueError for anything else)."""
        if not isinstance(data, dict):
            raise ValueError(f"not a Cypher outcome: {type(data).__name__}")
        columns, rows, nodes, edges = data["columns"], data["rows"], data["nodes"], data["edges"]
        counts, seq = data["counts"], data["seq"]
        if not (isinstance(columns, list) and isinstance(rows, list) and isinstance(nodes, list)):
            raise ValueError("a Cypher outcome's columns, rows and nodes are lists")
        if not (isinstance(edges, list) and isinstance(seq, int) and (counts is None or isinstance(counts, list))):
            raise ValueError("a Cypher outcome's edges are a list, its seq a number, its counts a list")
        return cls(
            tuple(str(c) for c in columns),
            tuple(tuple(_untagged(v) for v in _row(row)) for row in rows),
            tuple(_node(n) for n in nodes),
            tuple(_edge(e) for e in edges),
            None if counts is None else WriteCounts(*_counts(counts)),
            seq,
        )


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


def _tagged(value: Answer) -> Json:
    """One answer value as ``[tag, …]``: ``n``/``e`` a record's fields, ``p`` a path, ``l``/``m`` a
    list/map of tagged values, ``f`` a float, ``v`` any other value in the JSON dialect."""
    if isinstance(value, Node):
        return ["n", value.plane, value.id, value.key, list(value.labels), props_to_json(value.props)]
    if isinstance(value, Edge):
        return ["e", value.plane, value.id, value.src, value.dst, value.type, props_to_json(value.props)]
    if isinstance(value, Path):
        return ["p", [_tagged(n) for n in value.nodes], [_tagged(e) for e in value.edges]]
    if isinstance(value, list):
        return ["l", [_tagged(item) for item in value]]
    if isinstance(value, dict):
        return ["m", {key: _tagged(item) for key, item in value.items()}]
    if isinstance(value, float):
        return ["f", value]
    return ["v", to_json(value)]


def _untagged(data: Json) -> Answer:
    tag, *rest = _listed(data)
    if tag == "n":
        return _node(data)
    if tag == "e":
        return _edge(data)
    if tag == "p":
        nodes, edges = rest
        return Path(tuple(_node(n) for n in _row(nodes)), tuple(_edge(e) for e in _row(edges)))
    if tag == "l":
        return [_untagged(item) for item in _row(rest[0])]
    if tag == "m" and isinstance(rest[0], dict):
        return {key: _untagged(item) for key, item in rest[0].items()}
    if tag == "f" and isinstance(rest[0], float | int):
        return float(rest[0])
    if tag == "v":
        return from_json(rest[0], "a Cypher outcome's value")
    raise ValueError(f"not a tagged answer value: {data!r}")


def _node(data: Json) -> Node:
    plane, node_id, key, labels, props = _fields(data, "n", 5)
    if not (isinstance(plane, int) and isinstance(node_id, int) and (key is None or isinstance(key, str))):
        raise ValueError(f"not a tagged node: {data!r}")
    return Node(plane, node_id, key, [str(label) for label in _row(labels)], _props_of(props))


def _edge(data: Json) -> Edge:
    plane, edge_id, src, dst, edge_type, props = _fields(data, "e", 6)
    ids = (plane, edge_id, src, dst)
    if not (isinstance(plane, int) and isinstance(edge_id, int) and isinstance(src, int) and isinstance(dst, int)):
        raise ValueError(f"not a tagged edge's ids: {ids!r}")
    if not isinstance(edge_type, str):
        raise ValueError(f"not a tagged edge's type: {edge_type!r}")
    return Edge(plane, edge_id, src, dst, edge_type, _props_of(props))


def _fields(data: Json, tag: str, count: int) -> list[Json]:
    tagged = _listed(data)
    if tagged[0] != tag or len(tagged) != count + 1:
        raise ValueError(f"not a tagged {'node' if tag == 'n' else 'edge'}: {data!r}")
    return tagged[1:]


def _props_of(data: Json) -> Props:
    return props_from_json(data, "a Cypher outcome's record")


def _counts(data: list[Json]) -> list[int]:
    counts = [c for c in data if isinstance(c, int)]
    if len(counts) != len(data) or len(counts) != len(fields(WriteCounts)):
        raise ValueError(f"a Cypher outcome's counts are {len(fields(WriteCounts))} numbers, not {data!r}")
    return counts


def _row(data: Json) -> list[Json]:
    if not isinstance(data, list):
        raise ValueError(f"a Cypher outcome's row (or list) is a list, not {data!r}")
    return data


def _listed(data: Json) -> list[Json]:
    if not isinstance(data, list) or not data:
        raise ValueError(f"not a tagged answer value: {data!r}")
    return data
