"""Catalog properties with an oracle: identifier splitting against the words an identifier was
built from, and masking against a brute-force run of the same statement without masking."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from drsg.kernel.errors import UsageError
from drsg.pipeline.catalog.backends import backend_for
from drsg.pipeline.catalog.connections import Connection
from drsg.pipeline.catalog.find import run_sql
from drsg.pipeline.catalog.masking import is_sensitive
from drsg.pipeline.catalog.naming import split_identifier
from tests.support.catalog_schema import MYSQL_DDL, OTHER_SECRET, PG_DDL, PORTABLE_ROWS, SECRET, make_sqlite
from tests.support.db_servers import APP_PASSWORD, MariaServer, PgServer

PASSWORD_VAR = "DRSG_TEST_CATALOG_PROPS_PASSWORD"

WORD = st.from_regex(r"[a-z]{2,7}", fullmatch=True)
NUMBER = st.from_regex(r"[1-9][0-9]{0,2}", fullmatch=True)


@st.composite
def worded(draw: st.DrawFn) -> list[str]:
    """Words, a digit run never next to another digit run (they would merge in any spelling)."""
    words = [draw(WORD)]
    for _ in range(draw(st.integers(0, 4))):
        words.append(draw(WORD) if words[-1].isdigit() else draw(st.one_of(WORD, NUMBER)))
    return words


@given(worded(), st.sampled_from(["snake", "camel", "pascal", "kebab", "upper_snake"]))
def test_split_identifier_recovers_the_words(words: list[str], style: str) -> None:
    if style == "snake":
        name = "_".join(words)
    elif style == "kebab":
        name = "-".join(words)
    elif style == "upper_snake":
        name = "_".join(words).upper()
    else:
        parts = [w.capitalize() for w in words]
        if style == "camel":
            parts[0] = words[0]
        name = "".join(parts)
    assert split_identifier(name) == words


@given(worded())
def test_a_secret_word_anywhere_in_a_name_is_sensitive(words: list[str]) -> None:
    for secret in ("password", "pwd", "token", "salt", "secret"):
        at = len(words) // 2
        name = "_".join([*words[:at], secret, *words[at:]])
        assert is_sensitive(name) and is_sensitive("".join(w.capitalize() for w in name.split("_")))


#: sensitive terms as the words a name spells them with (``PassWord``, ``api_keys``)
SECRET_WORDS = [["password"], ["pass", "word"], ["pwd"], ["token"], ["secret"], ["credential"], ["api", "key"],
                ["private", "key"], ["id", "card"], ["salt"], ["passphrase"]]  # fmt: skip
#: long terms that count inside a word too, so a flat ``userpassword`` is masked
FLAT_SECRETS = {"password", "passphrase", "credential"}


@given(
    worded(),
    worded(),
    st.sampled_from(SECRET_WORDS),
    st.booleans(),
    st.sampled_from(["snake", "camel", "pascal", "kebab", "upper_snake", "dotted", "spaced", "flat"]),
)
def test_a_secret_term_in_any_compound_is_sensitive(
    before: list[str], after: list[str], secret: list[str], plural: bool, style: str
) -> None:
    if style == "flat" and "".join(secret) not in FLAT_SECRETS:
        style = "snake"  # a short term is a word only where something marks where the word ends
    term = [*secret[:-1], secret[-1] + ("s" if plural else "")]
    words = [*before[: len(before) // 2], *term, *after[: len(after) // 2]]
    separators = {"snake": "_", "kebab": "-", "upper_snake": "_", "dotted": ".", "spaced": " ", "flat": ""}
    if style in separators:
        name = separators[style].join(words)
        name = name.upper() if style == "upper_snake" else name
    else:
        parts = [w.capitalize() for w in words]
        name = (words[0] + "".join(parts[1:])) if style == "camel" else "".join(parts)
    assert is_sensitive(name), name


@given(
    st.text(st.sampled_from("用户登录支付的号码新旧备用"), max_size=4),
    st.sampled_from(["密码", "口令", "密钥", "身份证号码", "银行卡号", "令牌"]),
    st.text(st.sampled_from("号码哈希值旧新_"), max_size=3),
)
def test_a_chinese_secret_term_inside_a_compound_is_sensitive(before: str, term: str, after: str) -> None:
    assert is_sensitive(before + term + after)


# --------------------------------------------------------------------------- masking vs brute force

COLUMNS = {
    "sys_user": ["id", "name", "password", "api_key", "dept_id", "status"],
    "user_secrets": ["name", "pw", "shout"],
    "orders": ["id", "user_id", "status", "amount"],
}
SECRETS = (SECRET, OTHER_SECRET, "key-zs", "key-ls")


@st.composite
def statements(draw: st.DrawFn) -> str:
    """A read over the schema: an expression of a column through a table, a view, a CTE or a
    subquery, perhaps filtered on any column, perhaps a UNION of two such reads."""

    def one() -> str:
        table = draw(st.sampled_from(sorted(COLUMNS)))
        column = draw(st.sampled_from(COLUMNS[table]))
        shape = draw(st.sampled_from(["{c}", "upper({c})", "{c} || ''", "substr({c}, 1, 4)", "lower({c}) AS x"]))
        expr = shape.format(c=column)
        source = draw(st.sampled_from(["plain", "alias", "cte", "sub"]))
        where = ""
        if draw(st.booleans()):
            other = draw(st.sampled_from(COLUMNS[table]))
            where = f" WHERE {other} IS NOT NULL"
        if source == "alias":
            return f"SELECT {expr.replace(column, 't.' + column)} FROM {table} t{where.replace(' WHERE ', ' WHERE t.')}"
        if source == "cte":
            return f"WITH c AS (SELECT * FROM {table}{where}) SELECT {expr} FROM c"
        if source == "sub":
            return f"SELECT {expr} FROM (SELECT * FROM {table}{where}) s"
        return f"SELECT {expr} FROM {table}{where}"

    first = one()
    return f"{first} UNION ALL {one()}" if draw(st.booleans()) else first


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_sqlite(tmp_path_factory.mktemp("catalog-props") / "app.db")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(statements())
def test_masking_never_answers_a_secret_and_changes_nothing_else(app: Path, sql: str) -> None:
    masked = backend_for(Connection("app", str(app), "sqlite"))
    shown = backend_for(Connection("app", str(app), "sqlite", sensitive_columns="show"))
    try:
        plain = run_sql(shown, sql, 1000)
    except UsageError:
        return  # not valid SQL for this schema (a UNION of mismatched widths): nothing to compare
    try:
        got = run_sql(masked, sql, 1000)
    except UsageError as refused:  # a masked column outside the selected ones (a filter)
        assert "masked" in str(refused) and not any(secret in str(refused) for secret in SECRETS), sql
        return
    text = json.dumps(got["rows"], ensure_ascii=False, default=str)
    assert not any(secret in text for secret in SECRETS), sql
    leaked = any(secret in json.dumps(plain["rows"], ensure_ascii=False, default=str) for secret in SECRETS)
    if not leaked and not got["redacted"]:
        assert got["rows"] == plain["rows"], sql  # masking did not touch a statement that reads no secret


@pytest.fixture(scope="module")
def servers(pg_server: PgServer, maria_server: MariaServer, monkeypatch_module: pytest.MonkeyPatch) -> dict[str, str]:
    """The same schema in a database of its own on each session server: engine → DSN."""
    pg_server.psql("CREATE DATABASE props OWNER app", db="postgres")
    pg_server.psql(PG_DDL + ";".join(PORTABLE_ROWS), db="props", user="app")
    maria_server.sql("CREATE DATABASE props CHARACTER SET utf8mb4; GRANT ALL ON props.* TO 'app'@'127.0.0.1'")
    maria_server.sql(MYSQL_DDL + ";".join(PORTABLE_ROWS), db="props", as_app=True)
    monkeypatch_module.setenv(PASSWORD_VAR, APP_PASSWORD)
    return {
        "postgresql": pg_server.dsn.rsplit("/", 1)[0] + "/props",
        "mysql": maria_server.dsn.rsplit("/", 1)[0] + "/props",
    }


@pytest.fixture(scope="module")
def monkeypatch_module() -> Iterator[pytest.MonkeyPatch]:
    with pytest.MonkeyPatch.context() as patch:
        yield patch


@pytest.mark.parametrize("engine", ["postgresql", "mysql"])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sql=statements())
def test_masking_on_the_servers_against_brute_force(servers: dict[str, str], engine: str, sql: str) -> None:
    masked = backend_for(Connection("p", servers[engine], engine, password_env=PASSWORD_VAR))
    shown = backend_for(Connection("p", servers[engine], engine, password_env=PASSWORD_VAR, sensitive_columns="show"))
    try:
        plain = run_sql(shown, sql, 1000)
    except UsageError:
        event("not valid on this engine")
        return  # not valid for this engine (upper() of an integer, mismatched UNION): nothing to compare
    try:
        got = run_sql(masked, sql, 1000)
    except UsageError as refused:
        assert "masked" in str(refused), sql
        event("refused: reads a masked column")
        return
    event("answered, masked" if got["redacted"] else "answered")
    text = json.dumps(got["rows"], ensure_ascii=False, default=str)
    assert not any(secret in text for secret in SECRETS), sql
    if not got["redacted"]:
        assert got["rows"] == plain["rows"], sql  # it read no secret: exactly the unmasked answer
