"""What the MCP tools share: :class:`Tools` (a JSON-RPC method run in process, its error the tool's
error; traverse's plan; a local path digested over stdio) and the compact answer (:func:`compact`,
:func:`dumps`: vectors elided, ``_`` properties hidden unless asked, strings over :data:`MAX_CHARS`
and lists over :data:`MAX_ITEMS` cut with a note). tools.py builds the server from it and the tool
modules (code_tools.py, write_tools.py, catalog_tools.py) add theirs.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from mcp.server.mcpserver.exceptions import ToolError

from drsg.kernel.errors import INVALID_PARAMS, DrsgError, RpcError
from drsg.kernel.values import json_depth
from drsg.plan.logical import MAX_HOPS, MAX_K
from drsg.surfaces.server import served  # noqa: F401  (every JSON-RPC method, registered)
from drsg.surfaces.server.registry import REGISTRY
from drsg.surfaces.server.rpc import MAX_DEPTH, WithMembers
from drsg.surfaces.server.state import ServerState

if TYPE_CHECKING:
    from drsg.kernel.settings import Settings
    from drsg.pipeline.digest.sources import Document

MAX_CHARS = 2000  # a string longer than this is cut (the note says how much more there was)
MAX_ITEMS = 200  # a list longer than this is cut
DIRECTIONS = {"out": "Out", "in": "In", "both": "Both"}  # traverse's words → a plan step's


def compact(value: Any, hidden: bool = False) -> Any:
    """A JSON value made small for a model (see the module's docstring)."""
    if isinstance(value, dict):
        if len(value) == 1 and "$vector" in value and isinstance(value["$vector"], list):
            return f"$vector({len(value['$vector'])} dims, omitted)"
        return {k: compact(v, hidden) for k, v in value.items() if hidden or not (isinstance(k, str) and k[:1] == "_")}
    if isinstance(value, list):
        items = [compact(v, hidden) for v in value[:MAX_ITEMS]]
        if len(value) > MAX_ITEMS:
            items.append(f"… cut: {len(value) - MAX_ITEMS} more items (narrow the call, e.g. a smaller k or limit)")
        return items
    if isinstance(value, str) and len(value) > MAX_CHARS:
        return value[:MAX_CHARS] + f"… [cut: {len(value) - MAX_CHARS} more characters]"
    return value


class Tools:
    """The tools of one MCP server over one :class:`ServerState`."""

    def __init__(self, state: ServerState, *, allow_path: bool, max_concurrent: int = 8) -> None:
        self.state = state
        self.allow_path = allow_path  # a local file to digest: over stdio only (the caller's own machine)
        self.slots = asyncio.Semaphore(max_concurrent)

    async def call(self, method: str, params: dict[str, Any], *, hidden: bool = False) -> str:
        """Run one JSON-RPC method; its answer as compact JSON text, its error as a ToolError."""
        spec = REGISTRY[method]
        given = {k: v for k, v in params.items() if v is not None}
        if "lean" in {p["name"] for p in spec.params}:
            given.setdefault("lean", True)
        result = await self.run(method, given)
        return dumps(compact(result, hidden))

    async def run(self, method: str, params: dict[str, Any]) -> Any:
        spec = REGISTRY[method]

        async def answer() -> Any:
            if json_depth(params, MAX_DEPTH) > MAX_DEPTH:
                raise RpcError(INVALID_PARAMS, f"arguments nest deeper than {MAX_DEPTH} levels")
            return await spec.handler(self.state, spec.bind(params))

        result = await self.guarded(answer)
        if isinstance(result, WithMembers):
            return {"result": result.result, **result.members}
        return result

    async def guarded(self, work: Callable[[], Awaitable[Any]]) -> Any:
        """``work`` in one of the slots, a drsg error made the tool's error."""
        async with self.slots:
            try:
                return await work()
            except (RpcError, DrsgError) as exc:
                raise ToolError(f"error {exc.rpc_code}: {exc.message}") from None

    async def digest_local(
        self, plane: str, path: str, source: str | None, options: Mapping[str, Any]
    ) -> dict[str, Any]:
        """A local path digested over stdio: a document's text goes to ``digest.run`` as sent text does;
        a directory or a code file is read as `drsg digest` reads it (the walk, the handlers, the
        prose) and proposed by the same digest, its parsed facts keeping `_generated_by`."""
        from drsg.surfaces.server.digest_method import propose

        settings = self.state.config.settings
        doc = await self.guarded(lambda: asyncio.to_thread(_read_path, path, self.state.db.path, settings))
        if doc.reading is None:
            return await self.proposal({"plane": plane, "text": doc.text, "source": source or doc.name, **options})

        async def parsed() -> dict[str, Any]:
            return await propose(self.state, REGISTRY["digest.run"].bind({"plane": plane, "text": "", **options}), doc)

        proposal: dict[str, Any] = await self.guarded(parsed)
        return proposal

    async def propose(
        self, plane: str, text: str | None, path: str | None, source: str | None, options: Mapping[str, Any]
    ) -> dict[str, Any]:
        """A digest's proposal (nothing written) of `text`, or over stdio of a local `path`; ``options``
        digest.run's (mode, link, no_embed, chat, model), None for not given."""
        if (text is None) == (path is None):
            raise ToolError("error -32602: give `text` or `path` (exactly one)")
        given = {k: v for k, v in options.items() if v is not None}
        if path is not None:
            if not self.allow_path:  # a remote client must never read the server's files
                raise ToolError("error -32602: `path` is for the stdio server only (`drsg mcp`); send the `text`")
            return await self.digest_local(plane, path, source, given)
        return await self.proposal({"plane": plane, "text": text, **({"source": source} if source else {}), **given})

    async def proposal(self, params: dict[str, Any]) -> dict[str, Any]:
        """``digest.run``'s proposal, whole (a tool compacts what it shows; an apply writes all of it)."""
        proposal: dict[str, Any] = await self.run("digest.run", params)
        return proposal

    def writable(self) -> None:
        """A write tool on a read-only server: refused before anything runs, in one line."""
        try:
            self.state.check_writable()
        except RpcError as exc:
            raise ToolError(f"error {exc.rpc_code}: {exc.message}") from None

    async def traverse(
        self,
        plane: str,
        from_id: int | None,
        from_key: str | None,
        direction: str,
        edge_type: str | None,
        hops: tuple[int | None, int | None],
        limit: int | None,
        as_of: int | None,
    ) -> str:
        """`traverse` by hops: the start named by id or key, then one ExpandVar plan (plane.query)."""
        if (from_id is None) == (from_key is None):
            raise ToolError("error -32602: give `from_id` or `from_key` (exactly one)")
        if direction not in DIRECTIONS:
            raise ToolError(f"error -32602: direction is out, in or both, not {direction!r}")
        low = hops[0] if hops[0] is not None else 1
        high = hops[1] if hops[1] is not None else max(low, 1)
        if not 0 <= low <= high <= MAX_HOPS:
            raise ToolError(f"error -32602: hops need 0 ≤ min ≤ max ≤ {MAX_HOPS}, not min {low}, max {high}")
        cap = limit if limit is not None else 100
        if not 1 <= cap <= MAX_K:
            raise ToolError(f"error -32602: limit is a whole number from 1 to {MAX_K}, not {cap}")
        start = await self.run(
            "node.get", {"plane": plane, "id": from_id, "key": from_key, "as_of": as_of, "lean": True}
        )
        if start is None:
            which = f"id {from_id}" if from_key is None else f"key {from_key!r}"
            raise ToolError(f"error -32602: no node with {which} in plane {plane!r}; search or get_node finds nodes")
        step = {"dir": DIRECTIONS[direction], "edge_type": edge_type, "min": low, "max": high}
        plan = {"source": {"SeekIds": [start["id"]]}, "steps": [{"ExpandVar": step}, "Distinct", {"Limit": cap + 1}]}
        reached = await self.run("plane.query", {"plane": plane, "plan": plan, "as_of": as_of, "lean": True})
        answer = {"from": {"id": start["id"], "key": start.get("external_key")}, "min": low, "max": high}
        answer |= {"nodes": reached[:cap], "count": len(reached[:cap]), "truncated": len(reached) > cap}
        return dumps(compact(answer))


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def _read_path(path: str, db: str, settings: Settings | None) -> Document:
    """A local document, tree or code file, read with `[digest]`'s walk rules and parse memo, as the CLI does."""
    from pathlib import Path

    from drsg.kernel import settings as settings_mod
    from drsg.pipeline.code.parsed import ParseMemo
    from drsg.pipeline.code.walk import digest_folder
    from drsg.pipeline.digest.sources import TreeOptions, read_source

    if not Path(path).expanduser().exists():
        raise ToolError(
            f"error -32602: {path}: no such file or directory; give a document's, a tree's or a code file's path"
        )
    loaded = settings if settings is not None else settings_mod.load()
    memo = ParseMemo(digest_folder(db) / "parsed")
    return read_source(path, TreeOptions.of(loaded, db), loaded, None, memo)
