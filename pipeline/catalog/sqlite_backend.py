"""SQLite: the catalog from ``sqlite_master`` and the pragmas; queries on a read-only connection
whose authorizer withholds sensitive columns.

SQLite has no column comments: a ``-- comment`` at the end of a column's line in ``CREATE TABLE``
(or on the table's opening line) is read as one, the convention most SQLite schemas use.

Masking is the database's: the authorizer answers ``SQLITE_IGNORE`` to every read of a sensitive
column, so SQLite itself reads it as NULL wherever it appears (an alias, an expression, a
``WHERE``, ``SELECT *``, a view, a CTE, a subquery, a UNION), and denies every action that is
not a read (writes, ``ATTACH``, pragmas, transactions). Statements are never cached, so each one
passes the authorizer."""

from __future__ import annotations

import re
import sqlite3
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

from drsg.kernel.errors import CatalogError, UsageError
from drsg.pipeline.catalog.backend import (
    Backend,
    Rows,
    enum_sample,
    sample_failed,
    sampled,
    timed_out,
    withheld_pairs,
)
from drsg.pipeline.catalog.backend import refused as refused_by
from drsg.pipeline.catalog.connections import sqlite_path
from drsg.pipeline.catalog.live import sqlite_schema
from drsg.pipeline.catalog.masking import REDACTED
from drsg.pipeline.catalog.model import Catalog, Column, ForeignKey, IndexInfo, Table

_READ_ONLY = {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_FUNCTION, sqlite3.SQLITE_RECURSIVE}
_COMMENT_LINE = re.compile(r'^\s*[`"\[]?([^`"\]\s,(]+)[`"\]]?\s+[^-]*?--\s*(.+?)\s*$')
_TABLE_LINE = re.compile(r"(?is)^\s*create\s+(?:temp\w*\s+)?(?:table|view)\b[^\n]*?--\s*(.+?)\s*$")


class SqliteBackend(Backend):
    engine = "sqlite"

    @property
    def path(self) -> Path:
        return sqlite_path(self.conn.dsn)

    def _open(self) -> sqlite3.Connection:
        if not self.path.is_file():
            raise CatalogError(f"connection {self.conn.name!r}: no SQLite file at {self.path}; check the DSN")
        try:
            db = sqlite3.connect(
                f"file:{quote(str(self.path.resolve()))}?mode=ro", uri=True, cached_statements=0, timeout=5
            )
        except sqlite3.Error as exc:
            raise CatalogError(f"connection {self.conn.name!r}: cannot open {self.path} ({exc})") from None
        return db

    def test(self) -> str:
        db = self._open()
        try:
            version = db.execute("select sqlite_version()").fetchone()[0]
            db.execute("select count(*) from sqlite_master").fetchone()
        except sqlite3.DatabaseError as exc:
            raise CatalogError(
                f"connection {self.conn.name!r}: {self.path} is not an SQLite database ({exc})"
            ) from None
        finally:
            db.close()
        return f"sqlite {version}"

    # ------------------------------------------------------------------ the catalog

    def introspect(self, level: str, enum_limit: int, sensitive: Sequence[str]) -> Catalog:
        db = self._open()
        try:
            catalog = Catalog("sqlite", self.path.name, level)
            try:
                objects = db.execute(
                    "select type, name, coalesce(sql, '') from sqlite_master "
                    "where type in ('table', 'view') and name not like 'sqlite_%' order by name"
                ).fetchall()
            except sqlite3.DatabaseError as exc:
                raise CatalogError(f"connection {self.conn.name!r}: cannot read the schema ({exc})") from None
            for kind, name, _sql in objects:
                table = Table(name, kind)
                for cid, col, declared, _notnull, _default, _pk, hidden, *_ in db.execute(
                    f"pragma table_xinfo({self.quote(name)})"
                ):  # hidden 2 and 3: a generated column (virtual, stored)
                    table.columns.append(Column(col, cid + 1, declared or "", generated=hidden in (2, 3)))
                catalog.tables.append(table)
            if level != "l1":
                enriched = []
                for table, (_kind, _name, sql) in zip(catalog.tables, objects, strict=True):
                    try:
                        self._enrich(db, table, sql)
                        enriched.append(table)
                    except sqlite3.Error as exc:  # L2 never discards L1
                        catalog.warnings.append(f"{table.name}: {exc}")
                self._sample(db, catalog, enriched, enum_limit, sensitive)
            return catalog
        finally:
            db.close()

    def _enrich(self, db: sqlite3.Connection, table: Table, sql: str) -> None:
        name = table.name
        comments = _comments(sql)
        table.comment = comments.get("")
        for cid, col, _declared, notnull, default, pk, *_ in db.execute(f"pragma table_xinfo({self.quote(name)})"):
            column = table.columns[cid]
            column.nullable, column.default, column.primary = not notnull, default, bool(pk)
            column.comment = comments.get(col.lower())
        if table.kind == "view":
            table.view_refs = sorted(_tables_read(db, f"select * from {self.quote(name)}") - {name})
        else:
            for _id, _seq, ref, src, dst, *_ in db.execute(f"pragma foreign_key_list({self.quote(name)})"):
                table.foreign_keys.append(ForeignKey([src], ref, [dst] if dst else []))
            for _seq, index, unique, _origin, *_ in db.execute(f"pragma index_list({self.quote(name)})"):
                cols = [row[2] for row in db.execute(f"pragma index_info({self.quote(index)})") if row[2]]
                table.indexes.append(IndexInfo(index, cols, bool(unique)))
                if unique and len(cols) == 1 and table.column(cols[0]):
                    table.column(cols[0]).unique = True  # type: ignore[union-attr]
            table.row_estimate = _row_estimate(db, self.quote(name))
            if table.row_estimate is None:  # WITHOUT ROWID: counted, to COUNT_CAP
                table.row_estimate = int(db.execute(self.count_sql(name)).fetchone()[0])

    def _sample(
        self, db: sqlite3.Connection, catalog: Catalog, tables: list[Table], enum_limit: int, sensitive: Sequence[str]
    ) -> None:
        """Enum samples, one statement each (a failure is a warning naming the column). They are
        read through the masking authorizer over the withheld columns, shown or not: a view's
        column over a password (or a generated or unique column) reads as NULL there, so its value
        is never persisted, whatever the view calls it. Only tables whose L2 facts were read are
        sampled: uniqueness comes from them."""
        withheld = withheld_pairs(catalog, sensitive)
        db.set_authorizer(_masking(withheld, set(), []))
        try:
            for table in tables:
                for column in table.columns:
                    if not sampled(table, column, sensitive):
                        continue
                    try:
                        rows = db.execute(self.sample_sql(table.name, column.name), (enum_limit + 1,)).fetchall()
                    except sqlite3.Error as exc:
                        catalog.warnings.append(sample_failed(table.name, column.name, exc))
                        continue
                    column.enum_sample = enum_sample([row[0] for row in rows], enum_limit)
        finally:
            db.set_authorizer(None)

    # ------------------------------------------------------------------ queries

    def select(self, sql: str, params: list[Any], limit: int, sensitive: set[tuple[str, str]]) -> Rows:
        db = self._open()
        try:
            return self._run(db, sql, params, limit, sensitive)
        finally:
            db.close()

    def query(self, sql: str, limit: int, extra: Iterable[str] = ()) -> Rows:
        db = self._open()
        try:
            checked = self.checked(sqlite_schema(db), sql, extra)
            rows = self._run(db, checked.sql, [], limit, checked.sensitive)
        finally:
            db.close()
        rows.redacted = sorted({*rows.redacted, *checked.redacted})
        return rows

    def _run(
        self, db: sqlite3.Connection, sql: str, params: list[Any], limit: int, sensitive: set[tuple[str, str]]
    ) -> Rows:
        withheld: set[str] = set()
        refused: list[str] = []
        deadline = time.monotonic() + self.statement_seconds

        db.set_authorizer(_masking(sensitive, withheld, refused))
        # the time limit: SQLite calls this every 10,000 steps and abandons the statement on 1
        db.set_progress_handler(lambda: int(time.monotonic() > deadline), 10_000)
        try:
            cursor = db.execute(sql, params)
            fetched = cursor.fetchmany(limit + 1)
            names = [d[0] for d in cursor.description or ()]
        except sqlite3.ProgrammingError as exc:
            if "one statement" in str(exc):
                raise UsageError("sql: one statement at a time; remove everything after the first ';'") from None
            raise UsageError("sql: the statement and its parameters do not match; check them") from None
        except sqlite3.OperationalError as exc:
            if "interrupted" in str(exc):
                raise timed_out(self.statement_seconds) from None
            if refused or "not authorized" in str(exc):
                raise UsageError("sql: only a read-only SELECT is allowed (no writes, ATTACH, PRAGMA)") from None
            raise refused_by("SQLite", getattr(exc, "sqlite_errorname", "SQLITE_ERROR")) from None
        except sqlite3.DatabaseError as exc:
            raise refused_by("SQLite", getattr(exc, "sqlite_errorname", "SQLITE_ERROR")) from None
        finally:
            db.set_progress_handler(None, 0)
        masked = {name.split(".", 1)[1].lower() for name in withheld}
        names = [name.strip('"`[]') for name in names]
        rows = [
            [REDACTED if value is None and names[i].lower() in masked else value for i, value in enumerate(row)]
            for row in fetched[:limit]
        ]
        return Rows(names, rows, len(fetched) > limit, sorted(withheld))


def _masking(sensitive: set[tuple[str, str]], withheld: set[str], refused: list[str]) -> Any:
    """The authorizer: reads of ``sensitive`` (table, column) pairs read as NULL; anything but a read is denied."""

    def authorize(action: int, arg1: str | None, arg2: str | None, _db: str | None, _src: str | None) -> int:
        if action == sqlite3.SQLITE_READ:
            if arg1 is not None and arg2 is not None and (arg1.lower(), arg2.lower()) in sensitive:
                withheld.add(f"{arg1}.{arg2}")
                return sqlite3.SQLITE_IGNORE  # SQLite reads the column as NULL
            return sqlite3.SQLITE_OK
        if action in _READ_ONLY:
            return sqlite3.SQLITE_OK
        if action == sqlite3.SQLITE_PRAGMA and arg1 == "data_version" and arg2 is None:
            return sqlite3.SQLITE_OK  # read by a full-text index's own statements: a counter, no data
        refused.append(str(action))
        return sqlite3.SQLITE_DENY

    return authorize


def _comments(sql: str) -> dict[str, str]:
    """``-- comment`` per column (lowercased name), and the table's under ``""``."""
    out: dict[str, str] = {}
    for i, line in enumerate(sql.splitlines()):
        if i == 0:
            head = _TABLE_LINE.match(line)
            if head:
                out[""] = head.group(1)
            continue
        found = _COMMENT_LINE.match(line)
        if found and found.group(1).lower() not in ("primary", "foreign", "unique", "constraint", "check"):
            out[found.group(1).lower()] = found.group(2)
    return out


def _tables_read(db: sqlite3.Connection, sql: str) -> set[str]:
    """The tables a statement reads, as SQLite's own authorizer reports them while preparing it."""
    seen: set[str] = set()

    def watch(action: int, arg1: str | None, *_: Any) -> int:
        if action == sqlite3.SQLITE_READ and arg1:
            seen.add(arg1)
        return sqlite3.SQLITE_OK

    db.set_authorizer(watch)
    try:
        db.execute(sql + " limit 0").fetchall()
    finally:
        db.set_authorizer(None)
    return seen


def _row_estimate(db: sqlite3.Connection, quoted: str) -> int | None:
    """``max(rowid)``: free on a rowid table (an upper bound after deletes); None without a rowid."""
    try:
        value = db.execute(f"select max(rowid) from {quoted}").fetchone()[0]
    except sqlite3.OperationalError:
        return None
    return int(value or 0)
