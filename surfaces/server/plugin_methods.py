"""``plugin.list``, ``plugin.catalog``, ``plugin.install``, ``plugin.remove``: the plugin store over JSON-RPC.

The same registry as `drsg plugin …` (``[plugins] store_dir``). ``plugin.install`` takes an http(s)
URL only, fetched through the fetch guard (``[fetch] allow_private``, 256 MiB cap): a path on the
server's disk is refused, so a client cannot make the server load a file it chose there.
``plugin.catalog`` is a constant of this build and it is empty: drsg pins no downloadable official
artifacts (upstream's catalog pins its own release hashes, which this project has not verified), so
it lists nothing rather than URLs it cannot vouch for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from drsg.kernel import settings as settings_mod
from drsg.kernel.errors import INVALID_PARAMS, RpcError
from drsg.kernel.settings import Settings
from drsg.pipeline.fetch.guard import networks
from drsg.surfaces.server.params import Params
from drsg.surfaces.server.registry import rpc
from drsg.surfaces.server.state import ServerState

if TYPE_CHECKING:
    from drsg.pipeline.plugins.registry import Registry

#: the official catalog: ``[{name, claims, url, sha256}]``; empty (see the module docstring)
CATALOG: tuple[dict[str, str], ...] = ()


def _settings(ctx: ServerState) -> Settings:
    return ctx.config.settings if ctx.config.settings is not None else settings_mod.load()


def _registry(settings: Settings) -> Registry:
    """The plugin store, its host (wasmtime) loaded by the first plugin call, not by serve's start."""
    from drsg.pipeline.plugins.registry import Registry

    return Registry.from_settings(settings)


@rpc("plugin.list")
async def plugin_list(ctx: ServerState, p: Params) -> Any:
    settings = _settings(ctx)
    return [entry.to_json() for entry in await ctx.read(lambda: _registry(settings).entries())]


@rpc("plugin.catalog", note="Empty in this build: drsg pins no downloadable artifacts it has not verified.")
async def plugin_catalog(ctx: ServerState, p: Params) -> Any:
    return [dict(item) for item in CATALOG]


@rpc("plugin.install", note="`url` must be http(s); a server-local path is refused.")
async def plugin_install(ctx: ServerState, p: Params) -> Any:
    from drsg.pipeline.plugins.registry import is_url

    ctx.check_writable()  # it changes the server's parsers: no write on a read-only server

    url = str(p["url"])
    if not is_url(url):
        raise RpcError(
            INVALID_PARAMS,
            f"plugin.install takes an http(s) URL, not {url[:80]!r}: a path on the server's disk is not accepted",
        )
    settings = _settings(ctx)
    registry, allow = _registry(settings), networks(settings.strings("fetch.allow_private"))
    installed = await ctx.read(lambda: registry.install_url(url, allow), limited=False)
    return {
        "installed": installed.entry.to_json(),
        "replaced": None if installed.replaced is None else installed.replaced.version,
    }


@rpc("plugin.remove")
async def plugin_remove(ctx: ServerState, p: Params) -> Any:
    ctx.check_writable()
    settings = _settings(ctx)
    entry = await ctx.read(lambda: _registry(settings).remove(str(p["name"])), limited=False)
    return {"removed": entry.to_json()}
