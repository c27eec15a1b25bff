"""The read-only verbs over a catalog read from its plane: ``schema``, ``objects``, ``columns``,
``impact``, ``refs`` and the compact digest a model reads in its prompt. Pure."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from drsg.kernel.errors import NotFound
from drsg.pipeline.catalog.masking import is_sensitive
from drsg.pipeline.catalog.model import Catalog, Column, Table


def _table(catalog: Catalog, name: str) -> Table:
    found = catalog.table(name) or next((t for t in catalog.tables if t.name.lower() == name.lower()), None)
    if found is None:
        raise NotFound(f"no table or view {name!r} in the catalog; `drsg catalog objects` lists them")
    return found


def column_json(c: Column, extra: Sequence[str] = ()) -> dict[str, Any]:
    """A column as the verbs show it; a sensitive one never with a sample (one taken before its
    name was configured sensitive stays in the plane until the next index run drops it)."""
    sensitive = is_sensitive(c.name, extra)
    out: dict[str, Any] = {
        "name": c.name,
        "ordinal": c.ordinal,
        "type": c.declared_type,
        "type_class": c.type_class,
        "nullable": c.nullable,
        "primary": c.primary,
        "unique": c.unique,
        "sensitive": sensitive,
    }
    sample = None if sensitive else c.enum_sample
    for key, value in (("default", c.default), ("comment", c.comment), ("enum_sample", sample)):
        if value is not None:
            out[key] = value
    return out


def objects(catalog: Catalog) -> list[dict[str, Any]]:
    return [
        {
            "name": t.name,
            "kind": t.kind,
            "columns": len(t.columns),
            **({"comment": t.comment} if t.comment else {}),
            **({"row_estimate": t.row_estimate} if t.row_estimate is not None else {}),
        }
        for t in catalog.tables
    ]


def columns(catalog: Catalog, table: str, sensitive: Sequence[str] = ()) -> dict[str, Any]:
    t = _table(catalog, table)
    cols = [column_json(c, sensitive) for c in t.columns]
    return {"table": t.name, "kind": t.kind, "comment": t.comment, "columns": cols}


def schema(catalog: Catalog, table: str | None = None, sensitive: Sequence[str] = ()) -> dict[str, Any]:
    tables = [_table(catalog, table)] if table else catalog.tables
    return {
        "engine": catalog.engine,
        "database": catalog.database,
        "level": catalog.level,
        "tables": [
            {
                "name": t.name,
                "kind": t.kind,
                "comment": t.comment,
                "columns": [column_json(c, sensitive) for c in t.columns],
                "foreign_keys": [
                    {"columns": fk.columns, "references": fk.ref_table, "ref_columns": fk.ref_columns}
                    for fk in t.foreign_keys
                ],
                "indexes": [{"name": i.name, "columns": i.columns, "unique": i.unique} for i in t.indexes],
                "reads": t.view_refs,
            }
            for t in tables
        ],
    }


def impact(catalog: Catalog, table: str, column: str | None = None) -> dict[str, Any]:
    """What depends on a table (or one column): foreign keys into it, views reading it, its indexes."""
    t = _table(catalog, table)
    if column is not None and t.column(column) is None:
        raise NotFound(f"{t.name} has no column {column!r}; `drsg catalog columns {t.name}` lists them")
    fks = [
        {"table": other.name, "columns": fk.columns, "ref_columns": fk.ref_columns}
        for other in catalog.tables
        for fk in other.foreign_keys
        if fk.ref_table == t.name and (column is None or column in fk.ref_columns)
    ]
    views = [v.name for v in catalog.tables if t.name in v.view_refs]
    indexes = [
        {"name": i.name, "columns": i.columns, "unique": i.unique}
        for i in t.indexes
        if column is None or column in i.columns
    ]
    return {"table": t.name, "column": column, "foreign_keys": fks, "views": views, "indexes": indexes}


def refs(catalog: Catalog, table: str) -> dict[str, Any]:
    """What a table or view refers to: the tables its foreign keys name, the tables a view reads."""
    t = _table(catalog, table)
    return {
        "table": t.name,
        "foreign_keys": [
            {"columns": fk.columns, "references": fk.ref_table, "ref_columns": fk.ref_columns} for fk in t.foreign_keys
        ],
        "reads": t.view_refs,
    }


def digest(catalog: Catalog, max_chars: int = 6000, sensitive: Sequence[str] = ()) -> str:
    """One line per table, for a model's prompt: columns with types, keys, comments, enum samples,
    sensitive columns marked (by the policy and ``sensitive``, the connection's names:
    ``connections.sensitive_names``) and never with a sample; cut at ``max_chars`` with a note of
    how many tables were left out."""
    lines = [f"# {catalog.engine} {catalog.database}: {len(catalog.tables)} tables/views ({catalog.level})"]
    used = len(lines[0])
    for i, t in enumerate(catalog.tables):
        cols = []
        for c in t.columns:
            bits = [c.name, c.declared_type or "?"]
            if c.primary:
                bits.append("pk")
            if is_sensitive(c.name, sensitive):
                bits.append("sensitive")  # a sample taken before the name was configured is not shown
            elif c.enum_sample:
                bits.append("{" + ",".join(c.enum_sample[:8]) + "}")
            if c.comment:
                bits.append(f"«{c.comment}»")
            cols.append(" ".join(bits))
        fks = "".join(f" {','.join(fk.columns)}→{fk.ref_table}" for fk in t.foreign_keys)
        head = f"{'view ' if t.kind == 'view' else ''}{t.name}"
        line = f"{head}({'; '.join(cols)}){fks}" + (f" «{t.comment}»" if t.comment else "")
        if used + len(line) + 1 > max_chars:
            lines.append(f"… {len(catalog.tables) - i} more; `drsg catalog objects` lists them")
            break
        lines.append(line)
        used += len(line) + 1
    return "\n".join(lines)
