"""``drsg catalog grants``: the SQL an operator runs so a read role can SELECT every column drsg
does not mask, and nothing it masks — the engine's privileges under drsg's own checks. Pure.

Which columns are withheld is :func:`statement.lineage`'s answer on the live schema (the one
``catalog sql`` checks against): a base table's sensitive columns (by name, or generated from one)
are left out of its column-level GRANT; a view or materialized view is granted only when its
definition reads no sensitive column anywhere (a filter on one would still answer by it), and not
at all when its lineage cannot be worked out. When in doubt a column is left out, and a comment
line says why. The role warning counts the connected role's readable columns among the same ones."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from drsg.kernel.errors import UsageError
from drsg.pipeline.catalog.masking import is_sensitive
from drsg.pipeline.catalog.statement import LiveSchema, LiveTable, lineage

ROLE = "drsg_reader"
#: a role name every engine takes quoted or not: an allow-list, so nothing needs escaping in prose
_ROLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}\Z")
_QUOTE = {"postgresql": '"', "mysql": "`"}


@dataclass
class Grants:
    """What a read role is granted and what it is not, object by object."""

    engine: str
    role: str
    granted: list[tuple[LiveTable, list[str]]] = field(default_factory=list)  # a table or view, its granted columns
    withheld: list[tuple[LiveTable, str, str]] = field(default_factory=list)  # table, column, why
    left_out: list[tuple[LiveTable, str]] = field(default_factory=list)  # a whole object reading a sensitive column
    unknown: list[tuple[LiveTable, str]] = field(default_factory=list)  # a whole object whose lineage is not known
    schemas: list[str] = field(default_factory=list)  # every schema (database) the live schema holds

    def to_json(self) -> dict[str, Any]:
        return {
            "engine": self.engine,
            "role": self.role,
            "statements": [line for line in script(self) if not line.startswith("--")],
            "granted": [_where(t) | {"kind": t.kind, "columns": cols} for t, cols in self.granted],
            "withheld": [_where(t) | {"column": c, "why": why} for t, c, why in self.withheld],
            "left_out": [_where(t) | {"kind": t.kind, "why": why} for t, why in [*self.left_out, *self.unknown]],
        }


def check_role(role: str) -> str:
    if not _ROLE_NAME.match(role):
        raise UsageError(
            f"catalog grants: role {role[:40]!r} is not a plain name; use letters, digits and _ (e.g. {ROLE})"
        )
    return role


def no_roles(engine: str) -> UsageError:
    shown = {"sqlite": "SQLite"}.get(engine, engine)
    return UsageError(
        f"catalog grants: {shown} has no roles or privileges to grant (its masking is drsg's own: [REDACTED] answers, "
        f"its authorizer); grants are for a PostgreSQL or MySQL/MariaDB connection"
    )


def plan(live: LiveSchema, role: str, extra: Iterable[str] = ()) -> Grants:
    """Every object of the live schema sorted into granted columns, withheld columns and objects left out."""
    if live.engine not in _QUOTE:
        raise no_roles(live.engine)
    out = Grants(live.engine, check_role(role), schemas=sorted({t.schema for t in live.tables.values()}))
    found = lineage(live, extra)
    names = list(extra)
    for key in sorted(live.tables):
        table, known = live.tables[key], found[key]
        if table.refused:
            out.left_out.append((table, table.refused))
        elif known.unknown is not None:
            out.unknown.append((table, known.unknown.split("; query its tables")[0]))
        elif known.reads:
            read = ", ".join(f"{t}.{c}" for t, c in sorted(known.reads))
            why = f"its definition reads {read}, sensitive (a filter or join on one answers by it)"
            out.left_out.append((table, why))
        else:
            columns = []
            for column in table.columns:
                if column.lower() in known.sensitive:
                    why = "generated from a sensitive column" if column in table.generated else "sensitive"
                    out.withheld.append((table, column, why))
                elif table.kind == "view" and is_sensitive(column, names):
                    out.withheld.append((table, column, "sensitive by its name"))
                else:
                    columns.append(column)
            if columns:
                out.granted.append((table, columns))
    return out


def withheld_columns(live: LiveSchema, extra: Iterable[str] = ()) -> set[tuple[str, str, str]]:
    """The (schema, table, column) a read role from :func:`plan` may not read because they are or
    carry a sensitive value, as the database spells them (a view whose lineage is unknown is left
    out of the grants but not counted: its definition may only be hidden from this role)."""
    grants = plan(live, ROLE, extra)
    out = {(t.schema, t.name, c) for t, c, _ in grants.withheld}
    out |= {(t.schema, t.name, c) for t, _ in grants.left_out for c in t.columns}
    return out


def named(live: LiveSchema, columns: Iterable[tuple[str, str, str]]) -> list[str]:
    """``table.column`` (qualified by its schema outside the connection's own), sorted."""
    return sorted(f"{t}.{c}" if s == live.default else f"{s}.{t}.{c}" for s, t, c in columns)


def script(grants: Grants) -> list[str]:
    """The statements, one a line, with ``--`` comments saying what was left out and why."""
    q = _quoter(grants.engine)
    role = q(grants.role)
    lines = ["-- drsg catalog grants: a read role without the sensitive columns; run it as a superuser or the owner"]
    if grants.engine == "postgresql":
        lines += [
            f"DO $$ BEGIN CREATE ROLE {role} LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$;",
            "-- a table-level REVOKE takes its column privileges with it: a column made sensitive since is revoked",
        ]
        lines += [f"REVOKE ALL ON ALL TABLES IN SCHEMA {q(s)} FROM {role};" for s in grants.schemas]
        used = sorted({t.schema for t, _ in grants.granted})
        lines += [f"GRANT USAGE ON SCHEMA {q(s)} TO {role};" for s in used]
    else:
        lines += [
            f"CREATE ROLE IF NOT EXISTS {role};",
            f"REVOKE ALL PRIVILEGES, GRANT OPTION FROM {role};",
            "-- column privileges are per database: each GRANT names its database",
        ]
    for table, columns in grants.granted:
        listed = ", ".join(q(c) for c in columns)
        lines.append(f"GRANT SELECT ({listed}) ON {q(table.schema)}.{q(table.name)} TO {role};")
    if grants.engine == "mysql":  # information_schema hides a view's definition from a column-level grant
        views = [table for table, _ in grants.granted if table.kind == "view"]
        if views:
            lines.append("-- SHOW VIEW: `drsg catalog sql` reads a view's definition to check what it reads")
        lines += [f"GRANT SHOW VIEW ON {q(table.schema)}.{q(table.name)} TO {role};" for table in views]
    for table, column, why in grants.withheld:
        lines.append(_comment(f"withheld: {_name(table)}.{column} ({why})"))
    for table, why in [*grants.left_out, *grants.unknown]:
        lines.append(_comment(f"left out: {table.kind} {_name(table)} ({why})"))
    if grants.engine == "postgresql":
        lines += [
            f"-- then give it a password (ALTER ROLE {role} PASSWORD '…') and connect drsg as it: "
            f"drsg catalog add NAME postgresql://{grants.role}@HOST:PORT/DB --password-env VAR",
            "-- what PUBLIC or a role it belongs to holds is not revoked here; a table added later needs a new run",
        ]
    else:
        lines += [
            f"-- then give it to the user drsg connects as: GRANT {role} TO 'USER'@'HOST'; and make it that user's "
            f"default (MariaDB: SET DEFAULT ROLE {role} FOR 'USER'@'HOST'; MySQL: SET DEFAULT ROLE {role} TO "
            f"'USER'@'HOST';)",
            "-- the user's own grants are not revoked here; a table added later needs a new run",
        ]
    return lines


def warning(name: str, columns: list[str]) -> str:
    """The one line saying the connected role can read columns drsg masks."""
    shown = _one_line(", ".join(columns[:3]) + (", …" if len(columns) > 3 else ""))
    return (
        f"warning: the role connection {name!r} logs in as can read {len(columns)} sensitive column"
        f"{'s' if len(columns) != 1 else ''} itself ({shown}); drsg masks them, but the engine's privileges are the "
        f"boundary: run what `drsg catalog grants {name}` prints and connect as that role"
    )


def _comment(text: str) -> str:
    """A comment line: a name holding a line break must not end the comment and become SQL."""
    return "-- " + _one_line(text)


def _one_line(text: str) -> str:
    return "".join("?" if unicodedata.category(ch).startswith(("C", "Z")) and ch != " " else ch for ch in text)


def _quoter(engine: str) -> Any:
    mark = _QUOTE[engine]
    return lambda name: mark + name.replace(mark, mark + mark) + mark


def _name(table: LiveTable) -> str:
    return f"{table.schema}.{table.name}"


def _where(table: LiveTable) -> dict[str, Any]:
    return {"schema": table.schema, "table": table.name}
