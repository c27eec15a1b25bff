"""``digest.run`` and ``digest.write``: document ingestion over JSON-RPC, upstream's two steps.

``digest.run`` reads ``text`` (Markdown or plain text) with the server's chat model and returns the
proposal — ``{report, nodes: [{key, label, properties}], edges: [{src, type, dst, properties}]}``
plus drsg's ``source``, ``run`` and ``model`` — without writing anything. ``digest.write`` writes a
proposal (one the client may have edited) in one commit with the contribution ledger, and no model
call. The chat provider is the operator's (``[digest] chat``/``model`` in drsg.toml or
``DRSG_DIGEST_*``); a request may name one of the presets but never a URL, a key or a key
variable. The embedder is the server's, as for ``plane.hybrid``. Answers are cached beside the
database, as on the CLI. The proposal is the public API's (``drsg.api.digest.preview``).
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

from drsg.api.digest import preview
from drsg.kernel.errors import INVALID_PARAMS, RpcError
from drsg.kernel.values import check_name, props_from_json
from drsg.models.chat.providers import CHAT_PRESETS
from drsg.models.providers import ChatChoice
from drsg.surfaces.server.params import Params
from drsg.surfaces.server.registry import param, rpc
from drsg.surfaces.server.state import ServerState

if TYPE_CHECKING:  # the digest pipeline loads with the first digest call, not before `drsg serve` listens
    from drsg.pipeline.digest.proposal import Proposal, ProposedEdge, ProposedNode
    from drsg.pipeline.digest.sources import Document

MAX_CONCURRENCY = 64
REFUSED = {
    "type": "string",
    "description": "Refused when given: the server embeds with its own embedder; a request never chooses "
    "an embedding provider, model, URL or key.",
}
CHAT = {
    "type": "string",
    "enum": [name for name in CHAT_PRESETS if name != "url"],
    "description": "One of the presets (keys from the server's environment); default: the server's "
    "`[digest] chat`. URLs are refused.",
}
SOURCE = param("source", {"type": "string"}, "The document's name in provenance and the ledger.")
RUN = param("run", {"type": "string"}, "The run id `digest.run` returned (provenance).")
MODEL = param("model", {"type": "string"}, "The chat model `digest.run` returned (provenance).")


def _choice(ctx: ServerState, p: Params) -> tuple[str, str | None]:
    """(chat, model): the request's preset (the schema admits presets only), else the operator's."""
    settings = ctx.config.settings
    if p.get("chat") is not None:
        return str(p["chat"]), p.get("model")
    configured = settings.text("digest.chat") if settings is not None else "openai"
    configured_model = (settings.text("digest.model") if settings is not None else "") or None
    return configured, p.get("model") or configured_model


@rpc(
    "digest.run",
    add=[],
    replace={"embed": REFUSED, "embed_model": REFUSED, "chat": CHAT},
    note="Returns drsg's `source`, `run` and `model` beside upstream's report, nodes and edges; pass them "
    "to `digest.write` to keep provenance and the contribution ledger.",
)
async def digest_run(ctx: ServerState, p: Params) -> Any:
    for name in ("embed", "embed_model"):
        if p.get(name) is not None:
            raise RpcError(INVALID_PARAMS, f"digest.run: `{name}` is not accepted — the server embeds with its own")
    from drsg.pipeline.digest.sources import Document

    text = str(p["text"])
    source = str(p.get("source") or f"rpc:{hashlib.sha256(text.encode()).hexdigest()[:16]}")
    return await propose(ctx, p, Document(source, text))


async def propose(ctx: ServerState, p: Params, doc: Document) -> dict[str, Any]:
    """``digest.run``'s work on a document already read: its text, or (the stdio MCP server's local
    path) a tree's or a code file's parsed facts and prose, as ``drsg digest`` reads them."""
    from drsg.pipeline.digest.run import DigestOptions  # the digest pipeline loads with the first digest

    plane = str(p["plane"])
    settings = ctx.config.settings
    limit = settings.integer("digest.concurrency") if settings is not None else 8
    options = DigestOptions(
        mode=str(p.get("mode", "fine")),
        chunk_chars=int(p.get("chunk_chars", 4000)),
        concurrency=max(1, min(int(p.get("concurrency", limit)), limit, MAX_CONCURRENCY)),
        embed=not p.get("no_embed", False),
        link=bool(p.get("link", True)),
    )
    chosen = ChatChoice(*_choice(ctx, p))  # a preset (the schema admits no URL) or the operator's

    def run() -> Proposal:
        embedder = ctx.embedder_for(plane, "embedding") if options.embed or options.link else None
        return preview(ctx.api, plane, doc, options, chosen, embedder)  # another tree's keys refused, as on the CLI

    proposal = await ctx.read(run, limited=False)
    out = proposal.to_json()
    return {key: out[key] for key in ("report", "nodes", "edges", "source", "run", "model", "notes", "embedder")}


@rpc("digest.write", add=[SOURCE, RUN, MODEL])
async def digest_write(ctx: ServerState, p: Params) -> Any:
    from drsg.pipeline.digest.ledger import answer_of, apply_intent, origin_of
    from drsg.pipeline.digest.proposal import Proposal

    plane = check_name("a plane name", p["plane"])
    nodes = [_node(item, i) for i, item in enumerate(p["nodes"])]
    edges = [_edge(item, i) for i, item in enumerate(p.get("edges") or [])]
    proposal = Proposal(
        str(p.get("source") or "rpc"), plane, str(p.get("run") or "rpc"), str(p.get("model") or ""), "", None
    )
    proposal.nodes, proposal.edges = nodes, edges
    done = await ctx.submit(apply_intent(proposal, withdraw=False), "digest.write", origin_of(proposal))
    applied, _created = answer_of(done)
    return {
        "nodes_written": applied.nodes_created,
        "edges_written": applied.edges_created,
        "nodes_updated": applied.nodes_updated,
        "untouched": applied.untouched,
    }


def _node(item: Any, i: int) -> ProposedNode:
    from drsg.pipeline.digest.proposal import ProposedNode

    if not isinstance(item, dict):
        raise RpcError(INVALID_PARAMS, f"digest.write: nodes[{i}] must be an object {{key, label, properties}}")
    key = check_name(f"nodes[{i}].key", item.get("key"))
    label = check_name(f"nodes[{i}].label", item.get("label") or "Entity")
    return ProposedNode(key, label, props_from_json(item.get("properties") or {}, f"nodes[{i}].properties"))


def _edge(item: Any, i: int) -> ProposedEdge:
    from drsg.pipeline.digest.proposal import ProposedEdge

    if not isinstance(item, dict):
        raise RpcError(INVALID_PARAMS, f"digest.write: edges[{i}] must be an object {{src, type, dst, properties}}")
    src = check_name(f"edges[{i}].src", item.get("src"))
    dst = check_name(f"edges[{i}].dst", item.get("dst"))
    kind = check_name(f"edges[{i}].type", item.get("type"))
    return ProposedEdge(src, kind, dst, props_from_json(item.get("properties") or {}, f"edges[{i}].properties"))
