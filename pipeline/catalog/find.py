"""``find``: words resolved to one table and its columns offline, then exactly one parameterised
SELECT against the live database; and ``sql``: one read-only statement, masked and row-limited."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from drsg.kernel.errors import NotFound, UsageError
from drsg.kernel.values import check_utf8
from drsg.pipeline.catalog.answer import Ambiguous, Candidate, FieldPick, FindAnswer, Found, MissingPredicate, WherePick
from drsg.pipeline.catalog.backend import Backend, Rows, secret_pairs
from drsg.pipeline.catalog.masking import REDACTED
from drsg.pipeline.catalog.model import Catalog, Column, Table
from drsg.pipeline.catalog.resolve import best_column, rank_tables
from drsg.pipeline.catalog.semantic import MARGIN, Similar
from drsg.pipeline.catalog.sqlbuild import bind_value, build_select

MAX_LIMIT = 1000
CANDIDATES = 5


def sensitive_pairs(catalog: Catalog, backend: Backend, names: Iterable[str]) -> set[tuple[str, str]]:
    """The (table, column) pairs the database withholds, lowercased; none when the connection shows them.
    ``names``: the connection's and the settings' sensitive names (``connections.sensitive_names``)."""
    if backend.conn.sensitive_columns == "show":
        return set()
    return secret_pairs(catalog, names)


def check_request(request: Any) -> tuple[str, list[str], dict[str, Any]]:
    if not isinstance(request, dict):
        raise UsageError('find: the request is a JSON object like {"entity": "user", "fields": [...], "where": {...}}')
    unknown = set(request) - {"entity", "fields", "where", "limit"}
    if unknown:
        raise UsageError(f"find: unknown key(s) {sorted(unknown)}; use entity, fields, where, limit")
    entity, fields = _entity(request), _fields(request)
    where = _where(request)
    _limit(request)
    for text in [entity, *fields, *where, *(v for v in where.values() if isinstance(v, str))]:
        check_utf8(text, "find")  # a lone surrogate ("\\ud800") cannot reach a database as UTF-8
    return entity, fields, where


def _entity(request: dict[str, Any]) -> str:
    entity = request.get("entity")
    if not isinstance(entity, str) or not entity.strip():
        raise UsageError('find: "entity" must name the thing asked about, e.g. "user" or "用户"')
    return entity


def _fields(request: dict[str, Any]) -> list[str]:
    fields = request.get("fields") or []
    if not isinstance(fields, list) or not all(isinstance(f, str) and f for f in fields):
        raise UsageError('find: "fields" must be a list of words, e.g. ["password"]')
    return fields


def _where(request: dict[str, Any]) -> dict[str, Any]:
    where = request.get("where") or {}
    if not isinstance(where, dict) or any(isinstance(v, dict | list) for v in where.values()):
        raise UsageError('find: "where" must map words to single values, e.g. {"name": "Zhang San"}')
    return where


def _limit(request: dict[str, Any]) -> None:
    limit = request.get("limit", 1)
    if type(limit) is not int or not 1 <= limit <= MAX_LIMIT:  # not a bool, a float or "10"
        shown = json.dumps(limit)[:40]
        raise UsageError(f'find: "limit" must be a whole number of rows from 1 to {MAX_LIMIT}, e.g. 10, not {shown}')


def _column(table: Table, word: str, role: str, similar: Similar | None, meant: dict[str, float]) -> Column:
    """The column ``word`` names; by meaning (recorded in ``meant``) only when no name, alias or comment does."""
    column, _ = best_column(table, word)
    if column is None and similar is not None:
        sims = similar(word, table.name)
        if sims:
            name = max(sims, key=lambda n: (sims[n], n))
            column = next(c for c in table.columns if c.name == name)
            meant[word] = round(sims[name], 4)
    if column is None:
        names = ", ".join(c.name for c in table.columns)
        raise UsageError(f"find: no column of {table.name} matches {role} {word!r}; its columns are {names}")
    return column


def find(
    catalog: Catalog,
    backend: Backend,
    request: Any,
    limit: int,
    similar: Similar | None = None,
    *,
    sensitive: Iterable[str],
) -> dict[str, Any]:
    """:func:`find_answer`'s wire form: what the CLI, JSON-RPC and MCP print."""
    return find_answer(catalog, backend, request, limit, similar, sensitive=sensitive).to_json()


def find_answer(
    catalog: Catalog,
    backend: Backend,
    request: Any,
    limit: int,
    similar: Similar | None = None,
    *,
    sensitive: Iterable[str],
) -> FindAnswer:
    """``sensitive``: the names masked beside the built-in policy (``connections.sensitive_names``);
    ``similar``: the descriptions' vector channel, asked only where the words name no table or
    column by name, alias or comment (so what the keywords resolve is resolved as without it)."""
    entity, fields, where = check_request(request)
    limit = max(1, min(request.get("limit", limit), MAX_LIMIT))
    ranked, by_meaning = _rank(catalog, entity, [*fields, *where], similar)
    ranked, tied = _tied(ranked, MARGIN if by_meaning else 0.0)
    if len(tied) > 1:
        candidates = (Candidate(t.name, t.kind, round(s, 3), why, t.comment) for s, t, why in ranked[:CANDIDATES])
        return Ambiguous(entity, tuple(candidates))
    table = ranked[0][1]
    if not where:
        return MissingPredicate(table.name, tuple(c.name for c in table.columns))
    meant: dict[str, float] = {entity: round(ranked[0][0], 4)} if by_meaning else {}
    return _found(catalog, backend, table, fields, where, limit, similar, meant, sensitive)


def _found(
    catalog: Catalog,
    backend: Backend,
    table: Table,
    fields: list[str],
    where: dict[str, Any],
    limit: int,
    similar: Similar | None,
    meant: dict[str, float],
    sensitive: Iterable[str],
) -> Found:
    """The words resolved to ``table``'s columns (by meaning, into ``meant``, where no name says), the
    values bound as the columns' types, and the one SELECT run."""
    picked = [_column(table, f, "field", similar, meant) for f in fields] or list(table.columns)
    filters = [(word, _column(table, word, "filter", similar, meant)) for word in where]
    bound = [bind_value(column, value) for (_, column), value in zip(filters, where.values(), strict=True)]
    rows, sql = _select(
        catalog, backend, table, picked, [c.name for _, c in filters], [v for v, _ in bound], limit, sensitive
    )
    return Found(
        table=table.name,
        fields=tuple(FieldPick(c.name, f) for f, c in zip(fields, picked, strict=False))
        or tuple(FieldPick(c.name) for c in picked),
        where=tuple(WherePick(w, c.name, v) for (w, c), (v, _) in zip(filters, bound, strict=True)),
        sql=sql,
        rows=rows,
        notes=tuple(note for _, note in bound if note),
        by_meaning=meant or None,
    )


Ranked = list[tuple[float, Table, str]]


def _rank(catalog: Catalog, entity: str, words: list[str], similar: Similar | None) -> tuple[Ranked, bool]:
    """The tables for ``entity`` best first, by name, alias or comment; by meaning (True) only when none match so."""
    ranked = rank_tables(catalog, entity, words)
    if ranked or similar is None:
        by_meaning = False
    else:
        sims = similar(entity, None)
        by_name = {t.name: t for t in catalog.tables}
        ranked = sorted(
            ((s, by_name[name], f"meaning:{s:.2f}") for name, s in sims.items() if name in by_name),
            key=lambda r: (-r[0], r[1].kind != "table", r[1].name),
        )
        by_meaning = True
    if not ranked:
        raise NotFound(f"find: no table or view matches {entity!r}; `drsg catalog search` shows what the catalog has")
    return ranked, by_meaning


def _tied(ranked: Ranked, margin: float) -> tuple[Ranked, list[Table]]:
    """The tables scoring within ``margin`` of the best; ``margin``: similarities this close are no
    evidence for one table over another. A view over the one table tied with it does not tie: the
    table itself answers (and moves first)."""
    tied = [t for score, t, _ in ranked if score >= ranked[0][0] - margin]
    bases = [t for t in tied if t.kind == "table"]
    if len(bases) == 1 and all(t.kind == "view" and bases[0].name in t.view_refs for t in tied if t is not bases[0]):
        ranked = [r for r in ranked if r[1] is bases[0]] + [r for r in ranked if r[1] is not bases[0]]
        tied = bases
    return ranked, tied


def _select(
    catalog: Catalog,
    backend: Backend,
    table: Table,
    picked: list[Column],
    where: list[str],
    params: list[Any],
    limit: int,
    sensitive: Iterable[str],
) -> tuple[Rows, str]:
    """The one SELECT of ``picked`` filtered on the ``where`` columns, and its SQL; a sensitive
    column's values ``[REDACTED]`` even where the database would show them."""
    withheld = sensitive_pairs(catalog, backend, sensitive)
    masked = frozenset(c.name for c in picked if (table.name.lower(), c.name.lower()) in withheld)
    if table.kind == "view":  # a view's column may be a masked one renamed: the database withholds it
        masked = frozenset()
    names = [c.name for c in picked]
    sql = build_select(table.name, names, where, backend.quote, backend.placeholder, masked)
    rows = backend.select(sql, [*params, limit + 1], limit, withheld)
    hidden = [i for i, name in enumerate(names) if name in masked]
    rows.rows = [[REDACTED if i in hidden else v for i, v in enumerate(row)] for row in rows.rows]
    rows.redacted = sorted({*rows.redacted, *(f"{table.name}.{name}" for name in masked)})
    return rows, sql


def run_sql(backend: Backend, sql: str, limit: int, extra: Iterable[str] = ()) -> dict[str, Any]:
    """``catalog sql``: checked against the live schema, not the indexed catalog (a table added
    since is checked too); ``extra``: column names masked beside the connection's own."""
    if not sql.strip():
        raise UsageError("sql: give one SELECT statement")
    limit = max(1, min(limit, MAX_LIMIT))
    rows = backend.query(sql, limit, extra)
    return {"sql": sql, **rows.to_json()}
