"""drsg's MCP tools, each a JSON-RPC method run in process (surfaces/server), its answer made compact.

Upstream's tool names where drsg has the feature (`list_planes`, `describe_plane`, `get_node`,
`search`, `hybrid`, `ask`, `traverse`, `query`, `cypher`, `algo`, `history`, `digest`, `write_nodes`,
`write_edges`, `create_plane`, `drop_plane`: write_tools.py), plus `diff`, `changes_since` and the
catalog's (catalog_tools.py). A method's error is the tool's error (an MCP tool result with ``isError``), one
line with the JSON-RPC code; an answer is compact JSON text (toolkit.py: vectors elided, ``_``
properties hidden unless ``hidden`` is asked, long strings and lists cut with a note saying so).
"""

from __future__ import annotations

import logging
import sys
from typing import Any

import structlog
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from drsg import __version__
from drsg.kernel.errors import NotFound
from drsg.surfaces.drift import synced_of
from drsg.surfaces.mcp import code_tools
from drsg.surfaces.mcp.toolkit import Tools, compact, dumps
from drsg.surfaces.server import served  # noqa: F401  (every JSON-RPC method, registered)
from drsg.surfaces.server.state import ServerState

INSTRUCTIONS = (
    "drsg is a graph store with time travel. Start with list_planes, then describe_plane to learn a plane's "
    "labels, edge types and properties. Nodes are named by id or external key. `as_of` (a commit seq) reads "
    "the past; diff lists what changed between two seqs; changes_since follows the log. A live database's "
    "catalog (catalog_list) has its compact schema as the resource drsg://catalog/<connection>/digest and the "
    "prompt catalog_digest."
)


def mcp_bound(config: Any) -> int:
    """How many tool calls run at once: `[server] mcp_max_concurrent`."""
    settings = config.settings
    return settings.integer("server.mcp_max_concurrent") if settings is not None else 8


def _node_params(node_id: int | None, key: str | None) -> dict[str, Any]:
    return {"id": node_id, "key": key}


def build(state: ServerState, *, allow_path: bool, max_concurrent: int = 8) -> MCPServer[Any]:
    """The MCP server with every tool, over ``state``'s database."""
    tools = Tools(state, allow_path=allow_path, max_concurrent=max_concurrent)
    root = logging.getLogger()
    kept = list(root.handlers), root.level
    server: MCPServer[Any] = MCPServer("drsg", version=__version__, instructions=INSTRUCTIONS)
    root.handlers[:], _ = kept  # the SDK configures the root logger for itself: put ours back
    root.setLevel(kept[1])
    _route_sdk_logs()

    @server.tool(structured_output=False)
    async def list_planes(as_of: int | None = None) -> str:
        """The planes with their node and edge counts; a plane read out of a source tree also carries
        `synced` (the commit it was read beside and the tree's drift since)."""
        planes = await tools.run("plane.list", {"as_of": as_of} if as_of else {})
        for card in planes:
            line = synced_of(state.db, card["name"])
            if line is not None:
                card["synced"] = line
        return dumps(compact(planes))

    @server.tool(structured_output=False)
    async def describe_plane(plane: str, as_of: int | None = None) -> str:
        """A plane's soft schema: labels and edge types with counts, their properties (types, examples),
        which labels each edge type connects, and its search indexes."""
        catalog = await tools.run("plane.catalog", {"plane": plane, "as_of": as_of})
        indexes = await tools.run("plane.indexes", {"plane": plane, "as_of": as_of})
        return dumps(compact({**catalog, "indexes": indexes}))

    @server.tool(structured_output=False)
    async def get_node(
        plane: str, id: int | None = None, key: str | None = None, as_of: int | None = None, hidden: bool = False
    ) -> str:
        """One node by `id` or external `key` (exactly one), now or `as_of` a past commit seq. `hidden`
        shows the `_` provenance properties."""
        text = await tools.call("node.get", {"plane": plane, **_node_params(id, key), "as_of": as_of}, hidden=hidden)
        if text == "null":  # node.get's answer (upstream's); a model is told what was not there
            which = f"id {id}" if key is None else f"key {key!r}"
            when = f" at seq {as_of}" if as_of is not None else ""
            missing = NotFound(f"no node with {which} in plane {plane!r}{when}; search or describe_plane finds nodes")
            raise ToolError(f"error {missing.rpc_code}: {missing.message}")
        return text

    @server.tool(structured_output=False)
    async def history(plane: str, id: int | None = None, key: str | None = None, hidden: bool = False) -> str:
        """Every version of one node, oldest first: {seq, ts, deleted, record}."""
        return await tools.call("node.history", {"plane": plane, **_node_params(id, key)}, hidden=hidden)

    @server.tool(structured_output=False)
    async def traverse(
        plane: str,
        from_id: int | None = None,
        from_key: str | None = None,
        direction: str = "both",
        edge_type: str | None = None,
        min: int | None = None,
        max: int | None = None,
        limit: int | None = None,
        as_of: int | None = None,
        id: int | None = None,
        type: str | None = None,
    ) -> str:
        """The nodes `min`..`max` hops (default 1..1, at most 6; 0 includes the start) from one node,
        `from_id` or external `from_key`, along edges `direction` out, in or both, of one `edge_type`
        if given: {from, nodes, count, truncated}, at most `limit` (default 100) distinct nodes. With
        `id` alone (and `type`) it answers the node's 1-hop neighbourhood, edges included."""
        if from_id is None and from_key is None and min is None and max is None and edge_type is None:
            if id is None:
                raise ToolError("error -32602: give `from_id` or `from_key` (the node to start from)")
            params = {"plane": plane, "id": id, "direction": direction, "type": type, "limit": limit, "as_of": as_of}
            return await tools.call("graph.expand", params)  # the call before hops, kept as it answered
        return await tools.traverse(
            plane,
            from_id if from_id is not None else id,
            from_key,
            direction,
            edge_type or type,
            (min, max),
            limit,
            as_of,
        )

    @server.tool(structured_output=False)
    async def search(
        plane: str,
        property: str,
        query: str,
        kind: str | None = None,
        label: str | None = None,
        k: int | None = None,
        as_of: int | None = None,
    ) -> str:
        """Search one indexed property: `kind` keyword (BM25 over text) or vector (the text embedded by
        the server, nearest first); `k` hits."""
        params = {"plane": plane, "property": property, "query": query, "kind": kind, "label": label, "k": k}
        return await tools.call("plane.search", {**params, "as_of": as_of})

    @server.tool(structured_output=False)
    async def hybrid(
        plane: str,
        q: str,
        label: str | None = None,
        vector_prop: str | None = None,
        keyword_prop: str | None = None,
        graph_hops: int | None = None,
        k: int | None = None,
        as_of: int | None = None,
    ) -> str:
        """Fused vector + keyword + graph retrieval; each hit's score explained per channel."""
        params = {"plane": plane, "q": q, "label": label, "vector_prop": vector_prop, "keyword_prop": keyword_prop}
        return await tools.call("plane.hybrid", {**params, "graph_hops": graph_hops, "k": k, "as_of": as_of})

    @server.tool(structured_output=False)
    async def ask(plane: str, question: str, dry_run: bool = False, as_of: int | None = None) -> str:
        """A question in plain language: the server's chat model writes read-only plans (or one read-only
        Cypher statement) grounded on the plane's schema; the answer is the plans, the subgraph they
        match and the trace."""
        return await tools.call("plane.ask", {"plane": plane, "question": question, "dry_run": dry_run, "as_of": as_of})

    @server.tool(structured_output=False)
    async def query(plane: str, plan: dict[str, Any], as_of: int | None = None) -> str:
        """Run a logical plan (upstream's JSON: ScanLabel, SeekKeys, VectorTopK, KeywordTopK, Limit, …)."""
        return await tools.call("plane.query", {"plane": plane, "plan": plan, "as_of": as_of})

    @server.tool(structured_output=False)
    async def cypher(plane: str, query: str, params: dict[str, Any] | None = None, lean: bool = True) -> str:
        """Run one openCypher statement on a plane: MATCH / OPTIONAL MATCH, WHERE, WITH, UNWIND,
        RETURN with aggregation (count, sum, avg, min, max, collect), ORDER BY / SKIP / LIMIT, UNION,
        variable-length paths; writes CREATE, MERGE, SET, REMOVE, [DETACH] DELETE run as one commit.
        Extensions: SEARCH (v:Label) ON prop NEAR "text" | MATCHING "words" [TOPK k], HYBRID and
        CALL pagerank(…) ON (v) as sources a pattern continues from; score(), hops(), key(v) (the
        external key); `AS OF <seq>` last reads a past commit. Put values in `params` and write
        $name (never paste them into the text). Example: MATCH (p:Person)-[:KNOWS]->(f) WHERE
        p.name = $name RETURN f.name, count(*) ORDER BY f.name LIMIT 10 with params {"name":
        "Ada"}. Answers {columns, rows, nodes, edges, count} (a write adds its change counts);
        describe_plane tells the labels, edge types and properties to use."""
        params_given = {"plane": plane, "query": query, "params": params, "lean": lean}
        return await tools.call("plane.cypher", params_given)

    @server.tool(name="algo", structured_output=False)
    async def algo_tool(
        plane: str,
        algo: str,
        label: str | None = None,
        limit: int | None = None,
        src: int | None = None,
        dst: int | None = None,
        dir: str | None = None,
        weight: str | None = None,
        damping: float | None = None,
        max_iters: int | None = None,
        max_levels: int | None = None,
        as_of: int | None = None,
    ) -> str:
        """A graph algorithm over the plane (or one `label`'s nodes): pagerank {id, score} best first,
        components / louvain {id, component | community: the group's smallest id} with `count` groups,
        or shortest_path from node id `src` to `dst` (`dir` out|in|both, `weight` a numeric edge
        property) answering {found, path: {nodes, edges, cost}}. `limit` rows (default 100)."""
        params: dict[str, Any] = {"plane": plane, "algo": algo, "label": label, "limit": limit, "src": src, "dst": dst}
        params |= {"dir": dir, "weight": weight, "damping": damping, "max_iters": max_iters, "max_levels": max_levels}
        return await tools.call("plane.algo", {**params, "as_of": as_of})

    @server.tool(structured_output=False)
    async def diff(plane: str, from_seq: int | str, to_seq: int | str, hidden: bool = False) -> str:
        """Nodes and edges created, deleted and changed (before/after) in a plane between two points:
        each a commit seq (0: the empty start), an RFC 3339 time or "TIME <unix-ms>"."""
        params = {"plane": plane, "from": from_seq, "to": to_seq, "hidden": hidden}
        return await tools.call("plane.diff", params, hidden=hidden)

    @server.tool(structured_output=False)
    async def digest_preview(
        plane: str,
        text: str | None = None,
        path: str | None = None,
        source: str | None = None,
        mode: str | None = None,
    ) -> str:
        """Propose the entities and relations of a document (`text`, or over stdio a local `path`: a
        document — Word, PowerPoint, Excel, OpenDocument, RTF, EPUB, CSV, PDF, Markdown — or a source
        tree or code file, parsed by drsg's handlers as `drsg digest` does, its prose read by the
        server's chat model); nothing is written. Pass the chosen nodes and edges, with `source`, `run`
        and `model`, to digest_apply."""
        return dumps(compact(await tools.propose(plane, text, path, source, {"mode": mode}), hidden=path is not None))

    @server.tool(structured_output=False)
    async def digest_apply(
        plane: str,
        nodes: list[dict[str, Any]],
        edges: list[dict[str, Any]] | None = None,
        source: str | None = None,
        run: str | None = None,
        model: str | None = None,
    ) -> str:
        """Write the chosen proposals of a digest_preview in one commit, with no model call: nodes
        {key, label, properties}, edges {src, type, dst, properties}."""
        params = {"plane": plane, "nodes": nodes, "edges": edges, "source": source, "run": run, "model": model}
        return await tools.call("digest.write", params)

    @server.tool(structured_output=False)
    async def changes_since(plane: str, seq: int = 0, limit: int = 100) -> str:
        """The plane's changes in the commits after `seq` (at most `limit` commits read): per commit its
        seq, time, origin and the nodes and edges put or deleted; `next` is the seq to ask after."""
        return await tools.call("plane.changes", {"plane": plane, "after": seq, "limit": limit})

    @server.tool(structured_output=False)
    async def catalog_list() -> str:
        """The live databases whose catalog drsg keeps (`drsg catalog add`): name, engine, DSN without
        a password, the catalog's plane. Search that plane's Table and Column nodes to know a schema."""
        return await tools.call("catalog.list", {})

    @server.tool(structured_output=False)
    async def find(
        entity: str,
        fields: list[str] | None = None,
        where: dict[str, Any] | None = None,
        connection: str | None = None,
        limit: int | None = None,
    ) -> str:
        """Values from a live database in one round trip: `entity` and `fields` in plain words (any
        language: 用户, 密码 …) are resolved to one table and its columns from the catalog, offline, then
        exactly one parameterised SELECT runs, filtered by `where` {column words: value}. Answers
        {status: ok, table, fields, sql, rows} | {status: ambiguous, candidates} | {status:
        missing_predicate}; sensitive columns come back [REDACTED]."""
        params = {"connection": connection, "entity": entity, "fields": fields, "where": where, "limit": limit}
        return await tools.call("catalog.find", params)

    @server.tool(structured_output=False)
    async def stats() -> str:
        """Counts of planes, nodes, edges, indexes and commits."""
        return await tools.call("db.stats", {})

    code_tools.register(server, tools)  # context, describe, grep, trace, impact, snippet
    from drsg.surfaces.mcp import catalog_tools, write_tools

    write_tools.register(server, tools)
    catalog_tools.register(server, tools)
    return server


def _route_sdk_logs() -> None:
    """The SDK's own log lines (warnings and worse) as JSON lines on stderr, like the server's."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            processor=structlog.processors.JSONRenderer(),
            foreign_pre_chain=[structlog.stdlib.add_log_level, structlog.processors.TimeStamper(fmt="iso", utc=True)],
        )
    )
    sdk = logging.getLogger("mcp")
    sdk.handlers[:] = [handler]
    sdk.setLevel(logging.WARNING)
    sdk.propagate = False
