"""`drsg serve`: the JSON-RPC server (see drsg.surfaces.server)."""

from __future__ import annotations

import asyncio
import sys

import click

from drsg.kernel.errors import ConfigError
from drsg.surfaces.cli.context import Context
from drsg.surfaces.cli.options import embed_options
from drsg.surfaces.cli.watch import watch


@click.group("serve", invoke_without_command=True)
@click.option(
    "--addr",
    default=None,
    metavar="HOST:PORT",
    help="Where to listen (default [server].addr, else 127.0.0.1:7700; port 0 picks a free one). "
    "A non-loopback address needs DRSG_TOKEN.",
)
@click.option(
    "--read-only",
    is_flag=True,
    default=None,
    help="Refuse every write (JSON-RPC, Cypher, MCP write tools) with -32001 (default [server].read_only).",
)
@embed_options
@click.pass_context
def serve(
    ctx: click.Context,
    addr: str | None,
    read_only: bool | None,
    embed: str | None,
    embed_model: str | None,
    embed_url: str | None,
    embed_key_env: str | None,
) -> None:
    """Serve the database: JSON-RPC 2.0 at /rpc (upstream's methods; rpc.discover lists them), /health.

    \b
    Auth: `Authorization: Bearer $DRSG_TOKEN` on every call when DRSG_TOKEN (or [server].token) is set.
    Text search queries are embedded by the server: with the embedder the plane recorded, else --embed…,
    else [digest] embed_provider, else the local model; API keys come from the server's environment.
    Logs are JSON lines on stderr. SIGTERM/Ctrl-C: in-flight requests finish, indexes are saved.
    `drsg serve watch DIR` is the daemon that keeps a code plane true to a working tree.
    """
    if ctx.invoked_subcommand is not None:
        given = [
            name
            for name in ("addr", "read_only", "embed", "embed_model", "embed_url", "embed_key_env")
            if ctx.params[name]
        ]
        if given:
            flag = "--" + given[0].replace("_", "-")
            raise click.UsageError(f"{flag} is the server's; give the watch its own flags after `watch`")
        return
    obj: Context = ctx.obj
    from drsg.surfaces.app import serve as run
    from drsg.surfaces.server.app import route_library_logs
    from drsg.surfaces.server.config import EmbedChoice, server_config

    settings = obj.settings.with_flags({"server.read_only": read_only})
    config = server_config(settings, addr, EmbedChoice(embed, embed_model, embed_url, embed_key_env))
    if not config.loopback and not config.token:
        where = addr or f"{config.host}:{config.port}"
        raise ConfigError(f"refusing to serve on {where} without a token; set DRSG_TOKEN, or bind 127.0.0.1")
    fmt = obj.daemon_logs()
    route_library_logs(fmt == "json" or (fmt == "auto" and not sys.stderr.isatty()))

    def announce(line: str) -> None:
        click.echo(line)

    with obj.open(write=True) as db:
        asyncio.run(run(db, config, announce))


serve.add_command(watch)

COMMANDS = [serve]
