"""`plane.diff`: what changed in one plane between two points in time (the public API's
``Database.diff``; the server resolves and names the two points), and `plane.changes`."""

from __future__ import annotations

from typing import Any

from drsg.api.database import Database
from drsg.kernel.asof import parse_as_of
from drsg.kernel.errors import INVALID_PARAMS, DrsgError, RpcError
from drsg.store.mutations import EdgeDelete, EdgePut, NodeDelete, NodePut
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


def diff_json(db: Database, p: Params) -> dict[str, Any]:
    """The diff's JSON: what `plane.diff` answers, and what the MCP tool and the dashboard show."""
    with db.read() as reader:  # each end named in its own error, before the plane is looked at
        ends = resolve_point(reader, "from", p["from"]), resolve_point(reader, "to", p["to"])
    result = db.diff(p["plane"], *ends)
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
    return await ctx.read(diff_json, ctx.api, p)


MAX_CHANGES = 10_000  # commits one plane.changes call reads at most


def changes_json(db: Any, plane: str, after: int, limit: int) -> dict[str, Any]:
    """The plane's changes in the commits after ``after`` (at most ``limit`` commits read):
    ``{plane, commits: [{seq, ts, via, changes}], next, head}``; ``next`` is the seq to ask after."""
    with db.read() as reader:
        pid = reader.snapshot().plane(plane).id
        commits: list[dict[str, Any]] = []
        last = min(after, reader.head)
        for commit in reader.commits(after + 1, min(reader.head, after + limit)):
            last = commit.seq
            changes: list[dict[str, Any]] = []
            for m in commit.mutations:
                if isinstance(m, NodePut) and m.plane == pid:
                    changes.append({"op": m.op, "id": m.id, "key": m.key, "labels": list(m.labels)})
                elif isinstance(m, NodeDelete | EdgeDelete) and m.plane == pid:
                    changes.append({"op": m.op, "id": m.id})
                elif isinstance(m, EdgePut) and m.plane == pid:
                    changes.append({"op": m.op, "id": m.id, "src": m.src, "dst": m.dst, "type": m.type})
            if changes:
                commits.append(
                    {"seq": commit.seq, "ts": commit.ts, "via": commit.origin.get("via"), "changes": changes}
                )
        return {"plane": plane, "commits": commits, "next": last, "head": reader.head}


@rpc(
    "plane.changes",
    define={
        "summary": "The commits after a seq that changed a plane, each with the nodes and edges it put or deleted "
        "(ids, keys, labels, edge ends); `next` is the seq to ask after, `head` the log's head. Reads the log.",
        "x-access": "read",
        "params": [
            PLANE,
            param("after", {"type": "integer", "minimum": 0}, "Start after this commit seq (default 0)."),
            param("limit", {"type": "integer", "minimum": 1, "maximum": MAX_CHANGES}, "Commits to read (default 100)."),
        ],
        "result": {
            "name": "changes",
            "schema": {
                "type": "object",
                "properties": {
                    "plane": {"type": "string"},
                    "commits": {"type": "array", "items": {"type": "object"}},
                    "next": {"type": "integer"},
                    "head": {"type": "integer"},
                },
                "required": ["plane", "commits", "next", "head"],
            },
        },
    },
)
async def plane_changes(ctx: ServerState, p: Params) -> Any:
    return await ctx.read(changes_json, ctx.db, p["plane"], int(p.get("after", 0)), int(p.get("limit", 100)))
