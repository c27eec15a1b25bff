"""PostgreSQL through psycopg 3: the catalog from ``pg_catalog`` (the connection's current schema),
queries in a read-only transaction with a statement timeout.

Masking asks the database which columns a statement reads: before it runs, the statement is
planned with ``EXPLAIN (VERBOSE, FORMAT JSON)`` — views expanded, ``*`` spelled out, every CTE,
subquery and UNION branch a node — and a statement whose plan reads a masked column anywhere
(an output, a filter, an index condition) is refused, naming the column. A scan's whole row that
a join above it does not use is not a read (``_read_text``): a view joining a table that holds a
password, without outputting it, is readable. ``find`` never selects a
masked column (it asks for ``NULL`` in its place and answers ``[REDACTED]``). Every statement
goes over the extended protocol (``prepare=True``), which takes exactly one statement, so nothing
can be stacked behind it; a plan that writes (``ModifyTable``) is refused, and the read-only
transaction refuses any write the plan check did not see."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from typing import Any

from drsg.kernel.errors import CatalogError, UsageError
from drsg.pipeline.catalog.backend import (
    Backend,
    Rows,
    enum_sample,
    refused,
    sample_failed,
    sampled,
    timed_out,
    withheld_pairs,
)
from drsg.pipeline.catalog.grants import named, withheld_columns
from drsg.pipeline.catalog.live import postgres_schema
from drsg.pipeline.catalog.masking import REDACTED
from drsg.pipeline.catalog.model import Catalog, Column, ForeignKey, IndexInfo, Table
from drsg.pipeline.catalog.statement import LiveSchema

_TABLES = """
select c.oid, c.relname, c.relkind, obj_description(c.oid, 'pg_class'), c.reltuples::bigint
from pg_class c join pg_namespace n on n.oid = c.relnamespace
where n.nspname = current_schema() and c.relkind in ('r', 'v', 'm', 'p') order by c.relname
"""
_COLUMNS = """
select a.attrelid, a.attnum, a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull,
       pg_get_expr(d.adbin, d.adrelid), col_description(a.attrelid, a.attnum), a.attgenerated <> ''
from pg_attribute a join pg_class c on c.oid = a.attrelid join pg_namespace n on n.oid = c.relnamespace
left join pg_attrdef d on d.adrelid = a.attrelid and d.adnum = a.attnum
where n.nspname = current_schema() and c.relkind in ('r', 'v', 'm', 'p') and a.attnum > 0 and not a.attisdropped
order by a.attrelid, a.attnum
"""
_CONSTRAINTS = """
select k.conrelid, k.contype, k.confrelid,
       array(select attname from unnest(k.conkey) with ordinality u(n, o)
             join pg_attribute a on a.attrelid = k.conrelid and a.attnum = u.n order by u.o),
       array(select attname from unnest(coalesce(k.confkey, '{}')) with ordinality u(n, o)
             join pg_attribute a on a.attrelid = k.confrelid and a.attnum = u.n order by u.o)
from pg_constraint k join pg_namespace n on n.oid = k.connamespace
where n.nspname = current_schema() and k.contype in ('p', 'u', 'f')
"""
_INDEXES = """
select i.indrelid, x.relname, i.indisunique, i.indpred is null,
       array(select attname from unnest(i.indkey::int2[]) with ordinality u(n, o)
             join pg_attribute a on a.attrelid = i.indrelid and a.attnum = u.n order by u.o)
from pg_index i join pg_class x on x.oid = i.indexrelid join pg_namespace n on n.oid = x.relnamespace
where n.nspname = current_schema()
"""
_VIEW_REFS = """
select distinct r.ev_class, d.refobjid from pg_depend d join pg_rewrite r on r.oid = d.objid
where d.classid = 'pg_rewrite'::regclass and d.refclassid = 'pg_class'::regclass and d.refobjid <> r.ev_class
"""

#: the withheld columns the session's role can read (its schema usable, the column selectable): one query
_READABLE = """
select s, t, c from unnest(%s::text[], %s::text[], %s::text[]) as u(s, t, c)
where has_schema_privilege(s, 'USAGE') and has_column_privilege(format('%%I.%%I', s, t), c, 'SELECT')
"""


class PostgresBackend(Backend):
    engine = "postgresql"
    placeholder = "%s"

    def _open(self) -> Any:
        import psycopg

        try:
            db = psycopg.connect(self.conn.dsn, password=self.conn.password(), connect_timeout=10)
        except psycopg.Error as exc:
            raise CatalogError(f"connection {self.conn.name!r}: cannot connect ({_first_line(exc)})") from None
        db.read_only = True
        db.execute(f"set statement_timeout = {self.statement_seconds * 1000}")
        return db

    def test(self) -> str:
        with self._open() as db:
            return "postgresql " + str(db.execute("show server_version").fetchone()[0])

    def live_schema(self) -> LiveSchema:
        import psycopg

        with self._open() as db:
            try:
                return postgres_schema(db)
            except psycopg.Error as exc:
                raise CatalogError(f"connection {self.conn.name!r}: cannot read the schema ({exc.sqlstate})") from None

    def readable(self, names: Sequence[str]) -> list[str]:
        import psycopg

        with self._open() as db:
            try:
                live = postgres_schema(db)
                targets = sorted(withheld_columns(live, names))
                if not targets:
                    return []
                rows = db.execute(_READABLE, [list(column) for column in zip(*targets, strict=True)]).fetchall()
            except psycopg.Error as exc:  # its code only: the text can name what it failed on
                raise CatalogError(f"connection {self.conn.name!r}: cannot read privileges ({exc.sqlstate})") from None
        return named(live, rows)

    def introspect(self, level: str, enum_limit: int, sensitive: Sequence[str]) -> Catalog:
        import psycopg

        with self._open() as db:
            try:
                database = str(db.execute("select current_database()").fetchone()[0])
                catalog = Catalog("postgresql", database, level)
                by_oid: dict[int, Table] = {}
                unanalysed: list[Table] = []  # reltuples -1 (PG 14+) or 0: never analysed, or empty
                materialized: dict[int, Table] = {}
                for oid, name, kind, comment, tuples in db.execute(_TABLES).fetchall():
                    table = Table(name, "view" if kind == "v" else "table")
                    by_oid[oid] = table
                    if level != "l1":
                        table.comment = comment
                        table.row_estimate = max(int(tuples), 0) if table.kind == "table" else None
                        if table.kind == "table" and int(tuples) <= 0:
                            unanalysed.append(table)
                        if kind == "m":
                            materialized[oid] = table
                    catalog.tables.append(table)
                for oid, num, name, declared, notnull, default, comment, generated in db.execute(_COLUMNS).fetchall():
                    if oid in by_oid:
                        column = Column(name, num, declared, generated=bool(generated))
                        if level != "l1":
                            column.nullable, column.default, column.comment = not notnull, default, comment
                        by_oid[oid].columns.append(column)
            except psycopg.Error as exc:
                raise CatalogError(
                    f"connection {self.conn.name!r}: cannot read the catalog ({_first_line(exc)})"
                ) from None
            if level != "l1":
                try:
                    self._enrich(db, catalog, by_oid, enum_limit)
                except psycopg.Error as exc:  # L2 never discards L1
                    db.rollback()
                    catalog.warnings.append(f"l2: {_first_line(exc)}")
                else:
                    self._count(db, catalog, unanalysed)
                    self._sample(db, catalog, by_oid, materialized, enum_limit, sensitive)
            return catalog

    def _count(self, db: Any, catalog: Catalog, tables: list[Table]) -> None:
        """Row counts (to :data:`COUNT_CAP`) for the tables PostgreSQL has no estimate of yet."""
        import psycopg

        for table in tables:
            try:
                with db.transaction():  # a savepoint: one failure spoils nothing after it
                    table.row_estimate = int(db.execute(self.count_sql(table.name)).fetchone()[0])
            except psycopg.Error as exc:
                catalog.warnings.append(sample_failed(table.name, None, exc))

    def _sample(
        self,
        db: Any,
        catalog: Catalog,
        by_oid: dict[int, Table],
        materialized: dict[int, Table],
        enum_limit: int,
        sensitive: Sequence[str],
    ) -> None:
        """Enum samples, each in its own savepoint. A view's column whose plan reads a withheld
        column is not sampled; a materialized view's plan shows only itself, so its definition
        is planned in its place."""
        import psycopg

        withheld = withheld_pairs(catalog, sensitive)
        definitions = {
            materialized[oid].name: str(text).strip().rstrip(";")
            for oid, text in db.execute(
                "select c.oid, pg_get_viewdef(c.oid) from pg_class c where c.oid = any(%s)", [list(materialized)]
            ).fetchall()
        }
        for table in by_oid.values():
            for column in table.columns:
                if not sampled(table, column, sensitive):
                    continue
                sql = self.sample_sql(table.name, column.name)
                source = definitions.get(table.name)
                planned = sql if source is None else self.sample_sql(table.name, column.name, source)
                try:
                    with db.transaction():
                        # a base table's column was judged above; a view's column is skipped when its
                        # plan reads a withheld column (``_read_text``: what the view uses, not its scans' rows)
                        over = table.kind == "view" or source is not None
                        plan = _plan(db, planned, [enum_limit + 1], self.statement_seconds) if over else []
                        if over and _reads_masked(plan, withheld):
                            continue  # over a withheld column: never sampled
                        values = [row[0] for row in db.execute(sql, [enum_limit + 1], prepare=True).fetchall()]
                except (psycopg.Error, UsageError) as exc:
                    catalog.warnings.append(sample_failed(table.name, column.name, exc))
                    continue
                column.enum_sample = enum_sample(values, enum_limit)

    def _enrich(self, db: Any, catalog: Catalog, by_oid: dict[int, Table], enum_limit: int) -> None:
        for oid, kind, ref, cols, ref_cols in db.execute(_CONSTRAINTS).fetchall():
            table = by_oid.get(oid)
            if table is None:
                continue
            if kind == "f" and ref in by_oid:
                table.foreign_keys.append(ForeignKey(list(cols), by_oid[ref].name, list(ref_cols)))
            for name in cols:
                column = table.column(name)
                if column is not None and kind == "p":
                    column.primary = True
                elif column is not None and kind == "u" and len(cols) == 1:
                    column.unique = True
        for oid, name, unique, whole, cols in db.execute(_INDEXES).fetchall():
            if oid in by_oid:
                by_oid[oid].indexes.append(IndexInfo(name, list(cols), bool(unique)))
                column = by_oid[oid].column(cols[0]) if unique and whole and len(cols) == 1 else None
                if column is not None:  # a unique index (not only a constraint) makes a column unique
                    column.unique = True
        for view, ref in db.execute(_VIEW_REFS).fetchall():
            if view in by_oid and ref in by_oid:
                by_oid[view].view_refs.append(by_oid[ref].name)
        for table in by_oid.values():
            table.view_refs.sort()

    def select(self, sql: str, params: list[Any], limit: int, sensitive: set[tuple[str, str]]) -> Rows:
        with self._open() as db:
            return _run(db, sql, params, limit, sensitive, self.statement_seconds)

    def query(self, sql: str, limit: int, extra: Iterable[str] = ()) -> Rows:
        with self._open() as db:
            checked = self.checked(postgres_schema(db), sql, extra)
            rows = _run(db, checked.sql, [], limit, checked.sensitive, self.statement_seconds)
        rows.redacted = checked.redacted
        return rows


def _run(db: Any, sql: str, params: list[Any], limit: int, sensitive: set[tuple[str, str]], seconds: int) -> Rows:
    """The plan checked (the second layer under ``statement.check``), then the statement run."""
    import psycopg

    try:
        plan = _plan(db, sql, params, seconds)
        if _writes(plan):
            raise UsageError("sql: only a read-only SELECT is allowed (no writes)")
        hit = _reads_masked(plan, sensitive)
        if sensitive:
            _check_functions(db, plan)
        if sensitive and _reads_statistics(plan):
            raise UsageError(
                "sql: the statement reads the planner's statistics (pg_stats), which hold sampled values of "
                "masked columns; it is not run"
            )
        if hit:
            raise UsageError(
                f"sql: the statement reads {hit}, a masked column; leave it out (find answers it as "
                f"{REDACTED}), or add the connection with --show-sensitive"
            )
        cursor = db.execute(sql, params if params else None, prepare=True)
        fetched = cursor.fetchmany(limit + 1)
        names = [d.name for d in cursor.description or ()]
    except psycopg.errors.ReadOnlySqlTransaction:
        raise UsageError("sql: only a read-only SELECT is allowed (no writes)") from None
    except psycopg.errors.QueryCanceled:
        raise timed_out(seconds) from None
    except psycopg.Error as exc:
        raise refused("PostgreSQL", exc.sqlstate) from None
    return Rows(names, [list(row) for row in fetched[:limit]], len(fetched) > limit)


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def _plan(db: Any, sql: str, params: list[Any], seconds: int) -> list[Any]:
    """The statement's plan, over the extended protocol (one statement only)."""
    import psycopg

    try:
        row = db.execute("explain (verbose, format json) " + sql, params if params else None, prepare=True).fetchone()
    except psycopg.Error as exc:
        if "multiple commands" in str(exc):
            raise UsageError("sql: one statement at a time; remove everything after the first ';'") from None
        if isinstance(exc, psycopg.errors.QueryCanceled):
            raise timed_out(seconds) from None
        raise refused("PostgreSQL", exc.sqlstate) from None  # its text can carry a value (a failed cast)
    plan = row[0]
    return plan if isinstance(plan, list) else json.loads(plan)


def _nodes(plan: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    stack = [p.get("Plan", p) for p in plan] if isinstance(plan, list) else [plan]
    while stack:
        node = stack.pop()
        out.append(node)
        stack.extend(node.get("Plans", []))
    return out


#: built-ins that run SQL of their own (a query in a string, a whole table or schema): the plan
#: cannot show what they read
_RUNS_SQL = re.compile(r"(?<![\w$])(?:(?:query|table|cursor|schema|database)_to_xml\w*|ts_stat|dblink\w*)\s*\(", re.I)


def _check_functions(db: Any, plan: Any) -> None:
    """Refuse a statement calling a function whose reads its plan does not show: a built-in that
    runs SQL of its own, or any function outside ``pg_catalog`` (a user's function may read a
    masked column inside)."""
    text = json.dumps(plan, ensure_ascii=False)
    found = _RUNS_SQL.search(text)
    if found is None:
        called = sorted({name.lower() for name in re.findall(r"([A-Za-z_][\w$]*)\s*\(", text)})
        rows = db.execute(
            "select distinct p.proname from pg_proc p join pg_namespace n on n.oid = p.pronamespace "
            "where lower(p.proname) = any(%s) and n.nspname not in ('pg_catalog', 'information_schema')",
            [called],
        ).fetchall()
        if not rows:
            return
        name = str(rows[0][0])
    else:
        name = found.group(0).rstrip("( ")
    raise UsageError(
        f"sql: the statement calls {name}(), which reads what its plan does not show, so whether it reads a masked "
        f"column cannot be checked; it is not run"
    )


def _reads_statistics(plan: Any) -> bool:
    """pg_stats and its kin keep most-common values and histograms of every column, masked ones too."""
    return any(str(node.get("Relation Name", "")).startswith("pg_statistic") for node in _nodes(plan))


def _writes(plan: Any) -> bool:
    return any(node.get("Node Type") == "ModifyTable" for node in _nodes(plan))


#: nodes that pass their child's rows up unchanged: their Output is the child's
_PASS_THROUGH = {
    "Hash", "Sort", "Incremental Sort", "Materialize", "Memoize", "Limit", "Unique", "Gather", "Gather Merge",
    "LockRows",
}  # fmt: skip
#: nodes that name, by the children's aliases, every child column they use (in their Output or conditions)
_PROJECTING = {"Nested Loop", "Hash Join", "Merge Join", "Aggregate", "WindowAgg", "Result", "ProjectSet", "Group"}
#: a node's keys that name things, not values it reads
_NAMES = {
    "Node Type",
    "Relation Name",
    "Schema",
    "Alias",
    "Index Name",
    "CTE Name",
    "Subplan Name",
    "Parent Relationship",
}
_BARE = re.compile(r'^(?:(?:"(?:[^"]|"")+"|[\w$]+)\.)?(?:"(?:[^"]|"")+"|[\w$]+)$')


def _read_text(plan: Any) -> list[tuple[dict[str, Any], str]]:
    """Each node with the text of what it reads, lowercased: its conditions and keys, and its Output
    where that is read. A scan emits its table's whole row (the planner's physical target list) and
    a Hash or Sort passes it on; where their parent names what it uses (a join, an aggregate), the
    columns it does not use are not read. Everything else counts: the top node's Output (what the
    statement returns), the rows a subquery, CTE or UNION branch hands over, and any computed
    expression in an Output."""
    out: list[tuple[dict[str, Any], str]] = []
    stack = [(p.get("Plan", p), True) for p in plan] if isinstance(plan, list) else [(plan, True)]
    while stack:
        node, exposed = stack.pop()
        kind = str(node.get("Node Type", ""))
        wide = "Relation Name" in node or kind in _PASS_THROUGH  # its Output may carry unused columns
        shown = [item for item in node.get("Output", []) if exposed or not wide or not _BARE.match(str(item).strip())]
        rest = {k: v for k, v in node.items() if k not in _NAMES and k not in ("Plans", "Output")}
        out.append((node, json.dumps([rest, shown], ensure_ascii=False).lower()))
        for child in node.get("Plans", []):
            if child.get("Parent Relationship") in ("InitPlan", "SubPlan") or kind not in _PASS_THROUGH | _PROJECTING:
                stack.append((child, True))  # a subplan's, subquery's or branch's rows are all handed over
            else:
                stack.append((child, exposed and kind in _PASS_THROUGH))
    return out


def _reads_masked(plan: Any, sensitive: set[tuple[str, str]]) -> str | None:
    """The first masked column a plan reads (:func:`_read_text`), as "table.column": named bare
    on a node over the masked table, or qualified by an alias of it anywhere."""
    if not sensitive:
        return None
    masked_tables = {t for t, _ in sensitive}
    aliases: dict[str, str] = {}
    nodes = _read_text(plan)
    for node, _ in nodes:
        relation = str(node.get("Relation Name", "")).lower()
        if relation in masked_tables:
            aliases[str(node.get("Alias", relation)).lower()] = relation
    for node, text in nodes:
        relation = str(node.get("Relation Name", "")).lower()
        for table, column in sensitive:
            name = _ident(column)
            if relation == table and re.search(rf"(?<![\w$]){name}(?![\w$])", text):
                return f"{table}.{column}"
            for alias, aliased in aliases.items():
                # ``u.password``, or ``u.*``: a whole-row reference (row_to_json(u), u::text) reads every column
                named = rf"(?<![\w$]){_ident(alias)}\.(?:{name}(?![\w$])|\*)"
                if aliased == table and re.search(named, text):
                    return f"{table}.{column}"
    return None


def _ident(name: str) -> str:
    """A pattern for a name as a plan prints it, bare or quoted (``"pass word"``, JSON-escaped)."""
    return rf'(?:{re.escape(name)}|\\"{re.escape(name)}\\")'
