"""``code.*``: the code verbs on a code plane (drsg extensions), the public API's ``Plane.code()``.

``code.context``, ``code.describe``, ``code.grep``, ``code.trace``, ``code.impact`` and
``code.snippet`` answer upstream's agent verbs (its MCP tools of those names run them); each answer
carries ``file:line`` receipts and ``synced``, the plane's drift line. A plane's tree is read from
disk only inside the directories the operator allowed (``[server] code_roots`` and the trees ``serve
watch`` follows): the plane's own root is data a client may have set.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from drsg.api.code import Code
from drsg.surfaces.server.params import Params, as_of
from drsg.surfaces.server.registry import AS_OF, PLANE, rpc
from drsg.surfaces.server.state import ServerState

_SYMBOL_TEXT = "A symbol: its exact key, else the end of one (`.name`, `::name`), else part of one (any case)."
SYMBOL = {"name": "symbol", "required": True, "schema": {"type": "string"}, "description": _SYMBOL_TEXT}
_ANSWER = {"name": "answer", "schema": {"type": "object"}}


def _define(summary: str, *params: Mapping[str, Any]) -> dict[str, Any]:
    return {"summary": summary, "x-access": "read", "params": [PLANE, *params, AS_OF], "result": _ANSWER}


def allowed_roots(ctx: ServerState) -> tuple[Path, ...] | None:
    """Where this server may read a plane's tree: the configured roots and the watched trees (read per
    call: a daemon may have started since); None, no restriction, for a local process's (stdio)."""
    from drsg.feed.watched import watched_roots

    roots = ctx.config.code_roots
    return None if roots is None else (*roots, *watched_roots(ctx.db.path))


async def _answer(ctx: ServerState, p: Params, verb: Callable[[Code], Any]) -> Any:
    def run() -> Any:
        at = as_of(p)
        return verb(ctx.plane(p["plane"], at).code(as_of=at, allowed_roots=allowed_roots(ctx))).to_json()

    return await ctx.read(run)


@rpc(
    "code.context",
    define=_define(
        "A symbol's definition (`at`: file:line), signature, doc, callers with their call sites, callees and "
        "other edges, in one answer of at most 24,000 characters (`omitted` counts what was left out).",
        SYMBOL,
    ),
)
async def code_context(ctx: ServerState, p: Params) -> Any:
    return await _answer(ctx, p, lambda code: code.context(p["symbol"]))


@rpc("code.describe", define=_define("A symbol's properties (`_` provenance left out, vectors elided).", SYMBOL))
async def code_describe(ctx: ServerState, p: Params) -> Any:
    return await _answer(ctx, p, lambda code: code.describe(p["symbol"]))


@rpc(
    "code.grep",
    define=_define(
        "Lines holding `pattern` literally in the files of the tree the plane was read from, each as file:line "
        "with the definition it falls under; at most `max_results` (default 50, at most 200). Only a tree inside "
        "[server] code_roots or one `serve watch` follows is read.",
        {"name": "pattern", "required": True, "schema": {"type": "string", "minLength": 1}},
        {"name": "ignore_case", "required": False, "schema": {"type": "boolean"}},
        {"name": "max_results", "required": False, "schema": {"type": "integer", "minimum": 1, "maximum": 200}},
    ),
)
async def code_grep(ctx: ServerState, p: Params) -> Any:
    ignore, most = bool(p.get("ignore_case")), int(p.get("max_results") or 50)
    return await _answer(ctx, p, lambda code: code.grep(p["pattern"], ignore_case=ignore, max_results=most))


@rpc(
    "code.trace",
    define=_define(
        "The shortest recorded CALLS path from one symbol to another, each hop with its call site; when there "
        "is none, the path the other way (`reversed`).",
        {"name": "from", "required": True, "schema": {"type": "string"}, "description": _SYMBOL_TEXT},
        {"name": "to", "required": True, "schema": {"type": "string"}, "description": _SYMBOL_TEXT},
    ),
)
async def code_trace(ctx: ServerState, p: Params) -> Any:
    return await _answer(ctx, p, lambda code: code.trace(p["from"], p["to"]))


@rpc(
    "code.impact",
    define=_define(
        "What reaches a symbol through incoming CALLS, REFERENCES, INSTANTIATES, IMPORTS, EXTENDS or IMPLEMENTS "
        "edges, level by level up to `depth` (default 3, at most 6), each with its site.",
        SYMBOL,
        {"name": "depth", "required": False, "schema": {"type": "integer", "minimum": 1, "maximum": 6}},
    ),
)
async def code_impact(ctx: ServerState, p: Params) -> Any:
    depth = int(p.get("depth") or 3)
    return await _answer(ctx, p, lambda code: code.impact(p["symbol"], depth=depth))


@rpc(
    "code.snippet",
    define=_define(
        "A symbol's source: the stored `_code`, else `lines` lines (default 40) of its file from its definition, "
        "read from the tree the plane was read from (only inside [server] code_roots or a tree `serve watch` follows).",
        SYMBOL,
        {"name": "lines", "required": False, "schema": {"type": "integer", "minimum": 1, "maximum": 400}},
    ),
)
async def code_snippet(ctx: ServerState, p: Params) -> Any:
    lines = int(p.get("lines") or 40)
    return await _answer(ctx, p, lambda code: code.snippet(p["symbol"], lines=lines))
