"""The writing methods and the small reads: db.*, plane.*, node.*, edge.*, index.*, rpc.discover.

Each handler takes the shared :class:`~drsg.surfaces.server.state.ServerState` and its checked params and
returns the JSON result in upstream's shape (``openrpc.json`` components: NodeRecord, EdgeRecord,
PlaneCard, PlaneRef, Deleted, DbStats). Plane, node and edge writes are intents
(store/intent_ops.py: by key, decided where they land in the log, so on a Kafka log they never
conflict with other nodes'), their records read back at their commit; index writes are commit
functions; reads run in the read pool. Searches, plans, neighbourhoods and catalogs are in queries.py.

These stay the server's own, not ``drsg.api.Plane``'s get/put/link/delete/history, because each
answer is upstream's and the API's differs: a key here is literal (the API reads ``@ada`` as
``ada``); ``node.get``/``edge.get`` answer null and ``node.delete``/``edge.delete`` ``{deleted:
false}`` where the API raises NotFound; ``node.create`` refuses a taken key (``put`` updates);
``node.update`` unsets; :func:`need_node`'s and ``node.history``'s messages are upstream's, not the
CLI's; and a write here is one awaited commit with the server's deadline and ``via: rpc`` origin
(:meth:`ServerState.write`), where the API's writes are synchronous.
"""

from __future__ import annotations

from typing import Any

from drsg import __version__
from drsg.kernel.errors import INVALID_PARAMS, NotFound, RpcError
from drsg.kernel.values import Json, props_to_json
from drsg.store.intent_ops import find_node
from drsg.store.intents import Intent, answered
from drsg.store.records import Plane, indexes_json
from drsg.store.snapshot import Snapshot
from drsg.store.transaction import PUT_MODES
from drsg.store.writer import CommitResult
from drsg.surfaces.server.params import Params, as_of, vectors
from drsg.surfaces.server.registry import AS_OF, AS_OF_MS, LEAN, NODE_ID, NODE_KEY, PLANE, ordered, param, rpc
from drsg.surfaces.server.schema import discover
from drsg.surfaces.server.state import ServerState

# --------------------------------------------------------------------------- shared helpers


def node_ref(p: Params, method: str) -> int | str:
    """The node a call names: ``id`` or ``key``, exactly one."""
    has_id, has_key = p.get("id") is not None, p.get("key") is not None
    if has_id == has_key:
        raise RpcError(INVALID_PARAMS, f"{method} names a node by `id` or by `key` (exactly one)")
    return p["id"] if has_id else p["key"]  # type: ignore[no-any-return]


def plane_card(snap: Snapshot, plane: Plane) -> dict[str, Any]:
    nodes, edges = snap.counts(plane.id)
    return {
        "id": plane.id,
        "name": plane.name,
        "nodes": nodes,
        "edges": edges,
        "properties": props_to_json(plane.props),
    }


# --------------------------------------------------------------------------- discovery and stats

_DISCOVER: dict[str, Any] = {}


@rpc("rpc.discover")
async def rpc_discover(ctx: ServerState, p: Params) -> Any:
    if not _DISCOVER:
        _DISCOVER.update(discover([m.schema for m in ordered()], __version__))
    return _DISCOVER


@rpc(
    "db.stats",
    note="`indexes` counts declared vector + keyword indexes; `commits` equals commit_seq. On a Kafka log, `log` "
    "says how this node's copy stands: the topic's `url`, its `head` as the node knows it, how far the copy has "
    "`materialised`, the `poison_records` it skipped, the materialiser's last `error` (null: none), and "
    '`rebuilt`, the copy\'s last rebuild from the topic after a power loss or system crash (`{"at", "reason"}`; '
    "null: none).",
)
async def db_stats(ctx: ServerState, p: Params) -> Any:
    return await ctx.read(lambda: ctx.db.stats().to_json())


# --------------------------------------------------------------------------- planes


@rpc("plane.list", add=[AS_OF, AS_OF_MS])
async def plane_list(ctx: ServerState, p: Params) -> Any:
    def planes() -> list[dict[str, Any]]:
        with ctx.db.snapshot(as_of(p)) as snap:
            return [plane_card(snap, plane) for plane in snap.planes()]

    return await ctx.read(planes)


def written_plane(ctx: ServerState, done: CommitResult[Json]) -> dict[str, Any]:
    """The plane an intent wrote, as it stands at the intent's commit."""
    with ctx.db.snapshot(done.seq) as snap:
        plane = snap.plane_by_id(answered(done, "plane"))
        assert plane is not None
        return plane.to_json()


@rpc("plane.create")
async def plane_create(ctx: ServerState, p: Params) -> Any:
    intent = Intent("plane.create", {"name": p["name"], "properties": p.get("properties")})
    return written_plane(ctx, await ctx.submit(intent, "plane.create"))


@rpc("plane.rename")
async def plane_rename(ctx: ServerState, p: Params) -> Any:
    intent = Intent("plane.rename", {"plane": p["plane"], "to": p["to"]})
    return written_plane(ctx, await ctx.submit(intent, "plane.rename"))


@rpc(
    "plane.set_props",
    note="Merges into the plane's properties (drsg keeps `_`-prefixed bookkeeping such as the recorded embedder).",
)
async def plane_set_props(ctx: ServerState, p: Params) -> Any:
    intent = Intent("plane.set_props", {"plane": p["plane"], "properties": p["properties"]})
    return written_plane(ctx, await ctx.submit(intent, "plane.set_props"))


@rpc("plane.delete")
async def plane_delete(ctx: ServerState, p: Params) -> Any:
    dropped = await ctx.submit(Intent("plane.drop", {"plane": p["plane"]}), "plane.delete")
    return {"deleted": True, "id": answered(dropped, "plane")}


# --------------------------------------------------------------------------- nodes


@rpc("node.get", add=[AS_OF, AS_OF_MS])
async def node_get(ctx: ServerState, p: Params) -> Any:
    ref = node_ref(p, "node.get")

    def get() -> dict[str, Any] | None:
        with ctx.db.snapshot(as_of(p)) as snap:
            node = find_node(snap, snap.plane(p["plane"]), ref)
            return None if node is None else node.to_json(vectors=vectors(p))

    return ctx.read_inline(get)


def written(ctx: ServerState, p: Params, done: CommitResult[Json], kind: str) -> dict[str, Any]:
    """The node or edge (``kind``) an intent wrote, as it stands at the intent's commit (a write
    that changed nothing: as it stands now)."""
    with ctx.db.snapshot(done.seq) as snap:
        plane = snap.plane(p["plane"])
        found = (snap.node if kind == "node" else snap.edge)(plane.id, answered(done, kind))
        assert found is not None
        return found.to_json()


PUT_MODE = param(
    "mode",
    {"type": "string", "enum": list(PUT_MODES), "default": "create"},
    "When a node already holds `key`: create refuses it (upstream's), update merges labels and properties, "
    "replace overwrites them, skip leaves it; without one a new node is made.",
)


@rpc("node.create", add=[PUT_MODE])
async def node_create(ctx: ServerState, p: Params) -> Any:
    args = {"plane": p["plane"], "key": p.get("key"), "labels": p.get("labels", []), "properties": p.get("properties")}
    if p.get("mode") is not None:
        args["mode"] = p["mode"]
    return written(ctx, p, await ctx.submit(Intent("node.put", args), "node.create"), "node")


@rpc("node.update")
async def node_update(ctx: ServerState, p: Params) -> Any:
    ref = node_ref(p, "node.update")
    args = {"plane": p["plane"], "node": ref, "set": p.get("set"), "unset": p.get("unset"), "labels": p.get("labels")}
    return written(ctx, p, await ctx.submit(Intent("node.update", args), "node.update"), "node")


@rpc("node.delete", note="Deleting a node that does not exist is a no-op answered {deleted: false}.")
async def node_delete(ctx: ServerState, p: Params) -> Any:
    ref = node_ref(p, "node.delete")
    gone = await ctx.submit(Intent("node.delete", {"plane": p["plane"], "node": ref}), "node.delete")
    if not answered(gone, "deleted"):
        return {"deleted": False, **({"id": ref} if isinstance(ref, int) else {})}
    return {"deleted": True, "id": answered(gone, "node")}


@rpc(
    "node.history",
    define={
        "summary": "Every version of one node, oldest first: {seq, ts, deleted, record}. A key that no longer "
        "resolves finds the node that last held it.",
        "x-access": "read",
        "params": [PLANE, NODE_ID, NODE_KEY, LEAN],
        "result": {
            "name": "versions",
            "schema": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "seq": {"type": "integer"},
                        "ts": {"type": "integer"},
                        "deleted": {"type": "boolean"},
                        "record": {"oneOf": [{"$ref": "#/components/schemas/NodeRecord"}, {"type": "null"}]},
                    },
                    "required": ["seq", "ts", "deleted", "record"],
                },
            },
        },
    },
)
async def node_history(ctx: ServerState, p: Params) -> Any:
    ref = node_ref(p, "node.history")

    def history() -> list[dict[str, Any]]:
        with ctx.db.snapshot() as snap:
            plane = snap.plane(p["plane"])
            node_id = ref if isinstance(ref, int) else snap.key_holder(plane.id, ref)
            versions = snap.node_history(plane.id, node_id) if node_id is not None else []
            if not versions:
                raise NotFound(f"node {ref!r} never existed in plane {plane.name!r}")
            return [
                {
                    "seq": v.seq,
                    "ts": v.ts,
                    "deleted": v.record is None,
                    "record": None if v.record is None else v.record.to_json(vectors=vectors(p)),
                }
                for v in versions
            ]

    return await ctx.read(history)


# --------------------------------------------------------------------------- edges


@rpc("edge.create")
async def edge_create(ctx: ServerState, p: Params) -> Any:
    args = {"plane": p["plane"], "src": p["src"], "dst": p["dst"], "type": p["type"], "properties": p.get("properties")}
    return written(ctx, p, await ctx.submit(Intent("edge.create", args), "edge.create"), "edge")


@rpc("edge.update")
async def edge_update(ctx: ServerState, p: Params) -> Any:
    args = {"plane": p["plane"], "edge": p["edge"], "set": p.get("set"), "unset": p.get("unset"), "type": p.get("type")}
    return written(ctx, p, await ctx.submit(Intent("edge.update", args), "edge.update"), "edge")


@rpc("edge.delete", note="Deleting an edge that does not exist is a no-op answered {deleted: false}.")
async def edge_delete(ctx: ServerState, p: Params) -> Any:
    deleted = await ctx.submit(Intent("edge.delete", {"plane": p["plane"], "edge": p["edge"]}), "edge.delete")
    return {"deleted": answered(deleted, "deleted"), "id": p["edge"]}


@rpc(
    "edge.get",
    define={
        "summary": "One edge by id; null if absent.",
        "x-access": "read",
        "params": [PLANE, {"name": "edge", "required": True, "schema": {"type": "integer"}}, AS_OF, AS_OF_MS, LEAN],
        "result": {
            "name": "edge",
            "schema": {"oneOf": [{"$ref": "#/components/schemas/EdgeRecord"}, {"type": "null"}]},
        },
    },
)
async def edge_get(ctx: ServerState, p: Params) -> Any:
    def get() -> dict[str, Any] | None:
        with ctx.db.snapshot(as_of(p)) as snap:
            edge = snap.edge(snap.plane(p["plane"]).id, p["edge"])
            return None if edge is None else edge.to_json(vectors=vectors(p))

    return ctx.read_inline(get)


# --------------------------------------------------------------------------- indexes


@rpc(
    "plane.indexes",
    add=[AS_OF, AS_OF_MS],
    note="Vector entries also carry `dims`, and when read at the head, the search breadth `ef` and the "
    "recall@10 `recall` the index measured (calibrated to `[index] recall_target`).",
)
async def plane_indexes(ctx: ServerState, p: Params) -> Any:
    def indexes() -> dict[str, Any]:
        point = as_of(p)
        with ctx.db.snapshot(point) as snap:
            decls = snap.indexes(snap.plane(p["plane"]).id)
        return indexes_json(decls) if point is not None else ctx.indexes.listing(decls)

    return await ctx.read(indexes)


@rpc("index.ensure", note="Answers once the index is built; the result also carries metric/dims or language.")
async def index_ensure(ctx: ServerState, p: Params) -> Any:
    kind = p.get("kind", "keyword")
    if kind == "keyword" and "metric" in p:
        raise RpcError(INVALID_PARAMS, 'index.ensure: `metric` is for vector indexes; add "kind": "vector"')
    if kind == "vector" and "language" in p:
        raise RpcError(INVALID_PARAMS, 'index.ensure: `language` is for keyword indexes; add "kind": "keyword"')
    options = {"metric": p.get("metric", "cosine")} if kind == "vector" else {"language": p.get("language", "english")}

    args: dict[str, Json] = {"plane": p["plane"], "kind": kind, "label": p["label"], "property": p["property"]}
    decl = (await ctx.submit(Intent("index.declare", {**args, "options": options}), "index.ensure")).value
    await ctx.read(ctx.indexes.catch_up, limited=False)  # build it now: the next search finds it warm
    return decl


@rpc(
    "index.drop",
    define={
        "summary": "Drop a declared search index (its sidecar is removed on the next catch-up).",
        "x-access": "admin",
        "params": [
            PLANE,
            {"name": "label", "required": True, "schema": {"type": "string"}},
            {"name": "property", "required": True, "schema": {"type": "string"}},
            {"name": "kind", "required": True, "schema": {"type": "string", "enum": ["keyword", "vector"]}},
        ],
        "result": {"name": "result", "schema": {"type": "object", "description": "{dropped, kind, label, property}"}},
    },
)
async def index_drop(ctx: ServerState, p: Params) -> Any:
    args: dict[str, Json] = {"plane": p["plane"], "kind": p["kind"], "label": p["label"], "property": p["property"]}
    dropped = await ctx.submit(Intent("index.drop", args), "index.drop")
    return {"dropped": True, **{name: answered(dropped, name) for name in ("kind", "label", "property")}}


HISTORY_PLANE = param("plane", {"type": "string"}, "Optional: check that this plane exists (the window is the log's).")


@rpc(
    "plane.history",
    add=[HISTORY_PLANE],
    note="Also returns oldest_ms and latest_ms (commit times). oldest is where the retained history starts "
    "(1 unless [log] retain_commits / retain_days bounded it).",
)
async def plane_history(ctx: ServerState, p: Params) -> Any:
    def window() -> dict[str, Any]:
        with ctx.db.read() as reader:
            if p.get("plane") is not None:
                reader.snapshot().plane(p["plane"])
            latest = reader.head
            oldest = reader.retained.oldest  # 1 unless [log] retain_* removed older history
            times = {c.seq: c.ts for c in reader.commits(oldest, oldest)}
            if latest > oldest:
                times.update({c.seq: c.ts for c in reader.commits(latest, latest)})
        return {"oldest": oldest, "latest": latest, "oldest_ms": times.get(oldest), "latest_ms": times.get(latest)}

    return await ctx.read(window)
