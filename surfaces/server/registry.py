"""The method table: each handler registered under upstream's name with the params it accepts.

``@rpc("node.get", add=[AS_OF, AS_OF_MS])`` takes upstream's description of ``node.get`` from
``openrpc.json`` and appends drsg's extra params (marked ``x-drsg``); ``define=`` describes a
method upstream does not have. The same descriptions check every request's params and make up
``rpc.discover``, so the schema served is exactly what is accepted.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from drsg.surfaces.drift import synced_of
from drsg.surfaces.server.rpc import Handler, Method, WithMembers
from drsg.surfaces.server.schema import upstream, upstream_method

REGISTRY: dict[str, Method] = {}


def param(name: str, schema: Mapping[str, Any], description: str, *, required: bool = False) -> dict[str, Any]:
    """A drsg addition to upstream's params."""
    out: dict[str, Any] = {"name": name, "required": required, "schema": dict(schema), "x-drsg": True}
    out["description"] = description
    return out


AS_OF = param(
    "as_of",
    {"type": "integer", "minimum": 1},
    "Time-travel: pin the read to this past commit sequence (an error beyond the head).",
)
AS_OF_MS = param(
    "as_of_ms",
    {"type": "integer"},
    "Time-travel: pin the read to the latest commit at or before this unix-epoch millisecond.",
)
LEAN = param(
    "lean",
    {"type": "boolean"},
    "Replace vector-valued properties by a `$vector(N dims, omitted)` marker. Default false.",
)
PLANE = {"name": "plane", "required": True, "schema": {"type": "string"}}
NODE_ID = {"name": "id", "required": False, "schema": {"type": "integer"}}
NODE_KEY = {"name": "key", "required": False, "schema": {"type": "string"}}


def rpc(
    name: str,
    *,
    add: Iterable[Mapping[str, Any]] = (),
    replace: Mapping[str, Mapping[str, Any]] | None = None,
    define: Mapping[str, Any] | None = None,
    result: Mapping[str, Any] | None = None,
    note: str | None = None,
) -> Callable[[Handler], Handler]:
    """Register a handler. ``replace`` swaps the schema of named upstream params (drsg accepts more);
    ``result`` corrects upstream's result schema where it does not describe what upstream returns."""

    def register(handler: Handler) -> Handler:
        if define is not None:
            schema = {"name": name, **copy.deepcopy(dict(define)), "x-drsg": True}
        else:
            schema = upstream_method(name)
        params = schema.setdefault("params", [])
        for spec in params:
            if replace and spec["name"] in replace:
                spec["schema"] = copy.deepcopy(dict(replace[spec["name"]]))
                spec["x-drsg"] = True
        params.extend(copy.deepcopy(dict(p)) for p in add)
        if result is not None:
            schema["result"] = {**copy.deepcopy(dict(result)), "x-drsg": True}
        if note:
            schema["x-drsg-note"] = note
        served = handler
        if name in PLANE_READS:
            served = _synced(handler)
            schema["x-drsg-synced"] = SYNCED_NOTE
        REGISTRY[name] = Method(name, served, schema)
        return handler

    return register


#: the reads whose answer comes from one plane, so they say what the plane was read from
PLANE_READS = frozenset(
    {
        "node.get",
        "plane.neighbors",
        "plane.history",
        "plane.search",
        "plane.query",
        "plane.cypher",
        "plane.find",
        "plane.algo",
        "plane.hybrid",
        "plane.ask",
        "plane.indexes",
        "graph.seed",
        "graph.expand",
        "edge.get",
    }
)
SYNCED_NOTE = (
    "An answer from a plane read out of a source tree also carries `synced`: the commit it was read beside "
    "and the working tree's drift, as `drsg digest` recorded them (absent for a plane that never measured) — "
    "inside an object result, or beside an array result in the response object."
)


def _synced(handler: Handler) -> Handler:
    async def served(ctx: Any, p: dict[str, Any]) -> Any:
        result = await handler(ctx, p)
        plane = p.get("plane")
        if not isinstance(plane, str):
            return result
        line = ctx.read_inline(lambda: synced_of(ctx.db, plane))
        if line is None:
            return result
        if isinstance(result, dict):
            return {**result, "synced": line}
        return WithMembers(result, {"synced": line})  # an array keeps its shape

    return served


def ordered() -> list[Method]:
    """Upstream's order, then drsg's own methods by name."""
    order = {m["name"]: i for i, m in enumerate(upstream()["methods"])}
    return sorted(REGISTRY.values(), key=lambda m: (order.get(m.name, len(order)), m.name))
