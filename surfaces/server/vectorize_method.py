"""``plane.vectorize``: `drsg vectorize` over JSON-RPC, upstream's way (``Plane.vectorize_nodes``).

Every node's text into ``embedding``, unchanged texts skipped, then a vector index on ``embedding``
per label embedded; upstream's stats ``{embedded, unique, tokens, current, empty, labels}``.

The embedder (the API's one rule, :func:`~drsg.api.retrieval.plane_embedder`): the one ``embed`` /
``embed_model`` name, else the one the plane recorded, else the operator's, else the local model;
one other than the recorded one is refused (two vector spaces in one property). ``embed`` may name
a preset (``local``, ``openai``, ``qwen``, ``ollama``) whose key the server reads from its own
environment or ``[llm]``; a base URL is refused, since the server would send its key, or make a
request, to an address the caller chose. A request never carries a key.
"""

from __future__ import annotations

from typing import Any

from drsg.kernel.errors import INVALID_PARAMS, RpcError
from drsg.kernel.values import Json
from drsg.models.embedders.registry import NAMES, PROVIDERS
from drsg.models.providers import EmbedderChoice
from drsg.surfaces.server.params import Params
from drsg.surfaces.server.registry import rpc
from drsg.surfaces.server.state import ServerState

#: the presets a request may name: each with its own service address (``url`` has none: it needs one)
PRESETS = tuple(name for name in NAMES if name == "local" or PROVIDERS[name].base_url is not None)
EMBED = {
    "type": "string",
    "description": f"An embedder preset: {', '.join(PRESETS)} (its key from the server's environment). "
    "Default: the one the plane recorded, else the server's (the operator's), else local. A base URL is "
    "refused.",
}


def requested_embedder(ctx: ServerState, p: Params, method: str = "plane.vectorize") -> EmbedderChoice | None:
    """The embedder a request names, if any (the API's one rule does the rest); ``plane.cypher``'s
    ``embed`` (for a text NEAR) is read by the same rule."""
    name, model = p.get("embed"), p.get("embed_model")
    if name is not None and name not in PRESETS:
        what = "a base URL" if "://" in name or name == "url" else f"{name!r}"
        raise RpcError(
            INVALID_PARAMS,
            f"{method}: `embed` takes a preset ({', '.join(PRESETS)}), not {what}; the operator names a "
            "service's URL with `serve --embed-url`",
        )
    chosen = ctx.config.embed
    if (name is None and model is not None) or (name is not None and name == chosen.name):
        return EmbedderChoice(chosen.name, model, chosen.url, chosen.key_env)  # the operator's, another model
    if name is not None:
        return EmbedderChoice(name, model)  # the preset's own key variable
    return None  # the recorded one, else the configured one: the operator's, `chosen`


@rpc(
    "plane.vectorize",
    replace={"embed": EMBED},
    note="Writes one commit per 64 nodes embedded, then one declaring the indexes. `embed` takes a preset only "
    "(default: the server's embedder, not upstream's openai); the key is always the server's.",
)
async def plane_vectorize(ctx: ServerState, p: Params) -> Any:
    ctx.check_writable()  # upstream marks it read, but it commits vectors (through the API, not ctx.write)
    plane, metric = str(p["plane"]), str(p.get("metric", "cosine"))
    origin: dict[str, Json] = {"via": "rpc", "method": "plane.vectorize"}  # the API adds the embedder

    def run() -> dict[str, Any]:
        named = requested_embedder(ctx, p)
        return ctx.plane(plane).vectorize_nodes(metric=metric, embed=named, origin=origin).stats_json()

    return await ctx.read(run, limited=False)  # embedding a plane takes what it takes
