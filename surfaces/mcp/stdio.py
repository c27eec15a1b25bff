"""`drsg mcp`: the MCP server over stdio, for a coding agent that starts it (`drsg init` writes the entry)."""

from __future__ import annotations

import dataclasses

from drsg.api.database import Database
from drsg.surfaces.mcp.tools import build, mcp_bound
from drsg.surfaces.server.config import ServerConfig
from drsg.surfaces.server.state import ServerState


async def serve_stdio(db: Database, config: ServerConfig) -> None:
    """Serve the tools on stdin/stdout until the client closes them; the index workers run meanwhile
    and their sidecars are saved at the end. grep and snippet read wherever a plane's tree is: the
    process runs as the local user who started it, who can read those files anyway."""
    state = ServerState(db, dataclasses.replace(config, code_roots=None))
    state.start()
    try:
        await build(state, allow_path=True, max_concurrent=mcp_bound(config)).run_stdio_async()
    finally:
        state.close()
