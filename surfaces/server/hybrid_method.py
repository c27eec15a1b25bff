"""``plane.hybrid``: vector + keyword + graph retrieval fused into one ranking, over JSON-RPC.

Upstream's params and result shape (``{results: [NodeRecord + score + channels], count}``, the
channels being the raw per-channel scores: vector distance, BM25, ``decay^hops``). The text ``q``
is embedded server-side with the embedder recorded with ``vector_prop``'s vectors, else the
operator's (the public API's ``Plane.hybrid`` runs the query, by the one rule): upstream's
``provider`` and ``embed_model`` params are refused, so a request can never pick a provider, a
model, a URL or a key. ``as_of`` / ``as_of_ms``
run every channel on one past commit; ``lean`` elides vectors, as elsewhere.
"""

from __future__ import annotations

from typing import Any

from drsg.api.results import Hit
from drsg.kernel.errors import INVALID_PARAMS, RpcError
from drsg.plan.hybrid import (
    CHANNELS,
    DEFAULT_CANDIDATES,
    DEFAULT_DECAY,
    DEFAULT_K,
    DEFAULT_WEIGHTS,
    GraphPart,
    HybridSpec,
    KeywordPart,
    VectorPart,
)
from drsg.surfaces.server.params import Params, as_of, bounded, embeddable, vectors
from drsg.surfaces.server.registry import AS_OF, AS_OF_MS, LEAN, rpc
from drsg.surfaces.server.state import ServerState

MAX_HOPS = 64
REFUSED = {
    "type": "string",
    "description": "Refused when given: the server embeds `q` with the embedder recorded with the vectors, "
    "else the operator's; a request never chooses a provider, a model, a URL or a key.",
}


def refuse_embedder_choice(method: str, p: Params) -> None:
    """The params :data:`REFUSED` describes, refused when given: a request never picks an embedder."""
    for name in ("provider", "embed_model"):
        if p.get(name) is not None:
            raise RpcError(
                INVALID_PARAMS,
                f"{method}: `{name}` is not accepted — the server embeds `q` with its own embedder "
                "(the one recorded with the vectors, else the operator's); send no provider or model",
            )


def _spec(p: Params) -> HybridSpec:
    refuse_embedder_choice("plane.hybrid", p)
    hops = p.get("graph_hops")
    if hops is not None and not 0 <= int(hops) <= MAX_HOPS:
        raise RpcError(INVALID_PARAMS, f"param 'graph_hops' must be between 0 and {MAX_HOPS}, not {hops}")
    decay = float(p.get("graph_decay", DEFAULT_DECAY))
    if hops is None and "graph_decay" in p:
        raise RpcError(INVALID_PARAMS, "plane.hybrid: `graph_decay` needs `graph_hops` (the graph channel)")
    vector_prop, keyword_prop, q = p.get("vector_prop"), p.get("keyword_prop"), str(p["q"])
    metric = str(p.get("metric", "cosine"))
    return HybridSpec(
        label=p.get("label"),
        vector=None if vector_prop is None else VectorPart(str(vector_prop), q, metric),
        keyword=None if keyword_prop is None else KeywordPart(str(keyword_prop), q),
        graph=None if hops is None else GraphPart(int(hops), decay),
        weights={name: float(p.get(f"w_{name}", DEFAULT_WEIGHTS[name])) for name in CHANNELS},
        candidates=bounded(p, "candidates", DEFAULT_CANDIDATES),
        k=bounded(p, "k", DEFAULT_K),
        use_profile=not any(p.get(f"w_{name}") is not None for name in CHANNELS),  # then the plane's profile
    ).check()


def _record(hit: Hit, p: Params) -> dict[str, Any]:
    out = hit.node.to_json(vectors=vectors(p))
    out["score"] = hit.score
    out["channels"] = dict(hit.channels)
    return out


@rpc(
    "plane.hybrid",
    add=[AS_OF, AS_OF_MS, LEAN],
    replace={"provider": REFUSED, "embed_model": REFUSED},
    note="`provider` and `embed_model` are refused (the server's embedder only). `channels` holds the raw "
    "per-channel scores (vector distance, BM25, decay^hops; null when a channel did not see the node). With no "
    "`w_*` param, the plane's fusion profile for (label, vector_prop, keyword_prop) decides the fusion, if set.",
)
async def plane_hybrid(ctx: ServerState, p: Params) -> Any:
    spec = _spec(p)
    plane, at, q = p["plane"], as_of(p), str(p["q"])
    if spec.vector is not None:
        embeddable(q)

    def run() -> list[Hit]:  # a channel that cannot run is left out, as upstream does: not strict
        return ctx.plane(plane, at).hybrid(q, as_of=at, spec=spec, strict=False)

    results = [_record(hit, p) for hit in await ctx.read(run)]
    return {"results": results, "count": len(results)}
