"""``plane.cypher``: a Cypher statement over JSON-RPC, exactly as upstream's schema declares it.

Params ``plane``, ``query``, ``params`` (the ``$parameters``' values), ``embed`` (a preset for a
text ``NEAR "…"``, read as ``plane.vectorize`` reads it: never a URL or a key) and ``lean``. The
answer is the public API's :class:`~drsg.workers.cypher.result.CypherResult` in its one wire form:
upstream's ``{nodes, edges, count}`` for a read, ``{write: true, …counts}`` for a write, with
``columns`` and ``rows`` added. A read runs in the read pool under ``query_timeout_secs`` like every
read; a write is one intent through :meth:`ServerState.submit` (``write_timeout_secs``, -32002, origin
``via: rpc``; on a Kafka node decided where it lands), like every RPC write. A statement that does
not parse or cannot run is -32602, a ``[query]`` limit -32000 (drsg.kernel.errors); a syntax error's
message is its first line (where, and what was expected), the caret excerpt its ``data.excerpt``
(beside ``data.error``, as every error has).

Write-gating: upstream marks the method ``x-access: write`` as a whole. Every write method
(``node.create``, ``digest.write`` …) is open to exactly the callers the server admits (its token, or
loopback without one) — so ``plane.cypher`` is gated as they are: a caller refused there is refused a
read statement too (-32001), and an admitted one may write. A read-only server (``--read-only``)
refuses the ``stmt.writes`` branch below in :meth:`ServerState.write` (-32001, before it runs) and
leaves reads running: a read statement writes nothing whichever way it is sent.
"""

from __future__ import annotations

from typing import Any

from drsg.api import cypher as api_cypher
from drsg.kernel.errors import INVALID_PARAMS, QuerySyntaxError, RpcError
from drsg.surfaces.server.params import Params
from drsg.surfaces.server.registry import rpc
from drsg.surfaces.server.state import ServerState
from drsg.surfaces.server.vectorize_method import EMBED, requested_embedder

METHOD = "plane.cypher"


@rpc(
    METHOD,
    replace={"embed": EMBED},
    result={
        "name": "result",
        "schema": {
            "type": "object",
            "description": "Read: {columns, rows, nodes, edges, count}. Write: the same plus {write: true, "
            "nodes_created, nodes_deleted, edges_created, edges_deleted, labels_added, labels_removed, props_set, "
            "props_removed}. In rows a node is {id, labels, properties}, a relationship {id, type, src, dst, "
            "properties}, a path {nodes, edges}.",
            "required": ["columns", "rows", "nodes", "edges", "count"],
        },
    },
    note="`embed` takes a preset only (default: the embedder that wrote the vectors searched, else the server's); "
    "a write statement waits for the writer as other writes do (-32002).",
)
async def plane_cypher(ctx: ServerState, p: Params) -> Any:
    plane = str(p["plane"])
    try:  # parsed in the read pool: a long statement is not parsed on the event loop
        stmt = await ctx.read(lambda: api_cypher.statement(p["query"], p.get("params")))
    except QuerySyntaxError as exc:
        # the message's first line says where and what was expected; the caret excerpt under it
        # goes in `data`, so the message stays one line (an MCP tool error shows only the message)
        where, _, excerpt = exc.message.partition("\n")
        raise RpcError(INVALID_PARAMS, where, {"error": type(exc).__name__, "excerpt": excerpt}) from None
    embed = requested_embedder(ctx, p, METHOD)  # a bad one is refused, whichever the statement
    if stmt.prepared.explain_only:  # `EXPLAIN …`: the plan, nothing run or written
        result = api_cypher.plan_answer(stmt)
    elif stmt.writes:
        done = await ctx.submit(api_cypher.write_intent(ctx.api, plane, p["query"], p.get("params")), METHOD)
        result = api_cypher.written(done)
    else:
        result = await ctx.read(lambda: api_cypher.read(ctx.plane(plane), stmt, None, embed))
    return result.to_json(lean=bool(p.get("lean")))
