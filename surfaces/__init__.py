"""drsg.surfaces — the top layer: the CLI (``cli``) and the JSON-RPC/WebSocket/SSE server (``server``).

Thin layers over the library: they parse, call and render. Nothing imports them.
"""
