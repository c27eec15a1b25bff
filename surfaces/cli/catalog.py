"""`drsg catalog …` (connections, index, search, the dbgraph verbs) and `drsg find`."""

from __future__ import annotations

import json
from typing import Any, Literal

import click

from drsg.kernel.asof import AsOf
from drsg.kernel.errors import UsageError
from drsg.models.embedders.base import Embedder
from drsg.models.providers import EmbedderChoice
from drsg.surfaces.cli.context import Context, emit_json
from drsg.surfaces.cli.options import as_of_option, embed_options, json_option
from drsg.surfaces.cli.search import embed_choice


def _connections(obj: Context) -> Any:
    from drsg.pipeline.catalog.connections import Connections

    return Connections(obj.db_path)


def _pick(obj: Context, name: str | None) -> Any:
    """The named connection, or the only one there is."""
    conns = _connections(obj)
    if name is not None:
        return conns.get(name)
    everything = conns.load()
    if len(everything) != 1:
        listed = ", ".join(sorted(everything)) or "none yet: `drsg catalog add NAME DSN`"
        raise UsageError(f"name the connection with --conn (there are: {listed})")
    return next(iter(everything.values()))


def _catalog(obj: Context, name: str | None, as_of: AsOf | None = None) -> tuple[Any, Any]:
    from drsg.pipeline.catalog import service

    conn = _pick(obj, name)
    with obj.open(write=False) as db:
        return conn, service.load(db, conn, as_of)


def _show(value: Any, as_json: bool) -> None:
    if as_json:
        emit_json(value)
    else:
        emit_json(value, pretty=True)


def _embedder(obj: Context, db: Any, conn: Any, embed: EmbedderChoice, *, indexing: bool) -> Embedder | None:
    """The embedder for the catalog's descriptions: the one that wrote the plane's vectors unless
    --embed names one (another one is refused: two vector spaces), --embed's when the plane has
    none yet (indexing only), else None (keywords alone)."""
    from drsg.pipeline.catalog.semantic import VECTOR
    from drsg.pipeline.embedder_choice import optional_embedder

    purpose: Literal["query", "write"] = "write" if indexing else "query"
    embedder = optional_embedder(db, conn.plane, VECTOR, obj.settings, named=embed, purpose=purpose)
    if embedder is None and embed.names_one and not indexing:
        raise UsageError(
            f"plane {conn.plane!r} holds no description vectors; index them first: "
            f"`drsg catalog index {conn.name} --embed {embed.name or 'local'}`"
        )
    return embedder


def conn_option(fn: Any) -> Any:
    return click.option(
        "--conn", "-c", "conn_name", default=None, metavar="NAME", help="The connection (default: the only one)."
    )(fn)


@click.group("catalog")
def catalog() -> None:
    """A live database's catalog as a plane: connections, index, search and the dbgraph verbs."""


@catalog.command("add")
@click.argument("name")
@click.argument("dsn")
@click.option("--password-env", default=None, metavar="VAR", help="Environment variable holding the password.")
@click.option(
    "--keyring", "keyring_name", default=None, metavar="NAME", help="Keyring entry (service drsg) holding it."
)
@click.option("--show-sensitive", is_flag=True, help="Do not mask sensitive columns (sensitive_columns = show).")
@click.option("--sensitive", multiple=True, metavar="COLUMN", help="Another column name to mask (repeatable).")
@click.option("--replace", is_flag=True, help="Replace a connection of that name.")
@click.pass_obj
def catalog_add(
    obj: Context,
    name: str,
    dsn: str,
    password_env: str | None,
    keyring_name: str | None,
    show_sensitive: bool,
    sensitive: tuple[str, ...],
    replace: bool,
) -> None:
    """Add a connection: DSN is an SQLite path, postgresql://USER@HOST:PORT/DB or mysql://USER@HOST:PORT/DB.

    The password is never stored: name where it is with --password-env or --keyring. An SQLite
    path is stored absolute, so the connection works from any folder."""
    from drsg.pipeline.catalog.connections import Connection, check_dsn, engine_of

    if password_env and keyring_name:
        raise UsageError("give --password-env or --keyring, not both")
    conn = Connection(
        name,
        check_dsn(dsn),
        engine_of(dsn),
        password_env,
        keyring_name,
        "show" if show_sensitive else "mask",
        list(sensitive),
    )
    _connections(obj).add(conn, replace=replace)
    click.echo(f"added {conn.engine} connection '{name}' (its catalog goes to plane '{conn.plane}')")


@catalog.command("list")
@json_option
@click.pass_obj
def catalog_list(obj: Context, as_json: bool) -> None:
    """List connections (references to credentials, never the credentials)."""
    for conn in _connections(obj).load().values():
        if as_json:
            emit_json(conn.public())
        else:
            where = f" password from ${conn.password_env}" if conn.password_env else ""
            where += f" password from keyring {conn.keyring!r}" if conn.keyring else ""
            click.echo(f"{conn.name}\t{conn.engine}\t{conn.dsn}{where}\tsensitive columns: {conn.sensitive_columns}")


@catalog.command("remove")
@click.argument("name")
@click.pass_obj
def catalog_remove(obj: Context, name: str) -> None:
    """Remove a connection (its plane and history stay)."""
    gone = _connections(obj).remove(name)
    click.echo(f"removed connection '{name}' (plane '{gone.plane}' stays; `drsg plane drop {gone.plane}` drops it)")


@catalog.command("test")
@click.argument("name")
@click.pass_obj
def catalog_test(obj: Context, name: str) -> None:
    """Connect once and say what answered; warn (stderr) when its role can read a sensitive column."""
    from drsg.pipeline.catalog.backends import backend_for

    conn = _connections(obj).get(name)
    backend = backend_for(conn)
    click.echo(f"ok: {name} answered ({backend.test()})")
    _warn_readable(obj, conn, backend)


def _warn_readable(obj: Context, conn: Any, backend: Any) -> None:
    """One line on stderr when the role the connection logs in as can read what drsg masks."""
    from drsg.kernel.errors import CatalogError
    from drsg.pipeline.catalog.connections import sensitive_names
    from drsg.pipeline.catalog.grants import warning

    if conn.sensitive_columns == "show":
        return  # masking is off for it: the operator chose to read them
    try:
        readable = backend.readable(sensitive_names(conn, obj.settings))
    except CatalogError as exc:
        click.echo(f"warning: {exc}; whether its role can read the sensitive columns is not known", err=True)
        return
    if readable:
        click.echo(warning(conn.name, readable), err=True)


@catalog.command("grants")
@click.argument("name")
@click.option("--role", default=None, metavar="ROLE", help="The read role's name (default drsg_reader).")
@json_option
@click.pass_obj
def catalog_grants(obj: Context, name: str, role: str | None, as_json: bool) -> None:
    """Print the SQL that makes a read role: SELECT on every column drsg does not mask, none it masks.

    PostgreSQL and MySQL/MariaDB: column-level GRANTs from the live schema (a view only when its
    definition reads no sensitive column; what is left out is a comment saying why). Run it as a
    superuser, then connect drsg as the role. SQLite has no roles: a usage error (exit 2)."""
    from drsg.pipeline.catalog.backends import backend_for
    from drsg.pipeline.catalog.connections import sensitive_names
    from drsg.pipeline.catalog.grants import ROLE, check_role, plan, script

    conn = _connections(obj).get(name)
    role = check_role(role or ROLE)  # before connecting
    grants = plan(backend_for(conn).live_schema(), role, sensitive_names(conn, obj.settings))
    if as_json:
        emit_json(grants.to_json())
    else:
        for line in script(grants):
            click.echo(line)


@catalog.command("index")
@click.argument("name")
@click.option(
    "--level",
    type=click.Choice(["l1", "l2", "full"]),
    default="full",
    show_default=True,
    help="l1: names and types; l2: comments, keys, indexes, estimates, samples.",
)
@embed_options
@json_option
@click.pass_obj
def catalog_index(
    obj: Context,
    name: str,
    level: str,
    embed: str | None,
    embed_model: str | None,
    embed_url: str | None,
    embed_key_env: str | None,
    as_json: bool,
) -> None:
    """Index a connection's catalog into its plane: one commit per level, only what changed.

    --embed also embeds the table and column descriptions (a plane that has vectors is kept
    embedded by the embedder that made them: only changed descriptions are embedded again)."""
    from drsg.pipeline.catalog import service
    from drsg.pipeline.catalog.connections import sensitive_names

    conn = _connections(obj).get(name)
    names = sensitive_names(conn, obj.settings)
    with obj.open(write=True) as db:
        embedder = _embedder(obj, db, conn, embed_choice(embed, embed_model, embed_url, embed_key_env), indexing=True)
        reports = service.index(db, conn, level, obj.settings.integer("catalog.enum_limit"), names, embedder)
    for report in reports:
        if as_json:
            emit_json(report)
        elif "failed" in report:
            click.echo(f"l2 failed ({report['failed']}); the l1 catalog stays", err=True)
        elif report["seq"] is None:
            click.echo(f"{report['level']}: no change (nothing written)")
        else:
            embedded = f", {report['embedded']} descriptions embedded" if report.get("embedded") else ""
            click.echo(
                f"{report['level']}: seq {report['seq']}: {report['created']} created, {report['updated']} updated, "
                f"{report['deleted']} deleted, {report['edges_created']} edges created, "
                f"{report['edges_deleted']} deleted{embedded}"
            )
            for warning in report["warnings"]:
                click.echo(f"warning: {warning}", err=True)


@catalog.command("search")
@click.argument("words", nargs=-1, required=True)
@conn_option
@click.option("--k", default=10, show_default=True, help="Most hits.")
@click.option("--keyword", "bm25", is_flag=True, help="Rank by BM25 over the catalog's keyword index instead.")
@embed_options
@json_option
@as_of_option
@click.pass_obj
def catalog_search(
    obj: Context,
    words: tuple[str, ...],
    conn_name: str | None,
    k: int,
    bm25: bool,
    embed: str | None,
    embed_model: str | None,
    embed_url: str | None,
    embed_key_env: str | None,
    as_json: bool,
    as_of: AsOf | None,
) -> None:
    """Tables and columns for some WORDS (split identifiers, Chinese, aliases), offline; fused with
    the descriptions' meaning when the catalog was indexed with --embed (hybrid: min-max, 1/1).
    Several words may be given unquoted (`catalog search 用户 密码`): they are one query."""
    from drsg.pipeline.catalog.resolve import search

    text = " ".join(words)  # unquoted words are one query, as if quoted
    conn = _pick(obj, conn_name)
    with obj.open(write=False) as db:
        embedder = _embedder(obj, db, conn, embed_choice(embed, embed_model, embed_url, embed_key_env), indexing=False)
    if bm25 or embedder is not None:
        from drsg.pipeline.catalog import service
        from drsg.surfaces.cli.search import open_indexes
        from drsg.workers.search import Searcher

        query = embedder.embed([text])[0] if embedder is not None else None  # before any snapshot opens
        with obj.open(write=False) as db, open_indexes(db) as indexes:
            hits = service.search(Searcher(db, indexes), conn, text, k, bm25=bm25, query=query, as_of=as_of)
        for hit in hits:
            where = f"{hit['table']}.{hit['column']}" if "column" in hit else hit["table"]
            if as_json:
                emit_json(hit)
            elif "channels" in hit:
                ch = hit["channels"]
                raw = " ".join(f"{name[0]}={'-' if v is None else f'{v:.3f}'}" for name, v in ch.items())
                click.echo(f"{hit['score']:.3f}\t{where}\t[{raw}]")
            else:
                click.echo(f"{hit['score']:.3f}\t{where}\tbm25")
        return
    _conn, cat = _catalog(obj, conn_name, as_of)
    for match in search(cat, text, k):
        if as_json:
            emit_json(match.to_json())
        else:
            where = f"{match.table}.{match.column}" if match.column else match.table
            click.echo(f"{match.score:.2f}\t{where}\t{match.why}")


def _run_find(obj: Context, conn_name: str | None, request: str, as_json: bool, embed: EmbedderChoice) -> None:
    from drsg.api.catalog import find_for

    try:
        parsed = json.loads(request)
    except (ValueError, RecursionError):  # RecursionError: nested deeper than Python's reader
        raise UsageError(
            'find: the request is JSON, e.g. \'{"entity":"user","fields":["password"],"where":{"name":"Ann"}}\''
        ) from None
    conn = _pick(obj, conn_name)
    with obj.open(write=False) as db:
        answer = find_for(db, conn, parsed, embed)
    _show(answer.to_json(), as_json)


@click.command("find")
@click.argument("request")
@conn_option
@embed_options
@json_option
@click.pass_obj
def find_command(obj: Context, request: str, conn_name: str | None, as_json: bool, **embed: str | None) -> None:
    """Answer '{"entity":…,"fields":[…],"where":{…}}' with one SELECT against the live database
    (words no name, alias or comment matches are matched by meaning when the catalog is embedded)."""
    _run_find(obj, conn_name, request, as_json, _choice(embed))


@catalog.command("find")
@click.argument("request")
@conn_option
@embed_options
@json_option
@click.pass_obj
def catalog_find(obj: Context, request: str, conn_name: str | None, as_json: bool, **embed: str | None) -> None:
    """As `drsg find`: one table resolved offline, one parameterised SELECT."""
    _run_find(obj, conn_name, request, as_json, _choice(embed))


def _choice(flags: dict[str, str | None]) -> EmbedderChoice:
    return embed_choice(flags["embed"], flags["embed_model"], flags["embed_url"], flags["embed_key_env"])


@catalog.command("sql")
@click.argument("statement")
@conn_option
@click.option("--limit", default=None, type=int, help="Most rows (default [catalog] row_limit).")
@json_option
@click.pass_obj
def catalog_sql(obj: Context, statement: str, conn_name: str | None, limit: int | None, as_json: bool) -> None:
    """Run one SELECT: parsed and allowed only when safe (one SELECT; tables and columns of the live
    schema; functions from an allow-list); sensitive columns answered [REDACTED] where selected and
    refused anywhere else; rows and time limited ([catalog] row_limit, statement_seconds). A warning
    on stderr when the connection's own role can read a sensitive column (`drsg catalog grants NAME`
    prints a role that cannot)."""
    from drsg.pipeline.catalog.backends import backend_for
    from drsg.pipeline.catalog.find import run_sql

    conn = _pick(obj, conn_name)
    limit = limit or obj.settings.integer("catalog.row_limit")
    backend = backend_for(conn, obj.settings.integer("catalog.statement_seconds"))
    _show(run_sql(backend, statement, limit, obj.settings.strings("catalog.sensitive")), as_json)
    _warn_readable(obj, conn, backend)


@catalog.command("schema")
@click.argument("table", required=False)
@conn_option
@json_option
@as_of_option
@click.pass_obj
def catalog_schema(obj: Context, table: str | None, conn_name: str | None, as_json: bool, as_of: AsOf | None) -> None:
    """The whole catalog (or one table): columns, keys, indexes, what views read."""
    from drsg.pipeline.catalog.connections import sensitive_names
    from drsg.pipeline.catalog.views import schema

    conn, cat = _catalog(obj, conn_name, as_of)
    _show(schema(cat, table, sensitive_names(conn, obj.settings)), as_json)


@catalog.command("objects")
@conn_option
@json_option
@as_of_option
@click.pass_obj
def catalog_objects(obj: Context, conn_name: str | None, as_json: bool, as_of: AsOf | None) -> None:
    """Tables and views with their column counts, comments and row estimates."""
    from drsg.pipeline.catalog.views import objects

    for item in objects(_catalog(obj, conn_name, as_of)[1]):
        if as_json:
            emit_json(item)
        else:
            click.echo(f"{item['kind']}\t{item['name']}\t{item['columns']} columns\t{item.get('comment', '')}")


@catalog.command("columns")
@click.argument("table")
@conn_option
@json_option
@as_of_option
@click.pass_obj
def catalog_columns(obj: Context, table: str, conn_name: str | None, as_json: bool, as_of: AsOf | None) -> None:
    """A table's columns: type, type class, nullability, keys, comment, enum sample."""
    from drsg.pipeline.catalog.connections import sensitive_names
    from drsg.pipeline.catalog.views import columns

    conn, cat = _catalog(obj, conn_name, as_of)
    _show(columns(cat, table, sensitive_names(conn, obj.settings)), as_json)


@catalog.command("impact")
@click.argument("target", metavar="TABLE[.COLUMN]")
@conn_option
@json_option
@click.pass_obj
def catalog_impact(obj: Context, target: str, conn_name: str | None, as_json: bool) -> None:
    """What depends on a table or column: foreign keys into it, views reading it, its indexes."""
    from drsg.pipeline.catalog.views import impact

    table, _, column = target.partition(".")
    _show(impact(_catalog(obj, conn_name)[1], table, column or None), as_json)


@catalog.command("refs")
@click.argument("table")
@conn_option
@json_option
@click.pass_obj
def catalog_refs(obj: Context, table: str, conn_name: str | None, as_json: bool) -> None:
    """What a table or view refers to: its foreign keys' tables, the tables a view reads."""
    from drsg.pipeline.catalog.views import refs

    _show(refs(_catalog(obj, conn_name)[1], table), as_json)


@catalog.command("digest")
@conn_option
@click.option("--max-chars", default=6000, show_default=True, help="Longest digest.")
@as_of_option
@click.pass_obj
def catalog_digest(obj: Context, conn_name: str | None, max_chars: int, as_of: AsOf | None) -> None:
    """The compact catalog a model reads in its prompt: one line per table."""
    from drsg.pipeline.catalog.connections import sensitive_names
    from drsg.pipeline.catalog.views import digest

    conn, cat = _catalog(obj, conn_name, as_of)
    click.echo(digest(cat, max_chars, sensitive_names(conn, obj.settings)))


COMMANDS = [catalog, find_command]
