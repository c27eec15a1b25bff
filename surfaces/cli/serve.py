"""`drsg serve`: the JSON-RPC server (see drsg.surfaces.server)."""

from __future__ import annotations

import asyncio
import sys

import click

from drsg.kernel import logs
from drsg.kernel.errors import ConfigError
from drsg.surfaces.cli.context import Context
from drsg.surfaces.cli.options import embed_options


@click.command("serve")
@click.option(
    "--addr",
    default=None,
    metavar="HOST:PORT",
    help="Where to listen (default [server].addr, else 127.0.0.1:7700; port 0 picks a free one). "
    "A non-loopback address needs DRSG_TOKEN.",
)
@embed_options
@click.pass_obj
def serve(
    obj: Context,
    addr: str | None,
    embed: str | None,
    embed_model: str | None,
    embed_url: str | None,
    embed_key_env: str | None,
) -> None:
    """Serve the database: JSON-RPC 2.0 at /rpc (upstream's methods; rpc.discover lists them), /health.

    \b
    Auth: `Authorization: Bearer $DRSG_TOKEN` on every call when DRSG_TOKEN (or [server].token) is set.
    Text search queries are embedded by the server: --embed…, else [digest] embed_provider, else the
    embedder the plane recorded, else the local model; API keys come from the server's environment.
    Logs are JSON lines on stderr. SIGTERM/Ctrl-C: in-flight requests finish, indexes are saved.
    """
    from drsg.surfaces.server.app import route_library_logs
    from drsg.surfaces.server.app import serve as run
    from drsg.surfaces.server.config import EmbedChoice, server_config

    config = server_config(obj.settings, addr, EmbedChoice(embed, embed_model, embed_url, embed_key_env))
    if not config.loopback and not config.token:
        where = addr or f"{config.host}:{config.port}"
        raise ConfigError(f"refusing to serve on {where} without a token; set DRSG_TOKEN, or bind 127.0.0.1")
    sources = obj.settings.sources
    fmt = "json" if sources["logging.format"] == "default" else obj.settings["logging.format"]
    level = obj.settings["logging.level"] if sources["logging.level"] != "default" else "info"
    if obj.verbose:
        level = "debug" if obj.verbose > 1 else "info"
    logs.configure(level, fmt)
    route_library_logs(fmt == "json" or (fmt == "auto" and not sys.stderr.isatty()))

    def announce(line: str) -> None:
        click.echo(line)

    with obj.open(write=True) as db:
        asyncio.run(run(db, config, announce))


COMMANDS = [serve]
