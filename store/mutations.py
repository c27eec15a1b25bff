"""Mutations: the resolved facts a commit records (ids assigned, full after-images).

A mutation is self-contained — applying it needs no other input than the projection it is applied
to — so the projection can always be rebuilt by replaying the log. On the wire a mutation is a
list ``[op, field, …]`` in field order; in JSON it is ``{"op": …, field: …}``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import field, fields
from operator import attrgetter
from typing import ClassVar, cast

from drsg.kernel.frozen import frozen
from drsg.kernel.values import Json, Props, Value, to_json


@frozen
class Mutation:
    op: ClassVar[str] = ""

    def to_wire(self) -> list[Value]:
        return [self.op, *_FIELDS[type(self)](self)]

    def to_json(self) -> dict[str, Json]:
        out: dict[str, Json] = {"op": self.op}
        for f in fields(self):
            out[f.name] = to_json(getattr(self, f.name))
        return out


@frozen
class PlaneCreate(Mutation):
    op: ClassVar[str] = "plane.create"
    plane: int
    name: str
    props: Props = field(default_factory=dict)


@frozen
class PlaneRename(Mutation):
    op: ClassVar[str] = "plane.rename"
    plane: int
    name: str


@frozen
class PlaneSetProps(Mutation):
    op: ClassVar[str] = "plane.set_props"
    plane: int
    props: Props


@frozen
class PlaneDrop(Mutation):
    op: ClassVar[str] = "plane.drop"
    plane: int


@frozen
class NodePut(Mutation):
    """Create or replace node ``id`` (its whole record after the change)."""

    op: ClassVar[str] = "node.put"
    plane: int
    id: int
    key: str | None
    labels: list[str]
    props: Props


@frozen
class NodeDelete(Mutation):
    op: ClassVar[str] = "node.delete"
    plane: int
    id: int


@frozen
class EdgePut(Mutation):
    op: ClassVar[str] = "edge.put"
    plane: int
    id: int
    src: int
    dst: int
    type: str
    props: Props


@frozen
class EdgeDelete(Mutation):
    op: ClassVar[str] = "edge.delete"
    plane: int
    id: int


@frozen
class IndexDeclare(Mutation):
    """Declare (or restate) a search index on ``(label, property)``; ``kind`` is vector or keyword.

    ``options`` holds ``metric`` and ``dims`` for a vector index, ``language`` for a keyword one.
    """

    op: ClassVar[str] = "index.declare"
    plane: int
    kind: str
    label: str
    property: str
    options: dict[str, Json]


@frozen
class IndexDrop(Mutation):
    op: ClassVar[str] = "index.drop"
    plane: int
    kind: str
    label: str
    property: str


@frozen
class FusionSet(Mutation):
    """Set (or replace) the plane's fusion profile for hybrid queries over ``label`` with the vector
    channel on ``vector`` and the keyword channel on ``keyword``: how their scores are fused (the
    fusion and its k, the weights, the candidate pool, the graph's hops and decay), as
    ``profile`` (:class:`drsg.plan.hybrid.FusionProfile`'s JSON; it says how it was fitted too)."""

    op: ClassVar[str] = "fusion.set"
    plane: int
    label: str
    vector: str
    keyword: str
    profile: dict[str, Json]


@frozen
class FusionDrop(Mutation):
    op: ClassVar[str] = "fusion.drop"
    plane: int
    label: str
    vector: str
    keyword: str


_BY_OP: dict[str, type[Mutation]] = {
    cls.op: cls
    for cls in (
        PlaneCreate,
        PlaneRename,
        PlaneSetProps,
        PlaneDrop,
        NodePut,
        NodeDelete,
        EdgePut,
        EdgeDelete,
        IndexDeclare,
        IndexDrop,
        FusionSet,
        FusionDrop,
    )
}


def _field_reader(cls: type[Mutation]) -> Callable[[Mutation], tuple[Value, ...]]:
    """A mutation's field values in order, read at once (dataclasses.fields() per call cost ~1 µs)."""
    names = [f.name for f in fields(cls)]
    if len(names) == 1:
        name = names[0]
        return lambda m: (getattr(m, name),)
    return cast(Callable[[Mutation], tuple[Value, ...]], attrgetter(*names))


_FIELDS = {cls: _field_reader(cls) for cls in _BY_OP.values()}


def from_wire(wire: list[Value]) -> Mutation:
    cls = _BY_OP.get(wire[0]) if wire and isinstance(wire[0], str) else None
    if cls is None:
        raise ValueError(f"unknown mutation op {wire[0] if wire else None!r}")
    return cls(*wire[1:])
