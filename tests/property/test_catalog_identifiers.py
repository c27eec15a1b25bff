"""`catalog sql` over names as people write them: for random table and column names (mixed case,
spaces, unicode, reserved words, secret-like words) created in each engine, a SELECT naming every
column quoted in the engine's style is accepted by the statement check and answers the inserted
values under the names as written, sensitive ones ``[REDACTED]``. And PostgreSQL's quoted names
keep their case: two tables that differ only by it are two tables."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from drsg.pipeline.catalog.backends import backend_for
from drsg.pipeline.catalog.connections import Connection
from drsg.pipeline.catalog.find import run_sql
from drsg.pipeline.catalog.masking import REDACTED, is_sensitive
from tests.support.db_servers import APP_PASSWORD, MariaServer, PgServer

PASSWORD_VAR = "DRSG_TEST_IDENTS_PASSWORD"
QUOTE = {"sqlite": '"', "postgresql": '"', "mysql": "`"}
#: reserved words and secret-like names, beside the random ones
CHOSEN = ["select", "Order", "GROUP", "from", "Table", "user", "Password", "API Token", "登录密码", "Reset_Token"]
LETTERS = "aBcDxYzéÉñÑ中文名_ 0123"
RANDOM = st.text(LETTERS, min_size=1, max_size=12).map(str.strip).filter(lambda n: bool(n) and not n.isdigit())
NAME = st.one_of(st.sampled_from(CHOSEN), RANDOM)


def quoted(engine: str, name: str) -> str:
    mark = QUOTE[engine]
    return mark + name.replace(mark, mark * 2) + mark


@st.composite
def tables(draw: st.DrawFn) -> tuple[str, list[str]]:
    """A table name and 1-5 column names, distinct however an engine folds their case."""
    columns = draw(st.lists(NAME, min_size=1, max_size=5, unique_by=str.casefold))
    return draw(NAME), columns


@pytest.fixture(scope="module")
def monkeypatch_module() -> Iterator[pytest.MonkeyPatch]:
    with pytest.MonkeyPatch.context() as patch:
        yield patch


@pytest.fixture(scope="module")
def servers(pg_server: PgServer, maria_server: MariaServer, monkeypatch_module: pytest.MonkeyPatch) -> dict[str, str]:
    """A database of its own on each session server: engine → DSN."""
    pg_server.psql("CREATE DATABASE idents OWNER app", db="postgres")
    maria_server.sql("CREATE DATABASE idents CHARACTER SET utf8mb4; GRANT ALL ON idents.* TO 'app'@'127.0.0.1'")
    monkeypatch_module.setenv(PASSWORD_VAR, APP_PASSWORD)
    return {
        "postgresql": pg_server.dsn.rsplit("/", 1)[0] + "/idents",
        "mysql": maria_server.dsn.rsplit("/", 1)[0] + "/idents",
    }


class Engine:
    """Run DDL and inserts on one engine as the application would, and a connection drsg reads with."""

    def __init__(self, engine: str, dsn: str) -> None:
        self.engine, self.dsn = engine, dsn

    def execute(self, statements: list[tuple[str, list[Any]]]) -> None:
        if self.engine == "sqlite":
            db = sqlite3.connect(self.dsn)
            for sql, params in statements:
                db.execute(sql, params)
            db.commit()
            db.close()
        elif self.engine == "postgresql":
            import psycopg

            with psycopg.connect(self.dsn, password=APP_PASSWORD, autocommit=True) as db:
                for sql, params in statements:
                    db.execute(sql.replace("?", "%s"), params)
        else:
            import pymysql

            db = pymysql.connect(
                host="127.0.0.1",
                port=int(self.dsn.rsplit(":", 1)[1].split("/")[0]),
                user="app",
                password=APP_PASSWORD,
                database="idents",
                charset="utf8mb4",
                autocommit=True,
            )
            try:
                with db.cursor() as cur:
                    for sql, params in statements:
                        cur.execute(sql.replace("?", "%s"), params or None)
            finally:
                db.close()

    def sql(self, statement: str) -> dict[str, Any]:
        env = None if self.engine == "sqlite" else PASSWORD_VAR
        conn = Connection("idents", self.dsn, self.engine, password_env=env)
        return run_sql(backend_for(conn), statement, 100)


@pytest.fixture(params=["sqlite", "postgresql", "mysql"])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Engine:
    if request.param == "sqlite":
        return Engine("sqlite", str(tmp_path / "idents.db"))
    return Engine(request.param, request.getfixturevalue("servers")[request.param])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(table=tables())
def test_every_column_quoted_as_the_engine_quotes_is_read(engine: Engine, table: tuple[str, list[str]]) -> None:
    name, columns = table
    q = engine.engine
    values = [f"value {i} of {column}" for i, column in enumerate(columns)]
    create = f"CREATE TABLE {quoted(q, name)} ({', '.join(quoted(q, c) + ' VARCHAR(64)' for c in columns)})"
    marks = ", ".join("?" for _ in columns)
    engine.execute([(f"DROP TABLE IF EXISTS {quoted(q, name)}", []), (create, [])])
    try:
        engine.execute([(f"INSERT INTO {quoted(q, name)} VALUES ({marks})", values)])
        answer = engine.sql(f"SELECT {', '.join(quoted(q, c) for c in columns)} FROM {quoted(q, name)}")
        expected = [REDACTED if is_sensitive(c) else v for c, v in zip(columns, values, strict=True)]
        assert answer["rows"] == [expected] and answer["columns"] == columns, answer
        starred = engine.sql(f"SELECT * FROM {quoted(q, name)}")
        assert starred["rows"] == [expected] and starred["columns"] == columns, starred
    finally:
        engine.execute([(f"DROP TABLE {quoted(q, name)}", [])])


def test_postgres_tables_differing_only_by_case_are_two_tables(servers: dict[str, str]) -> None:
    pg = Engine("postgresql", servers["postgresql"])
    pg.execute(
        [
            ('CREATE TABLE "Orders" ("Id" int, "Item" text, "Api Token" text)', []),
            ("CREATE TABLE orders (id int, item text)", []),
            ("INSERT INTO \"Orders\" VALUES (1, 'upper', 'tok-1')", []),
            ("INSERT INTO orders VALUES (2, 'lower')", []),
        ]
    )
    try:
        upper = pg.sql('SELECT "Id", "Item", "Api Token" FROM "Orders"')
        assert upper["rows"] == [[1, "upper", REDACTED]] and upper["columns"] == ["Id", "Item", "Api Token"]
        assert pg.sql("SELECT id, item FROM orders")["rows"] == [[2, "lower"]]
        assert pg.sql("SELECT * FROM ORDERS")["rows"] == [[2, "lower"]]  # unquoted: folded to lower case
        joined = pg.sql('SELECT o.item, u."Item" FROM orders o, "Orders" u')
        assert joined["rows"] == [["lower", "upper"]]
    finally:
        pg.execute([('DROP TABLE "Orders"', []), ("DROP TABLE orders", [])])
