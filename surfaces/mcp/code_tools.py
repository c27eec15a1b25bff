"""The code verbs as MCP tools with upstream's names: ``context``, ``describe``, ``grep``, ``trace``,
``impact``, ``snippet``, each the JSON-RPC method ``code.<name>`` (surfaces/server/code_method.py)
run in process. Every answer names places as ``file:line`` and carries ``synced``, the drift line."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

    from drsg.surfaces.mcp.toolkit import Tools


def register(server: MCPServer[Any], tools: Tools) -> None:
    """Add the six code tools to ``server``."""

    @server.tool(structured_output=False)
    async def context(plane: str, symbol: str, as_of: int | None = None) -> str:
        """The primary code verb, one call: a symbol's definition (`at`: file:line), signature, doc, its
        callers each with the call site (file:line), its callees, other edges (CONTAINS, IMPORTS,
        EXTENDS, REFERENCES) — at most 24,000 characters. `symbol` (here and in the other code tools): a key
        (pkg.mod.func), else its end (func, Class.method), else part of one; several matching: their keys."""
        return await tools.call("code.context", {"plane": plane, "symbol": symbol, "as_of": as_of})

    @server.tool(structured_output=False)
    async def describe(plane: str, symbol: str, as_of: int | None = None) -> str:
        """One symbol's properties as `prop: value` (signature, file, line, doc_comment, …; vectors elided)."""
        return await tools.call("code.describe", {"plane": plane, "symbol": symbol, "as_of": as_of})

    @server.tool(structured_output=False)
    async def grep(
        plane: str, pattern: str, ignore_case: bool = False, max_results: int = 50, as_of: int | None = None
    ) -> str:
        """Literal search of the source tree the plane was read from: each hit file:line, the line, and
        the definition it falls under (`in`). `max_results` default 50, at most 200. At /mcp, only a tree
        inside the server's [server] code_roots (or one `serve watch` follows) is read."""
        params = {"plane": plane, "pattern": pattern, "ignore_case": ignore_case, "max_results": max_results}
        return await tools.call("code.grep", {**params, "as_of": as_of})

    @server.tool(structured_output=False)
    async def trace(plane: str, src: str, dst: str, as_of: int | None = None) -> str:
        """The shortest recorded CALLS path from symbol `src` to symbol `dst`, each hop with its call site
        (file:line); when there is none that way, the path from `dst` to `src` (`reversed`: true)."""
        return await tools.call("code.trace", {"plane": plane, "from": src, "to": dst, "as_of": as_of})

    @server.tool(structured_output=False)
    async def impact(plane: str, symbol: str, depth: int = 3, as_of: int | None = None) -> str:
        """What a change to `symbol` reaches: symbols with incoming CALLS, REFERENCES, INSTANTIATES,
        IMPORTS, EXTENDS or IMPLEMENTS edges to it, then to those, by distance up to `depth` (default 3,
        at most 6), each with its site (file:line) and the symbol it goes `through`."""
        return await tools.call("code.impact", {"plane": plane, "symbol": symbol, "depth": depth, "as_of": as_of})

    @server.tool(structured_output=False)
    async def snippet(plane: str, symbol: str, lines: int = 40, as_of: int | None = None) -> str:
        """A symbol's source code: what the parser stored, else `lines` lines (default 40) of its file from
        its definition, read from the tree the plane was read from (at /mcp: inside [server] code_roots)."""
        return await tools.call("code.snippet", {"plane": plane, "symbol": symbol, "lines": lines, "as_of": as_of})
