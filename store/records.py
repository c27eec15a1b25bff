"""Records as readers see them: planes, nodes, edges, and their upstream JSON shapes."""

from __future__ import annotations

from dataclasses import field
from typing import Any

from drsg.kernel.frozen import frozen
from drsg.kernel.values import Json, Props, Undecodable, lean_vectors, props_to_json, strip_vectors


def _visible(props: Props, vectors: bool | str, hidden: bool) -> dict[str, Any]:
    """``vectors``: True keeps them, False drops them, "lean" shows upstream's placeholder."""
    if vectors == "lean":
        out = lean_vectors(props)
    elif vectors:
        out = props
    else:
        out = strip_vectors(props)
    return out if hidden else {k: v for k, v in out.items() if not k.startswith("_")}


@frozen
class Plane:
    id: int
    name: str
    props: Props = field(default_factory=dict)

    def to_json(self) -> dict[str, Json]:
        return {"id": self.id, "name": self.name, "properties": props_to_json(self.props)}


@frozen
class Node:
    plane: int
    id: int
    key: str | None
    labels: list[str]
    props: Props

    def to_json(self, *, vectors: bool | str = True, hidden: bool = True) -> dict[str, Json]:
        """Upstream's NodeRecord: ``{"id", "external_key", "labels", "properties"}``."""
        return {
            "id": self.id,
            "external_key": self.key,
            "labels": list(self.labels),
            "properties": props_to_json(_visible(self.props, vectors, hidden)),
        }


def node_of(plane: int, node_id: int, record: Any) -> Node:
    """A Node from its decoded record ``[key, labels, props]``; a record of another shape is
    :class:`Undecodable`."""
    try:
        key, labels, props = record
    except (TypeError, ValueError):
        raise Undecodable(f"a node record is not [key, labels, props]: {type(record).__name__}") from None
    return Node(plane, node_id, key, labels, props)


@frozen
class Edge:
    plane: int
    id: int
    src: int
    dst: int
    type: str
    props: Props

    def to_json(self, *, vectors: bool | str = True, hidden: bool = True) -> dict[str, Json]:
        """Upstream's EdgeRecord: ``{"id", "src", "dst", "type", "properties"}``."""
        return {
            "id": self.id,
            "src": self.src,
            "dst": self.dst,
            "type": self.type,
            "properties": props_to_json(_visible(self.props, vectors, hidden)),
        }


@frozen
class Neighbor:
    edge: Edge
    node: int  # the node at the other end
    direction: str  # "out" or "in", as seen from the node asked about


def edge_of(plane: int, edge_id: int, record: Any) -> Edge:
    """An Edge from its decoded record ``[src, dst, type, props]`` (as :func:`node_of`)."""
    try:
        src, dst, edge_type, props = record
    except (TypeError, ValueError):
        raise Undecodable(f"an edge record is not [src, dst, type, props]: {type(record).__name__}") from None
    return Edge(plane, edge_id, src, dst, edge_type, props)


@frozen
class Version:
    """One version of a record in its history; ``record`` is None for a deletion."""

    seq: int
    ts: int
    record: Node | Edge | None


@frozen
class IndexDecl:
    """A declared search index: vector (``metric``, ``dims``) or keyword (``language``)."""

    plane: int
    kind: str
    label: str
    prop: str
    options: dict[str, Json]
    since: int = 0  # the commit that declared (or last restated) it
    #: the commit that declared it after no declaration (a restatement keeps it; a drop and a new
    #: declaration move it): what an index built for it is, beside its options, not when restated
    born: int = 0

    @property
    def metric(self) -> str:
        return str(self.options.get("metric", "cosine"))

    @property
    def dims(self) -> int | None:
        dims = self.options.get("dims")
        return dims if isinstance(dims, int) else None

    @property
    def language(self) -> str:
        return str(self.options.get("language", "english"))

    def to_json(self) -> dict[str, Json]:
        out: dict[str, Json] = {"kind": self.kind, "label": self.label, "property": self.prop}
        out.update(self.options)
        return out


@frozen
class FusionDecl:
    """A plane's fusion profile for hybrid queries over (``label``, ``vector``, ``keyword``), as
    set at commit ``since``; ``profile`` is :class:`drsg.plan.hybrid.FusionProfile`'s JSON."""

    plane: int
    label: str
    vector: str
    keyword: str
    profile: dict[str, Json]
    since: int = 0

    def to_json(self) -> dict[str, Json]:
        return {
            "label": self.label,
            "vector": self.vector,
            "keyword": self.keyword,
            "since": self.since,
            **self.profile,
        }


def indexes_json(decls: list[IndexDecl]) -> dict[str, Json]:
    """Upstream's ``plane.indexes`` shape: ``{vector: [{label, property, metric}], keyword: [...]}``."""
    return {
        "vector": [
            {"label": d.label, "property": d.prop, "metric": d.metric, "dims": d.dims}
            for d in decls
            if d.kind == "vector"
        ],
        "keyword": [
            {"label": d.label, "property": d.prop, "language": d.language} for d in decls if d.kind == "keyword"
        ],
    }
