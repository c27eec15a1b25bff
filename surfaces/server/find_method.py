"""``plane.find``: text (or semantic) search over a plane's nodes and edges, upstream's ``FindResult``.

Text mode is :func:`drsg.workers.find.find_text` (substring, then analysed terms; ranked; capped
scans). ``semantic: true`` is the public API's ``Plane.search``: ``q`` embedded with the server's
embedder for ``embedding`` (the one the plane recorded, else the operator's) and nodes ranked by
cosine similarity: AS OF an earlier commit by brute force over that snapshot, since an index only
holds the head. As upstream does, a semantic search that cannot run (no embedded nodes, another
vector space, the embedder failing) falls back to the text matches and says why in ``note``.
``provider`` and ``embed_model`` are refused: a request never chooses a provider, a model or a key.
"""

from __future__ import annotations

from typing import Any

from drsg.api.results import Hit
from drsg.kernel.errors import DrsgError
from drsg.surfaces.server.hybrid_method import REFUSED, refuse_embedder_choice
from drsg.surfaces.server.params import Params, as_of, bounded, vectors
from drsg.surfaces.server.registry import LEAN, rpc
from drsg.surfaces.server.state import ServerState

MAX_FIND = 1_000  # hits of each kind one call may ask for
PROPERTY = "embedding"  # what a semantic find ranks by (upstream's vectorize writes it)


@rpc(
    "plane.find",
    add=[LEAN],
    replace={"provider": REFUSED, "embed_model": REFUSED},
    note="Text mode: a case-insensitive substring of a node's key, a label or a string property (an edge's type "
    "or a string property), else every analysed term of `q` in one string property; `_` properties are never "
    "matched; ranked by how a record matched, then by id. `provider` and `embed_model` are refused.",
)
async def plane_find(ctx: ServerState, p: Params) -> Any:
    refuse_embedder_choice("plane.find", p)
    limit = bounded(p, "limit", 50, MAX_FIND)
    plane, q, at = p["plane"], str(p["q"]), as_of(p)

    def semantic() -> tuple[list[Hit], str | None]:
        try:
            hits = ctx.plane(plane, at).search(q, PROPERTY, k=limit, as_of=at)
        except DrsgError as exc:
            return [], f"semantic search unavailable: {exc.message} — showing text matches"
        return hits, None if hits else "no embedded nodes in this plane — showing text matches"

    def run() -> dict[str, Any]:
        note = None
        if p.get("semantic") and q.strip():
            hits, note = semantic()
            if hits:
                nodes = [{**h.node.to_json(vectors=vectors(p)), "score": h.score, "match": PROPERTY} for h in hits]
                count = len(nodes)  # upstream's counts for a semantic answer
                return {
                    "nodes": nodes,
                    "edges": [],
                    "mode": "semantic",
                    "scanned": count,
                    "total": count,
                    "truncated": False,
                }
        from drsg.workers.find import find_text  # its analyser (tantivy) loads with the first text find

        with ctx.db.snapshot(at) as snap:
            result = find_text(snap, snap.plane(plane).id, q, limit, vectors(p))
        return {**result, "note": note}

    return await ctx.read(run)
