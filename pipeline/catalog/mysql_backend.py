"""MySQL and MariaDB through PyMySQL: the catalog from ``information_schema`` (the connection's
database), queries in a ``READ ONLY`` transaction with a statement time limit.

Masking asks the server which columns a statement reads: it is first explained with the
optimizer trace on, whose ``expanded_query`` spells every column out qualified by its table —
views merged, ``*`` expanded, CTEs, subqueries and UNION branches each prepared — and a statement
whose trace names a masked column is refused, naming it. A trace the server withholds (the user
lacks the view's privileges, or it outgrew the trace memory) refuses the statement too: what
cannot be checked is not run. ``find`` never selects a masked column (``NULL`` in its place,
answered ``[REDACTED]``). The client never enables multi-statements, so the server parses one
statement only, and the read-only transaction refuses any write."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from typing import Any
from urllib.parse import unquote, urlsplit

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
from drsg.pipeline.catalog.live import mysql_schema
from drsg.pipeline.catalog.masking import REDACTED
from drsg.pipeline.catalog.model import Catalog, Column, ForeignKey, IndexInfo, Table
from drsg.pipeline.catalog.statement import LiveSchema

_TIMED_OUT = (1969, 3024)  # MariaDB's max_statement_time, MySQL's max_execution_time
_TRACE_BYTES = 4 << 20


class MysqlBackend(Backend):
    engine = "mysql"
    quote_char = "`"
    placeholder = "%s"

    def _open(self) -> Any:
        import pymysql

        parts = urlsplit(self.conn.dsn)
        try:
            db = pymysql.connect(
                host=parts.hostname or "127.0.0.1",
                port=parts.port or 3306,
                user=unquote(parts.username or ""),
                password=self.conn.password() or "",
                database=unquote(parts.path.lstrip("/")) or None,
                charset="utf8mb4",
                connect_timeout=10,
                autocommit=True,
            )
        except pymysql.MySQLError as exc:
            raise CatalogError(f"connection {self.conn.name!r}: cannot connect ({_message(exc)})") from None
        with db.cursor() as cur:
            if _is_mariadb(db):
                cur.execute(f"SET SESSION max_statement_time = {self.statement_seconds}")
            else:
                cur.execute(f"SET SESSION max_execution_time = {self.statement_seconds * 1000}")
            cur.execute(f"SET SESSION optimizer_trace = 'enabled=on', optimizer_trace_max_mem_size = {_TRACE_BYTES}")
            cur.execute("START TRANSACTION READ ONLY")
        return db

    def test(self) -> str:
        db = self._open()
        try:
            with db.cursor() as cur:
                cur.execute("SELECT VERSION()")
                version = str(cur.fetchone()[0])
        finally:
            db.close()
        return f"{'mariadb' if 'mariadb' in version.lower() else 'mysql'} {version}"

    def live_schema(self) -> LiveSchema:
        import pymysql

        db = self._open()
        try:
            return mysql_schema(db.cursor())
        except pymysql.MySQLError as exc:
            code = exc.args[0] if exc.args else "?"
            raise CatalogError(f"connection {self.conn.name!r}: cannot read the schema ({code})") from None
        finally:
            db.close()

    def readable(self, names: Sequence[str]) -> list[str]:
        """The server's own answer: ``COLUMNS.PRIVILEGES`` lists what the session may do with each
        column, through its user, its role, a database, table or column grant alike."""
        import pymysql

        db = self._open()
        try:
            cur = db.cursor()
            try:
                live = mysql_schema(cur)
                targets = withheld_columns(live, names)
                if not targets:
                    return []
                cur.execute(
                    "SELECT TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME FROM information_schema.COLUMNS "
                    "WHERE FIND_IN_SET('select', PRIVILEGES) > 0"
                )
                rows = cur.fetchall()
            except pymysql.MySQLError as exc:
                code = exc.args[0] if exc.args else "?"
                raise CatalogError(f"connection {self.conn.name!r}: cannot read its privileges ({code})") from None
        finally:
            db.close()
        return named(live, {tuple(row) for row in rows} & targets)

    def introspect(self, level: str, enum_limit: int, sensitive: Sequence[str]) -> Catalog:
        import pymysql

        db = self._open()
        try:
            cur = db.cursor()
            cur.execute("SELECT DATABASE()")
            catalog = Catalog("mysql", str(cur.fetchone()[0]), level)
            tables: dict[str, Table] = {}
            unestimated: list[Table] = []  # InnoDB's estimate lags: a fresh table says 0 rows
            try:
                cur.execute(
                    "SELECT TABLE_NAME, TABLE_TYPE, TABLE_COMMENT, TABLE_ROWS FROM information_schema.TABLES "
                    "WHERE TABLE_SCHEMA = DATABASE() ORDER BY TABLE_NAME"
                )
                for name, kind, comment, rows in cur.fetchall():
                    table = Table(name, "view" if kind == "VIEW" else "table")
                    if level != "l1":
                        table.comment = comment or None if kind != "VIEW" else None
                        table.row_estimate = int(rows) if rows is not None and kind != "VIEW" else None
                        if kind != "VIEW" and not rows:
                            unestimated.append(table)
                    tables[name] = table
                    catalog.tables.append(table)
                cur.execute(
                    "SELECT TABLE_NAME, ORDINAL_POSITION, COLUMN_NAME, COLUMN_TYPE, IS_NULLABLE, COLUMN_DEFAULT, "
                    "COLUMN_COMMENT, COLUMN_KEY, EXTRA FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() "
                    "ORDER BY TABLE_NAME, ORDINAL_POSITION"
                )
                for tname, pos, name, declared, nullable, default, comment, key, extra in cur.fetchall():
                    if tname not in tables:
                        continue
                    # VIRTUAL/STORED GENERATED (MariaDB: also PERSISTENT); not MySQL's DEFAULT_GENERATED
                    generated = bool(re.search(r"\b(VIRTUAL|STORED|PERSISTENT)\b", str(extra or ""), re.I))
                    column = Column(name, int(pos), str(declared), generated=generated)
                    if level != "l1":
                        column.nullable, column.comment = nullable == "YES", comment or None
                        column.default = None if default in (None, "NULL") else str(default)
                        column.primary, column.unique = key == "PRI", key == "UNI"
                    tables[tname].columns.append(column)
            except pymysql.MySQLError as exc:
                raise CatalogError(
                    f"connection {self.conn.name!r}: cannot read the catalog ({_message(exc)})"
                ) from None
            if level != "l1":
                try:
                    self._enrich(cur, catalog, tables)
                except pymysql.MySQLError as exc:  # L2 never discards L1
                    catalog.warnings.append(f"l2: {_message(exc)}")
                else:
                    self._count(cur, catalog, unestimated)
                    self._sample(cur, catalog, enum_limit, sensitive)
            return catalog
        finally:
            db.close()

    def _count(self, cur: Any, catalog: Catalog, tables: list[Table]) -> None:
        """Row counts (to :data:`COUNT_CAP`) for the tables whose estimate says 0."""
        import pymysql

        for table in tables:
            try:
                cur.execute(self.count_sql(table.name))
                table.row_estimate = int(cur.fetchone()[0])
            except pymysql.MySQLError as exc:
                catalog.warnings.append(sample_failed(table.name, None, exc))

    def _sample(self, cur: Any, catalog: Catalog, enum_limit: int, sensitive: Sequence[str]) -> None:
        """Enum samples, one statement each (a failure is a warning naming the column; a failed
        statement leaves the read-only transaction usable). A view's column whose trace reads a
        withheld column is not sampled."""
        import pymysql

        withheld = withheld_pairs(catalog, sensitive)
        for table in catalog.tables:
            for column in table.columns:
                if not sampled(table, column, sensitive):
                    continue
                sql = self.sample_sql(table.name, column.name)
                try:
                    if table.kind == "view":  # a base table's column was judged above
                        self._check(cur, sql, [enum_limit + 1], withheld)
                    cur.execute(sql, [enum_limit + 1])
                    values = [row[0] for row in cur.fetchall()]
                except UsageError:
                    continue  # over a withheld column: never sampled
                except pymysql.MySQLError as exc:
                    catalog.warnings.append(sample_failed(table.name, column.name, exc))
                    continue
                column.enum_sample = enum_sample(values, enum_limit)

    def _enrich(self, cur: Any, catalog: Catalog, tables: dict[str, Table]) -> None:
        cur.execute(
            "SELECT TABLE_NAME, CONSTRAINT_NAME, COLUMN_NAME, REFERENCED_TABLE_NAME, REFERENCED_COLUMN_NAME "
            "FROM information_schema.KEY_COLUMN_USAGE WHERE TABLE_SCHEMA = DATABASE() "
            "AND REFERENCED_TABLE_NAME IS NOT NULL ORDER BY TABLE_NAME, CONSTRAINT_NAME, ORDINAL_POSITION"
        )
        fks: dict[tuple[str, str], ForeignKey] = {}
        for tname, constraint, col, ref, ref_col in cur.fetchall():
            fk = fks.setdefault((tname, constraint), ForeignKey([], ref, []))
            fk.columns.append(col)
            fk.ref_columns.append(ref_col)
        for (tname, _), fk in sorted(fks.items()):
            if tname in tables:
                tables[tname].foreign_keys.append(fk)
        cur.execute(
            "SELECT TABLE_NAME, INDEX_NAME, NON_UNIQUE, COLUMN_NAME FROM information_schema.STATISTICS "
            "WHERE TABLE_SCHEMA = DATABASE() AND INDEX_NAME <> 'PRIMARY' ORDER BY TABLE_NAME, INDEX_NAME, SEQ_IN_INDEX"
        )
        indexes: dict[tuple[str, str], IndexInfo] = {}
        for tname, name, non_unique, col in cur.fetchall():
            indexes.setdefault((tname, name), IndexInfo(name, [], not int(non_unique))).columns.append(col)
        for (tname, _), info in sorted(indexes.items()):
            if tname in tables:
                tables[tname].indexes.append(info)
        cur.execute("SELECT TABLE_NAME, VIEW_DEFINITION FROM information_schema.VIEWS WHERE TABLE_SCHEMA = DATABASE()")
        for vname, definition in cur.fetchall():
            # the server stores a view's query with every table qualified: `db`.`table`
            reads = {m for m in re.findall(r"`[^`]+`\.`([^`]+)`", definition or "") if m in tables and m != vname}
            if vname in tables:
                tables[vname].view_refs = sorted(reads)

    def _check(self, cur: Any, sql: str, params: list[Any], sensitive: set[tuple[str, str]]) -> None:
        """Refuse a statement whose optimizer trace reads a masked column (or that withholds its trace)."""
        cur.execute("EXPLAIN " + sql, params or None)
        cur.fetchall()
        if not sensitive:
            return
        cur.execute(
            "SELECT TRACE, MISSING_BYTES_BEYOND_MAX_MEM_SIZE, INSUFFICIENT_PRIVILEGES "
            "FROM information_schema.OPTIMIZER_TRACE"
        )
        row = cur.fetchone()
        if row is None or row[1] or row[2] or not row[0]:
            raise UsageError(
                "sql: the server will not show which columns this statement reads (it lacks the privileges on a "
                "view, or the statement is too big), so it is not run; query the tables directly"
            )
        trace = str(row[0])
        cur.execute("SELECT ROUTINE_NAME FROM information_schema.ROUTINES WHERE ROUTINE_TYPE = 'FUNCTION'")
        for (routine,) in cur.fetchall():  # a stored function's own reads are not in the trace
            if re.search(rf"(?<![\w`])`?{re.escape(str(routine))}`?\s*\(", trace, re.IGNORECASE):
                raise UsageError(
                    f"sql: the statement calls {routine}(), which reads what the server's trace does not show, so "
                    f"whether it reads a masked column cannot be checked; it is not run"
                )
        if re.search(r"column_stats|innodb_(table|index)_stats|histogram", trace, re.IGNORECASE):
            raise UsageError(
                "sql: the statement reads the server's column statistics, which hold values of masked columns; "
                "it is not run"
            )
        # Columns are qualified by their table or its alias (`u`.`password`): any qualifier counts,
        # so a masked name read through an alias is caught (over-refusing is the safe side).
        used = _unmerged(trace)
        for table, column in sorted(sensitive):
            if re.search(rf"\.\s*`?{re.escape(column)}`?(?![\w`])", used, re.IGNORECASE):
                raise UsageError(
                    f"sql: the statement reads {table}.{column}, a masked column; leave it out (find answers it as "
                    f"{REDACTED}), or add the connection with --show-sensitive"
                )

    def select(self, sql: str, params: list[Any], limit: int, sensitive: set[tuple[str, str]]) -> Rows:
        db = self._open()
        try:
            return self._run(db.cursor(), sql, params, limit, sensitive)
        finally:
            db.close()

    def query(self, sql: str, limit: int, extra: Iterable[str] = ()) -> Rows:
        import pymysql

        db = self._open()
        try:
            cur = db.cursor()
            try:
                live = mysql_schema(cur)
            except pymysql.MySQLError as exc:
                raise refused("the server", exc.args[0] if exc.args else "?") from None
            checked = self.checked(live, sql, extra)
            rows = self._run(cur, checked.sql, [], limit, checked.sensitive)
        finally:
            db.close()
        rows.redacted = checked.redacted
        return rows

    def _run(self, cur: Any, sql: str, params: list[Any], limit: int, sensitive: set[tuple[str, str]]) -> Rows:
        import pymysql

        try:
            self._check(cur, sql, params, sensitive)
            cur.execute(sql, params or None)
            fetched = cur.fetchmany(limit + 1)
            names = [d[0] for d in cur.description or ()]
        except pymysql.MySQLError as exc:
            code = exc.args[0] if exc.args else 0
            if code == 1792:  # ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION
                raise UsageError("sql: only a read-only SELECT is allowed (no writes)") from None
            if code == 1064 and ";" in sql.strip().rstrip(";"):
                raise UsageError("sql: one statement at a time; remove everything after the first ';'") from None
            if code in _TIMED_OUT:
                raise timed_out(self.statement_seconds) from None
            # never the server's text: it can carry a value (``XPATH syntax error: '~hunter2'``)
            raise refused("the server", code) from None
        return Rows(names, [list(row) for row in fetched[:limit]], len(fetched) > limit)


def _unmerged(trace: str) -> str:
    """The trace without the own SELECT of each view merged into the statement: that lists every
    column of the view, but what the statement uses of it is spelled out again, on the view's
    tables, in the statement's own query and conditions (a view's filter included). A view the
    server materializes keeps its SELECT (it is run whole). The trace as it is when not JSON."""
    try:
        tree = json.loads(trace)
    except ValueError:
        return trace
    merged = set()
    stack: list[Any] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            view = node.get("view")
            if isinstance(view, dict) and view.get("algorithm") == "merged":
                merged.add(view.get("select_id"))
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)

    def keep(node: Any) -> Any:
        if isinstance(node, dict):
            step = node.get("join_preparation")
            if isinstance(step, dict) and step.get("select_id") in merged:
                return None
            return {key: keep(value) for key, value in node.items()}
        if isinstance(node, list):
            return [keep(item) for item in node]
        return node

    return json.dumps(keep(tree), ensure_ascii=False)


def _is_mariadb(db: Any) -> bool:
    return "mariadb" in str(db.get_server_info()).lower()


def _message(exc: BaseException) -> str:
    args: tuple[Any, ...] = tuple(exc.args)
    return str(args[1]) if len(args) > 1 else str(exc)
