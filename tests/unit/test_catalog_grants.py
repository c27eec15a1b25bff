"""`catalog grants`' pure part (pipeline/catalog/grants.py) on hand-built live schemas: quoting per
engine, comments a name cannot break out of, views by lineage, and what the role warning counts.
The statements themselves run on real servers in tests/contract/test_catalog_grants.py."""

from __future__ import annotations

import pytest

from drsg.kernel.errors import UsageError
from drsg.pipeline.catalog.grants import check_role, plan, script, warning, withheld_columns
from drsg.pipeline.catalog.statement import LiveSchema, LiveTable


def schema(engine: str) -> LiveSchema:
    live = LiveSchema(engine, "public" if engine == "postgresql" else "app")
    s = live.default
    live.add(LiveTable(s, 'we"ird`t', columns=["id", 'a"b', "userPassword"]))
    live.add(LiveTable(s, "gen", columns=["id", "pwd", "shout"], generated={"shout": "upper(pwd)"}))
    live.add(LiveTable(s, "names", "view", columns=["id"], definition=f'SELECT id FROM "{s}".gen'))
    live.add(LiveTable(s, "leaky", "view", columns=["id"], definition=f"SELECT id FROM {s}.gen WHERE pwd = 'x'"))
    live.add(LiveTable(s, "opaque", "view", columns=["x"], definition=None))  # a definition this role cannot see
    live.add(LiveTable(s, "line\nGRANT ALL ON gen TO drsg_reader; --", columns=["token"]))
    return live


def test_postgres_quotes_with_double_quotes_and_keeps_comments_on_one_line() -> None:
    lines = script(plan(schema("postgresql"), "drsg_reader"))
    assert 'GRANT SELECT ("id", "a""b") ON "public"."we""ird`t" TO "drsg_reader";' in lines
    assert 'GRANT SELECT ("id") ON "public"."gen" TO "drsg_reader";' in lines
    assert 'GRANT SELECT ("id") ON "public"."names" TO "drsg_reader";' in lines
    assert not any("leaky" in line or "opaque" in line for line in lines if not line.startswith("--"))
    assert "-- withheld: public.gen.shout (generated from a sensitive column)" in lines
    assert all("\n" not in line for line in lines if line.startswith("--"))
    assert not any(line.startswith("GRANT ALL") for line in "\n".join(lines).splitlines())


def test_mysql_quotes_with_backticks() -> None:
    lines = script(plan(schema("mysql"), "r1"))
    assert 'GRANT SELECT (`id`, `a"b`) ON `app`.`we"ird``t` TO `r1`;' in lines
    assert "CREATE ROLE IF NOT EXISTS `r1`;" in lines and "REVOKE ALL PRIVILEGES, GRANT OPTION FROM `r1`;" in lines


def test_the_warning_counts_sensitive_columns_not_views_of_unknown_lineage() -> None:
    live = schema("postgresql")
    withheld = {(t, c) for _, t, c in withheld_columns(live)}
    assert withheld == {
        ('we"ird`t', "userPassword"), ("gen", "pwd"), ("gen", "shout"), ("leaky", "id"),
        ("line\nGRANT ALL ON gen TO drsg_reader; --", "token"),
    }  # fmt: skip
    line = warning("app", ["gen.pwd", "line\nbreak.token"])
    assert "\n" not in line and "2 sensitive columns" in line and "drsg catalog grants app" in line


@pytest.mark.parametrize("role", ["", "a b", "x;drop", "r'1", "9lives", "x" * 64])
def test_a_role_name_is_a_plain_name(role: str) -> None:
    with pytest.raises(UsageError, match="plain name"):
        check_role(role)


def test_sqlite_has_nothing_to_grant() -> None:
    with pytest.raises(UsageError, match="SQLite has no roles"):
        plan(LiveSchema("sqlite", "main"), "drsg_reader")
