"""``find``'s three answers as types: :class:`Found` (one SELECT ran), :class:`Ambiguous` (the words
name more than one table) and :class:`MissingPredicate` (one table, but no ``where`` to pick rows).
Each ``to_json()`` is the wire answer the CLI, JSON-RPC and MCP give, key for key and in order."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from drsg.pipeline.catalog.backend import Rows

AMBIGUOUS_HINT = "name the table in entity (or add a field only it has) and ask again"
MISSING_PREDICATE_HINT = 'say which row: add where, e.g. {"where": {"name": "…"}}; find never scans a table'


@dataclass(frozen=True, slots=True)
class Candidate:
    """A table the entity might mean: its score and what matched (a name, an alias, ``meaning:0.81``)."""

    table: str
    kind: str
    score: float
    matched: str
    comment: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "kind": self.kind,
            "score": self.score,
            "matched": self.matched,
            "comment": self.comment,
        }


@dataclass(frozen=True, slots=True)
class FieldPick:
    """A column read; ``field`` the word that named it, None when no fields were asked (every column)."""

    column: str
    field: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"column": self.column} if self.field is None else {"field": self.field, "column": self.column}


@dataclass(frozen=True, slots=True)
class WherePick:
    """A filter: the word, the column it resolved to and the value as bound (the column's type)."""

    field: str
    column: str
    value: Any

    def to_json(self) -> dict[str, Any]:
        return {"field": self.field, "column": self.column, "value": self.value}


@dataclass(frozen=True, slots=True)
class Found:
    """One table, one parameterised SELECT run; masked values already ``[REDACTED]`` in ``rows``."""

    table: str
    fields: tuple[FieldPick, ...]
    where: tuple[WherePick, ...]
    sql: str
    rows: Rows
    notes: tuple[str, ...] = ()
    by_meaning: dict[str, float] | None = None  # words matched by meaning, with their similarity
    status: Literal["ok"] = "ok"

    def to_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "table": self.table,
            "fields": [f.to_json() for f in self.fields],
            "where": [w.to_json() for w in self.where],
            "sql": self.sql,
            "statements": 1,
            **self.rows.to_json(),
            "notes": list(self.notes),
            **({"by_meaning": dict(self.by_meaning)} if self.by_meaning else {}),
        }


@dataclass(frozen=True, slots=True)
class Ambiguous:
    """The entity names more than one table about equally: the best few, for the caller to choose."""

    entity: str
    candidates: tuple[Candidate, ...]
    hint: str = AMBIGUOUS_HINT
    status: Literal["ambiguous"] = "ambiguous"

    def to_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "entity": self.entity,
            "candidates": [c.to_json() for c in self.candidates],
            "hint": self.hint,
        }


@dataclass(frozen=True, slots=True)
class MissingPredicate:
    """One table resolved, but no ``where``: find never scans a table, so it names the columns to filter on."""

    table: str
    columns: tuple[str, ...]
    hint: str = MISSING_PREDICATE_HINT
    status: Literal["missing_predicate"] = "missing_predicate"

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "table": self.table, "hint": self.hint, "columns": list(self.columns)}


FindAnswer = Found | Ambiguous | MissingPredicate
