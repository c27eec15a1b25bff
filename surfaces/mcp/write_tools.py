"""The MCP write tools: `write_nodes`, `write_edges`, `create_plane`, `drop_plane` and `digest`.

Each writes the intents the JSON-RPC method a client would call makes (``node.create``'s
``node.put``, ``edge.create``'s, ``plane.create``, ``plane.delete``, ``digest.write``) — the same
as the CLI's — and only where the server allows writes (:meth:`ServerState.check_writable`:
``--read-only`` or ``[server] read_only`` refuses them in one line, before anything runs). A batch's
shapes and values are checked first; its writes are then one intent (store/intents.py ``batch``),
decided as one commit where it lands: all of it, or, where one write is refused (a key taken, an
end missing), none, the error naming which.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from mcp.server.mcpserver.exceptions import ToolError

from drsg.kernel.errors import DrsgError
from drsg.kernel.values import props_from_json
from drsg.store.intents import Intent, batch
from drsg.store.transaction import PUT_MODES
from drsg.surfaces.mcp.toolkit import Tools, compact, dumps

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

NODE_FIELDS = ("key", "labels", "properties")
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


def register(server: MCPServer[Any], tools: Tools) -> None:
    """Add the write tools to ``server``."""
    state = tools.state

    def most() -> int:
        return state.config.max_batch

    async def written(intents: list[Intent], tool: str) -> list[dict[str, Any]]:
        """The batch's answers, one per intent, in order (a refusal is the tool's error)."""
        done = await tools.guarded(lambda: state.submit(batch(intents), tool))
        answers: list[dict[str, Any]] = done.value["answers"]
        return answers

    @server.tool(structured_output=False)
    async def write_nodes(plane: str, nodes: list[dict[str, Any]], mode: str = "create") -> str:
        """Write nodes by external key, each {key, labels, properties}, in one commit. `mode` says
        what happens where a node already holds a key: create (default) refuses the batch, update
        merges labels and properties (an upsert), replace overwrites them, skip leaves the node. A
        refusal writes nothing. Answers {plane, written, nodes: [{key, id, op}]}, op created, updated,
        replaced or skipped."""
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
        intents = [
            Intent("node.put", {"plane": plane, "key": n["key"], "labels": n.get("labels", []),
                                "properties": n.get("properties"), "mode": mode})
            for n in items
        ]  # fmt: skip
        answers = await written(intents, "write_nodes")
        out = [{"key": n["key"], "id": a["node"], "op": a["op"]} for n, a in zip(items, answers, strict=True)]
        return _answer({"plane": plane, "written": len(out), "nodes": out})

    @server.tool(structured_output=False)
    async def write_edges(plane: str, edges: list[dict[str, Any]]) -> str:
        """Create edges between nodes named by external key, each {src_key, dst_key, type, properties},
        in one commit (every key must name a node: write_nodes first). A refusal writes nothing.
        Answers {plane, written, edges: [{id, src_key, type, dst_key}]}."""
        tools.writable()
        needed = ["src_key", "dst_key", "type"]
        items = [_item(e, i, "edges", EDGE_FIELDS, needed) for i, e in enumerate(_batch(edges, "edges", most()))]
        intents = [
            Intent("edge.create", {"plane": plane, "src": e["src_key"], "dst": e["dst_key"], "type": e["type"],
                                   "properties": e.get("properties")})
            for e in items
        ]  # fmt: skip
        answers = await written(intents, "write_edges")
        out = [
            {"id": a["edge"], "src_key": e["src_key"], "type": e["type"], "dst_key": e["dst_key"]}
            for e, a in zip(items, answers, strict=True)
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
