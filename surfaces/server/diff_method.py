"""`plane.diff`: what changed in one plane between two points in time (store/diff.py)."""

from __future__ import annotations

from typing import Any

from drsg.kernel.asof import parse_as_of
from drsg.kernel.errors import INVALID_PARAMS, DrsgError, RpcError
from drsg.store.diff import diff_plane
from drsg.store.reader import Reader
from drsg.surfaces.server.params import Params, vectors
from drsg.surfaces.server.registry import LEAN, PLANE, param, rpc
from drsg.surfaces.server.state import ServerState

_POINT = {"oneOf": [{"type": "integer", "minimum": 0}, {"type": "string"}]}
_POINT_TEXT = 'a commit seq (0: the empty state before the first commit), an RFC 3339 time, or "TIME <unix-ms>"'
_RECORDS = {
    "type": "object",
    "description": "{created: [record], deleted: [record], changed: [{id, before, after, changed}]}",
}


def resolve_point(reader: Reader, name: str, value: Any) -> int:
    """A diff end given as a seq, a time, or ``TIME ms``; -32602 naming the param otherwise."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip() == "0":
        return 0
    try:
        return reader.resolve(parse_as_of(str(value)))
    except DrsgError as exc:
        raise RpcError(INVALID_PARAMS, f"param {name!r}: {exc.message}") from None


def diff_json(db: Any, p: Params) -> dict[str, Any]:
    """The diff's JSON: what `plane.diff` answers, and what the MCP tool and the dashboard show."""
    with db.read() as reader:
        result = diff_plane(
            reader, p["plane"], resolve_point(reader, "from", p["from"]), resolve_point(reader, "to", p["to"])
        )
        return result.to_json(vectors=vectors(p), hidden=bool(p.get("hidden", True)))


@rpc(
    "plane.diff",
    define={
        "summary": "Nodes and edges created, deleted and changed (with before/after records) in a plane between "
        "two points in time, read from the commits in between and the versioned records at both ends.",
        "x-access": "read",
        "params": [
            PLANE,
            {"name": "from", "required": True, "schema": _POINT, "description": _POINT_TEXT},
            {"name": "to", "required": True, "schema": _POINT, "description": _POINT_TEXT},
            LEAN,
            param("hidden", {"type": "boolean"}, "Include `_` provenance properties (default true)."),
        ],
        "result": {
            "name": "diff",
            "schema": {
                "type": "object",
                "properties": {
                    "plane": {"type": "string"},
                    "from": {"type": "integer"},
                    "to": {"type": "integer"},
                    "commits": {"type": "integer"},
                    "counts": {"type": "object"},
                    "nodes": _RECORDS,
                    "edges": _RECORDS,
                },
                "required": ["plane", "from", "to", "commits", "counts", "nodes", "edges"],
            },
        },
    },
)
async def plane_diff(ctx: ServerState, p: Params) -> Any:
    return await ctx.read(diff_json, ctx.db, p)
