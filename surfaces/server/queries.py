"""The reading methods that look at more than one record: search, plans, neighbourhoods, catalogs.

``plane.search`` is upstream's vector top-k, extended: ``query`` may be text (embedded server-side
by the operator's embedder, never one a request names), ``kind: "keyword"`` runs a BM25 search, and
``as_of`` / ``as_of_ms`` search an earlier commit exactly. ``plane.query`` runs upstream's logical
plan JSON. Both call the public API's ``Plane.search`` / ``Plane.query`` (drsg.api), which embed
by the one rule; here are the params, the deadline and upstream's NodeRecord with ``score``.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from drsg.api.results import Hit
from drsg.kernel.errors import INVALID_PARAMS, RpcError
from drsg.kernel.values import Described, Vector, value_type
from drsg.plan.logical import Hybrid, VectorTopK
from drsg.plan.query import Plan, plan_from_json
from drsg.store.intent_ops import need_node
from drsg.store.records import Node
from drsg.store.snapshot import Snapshot
from drsg.surfaces.server.params import MAX_LIMIT, Params, as_of, bounded, embeddable, vectors
from drsg.surfaces.server.registry import AS_OF, AS_OF_MS, LEAN, param, rpc
from drsg.surfaces.server.state import ServerState
from drsg.workers.algo import Frame, pagerank


def _hits(hits: list[Hit], p: Params) -> list[dict[str, Any]]:
    out = []
    for hit in hits:
        record = hit.node.to_json(vectors=vectors(p))
        if hit.score is not None:
            record["score"] = hit.score
        out.append(record)
    return out


# --------------------------------------------------------------------------- search and plans

SEARCH_QUERY = {
    "oneOf": [{"type": "array", "items": {"type": "number"}}, {"type": "string"}],
    "description": "A vector (list of numbers), or text: embedded server-side for a vector search, "
    "the words to match for a keyword search.",
}
SEARCH_KIND = param(
    "kind",
    {"type": "string", "enum": ["vector", "keyword"], "default": "vector"},
    "`keyword` runs a BM25 search over a declared keyword index on (label, property); needs `label`.",
)


@rpc("plane.search", add=[SEARCH_KIND, AS_OF, AS_OF_MS, LEAN], replace={"query": SEARCH_QUERY})
async def plane_search(ctx: ServerState, p: Params) -> Any:
    plane, prop, label, query = p["plane"], p["property"], p.get("label"), p["query"]
    k = bounded(p, "k", 10)
    at = as_of(p)
    if p.get("kind", "vector") == "keyword":
        if not isinstance(query, str):
            raise RpcError(INVALID_PARAMS, "plane.search: a keyword search takes text as `query`")
        if label is None:
            raise RpcError(INVALID_PARAMS, "plane.search: a keyword search needs `label` (its index is per label)")
        if "metric" in p:
            raise RpcError(INVALID_PARAMS, "plane.search: `metric` is for vector searches")

        def keyword() -> list[Hit]:
            return ctx.plane(plane, at).search(query, prop, keyword=True, label=label, k=k, as_of=at)

        return _hits(await ctx.read(keyword), p)
    metric = p.get("metric", "cosine")
    if isinstance(query, str):
        embeddable(query)

    def search() -> list[Hit]:
        given = query if isinstance(query, str) else Vector.of(query)
        return ctx.plane(plane, at).search(given, prop, label=label, k=k, metric=metric, as_of=at)

    return _hits(await ctx.read(search), p)


def _query_text(plan: Plan) -> str | None:
    """A plan source's query text (a VectorTopK's or a Hybrid's vector part), as the plan holds it."""
    match plan.logical.source:
        case VectorTopK(query_text=str(text)):
            return text
        case Hybrid(body=dict(body)):
            vector = body.get("vector")
            given = vector.get("query_text") if isinstance(vector, dict) else None
            return given if isinstance(given, str) else None
    return None


@rpc("plane.query", add=[LEAN])
async def plane_query(ctx: ServerState, p: Params) -> Any:
    plan = plan_from_json(p["plan"], as_of(p))
    embeddable(_query_text(plan))
    return _hits(await ctx.read(lambda: ctx.plane(p["plane"], plan.as_of).query(plan)), p)


# --------------------------------------------------------------------------- neighbourhoods


HOPS = {
    "name": "hops",
    "schema": {
        "type": "array",
        "items": {
            "oneOf": [
                {
                    "type": "object",
                    "properties": {"node": {"type": "integer"}, "edge": {"type": "integer"}},
                    "required": ["node", "edge"],
                },
                {
                    "type": "object",
                    "properties": {
                        "node": {"$ref": "#/components/schemas/NodeRecord"},
                        "edge": {"$ref": "#/components/schemas/EdgeRecord"},
                    },
                    "required": ["node", "edge"],
                },
            ]
        },
    },
    "description": "{node, edge} id pairs; with hydrate, {node: NodeRecord, edge: EdgeRecord} (upstream's "
    "schema shows only the id pairs).",
}


@rpc(
    "plane.neighbors",
    result=HOPS,
    note="An id that names no node (at that commit) is an error, not an empty list.",
)
async def plane_neighbors(ctx: ServerState, p: Params) -> Any:
    # not Plane.neighbours: that hydrates every other end and names a missing node the CLI's way;
    # here ids alone unless `hydrate`, and need_node's upstream message
    direction = p.get("direction", "out")

    def hops() -> list[dict[str, Any]]:
        with ctx.db.snapshot(as_of(p)) as snap:
            plane = snap.plane(p["plane"])
            center = need_node(snap, plane, p["id"])
            out: list[dict[str, Any]] = []
            for hop in snap.neighbors(plane.id, center.id, direction, p.get("type")):
                if p.get("hydrate"):
                    other = snap.node(plane.id, hop.node)
                    node = other.to_json(vectors=vectors(p)) if other is not None else {"id": hop.node}
                    out.append({"node": node, "edge": hop.edge.to_json(vectors=vectors(p))})
                else:
                    out.append({"node": hop.node, "edge": hop.edge.id})
            return out

    return await ctx.read(hops)


@rpc("graph.expand", add=[LEAN])
async def graph_expand(ctx: ServerState, p: Params) -> Any:
    limit = bounded(p, "limit", 100, MAX_LIMIT)

    def expand() -> dict[str, Any]:
        with ctx.db.snapshot(as_of(p)) as snap:
            plane = snap.plane(p["plane"])
            center = need_node(snap, plane, p["id"])
            hops = list(snap.neighbors(plane.id, center.id, p.get("direction", "out"), p.get("type")))
            kept = hops[:limit]
            seen: dict[int, Node] = {}
            for hop in kept:
                if hop.node not in seen:
                    other = snap.node(plane.id, hop.node)
                    if other is not None:
                        seen[hop.node] = other
            return {
                "nodes": [n.to_json(vectors=vectors(p)) for n in seen.values()],
                "edges": [h.edge.to_json(vectors=vectors(p)) for h in kept],
                "total": len(hops),
                "truncated": len(hops) > limit,
            }

    return await ctx.read(expand)


@rpc("graph.seed", add=[LEAN])
async def graph_seed(ctx: ServerState, p: Params) -> Any:
    limit = bounded(p, "limit", 200, MAX_LIMIT)
    order = p.get("order", "scan")

    def seed() -> dict[str, Any]:
        with ctx.db.snapshot(as_of(p)) as snap:
            plane = snap.plane(p["plane"])
            scores: dict[int, float] = {}
            if order == "pagerank":  # upstream's default PageRank over the plane (or the label's subgraph)
                ranked_ids = pagerank(Frame.read(snap, plane.id, p.get("label")))
                total = len(ranked_ids)
                scores = dict(ranked_ids[:limit])
                chosen = [n for n in snap.nodes_at(plane.id, list(scores)) if n is not None]
            elif order == "degree":
                ranked = []
                for node in snap.nodes(plane.id, p.get("label")):
                    ranked.append((-sum(1 for _ in snap.neighbors(plane.id, node.id, "both")), node.id, node))
                total = len(ranked)
                ranked.sort(key=lambda item: (item[0], item[1]))
                chosen = [node for _, _, node in ranked[:limit]]
                scores = {node_id: float(-negative) for negative, node_id, _ in ranked[:limit]}
            else:
                chosen, total = [], 0
                for node in snap.nodes(plane.id, p.get("label")):
                    total += 1
                    if len(chosen) < limit:
                        chosen.append(node)
            ids = {node.id for node in chosen}
            edges = [
                hop.edge.to_json(vectors=vectors(p))
                for node in chosen
                for hop in snap.neighbors(plane.id, node.id, "out")
                if hop.node in ids
            ]
            nodes = []
            for node in chosen:
                record = node.to_json(vectors=vectors(p))
                if node.id in scores:
                    record["score"] = scores[node.id]
                nodes.append(record)
            return {"nodes": nodes, "edges": edges, "total": total, "truncated": total > limit}

    return await ctx.read(seed)


# --------------------------------------------------------------------------- catalogs


def _props_into(table: dict[str, Any], props: dict[str, Any]) -> None:
    for name, value in props.items():
        if name.startswith("_"):
            continue  # provenance stays out of schema summaries
        entry = table.setdefault(name, {"count": 0, "types": Counter(), "descriptions": Counter()})
        entry["count"] += 1
        entry["types"][value_type(value)] += 1
        if isinstance(value, Described):
            entry["descriptions"][value.description] += 1


def catalog(snap: Snapshot, plane_ids: list[int]) -> dict[str, Any]:
    """The soft schema: per label its count and properties (types, descriptions); per edge type its
    count, properties and label-to-label connections; totals. A full scan of the planes."""
    labels: dict[str, Any] = {}
    types: dict[str, Any] = {}
    node_labels: dict[tuple[int, int], list[str]] = {}
    nodes = edges = 0
    for plane in plane_ids:
        for node in snap.nodes(plane):
            nodes += 1
            node_labels[(plane, node.id)] = node.labels
            for label in node.labels:
                entry = labels.setdefault(label, {"count": 0, "properties": {}})
                entry["count"] += 1
                _props_into(entry["properties"], node.props)
        for edge in snap.edges(plane):
            edges += 1
            entry = types.setdefault(edge.type, {"count": 0, "properties": {}, "connections": Counter()})
            entry["count"] += 1
            _props_into(entry["properties"], edge.props)
            unlabeled: list[str | None] = [None]
            for src in node_labels.get((plane, edge.src)) or unlabeled:
                for dst in node_labels.get((plane, edge.dst)) or unlabeled:
                    entry["connections"][(src, dst)] += 1
    for entry in types.values():
        pairs = sorted(entry["connections"].items(), key=lambda item: (-item[1], str(item[0])))
        entry["connections"] = [{"src_label": s, "dst_label": d, "count": n} for (s, d), n in pairs]
    for table in [*(e["properties"] for e in labels.values()), *(e["properties"] for e in types.values())]:
        for entry in table.values():
            entry["types"], entry["descriptions"] = dict(entry["types"]), dict(entry["descriptions"])
    return {"labels": labels, "edge_types": types, "nodes": nodes, "edges": edges}


@rpc("plane.catalog", add=[AS_OF, AS_OF_MS])
async def plane_catalog(ctx: ServerState, p: Params) -> Any:
    def build() -> dict[str, Any]:
        with ctx.db.snapshot(as_of(p)) as snap:
            return catalog(snap, [snap.plane(p["plane"]).id])

    return await ctx.read(build)


@rpc("db.catalog", add=[AS_OF, AS_OF_MS])
async def db_catalog(ctx: ServerState, p: Params) -> Any:
    def build() -> dict[str, Any]:
        with ctx.db.snapshot(as_of(p)) as snap:
            return catalog(snap, [plane.id for plane in snap.planes()])

    return await ctx.read(build)
