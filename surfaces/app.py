"""`drsg serve`'s whole application: the JSON-RPC server with the MCP tools and the dashboard mounted.

The server (``server/``) knows nothing of the two surfaces mounted on it: the MCP tools run its
methods and the dashboard calls its routes, so both import it, and this module, above all three,
puts them together — ``/mcp`` (``mcp/http.py``) and ``/`` with its static files (``web/``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from aiohttp import web

from drsg.api.database import Database
from drsg.surfaces import web as dashboard
from drsg.surfaces.mcp import http as mcp_http
from drsg.surfaces.server import app as server_app
from drsg.surfaces.server.config import ServerConfig
from drsg.surfaces.server.state import ServerState


def create_app(state: ServerState, extra_routes: Iterable[web.AbstractRouteDef] = ()) -> web.Application:
    """The server's application with ``/mcp`` (the MCP tools over Streamable HTTP) and ``/`` (the dashboard)."""
    app = server_app.create_app(state, extra_routes)
    mcp_http.install(app, state)
    dashboard.install(app)
    return app


async def serve(db: Database, config: ServerConfig, announce: Callable[[str], None]) -> None:
    """Serve the whole application until SIGTERM/SIGINT, then stop gracefully (``server.app.serve``)."""
    await server_app.serve(db, config, announce, create_app)
