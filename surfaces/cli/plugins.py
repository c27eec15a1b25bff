"""`drsg plugin …`: install, list, show and remove parser plugins (WebAssembly components)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from drsg.pipeline.fetch.guard import networks
from drsg.pipeline.plugins.registry import Entry, Registry, is_url
from drsg.surfaces.cli.context import Context, emit_json
from drsg.surfaces.cli.options import json_option


@click.group("plugin")
def plugin() -> None:
    """Parser plugins: WebAssembly components that read a kind of source file into facts.

    Each call runs sandboxed within the [plugins] budgets (fuel, memory_mb, timeout_s): the WASI
    interfaces standard toolchains import get inert grants (empty environment, no directories,
    discarded output, frozen clocks, fixed randomness); wasi:sockets is refused, and with
    [plugins] wasi = "strict" wasi:filesystem too. `plugin show` lists each import and its grant.
    A call that fails ends its error with the last line the plugin wrote to stderr (-v: its last
    4 KiB); a call that succeeds shows none of it.
    """


@plugin.command("install")
@click.argument("source", metavar="FILE|URL")
@click.pass_obj
def plugin_install(obj: Context, source: str) -> None:
    """Install a plugin from a .wasm file or an http(s) URL (same name: an upgrade)."""
    registry = Registry.from_settings(obj.settings)
    if is_url(source):
        installed = registry.install_url(source, networks(obj.settings.strings("fetch.allow_private")))
    else:
        installed = registry.install_file(Path(source))
    for line in installed.lines:
        click.echo(line)


@plugin.command("list")
@json_option
@click.pass_obj
def plugin_list(obj: Context, as_json: bool) -> None:
    """List installed plugins: NAME VERSION EXTENSIONS SHA256 SOURCE."""
    entries = Registry.from_settings(obj.settings).entries()
    if as_json:
        for entry in entries:
            emit_json(entry.to_json())
        return
    if not entries:
        click.echo("no plugins installed (install one with `drsg plugin install FILE|URL`)")
        _builtins()
        return
    rows = [("NAME", "VERSION", "EXTENSIONS", "SHA256", "SOURCE"), *(_row(entry) for entry in entries)]
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    for row in rows:
        click.echo("  ".join([*(cell.ljust(width) for cell, width in zip(row, widths, strict=False)), row[4]]))
    _builtins()


def _builtins() -> None:
    from drsg.pipeline.code.handlers import builtin_handlers

    for handler in builtin_handlers():
        manifest = handler.manifest
        click.echo(
            f"built in: {manifest.ident}  handles: {' '.join(manifest.extensions)}"
            f"  (`drsg plugin show {manifest.name}`)"
        )


def _row(entry: Entry) -> tuple[str, str, str, str, str]:
    return entry.name, entry.version, entry.shown, entry.sha256[:12], entry.source


@plugin.command("show")
@click.argument("name")
@json_option
@click.pass_obj
def plugin_show(obj: Context, name: str, as_json: bool) -> None:
    """Show one installed plugin (version, extensions, hash, source, each import and what it is granted),
    or a built-in handler and what it emits."""
    from drsg.pipeline.code.handlers import BUILTIN_VOCABULARY, builtin_handlers

    registry = Registry.from_settings(obj.settings)
    builtin = {h.manifest.name: h.manifest for h in builtin_handlers()}
    if name in builtin and name not in {entry.name for entry in registry.entries()}:
        manifest = builtin[name]
        vocabulary = BUILTIN_VOCABULARY[name]
        if as_json:
            emit_json(
                {
                    "name": name,
                    "version": manifest.version,
                    "extensions": list(manifest.extensions),
                    "builtin": True,
                    "vocabulary": vocabulary,
                }
            )
            return
        click.echo(f"{manifest.ident} (built in)")
        click.echo(f"  handles:    {' '.join(manifest.extensions)}")
        click.echo(f"  labels:     {', '.join(vocabulary['labels'])}")
        click.echo(f"  edge types: {', '.join(vocabulary['edge_types'])}")
        for owner, names in vocabulary["properties"].items():
            click.echo(f"  {owner}: {', '.join(names)}")
        return
    card: dict[str, Any] = registry.show(name)
    if as_json:
        emit_json(card)
        return
    click.echo(f"{card['name']}@{card['version']}")
    click.echo(f"  handles:    {' '.join('.' + ext for ext in card['extensions'])}")
    click.echo(f"  sha256:     {card['sha256']}")
    click.echo(f"  source:     {card['source']}")
    click.echo(f"  file:       {card['path']}")
    if card.get("logo"):
        click.echo(f"  logo:       {card['logo']}")
    click.echo(f"  vocabulary: {card['vocabulary_note']}")
    if not card["imports"]:
        click.echo(f"  imports:    {'none' if card['imports'] == [] else 'not known: ' + card['imports_note']}")
        return
    click.echo("  imports:")
    width = max(len(item["interface"]) for item in card["imports"])
    for item in card["imports"]:
        click.echo(f"    {item['interface'].ljust(width)}  {item['grant']}")


@plugin.command("remove")
@click.argument("name")
@click.pass_obj
def plugin_remove(obj: Context, name: str) -> None:
    """Uninstall a plugin: its registry entry and its file."""
    entry = Registry.from_settings(obj.settings).remove(name)
    click.echo(f"removed {entry.name}@{entry.version}")


COMMANDS = [plugin]
