"""The live schema ``catalog sql`` checks a statement against, read in the session that runs it
(never the indexed catalog, which a table or column added since does not hold): every user table
and view of every schema the connection can see, their columns, generated columns' expressions,
views' definitions, and SQLite's full-text indexes' internal tables."""

from __future__ import annotations

import sqlite3
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from drsg.pipeline.catalog.statement import LiveSchema, LiveTable

#: SQLite's virtual-table modules that keep their rows in internal ("shadow") tables
_FTS = ("fts3", "fts4", "fts5")
_PG_SYSTEM = ("pg_catalog", "information_schema")
_MYSQL_SYSTEM = ("information_schema", "mysql", "performance_schema", "sys")


def sqlite_schema(db: sqlite3.Connection) -> LiveSchema:
    live = LiveSchema("sqlite", "main")
    objects = db.execute(
        "select type, name, coalesce(sql, '') from sqlite_master where type in ('table', 'view') "
        "and name not like 'sqlite_%'"
    ).fetchall()
    virtual = [name for _t, name, sql in objects if sql.lstrip().upper().startswith("CREATE VIRTUAL TABLE")]
    for kind, name, sql in objects:
        table = LiveTable("main", name, "view" if kind == "view" else "table")
        generated: list[str] = []
        for _cid, column, _type, _nn, _default, _pk, hidden in db.execute(f"pragma table_xinfo({_quote(name)})"):
            if hidden in (0, 2, 3):  # 1: a virtual table's hidden column (an FTS index's own name, rank)
                table.columns.append(column)
            if hidden in (2, 3):
                generated.append(column)
        if generated:
            found = sqlite_generated(sql)
            table.generated = {column: found.get(column, "") for column in generated}
        if kind == "view":
            table.definition = _view_select(sql)
        owner = next((v for v in virtual if name.lower().startswith(v.lower() + "_")), None)
        if owner is not None and name not in virtual:
            table.refused = f"it is the full-text index {owner}'s internal table; query the table it indexes"
        live.add(table)
    return live


def sqlite_generated(create: str) -> dict[str, str]:
    """A ``CREATE TABLE``'s generated columns and their expressions (none when it cannot be parsed)."""
    try:
        tree = sqlglot.parse_one(create, read="sqlite")
    except SqlglotError:
        return {}
    out: dict[str, str] = {}
    for column in tree.find_all(exp.ColumnDef):
        for constraint in column.constraints:
            kind = constraint.args.get("kind")
            if isinstance(kind, exp.ComputedColumnConstraint) and kind.this is not None:
                out[column.name] = kind.this.sql("sqlite")
    return out


def _view_select(create: str) -> str | None:
    """The SELECT of a ``CREATE VIEW`` (None when it cannot be parsed)."""
    try:
        tree = sqlglot.parse_one(create, read="sqlite")
    except SqlglotError:
        return None
    query = tree.expression if isinstance(tree, exp.Create) else None
    return query.sql("sqlite") if isinstance(query, exp.Query) else None


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def postgres_schema(db: Any) -> LiveSchema:
    live = LiveSchema("postgresql", str(db.execute("select current_schema()").fetchone()[0] or "public"))
    rows = db.execute(
        "select c.oid, n.nspname, c.relname, c.relkind, "
        "case when c.relkind in ('v', 'm') then pg_get_viewdef(c.oid) end "
        "from pg_class c join pg_namespace n on n.oid = c.relnamespace "
        "where c.relkind in ('r', 'v', 'm', 'p', 'f') and n.nspname <> all(%s) "
        "and n.nspname not like 'pg\\_toast%%' and n.nspname not like 'pg\\_temp%%'",
        [list(_PG_SYSTEM)],
    ).fetchall()
    by_oid: dict[int, LiveTable] = {}
    for oid, schema, name, kind, definition in rows:
        view = kind in ("v", "m")
        by_oid[oid] = LiveTable(schema, name, "view" if view else "table", definition=definition)
    for oid, column, generated, expression in db.execute(
        "select a.attrelid, a.attname, a.attgenerated <> '', pg_get_expr(d.adbin, d.adrelid) "
        "from pg_attribute a left join pg_attrdef d on d.adrelid = a.attrelid and d.adnum = a.attnum "
        "where a.attnum > 0 and not a.attisdropped and a.attrelid = any(%s) order by a.attrelid, a.attnum",
        [list(by_oid)],
    ).fetchall():
        table = by_oid[oid]
        table.columns.append(column)
        if generated:
            table.generated[column] = expression or ""
    for table in by_oid.values():
        live.add(table)
    return live


def mysql_schema(cur: Any) -> LiveSchema:
    cur.execute("SELECT DATABASE()")
    live = LiveSchema("mysql", str(cur.fetchone()[0] or ""))
    marks = ", ".join(["%s"] * len(_MYSQL_SYSTEM))
    cur.execute(
        "SELECT TABLE_SCHEMA, TABLE_NAME, TABLE_TYPE FROM information_schema.TABLES "
        f"WHERE TABLE_SCHEMA NOT IN ({marks})",
        _MYSQL_SYSTEM,
    )
    tables: dict[tuple[str, str], LiveTable] = {}
    for schema, name, kind in cur.fetchall():
        tables[(schema, name)] = LiveTable(schema, name, "view" if "VIEW" in str(kind) else "table")
    cur.execute(
        "SELECT TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME, EXTRA, GENERATION_EXPRESSION FROM information_schema.COLUMNS "
        f"WHERE TABLE_SCHEMA NOT IN ({marks}) ORDER BY TABLE_SCHEMA, TABLE_NAME, ORDINAL_POSITION",
        _MYSQL_SYSTEM,
    )
    for schema, name, column, extra, expression in cur.fetchall():
        table = tables.get((schema, name))
        if table is None:
            continue
        table.columns.append(column)
        if "GENERATED" in str(extra or "").upper():
            table.generated[column] = str(expression or "")
    cur.execute(
        f"SELECT TABLE_SCHEMA, TABLE_NAME, VIEW_DEFINITION FROM information_schema.VIEWS "
        f"WHERE TABLE_SCHEMA NOT IN ({marks})",
        _MYSQL_SYSTEM,
    )
    for schema, name, definition in cur.fetchall():
        if (schema, name) in tables:
            tables[(schema, name)].definition = definition or None  # empty: the user may not see it
    for table in tables.values():
        if table.kind == "view" and table.definition is None:
            table.definition = _shown_view(cur, table.schema, table.name)
        live.add(table)
    return live


def _shown_view(cur: Any, schema: str, name: str) -> str | None:
    """A view's SELECT from ``SHOW CREATE VIEW``, for a role information_schema hides it from (one
    with column grants only; SHOW VIEW is enough here), its tables qualified by the view's own
    database, as the server prints them bare. None when it cannot be read or parsed."""
    import pymysql

    try:
        cur.execute(f"SHOW CREATE VIEW {_backticked(schema)}.{_backticked(name)}")
        row = cur.fetchone()
    except pymysql.MySQLError:
        return None
    try:
        tree = sqlglot.parse_one(str(row[1]), read="mysql") if row and len(row) > 1 else None
    except SqlglotError:
        return None
    query = tree.expression if isinstance(tree, exp.Create) else None
    if not isinstance(query, exp.Query):
        return None
    ctes = {cte.alias_or_name.lower() for cte in query.find_all(exp.CTE)}
    for node in query.find_all(exp.Table):
        if not node.db and node.name.lower() not in ctes:
            node.set("db", exp.to_identifier(schema, quoted=True))
    return query.sql("mysql")


def _backticked(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"
