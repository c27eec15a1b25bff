"""The Backend port: what a database engine must do for the catalog, and the result of a query.

One module per engine (``sqlite_backend``, …), chosen by the connection's DSN
(``backends.backend_for``); ``tests/contract/test_catalog_contract.py`` holds each to one suite."""

from __future__ import annotations

import abc
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from drsg.kernel.errors import UsageError
from drsg.pipeline.catalog.connections import Connection
from drsg.pipeline.catalog.grants import no_roles
from drsg.pipeline.catalog.masking import is_sensitive
from drsg.pipeline.catalog.model import Catalog, Column, Table
from drsg.pipeline.catalog.statement import Checked, LiveSchema, check

#: longest a ``catalog sql`` statement may run by default (``[catalog] statement_seconds``; the
#: servers' own limits are set to it too)
STATEMENT_SECONDS = 30
#: longest text value an enum sample keeps (a longer one is prose, not a code)
ENUM_VALUE_CHARS = 64
#: most rows counted for a table the engine keeps no estimate of (a never-analysed PostgreSQL table):
#: exact below it, a lower bound at it
COUNT_CAP = 100_000


@dataclass
class Rows:
    """A query's answer: column names, rows (masked values already ``[REDACTED]``), and what was cut."""

    columns: list[str]
    rows: list[list[Any]]
    truncated: bool = False
    redacted: list[str] = field(default_factory=list)  # "table.column" the database withheld

    def to_json(self) -> dict[str, Any]:
        return {
            "columns": self.columns,
            "rows": self.rows,
            "row_count": len(self.rows),
            "truncated": self.truncated,
            "redacted": self.redacted,
        }


class Backend(abc.ABC):
    """One live database. Every call is one short session; nothing is kept open between calls."""

    engine: str
    quote_char: str = '"'
    placeholder: str = "?"

    def __init__(self, conn: Connection, statement_seconds: int = STATEMENT_SECONDS) -> None:
        self.conn = conn
        self.statement_seconds = statement_seconds  # the time limit of every statement it runs

    @abc.abstractmethod
    def test(self) -> str:
        """Connect and say what answered (engine and version); raise on failure."""

    @abc.abstractmethod
    def introspect(self, level: str, enum_limit: int, sensitive: Sequence[str]) -> Catalog:
        """The catalog at ``level`` ("l1": names and declared types; "l2"/"full": everything). An L2
        step that fails adds a warning and leaves the L1 facts in place. ``sensitive``: the names
        masked beside the built-in ones (``connections.sensitive_names``), never sampled."""

    @abc.abstractmethod
    def select(self, sql: str, params: list[Any], limit: int, sensitive: set[tuple[str, str]]) -> Rows:
        """Run one read-only statement with ``params`` bound, at most ``limit`` rows, the
        ``sensitive`` (table, column) pairs withheld by the database itself."""

    @abc.abstractmethod
    def query(self, sql: str, limit: int, extra: Iterable[str] = ()) -> Rows:
        """``catalog sql``: ``sql`` checked against the live schema, read in the same session
        (``statement.check``), and run as rewritten: sensitive outputs ``[REDACTED]``, at most
        ``limit`` rows, the database's own masking beneath, a time limit, no server text echoed.
        ``extra``: column names masked beside the connection's own."""

    def live_schema(self) -> LiveSchema:
        """The live schema (``live.py``) read in one short session: what ``catalog grants`` grants on.
        An engine without roles (SQLite) has nothing to grant."""
        raise no_roles(self.engine)

    def readable(self, names: Sequence[str]) -> list[str] | None:
        """The columns ``catalog grants`` withholds (``names``: ``connections.sensitive_names``) that
        the connected role can SELECT itself, by one privilege query; None: the engine has no roles."""
        return None

    def checked(self, live: LiveSchema, sql: str, extra: Iterable[str]) -> Checked:
        names = [*self.conn.sensitive_extra, *extra]
        return check(sql, live, names, mask=self.conn.sensitive_columns != "show")

    def quote(self, name: str) -> str:
        q = self.quote_char
        return q + name.replace(q, q + q) + q

    def sample_sql(self, table: str, column: str, source: str | None = None) -> str:
        """The one statement an enum sample runs: at most ``limit`` distinct non-null values (from
        ``source``, a subquery standing for the table, when given)."""
        col = self.quote(column)
        where = self.quote(table) if source is None else f"({source}) defined"
        return f"select distinct {col} from {where} where {col} is not null limit {self.placeholder}"

    def count_sql(self, table: str) -> str:
        """A row count that stops at :data:`COUNT_CAP` rows (for a table the engine keeps no estimate of)."""
        return f"select count(*) from (select 1 from {self.quote(table)} limit {COUNT_CAP}) counted"


def timed_out(seconds: int) -> UsageError:
    return UsageError(
        f"sql: the statement ran past the {seconds} s limit ([catalog] statement_seconds) and was stopped; narrow it "
        f"(a WHERE, a LIMIT, a bounded recursion)"
    )


def refused(engine: str, code: object) -> UsageError:
    """The database refused a checked statement: its error text can carry data (a value echoed in a
    conversion error), so only its code is named."""
    return UsageError(
        f"sql: {engine} refused the statement (error {code}); check the column types and names with "
        f"`drsg catalog schema`"
    )


def enum_sample(values: list[Any], limit: int) -> list[str] | None:
    """The sample to keep from ``SELECT DISTINCT … LIMIT limit+1``: all of them when there are at
    most ``limit`` short text values, else nothing (a high-cardinality column has no enum)."""
    if len(values) > limit or not values:
        return None
    if any(not isinstance(v, str) or len(v) > ENUM_VALUE_CHARS for v in values):
        return None
    return sorted(values)


def sampled(table: Table, column: Column, names: Iterable[str]) -> bool:
    """Whether a column of ``table`` may be sampled at all: a text column that is not sensitive (by
    name), not generated (it may compute a secret) and not unique (an e-mail address, a key: no
    small set of values, and sampling it copies personal data). A view's column passes here; what
    it reads is checked against :func:`withheld_pairs` by the database when it is sampled."""
    if column.type_class != "text" or column.generated or is_sensitive(column.name, names):
        return False
    return not (table.kind == "table" and _unique(table, column))


def withheld_pairs(catalog: Catalog, names: Iterable[str]) -> set[tuple[str, str]]:
    """The (table, column) pairs of base tables a sample never reads, directly or through a view,
    lowercased: the sensitive ones, the generated ones, and the unique text ones (a view may join
    on an integer key and still be sampled; it may not pass an e-mail address on)."""
    names = list(names)
    out = secret_pairs(catalog, names)
    for t in catalog.tables:
        if t.kind == "table":
            out |= {
                (t.name.lower(), c.name.lower())
                for c in t.columns
                if c.generated or (c.type_class == "text" and _unique(t, c))
            }
    return out


def _unique(table: Table, column: Column) -> bool:
    """A single-column unique constraint or index, or the table's one-column primary key."""
    return column.unique or (column.primary and sum(c.primary for c in table.columns) == 1)


def sample_failed(table: str, column: str | None, exc: BaseException) -> str:
    """The warning for a sample or count that failed: which object, and the error's class only
    (a server's message can carry a value, e.g. the text that failed a cast)."""
    where = f"{table}.{column}" if column else table
    what = "sample" if column else "row count"
    # the engine's code, never its text: PostgreSQL's SQLSTATE, SQLite's error name, MySQL's number
    code = getattr(exc, "sqlstate", None) or getattr(exc, "sqlite_errorname", None)
    if code is None and exc.args and isinstance(exc.args[0], int):
        code = exc.args[0]
    return f"{where}: {what} failed ({type(exc).__name__}{f' {code}' if code else ''}); none kept"


def secret_pairs(catalog: Catalog, extra: Iterable[str] = ()) -> set[tuple[str, str]]:
    """The (table, column) pairs of base tables the policy masks, lowercased (views read through them)."""
    names = list(extra)
    return {
        (t.name.lower(), c.name.lower())
        for t in catalog.tables
        if t.kind == "table"
        for c in t.columns
        if is_sensitive(c.name, names)
    }
