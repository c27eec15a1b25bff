"""drsg.surfaces.server — `drsg serve`: JSON-RPC 2.0 over HTTP at ``/rpc``, wire-compatible with upstream.

    app.py       the aiohttp application: routes, auth / size / access-log middleware, graceful stop
    rpc.py       JSON-RPC 2.0: parsing, batches, notifications, param checks, error codes
    registry.py  the method table, described by upstream's OpenRPC entries (plus drsg's additions)
    params.py    what the handlers share to read their params (as_of, lean, bounded counts)
    methods.py   db.*, plane.*, node.*, edge.*, index.*, rpc.discover
    queries.py   plane.search, plane.query, plane.neighbors, graph.*, *.catalog
    hybrid_method.py, digest_method.py   plane.hybrid; digest.run, digest.write
    cypher_method.py   plane.cypher: a Cypher read (the read pool) or write (one commit)
    plugin_methods.py   plugin.list, plugin.catalog, plugin.install (URLs only), plugin.remove
    feed_routes.py   the change feed's routes: feed_socket.py (/ws), feed_sse.py (/feed/{plane}),
                 feed_hub.py (what both share)
    schema.py    openrpc.json (upstream's, shipped here) and the JSON Schema subset used to check params
    state.py     what the methods share: database, indexes, read pool, deadline-bound writes, embedders
    config.py    [server] settings, DRSG_TOKEN, the address

Embedding (``drsg.surfaces.app`` has the same two with the MCP tools and the dashboard mounted)::

    from drsg.surfaces.server.app import create_app, serve
    from drsg.surfaces.server.config import ServerConfig
    from drsg.surfaces.server.state import ServerState
"""
