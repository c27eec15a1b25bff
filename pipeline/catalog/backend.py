"""The Backend port: what a database engine must do for the catalog, and the result of a query.

One module per engine (``sqlite_backend``, …), chosen by the connection's DSN
(``backends.backend_for``); ``tests/contract/test_catalog_contract.py`` holds each to one suite."""

from __future__ import annotations

import abc
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from drsg.pipeline.catalog.connections import Connection
from drsg.pipeline.catalog.masking import is_sensitive
from drsg.pipeline.catalog.model import Catalog

#: longest text value an enum sample keeps (a longer one is prose, not a code)
ENUM_VALUE_CHARS = 64


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

    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    @abc.abstractmethod
    def test(self) -> str:
        """Connect and say what answered (engine and version); raise on failure."""

    @abc.abstractmethod
    def introspect(self, level: str, enum_limit: int) -> Catalog:
        """The catalog at ``level`` ("l1": names and declared types; "l2"/"full": everything). An L2
        step that fails adds a warning and leaves the L1 facts in place."""

    @abc.abstractmethod
    def select(self, sql: str, params: list[Any], limit: int, sensitive: set[tuple[str, str]]) -> Rows:
        """Run one read-only statement with ``params`` bound, at most ``limit`` rows, the
        ``sensitive`` (table, column) pairs withheld by the database itself."""

    def quote(self, name: str) -> str:
        q = self.quote_char
        return q + name.replace(q, q + q) + q


def enum_sample(values: list[Any], limit: int) -> list[str] | None:
    """The sample to keep from ``SELECT DISTINCT … LIMIT limit+1``: all of them when there are at
    most ``limit`` short text values, else nothing (a high-cardinality column has no enum)."""
    if len(values) > limit or not values:
        return None
    if any(not isinstance(v, str) or len(v) > ENUM_VALUE_CHARS for v in values):
        return None
    return sorted(values)


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
