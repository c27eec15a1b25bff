"""`drsg mcp`: the MCP server over stdio (surfaces/mcp)."""

from __future__ import annotations

import asyncio

import click

from drsg.surfaces.cli.context import Context
from drsg.surfaces.cli.options import embed_options


@click.command("mcp")
@click.option(
    "--read-only",
    is_flag=True,
    default=None,
    help="Refuse the write tools (and Cypher writes) with one line (default [server].read_only).",
)
@embed_options
@click.pass_obj
def mcp(
    obj: Context,
    read_only: bool | None,
    embed: str | None,
    embed_model: str | None,
    embed_url: str | None,
    embed_key_env: str | None,
) -> None:
    """Serve the database's MCP tools over stdio, for an agent that starts `drsg --db DB mcp` (the
    entry `drsg init` writes to .mcp.json): list_planes, describe_plane, get_node, history, traverse
    (by hops from an id or a key), search, hybrid, ask, query, cypher, algo, diff, digest (text, or a
    local file's or tree's path; apply), digest_preview, digest_apply, write_nodes, write_edges,
    create_plane, drop_plane, changes_since, stats, the catalog's (catalog_list, find, catalog_schema,
    _objects, _columns, _sql, _impact, _refs; its digest as a resource and a prompt) and the code
    verbs. --read-only refuses every write. Logs go to stderr; stdout carries the protocol only.
    `drsg serve` serves the same tools over Streamable HTTP at /mcp."""
    from drsg.surfaces.mcp.stdio import serve_stdio
    from drsg.surfaces.server.config import EmbedChoice, server_config

    settings = obj.settings.with_flags({"server.read_only": read_only})
    config = server_config(settings, None, EmbedChoice(embed, embed_model, embed_url, embed_key_env))
    obj.daemon_logs()
    with obj.open(write=True) as db:
        asyncio.run(serve_stdio(db, config))


COMMANDS = [mcp]
