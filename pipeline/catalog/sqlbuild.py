"""The one SELECT ``find`` runs, and values bound as the column's real type. Pure."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from drsg.kernel.errors import UsageError
from drsg.pipeline.catalog.model import Column

INT64 = (-(2**63), 2**63 - 1)


def bind_value(column: Column, value: Any) -> tuple[Any, str | None]:
    """``value`` as the column's type would hold it, and a note when the enum sample disagrees.

    A text column compares with text (``status = 'paid'``, never ``= 1``); an integer column with
    an integer; a value that cannot be one is a usage error naming the column's type."""
    klass = column.type_class
    note = None
    if klass == "text":
        bound: Any = value if isinstance(value, str) else str(value).lower() if isinstance(value, bool) else str(value)
        if column.enum_sample is not None and bound not in column.enum_sample:
            note = f"{column.name} holds {column.enum_sample} (sampled); {bound!r} is not among them"
        return bound, note
    if klass in ("integer", "boolean"):
        if isinstance(value, bool):
            return int(value), None
        try:
            whole = int(str(value))
        except ValueError:
            whole = None
        if whole is None or not INT64[0] <= whole <= INT64[1]:  # no engine's integer holds more
            what = "an integer" if whole is None else "a 64-bit integer"
            shown = str(value)[:40]
            raise UsageError(f"{column.name} is {column.declared_type}: {shown!r} is not {what}; give a number")
        return whole, None
    if klass in ("float", "decimal"):
        try:
            return float(str(value)), None
        except ValueError:
            raise UsageError(f"{column.name} is {column.declared_type}: {value!r} is not a number") from None
    return value, None


def build_select(
    table: str,
    columns: list[str],
    where: list[str],
    quote: Callable[[str], str],
    placeholder: str,
    masked: frozenset[str] = frozenset(),
) -> str:
    """``SELECT "a" AS "a", … FROM "t" WHERE "x" = ? AND … LIMIT ?``: names quoted, values only as
    parameters; a ``masked`` column is never read (``NULL AS "password"``)."""
    if not columns or not where:
        raise UsageError("find: a SELECT needs at least one column and one filter")
    picked = ", ".join(f"{'NULL' if c in masked else quote(c)} AS {quote(c)}" for c in columns)  # AS: a plain name
    filters = " AND ".join(f"{quote(c)} = {placeholder}" for c in where)
    return f"SELECT {picked} FROM {quote(table)} WHERE {filters} LIMIT {placeholder}"
