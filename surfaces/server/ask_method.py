"""``plane.ask``: a natural-language question → read-only plans → their subgraph, over JSON-RPC.

Upstream's params and result (``{plans, ran, attempts, results, edges, count, trace}``), plus drsg's
``bounds`` (what bounded the answer), ``answers`` (ids of the nodes the plans ended at), ``at`` (the
seq read) and ``usage`` (calls, tokens, tool calls, refusals, repairs). The chat model is the
operator's (``[digest] chat``/``model``) or a preset the request names — never a URL, a key or a key
variable: keys come from the server's environment. ``embed_provider`` turns the ``find_edge`` and
``find_entity`` tools on; they embed with the server's embedder (``embed_model`` is refused, as on
``plane.hybrid``). A failure is -32000 with upstream's message and the trace as ``data``.
``max_attempts`` defaults to upstream's documented 6 here; ``[ask] masked`` applies as on the CLI.
The question is the public API's ``Plane.ask`` (drsg.api), with the server's searcher and embedder.
"""

from __future__ import annotations

from typing import Any

from drsg.kernel.errors import APP_ERROR, INVALID_PARAMS, AskFailed, RpcError
from drsg.models.providers import ChatChoice
from drsg.surfaces.server.digest_method import CHAT
from drsg.surfaces.server.params import Params, as_of
from drsg.surfaces.server.registry import AS_OF, AS_OF_MS, rpc
from drsg.surfaces.server.state import ServerState

RPC_ATTEMPTS = 6
REFUSED = {
    "type": "string",
    "description": "Refused when given: the tools embed with the server's embedder; a request never "
    "chooses an embedding model, a URL or a key.",
}
EMBED = {
    "type": "string",
    "description": "Any value turns on the find_edge and find_entity tools; they embed with the server's embedder.",
}


def _bounds(p: Params) -> tuple[int, int]:
    """(max_attempts, limit), checked; ``embed_model`` refused."""
    if p.get("embed_model") is not None:
        raise RpcError(INVALID_PARAMS, "plane.ask: `embed_model` is not accepted — the tools use the server's embedder")
    attempts, limit = int(p.get("max_attempts", RPC_ATTEMPTS)), int(p.get("limit", 100))
    if not 1 <= attempts <= 100:
        raise RpcError(INVALID_PARAMS, f"param 'max_attempts' must be between 1 and 100, not {attempts}")
    if not 0 <= limit <= 10_000:
        raise RpcError(INVALID_PARAMS, f"param 'limit' must be between 0 and 10000, not {limit}")
    return attempts, limit


@rpc(
    "plane.ask",
    add=[AS_OF, AS_OF_MS],
    replace={"provider": CHAT, "embed_model": REFUSED, "embed_provider": EMBED},
    note="Adds `bounds`, `answers`, `at` and `usage` to upstream's result; `provider` names a preset only.",
)
async def plane_ask(ctx: ServerState, p: Params) -> Any:
    settings = ctx.config.settings
    attempts, limit = _bounds(p)
    at, dry_run = as_of(p), bool(p.get("dry_run", False))
    question, plane = str(p["question"]).strip(), str(p["plane"])
    if not question:
        raise RpcError(INVALID_PARAMS, "plane.ask: `question` is empty")
    if p.get("provider") is not None:
        chat, model = str(p["provider"]), p.get("model")
    else:
        chat = settings.text("digest.chat") if settings is not None else "openai"
        model = p.get("model") or ((settings.text("digest.model") if settings is not None else "") or None)
    chosen = ChatChoice(chat, model)  # a preset (the schema admits no URL) or the operator's

    def run() -> dict[str, Any]:
        embedder = ctx.embedder_for(plane, "embedding") if p.get("embed_provider") is not None else None
        try:
            answer = ctx.plane(plane, at).ask(
                question, chat=chosen, as_of=at, dry_run=dry_run, embed=embedder, max_attempts=attempts, limit=limit
            )
            return answer.to_json()
        except AskFailed as exc:  # the trace says why, turn by turn
            raise RpcError(APP_ERROR, exc.message, {"trace": exc.trace}) from None

    return await ctx.read(run, limited=False)
