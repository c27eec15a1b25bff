"""Every JSON-RPC method drsg serves: importing this module registers them all (each method module
registers its own with ``@rpc``). The HTTP server and the MCP tools both import it, so the two can
never serve different sets."""

from drsg.surfaces.server import (  # noqa: F401
    algo_method,
    ask_method,
    catalog_method,
    code_method,
    cypher_method,
    diff_method,
    digest_method,
    find_method,
    hybrid_method,
    methods,
    plugin_methods,
    queries,
    vectorize_method,
)
