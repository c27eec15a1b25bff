"""`drsg mcp`: the MCP server over stdio (surfaces/mcp)."""

from __future__ import annotations

import asyncio

import click

from drsg.surfaces.cli.context import Context
from drsg.surfaces.cli.options import embed_options


@click.command("mcp")
@embed_options
@click.pass_obj
def mcp(
    obj: Context, embed: str | None, embed_model: str | None, embed_url: str | None, embed_key_env: str | None
) -> None:
    """Serve the database's MCP tools over stdio, for an agent that starts `drsg --db DB mcp` (the
    entry `drsg init` writes to .mcp.json): list_planes, describe_plane, get_node, history, traverse,
    search, hybrid, ask, query, diff, digest_preview (text, or a local file's path), digest_apply,
    changes_since, stats. Logs go to stderr; stdout carries the protocol only. `drsg serve` serves the
    same tools over Streamable HTTP at /mcp."""
    from drsg.surfaces.mcp.stdio import serve_stdio
    from drsg.surfaces.server.config import EmbedChoice, server_config

    config = server_config(obj.settings, None, EmbedChoice(embed, embed_model, embed_url, embed_key_env))
    obj.daemon_logs()
    with obj.open(write=True) as db:
        asyncio.run(serve_stdio(db, config))


COMMANDS = [mcp]
