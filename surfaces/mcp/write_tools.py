"""The MCP write tools: `write_nodes`, `write_edges`, `create_plane`, `drop_plane` and `digest`.

Each writes through the JSON-RPC method a client would call (``node.create``, ``edge.create``,
``plane.create``, ``plane.delete``, ``digest.write``) — the same intents and commits as the CLI's —
and only where the server allows writes (:meth:`ServerState.check_writable`: ``--read-only`` or
``[server] read_only`` refuses them in one line, before anything runs). A batch is checked whole
against the plane as it stands (shapes, values, taken or missing keys) before its first write, so
a refused batch writes nothing; each item is then its own intent, as a JSON-RPC client's would be.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from mcp.server.mcpserver.exceptions import ToolError

from drsg.kernel.errors import DrsgError
from drsg.kernel.values import props_from_json
from drsg.store.transaction import PUT_MODES
from drsg.surfaces.mcp.tools import Tools, compact, dumps

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

NODE_FIELDS = ("key", "labels", "properties")
#: what a mode did to a node that already held its key (as the plane stood before the batch)
DONE = {"update": "updated", "replace": "replaced", "skip": "skipped"}
EDGE_FIELDS = ("src_key", "dst_key", "type", "properties")


def _refuse(message: str) -> ToolError:
    return ToolError(f"error -32602: {message}")


def _batch(items: object, what: str, most: int) -> list[dict[str, Any]]:
    if not isinstance(items, list) or not items:
        raise _refuse(f"`{what}` is a non-empty list")
    if len(items) > most:
        raise _refuse(f"{len(items)} {what} in one call; send at most {most} ([server] max_batch) per call")
    return items


def _item(item: object, i: int, what: str, fields: tuple[str, ...], needed: Iterable[str]) -> dict[str, Any]:
    """One batch item checked against its allow-listed fields; the message names the item's index."""
    if not isinstance(item, dict):
        raise _refuse(f"{what}[{i}] is an object with {', '.join(fields)}")
    unknown = sorted(set(item) - set(fields))
    if unknown:
        raise _refuse(f"{what}[{i}] has no field {unknown[0]!r}; it takes {', '.join(fields)}")
    for name in needed:
        if not isinstance(item.get(name), str) or not item[name]:
            raise _refuse(f"{what}[{i}] needs `{name}`, a non-empty string")
    try:
        props_from_json(item.get("properties"), f"{what}[{i}].properties")
    except DrsgError as exc:
        raise _refuse(exc.message) from None
    return item


def _keys_held(tools: Tools, plane: str, keys: list[str]) -> set[str]:
    """Which of ``keys`` a node holds in ``plane`` now (a missing plane: NotFound, as the tool's error)."""
    with tools.state.db.snapshot() as snap:
        plane_id = snap.plane(plane).id
        return {key for key in keys if snap.node_by_key(plane_id, key) is not None}


def register(server: MCPServer[Any], tools: Tools) -> None:
    """Add the write tools to ``server``."""
    state = tools.state

    def most() -> int:
        return state.config.max_batch

    async def held(plane: str, keys: list[str]) -> set[str]:
        found: set[str] = await tools.guarded(lambda: state.read(lambda: _keys_held(tools, plane, keys)))
        return found

    @server.tool(structured_output=False)
    async def write_nodes(plane: str, nodes: list[dict[str, Any]], mode: str = "create") -> str:
        """Write nodes by external key, each {key, labels, properties}. `mode` says what happens where a
        node already holds a key: create (default) refuses the batch, update merges labels and
        properties (an upsert), replace overwrites them, skip leaves the node. The batch is checked
        whole first: a refusal writes nothing. Answers {plane, written, nodes: [{key, id, op}]}, op
        created, updated, replaced or skipped."""
        tools.writable()
        if mode not in PUT_MODES:
            raise _refuse(f"mode is one of {', '.join(PUT_MODES)}, not {mode!r}")
        items = [_item(n, i, "nodes", NODE_FIELDS, ["key"]) for i, n in enumerate(_batch(nodes, "nodes", most()))]
        keys = [n["key"] for n in items]
        counts = Counter(keys)
        twice = next((k for k in keys if counts[k] > 1), None)
        if twice is not None:
            raise _refuse(f"key {twice!r} is in the batch twice; send each node once")
        for i, n in enumerate(items):
            labels = n.get("labels", [])
            if not isinstance(labels, list) or not all(isinstance(x, str) and x for x in labels):
                raise _refuse(f"nodes[{i}].labels is a list of label names")
        taken = await held(plane, keys)
        if taken and mode == "create":
            first = next(k for k in keys if k in taken)
            raise _refuse(
                f"key {first!r} is taken in plane {plane!r} ({len(taken)} of the batch are); "
                f'pass mode "update" to merge into them, "replace" or "skip"'
            )
        calls = [
            tools.run("node.create", {"plane": plane, **{k: v for k, v in n.items() if v is not None}, "mode": mode})
            for n in items
        ]
        written = await asyncio.gather(*calls)
        nodes_out = [
            {"key": n["key"], "id": record["id"], "op": DONE[mode] if n["key"] in taken else "created"}
            for n, record in zip(items, written, strict=True)
        ]
        return _answer({"plane": plane, "written": len(nodes_out), "nodes": nodes_out})

    @server.tool(structured_output=False)
    async def write_edges(plane: str, edges: list[dict[str, Any]]) -> str:
        """Create edges between nodes named by external key, each {src_key, dst_key, type, properties}.
        The batch is checked whole first (every key must name a node: write_nodes first): a refusal
        writes nothing. Answers {plane, written, edges: [{id, src_key, type, dst_key}]}."""
        tools.writable()
        needed = ["src_key", "dst_key", "type"]
        items = [_item(e, i, "edges", EDGE_FIELDS, needed) for i, e in enumerate(_batch(edges, "edges", most()))]
        ends = list(dict.fromkeys(k for e in items for k in (e["src_key"], e["dst_key"])))
        found = await held(plane, ends)
        missing = [k for k in ends if k not in found]
        if missing:
            raise _refuse(
                f"no node with key {missing[0]!r} in plane {plane!r} ({len(missing)} keys missing); "
                f"write_nodes writes them first"
            )
        calls = [
            tools.run(
                "edge.create",
                {"plane": plane, "src": e["src_key"], "dst": e["dst_key"], "type": e["type"]}
                | ({"properties": e["properties"]} if e.get("properties") is not None else {}),
            )
            for e in items
        ]
        written = await asyncio.gather(*calls)
        out = [
            {"id": record["id"], "src_key": e["src_key"], "type": e["type"], "dst_key": e["dst_key"]}
            for e, record in zip(items, written, strict=True)
        ]
        return _answer({"plane": plane, "written": len(out), "edges": out})

    @server.tool(structured_output=False)
    async def create_plane(name: str, properties: dict[str, Any] | None = None) -> str:
        """Make a new, empty plane (`properties` its own, e.g. a description)."""
        tools.writable()
        return await tools.call("plane.create", {"name": name, "properties": properties})

    @server.tool(structured_output=False)
    async def drop_plane(plane: str, confirm: bool = False) -> str:
        """Drop a plane and everything on it (its history stays in the log). Needs `confirm: true`."""
        tools.writable()
        if confirm is not True:
            raise _refuse(f"drop_plane deletes plane {plane!r} and everything on it; pass confirm: true to drop it")
        return await tools.call("plane.delete", {"plane": plane})

    @server.tool(structured_output=False)
    async def digest(
        plane: str,
        text: str | None = None,
        path: str | None = None,
        apply: bool = False,
        source: str | None = None,
        mode: str | None = None,
        link: bool | None = None,
        no_embed: bool | None = None,
        chat: str | None = None,
        model: str | None = None,
    ) -> str:
        """Digest a document (`text`, or over stdio a local `path`: a document, a code file or a whole
        source tree, read as `drsg digest` reads it). `apply` false (default): the proposal, nothing
        written (as digest_preview). `apply` true: every proposed node and edge written in one commit
        (as digest_apply), answered with the counts written. `mode` fine|super, `link` (to the plane's
        existing nodes, default true), `no_embed`, `chat` (one of the server's presets) and `model`
        as digest.run takes them."""
        if apply:
            tools.writable()
        options = {"mode": mode, "link": link, "no_embed": no_embed, "chat": chat, "model": model}
        proposal = await tools.propose(plane, text, path, source, options)
        if not apply:
            return _answer(proposal, hidden=path is not None)
        chosen = {k: proposal.get(k) for k in ("nodes", "edges", "source", "run", "model")}
        written = await tools.run(
            "digest.write", {"plane": plane, **{k: v for k, v in chosen.items() if v is not None}}
        )
        return _answer({"applied": True, "source": proposal.get("source"), "written": written})


def _answer(value: Mapping[str, Any], *, hidden: bool = False) -> str:
    return dumps(compact(value, hidden))
