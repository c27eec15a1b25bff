"""``catalog.list``, ``catalog.index``, ``catalog.find``, ``catalog.sql`` and the read verbs (``catalog.schema``,
``objects``, ``columns``, ``impact``, ``refs``, ``digest``) over JSON-RPC.

``plane.find`` is upstream's text search over a plane (openrpc.json), so the catalog's ``find`` is
``catalog.find``, with the CLI's request shape. Connections are the ones ``drsg catalog add``
keeps beside the database; a request names one, never a DSN or a credential. All the database
work — introspection, the catalog's commit, the one SELECT, and the first import of the catalog's
modules (10-100 ms) — runs in the read pool, off the event loop: the loop only awaits it (the
seed's JavaScript writer blocked its loop for 1,992 ms)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, TypeVar

import structlog

from drsg.api.retrieval import optional_plane_embedder
from drsg.kernel.errors import UsageError
from drsg.kernel.settings import Settings
from drsg.models.embedders.base import Embedder
from drsg.surfaces.server.params import Params, as_of
from drsg.surfaces.server.registry import AS_OF, AS_OF_MS, rpc
from drsg.surfaces.server.state import ServerState

CONNECTION = {
    "name": "connection",
    "required": False,
    "schema": {"type": "string"},
    "description": "A connection `drsg catalog add` made (default: the only one).",
}
log = structlog.get_logger("drsg.surfaces.server.catalog")
_BACKGROUND: set[asyncio.Task[None]] = set()  # running L2 runs (a task needs a reference to live)
LIMIT = {"name": "limit", "required": False, "schema": {"type": "integer", "minimum": 1, "maximum": 1000}}


def _connection(ctx: ServerState, name: str | None) -> Any:
    from drsg.pipeline.catalog.connections import Connections

    conns = Connections(ctx.db.path)
    if name is not None:
        return conns.get(name)
    everything = conns.load()
    if len(everything) != 1:
        raise UsageError(f"name the `connection` (there are: {', '.join(sorted(everything)) or 'none'})")
    return next(iter(everything.values()))


def _embedder(ctx: ServerState, conn: Any) -> Embedder | None:
    """An index run's embedder for the descriptions: the one that made the plane's vectors; when it
    has none, the operator's `serve --embed`; else None (keywords alone). Runs in a read thread."""
    from drsg.pipeline.catalog.semantic import VECTOR

    return optional_plane_embedder(ctx.api, conn.plane, VECTOR, "write")


T = TypeVar("T")


def _setting(ctx: ServerState, read: Callable[[Settings, str], T], name: str, default: T) -> T:
    """``name`` read by ``read`` (a typed read: ``Settings.integer``, …); ``default`` for a server without any."""
    settings = ctx.config.settings
    return read(settings, name) if settings is not None else default


@rpc(
    "catalog.index",
    define={
        "summary": "Index a connection's catalog into its plane `catalog_NAME`: l1 (names, declared types) and "
        "l2 (comments, keys, indexes, estimates, enum samples), one commit each, only what changed.",
        "x-access": "write",
        "params": [
            CONNECTION,
            {"name": "level", "required": False, "schema": {"type": "string", "enum": ["l1", "l2", "full"]}},
            {
                "name": "background",
                "required": False,
                "schema": {"type": "boolean"},
                "description": "With level full: answer once L1 is committed and run L2 in the background (its "
                "commit lands on the feed; a failure is logged and L1 stays).",
            },
        ],
        "result": {"name": "reports", "schema": {"type": "array", "items": {"type": "object"}}},
    },
)
async def catalog_index(ctx: ServerState, p: Params) -> Any:
    ctx.check_writable()  # the index run writes through the store itself, not ctx.write
    conn = await ctx.read(lambda: _connection(ctx, p.get("connection")))  # its first import runs off the loop
    level = str(p.get("level") or "full")
    limit = _setting(ctx, Settings.integer, "catalog.enum_limit", 20)

    def run(at: str) -> list[dict[str, Any]]:
        from drsg.pipeline.catalog import service  # imported in the read thread: ~10-100 ms the loop keeps
        from drsg.pipeline.catalog.connections import sensitive_names

        names = sensitive_names(conn, ctx.config.settings)
        return service.index(ctx.db, conn, at, limit, names, _embedder(ctx, conn))

    if not (p.get("background") and level == "full"):
        return await ctx.read(lambda: run(level), limited=False)
    reports = await ctx.read(lambda: run("l1"), limited=False)

    async def l2() -> None:
        try:
            done = await ctx.read(lambda: run("l2"), limited=False)
            log.info("catalog l2 indexed", connection=conn.name, seq=done[0]["seq"])
        except Exception as exc:  # the L1 commit stays; the log says why L2 did not land
            log.warning("catalog l2 failed", connection=conn.name, error=f"{type(exc).__name__}: {exc}")

    task = asyncio.create_task(l2())
    _BACKGROUND.add(task)
    task.add_done_callback(_BACKGROUND.discard)
    return [*reports, {"level": "l2", "background": True}]


@rpc(
    "catalog.find",
    define={
        "summary": "Resolve words to one table and its columns offline, then run exactly one parameterised SELECT: "
        "{status: ok, table, fields, where, sql, columns, rows, truncated, redacted} | {status: ambiguous, "
        "candidates} | {status: missing_predicate}. Sensitive columns answer [REDACTED].",
        "x-access": "read",
        "params": [
            CONNECTION,
            {"name": "entity", "required": True, "schema": {"type": "string"}},
            {"name": "fields", "required": False, "schema": {"type": "array", "items": {"type": "string"}}},
            {"name": "where", "required": False, "schema": {"type": "object"}},
            LIMIT,
        ],
        "result": {"name": "answer", "schema": {"type": "object"}},
    },
)
async def catalog_find(ctx: ServerState, p: Params) -> Any:
    request = {key: p[key] for key in ("entity", "fields", "where", "limit") if p.get(key) is not None}

    def run() -> dict[str, Any]:  # imports too: a first import off the loop
        from drsg.api.catalog import find_for  # the public API's Plane.find, for the connection named

        conn = _connection(ctx, p.get("connection"))
        return find_for(ctx.api, conn, request, None).to_json()

    return await ctx.read(run)


@rpc(
    "catalog.sql",
    define={
        "summary": "One read-only statement against the live database: masked, row-limited; writes and stacked "
        "statements refused.",
        "x-access": "read",
        "params": [CONNECTION, {"name": "sql", "required": True, "schema": {"type": "string"}}, LIMIT],
        "result": {"name": "answer", "schema": {"type": "object"}},
    },
)
async def catalog_sql(ctx: ServerState, p: Params) -> Any:
    limit = int(p.get("limit") or _setting(ctx, Settings.integer, "catalog.row_limit", 100))

    def run() -> dict[str, Any]:  # imports too: a first import off the loop
        from drsg.pipeline.catalog.backends import backend_for
        from drsg.pipeline.catalog.find import run_sql

        conn = _connection(ctx, p.get("connection"))
        backend = backend_for(conn, _setting(ctx, Settings.integer, "catalog.statement_seconds", 30))
        return run_sql(backend, str(p["sql"]), limit, _setting(ctx, Settings.strings, "catalog.sensitive", ()))

    return await ctx.read(run)


@rpc(
    "catalog.list",
    define={
        "summary": "The connections `drsg catalog add` made: name, engine, DSN (no password), where the "
        "password comes from (a reference, never the secret), the masking mode and the catalog's plane.",
        "x-access": "read",
        "params": [],
        "result": {"name": "connections", "schema": {"type": "array", "items": {"type": "object"}}},
    },
)
async def catalog_list(ctx: ServerState, p: Params) -> Any:
    from drsg.pipeline.catalog.connections import Connections

    def run() -> list[dict[str, Any]]:
        return [{**conn.public(), "plane": conn.plane} for conn in Connections(ctx.db.path).load().values()]

    return await ctx.read(run)


# --------------------------------------------------------------------------- the catalog's read verbs
#
# `drsg catalog schema|objects|columns|impact|refs|digest`, each over the catalog its plane holds
# (no network): the same pipeline.catalog.views functions, the same sensitive names.

TABLE = {"name": "table", "required": True, "schema": {"type": "string"}, "description": "A table or view's name."}
VIEW_PARAMS = [CONNECTION, AS_OF, AS_OF_MS]


def _views(ctx: ServerState, p: Params, verb: Callable[[Any, list[str]], T]) -> Callable[[], T]:
    """``verb(catalog, sensitive names)`` over the named connection's catalog, for the read pool."""

    def run() -> T:
        from drsg.pipeline.catalog import service  # imported in the read thread, as every catalog call
        from drsg.pipeline.catalog.connections import sensitive_names

        conn = _connection(ctx, p.get("connection"))
        return verb(service.load(ctx.db, conn, as_of(p)), sensitive_names(conn, ctx.config.settings))

    return run


def _verb(summary: str, params: list[dict[str, Any]], result: dict[str, Any]) -> dict[str, Any]:
    return {"summary": summary, "x-access": "read", "params": params, "result": {"name": "answer", "schema": result}}


@rpc(
    "catalog.schema",
    define=_verb(
        "The whole catalog (or one `table`): columns, keys, indexes, what views read (`drsg catalog schema`).",
        [*VIEW_PARAMS, {**TABLE, "required": False}],
        {"type": "object"},
    ),
)
async def catalog_schema(ctx: ServerState, p: Params) -> Any:
    from drsg.pipeline.catalog.views import schema

    return await ctx.read(_views(ctx, p, lambda cat, names: schema(cat, p.get("table"), names)))


@rpc(
    "catalog.objects",
    define=_verb(
        "Tables and views with their column counts, comments and row estimates (`drsg catalog objects`).",
        VIEW_PARAMS,
        {"type": "array", "items": {"type": "object"}},
    ),
)
async def catalog_objects(ctx: ServerState, p: Params) -> Any:
    from drsg.pipeline.catalog.views import objects

    return await ctx.read(_views(ctx, p, lambda cat, _names: objects(cat)))


@rpc(
    "catalog.columns",
    define=_verb(
        "A table's columns: type, type class, nullability, keys, comment, enum sample (`drsg catalog columns`).",
        [*VIEW_PARAMS, TABLE],
        {"type": "object"},
    ),
)
async def catalog_columns(ctx: ServerState, p: Params) -> Any:
    from drsg.pipeline.catalog.views import columns

    return await ctx.read(_views(ctx, p, lambda cat, names: columns(cat, p["table"], names)))


@rpc(
    "catalog.impact",
    define=_verb(
        "What depends on a table or one `column`: foreign keys into it, views reading it, its indexes "
        "(`drsg catalog impact`).",
        [*VIEW_PARAMS, TABLE, {"name": "column", "required": False, "schema": {"type": "string"}}],
        {"type": "object"},
    ),
)
async def catalog_impact(ctx: ServerState, p: Params) -> Any:
    from drsg.pipeline.catalog.views import impact

    return await ctx.read(_views(ctx, p, lambda cat, _names: impact(cat, p["table"], p.get("column"))))


@rpc(
    "catalog.refs",
    define=_verb(
        "What a table or view refers to: its foreign keys' tables, the tables a view reads (`drsg catalog refs`).",
        [*VIEW_PARAMS, TABLE],
        {"type": "object"},
    ),
)
async def catalog_refs(ctx: ServerState, p: Params) -> Any:
    from drsg.pipeline.catalog.views import refs

    return await ctx.read(_views(ctx, p, lambda cat, _names: refs(cat, p["table"])))


@rpc(
    "catalog.digest",
    define=_verb(
        "The compact catalog a model reads in its prompt: one line per table, sensitive columns marked and "
        "never sampled, cut at `max_chars` (`drsg catalog digest`).",
        [
            *VIEW_PARAMS,
            {"name": "max_chars", "required": False, "schema": {"type": "integer", "minimum": 200, "maximum": 100000}},
        ],
        {"type": "string"},
    ),
)
async def catalog_digest(ctx: ServerState, p: Params) -> Any:
    from drsg.pipeline.catalog.views import digest

    limit = int(p.get("max_chars") or 6000)
    return await ctx.read(_views(ctx, p, lambda cat, names: digest(cat, limit, names)))
