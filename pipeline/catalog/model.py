"""The catalog's shapes, as every backend reports them and the plane stores them. Pure."""

from __future__ import annotations

from dataclasses import dataclass, field

TYPE_CLASSES = ("integer", "decimal", "float", "text", "boolean", "datetime", "binary", "json", "other")


def type_class(declared: str) -> str:
    """The family of a declared SQL type (SQLite affinity rules first, then the other dialects' names)."""
    t = declared.lower()
    if t in ("bool", "boolean") or t.startswith("tinyint(1)"):
        return "boolean"
    if "int" in t or t in ("serial", "bigserial", "smallserial"):
        return "integer"
    if any(word in t for word in ("char", "clob", "text", "enum", "set(", "uuid", "citext")) or t == "string":
        return "text"
    if any(word in t for word in ("numeric", "decimal", "money")):
        return "decimal"
    if any(word in t for word in ("real", "floa", "doub")):
        return "float"
    if any(word in t for word in ("date", "time", "year", "interval")):
        return "datetime"
    if any(word in t for word in ("blob", "binary", "bytea")):
        return "binary"
    if "json" in t:
        return "json"
    return "other"


@dataclass
class Column:
    name: str
    ordinal: int
    declared_type: str
    nullable: bool = True
    default: str | None = None
    comment: str | None = None
    primary: bool = False
    unique: bool = False
    enum_sample: list[str] | None = None  # the one data-shaped field: SELECT DISTINCT … LIMIT n (L2)
    generated: bool = False  # computed from other columns (GENERATED ALWAYS AS): never sampled

    @property
    def type_class(self) -> str:
        return type_class(self.declared_type)


@dataclass
class ForeignKey:
    columns: list[str]
    ref_table: str
    ref_columns: list[str]


@dataclass
class IndexInfo:
    name: str
    columns: list[str]
    unique: bool


@dataclass
class Table:
    name: str
    kind: str = "table"  # "table" or "view"
    comment: str | None = None
    columns: list[Column] = field(default_factory=list)
    foreign_keys: list[ForeignKey] = field(default_factory=list)
    indexes: list[IndexInfo] = field(default_factory=list)
    row_estimate: int | None = None
    view_refs: list[str] = field(default_factory=list)  # tables a view reads (L2)

    def column(self, name: str) -> Column | None:
        return next((c for c in self.columns if c.name == name), None)


@dataclass
class Catalog:
    engine: str
    database: str
    level: str  # "l1", "l2" or "full"
    tables: list[Table] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # an L2 step that failed (L1 stays)

    def table(self, name: str) -> Table | None:
        return next((t for t in self.tables if t.name == name), None)


def keep_l2(new: Catalog, old: Catalog) -> Catalog:
    """``new`` (an L1 snapshot) with the L2 facts ``old`` had for the objects still there: an l1 run
    refreshes names and types without forgetting comments, keys, indexes and samples."""
    names = {t.name: t for t in new.tables}
    learned = False
    for t in new.tables:
        before = old.table(t.name)
        if before is None:
            continue
        t.comment, t.row_estimate = before.comment, before.row_estimate
        t.view_refs = [r for r in before.view_refs if r in names]
        have = {c.name for c in t.columns}
        t.foreign_keys = [
            fk
            for fk in before.foreign_keys
            if set(fk.columns) <= have
            and fk.ref_table in names
            and set(fk.ref_columns) <= {c.name for c in names[fk.ref_table].columns}
        ]
        t.indexes = [ix for ix in before.indexes if set(ix.columns) <= have]
        for c in t.columns:
            was = before.column(c.name)
            if was is not None:
                learned = True
                c.nullable, c.default, c.comment = was.nullable, was.default, was.comment
                c.primary, c.unique, c.enum_sample = was.primary, was.unique, was.enum_sample
    if learned and old.level in ("l2", "full"):
        new.level = old.level
    return new
