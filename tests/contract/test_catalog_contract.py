"""The catalog Backend port's contract (pipeline/catalog/backend.py): every engine's test class
subclasses :class:`CatalogContract` and says how to make a connection to a live database that holds
``tests/support/catalog_schema.py``'s schema and rows; the tests are the same for all.

Backends: ``TestSqlite`` (a file in the test's folder), ``TestPostgres`` and ``TestMariadb`` (real
servers the session starts on loopback, ``tests/support/db_servers.py``; the password passed by
reference, as users do). The masking tests run real statements and look for the secret anywhere in
the answer: a statement is either answered without it or refused, never rewritten as text.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import pytest

from drsg.kernel.errors import CatalogError, ConfigError, UsageError
from drsg.pipeline.catalog.backend import Backend, secret_pairs
from drsg.pipeline.catalog.backends import backend_for
from drsg.pipeline.catalog.connections import Connection
from drsg.pipeline.catalog.find import find, run_sql
from drsg.pipeline.catalog.model import Catalog
from tests.support.catalog_schema import MYSQL_DDL, OTHER_SECRET, PG_DDL, PORTABLE_ROWS, SECRET, make_sqlite
from tests.support.db_servers import APP_PASSWORD, MariaServer, PgServer

PASSWORD_VAR = "DRSG_TEST_CATALOG_PASSWORD"
SEED_QUESTION = {"entity": "用户", "fields": ["密码"], "where": {"name": "张三"}}

#: each reads the password some other way; none may answer with it
LEAKS = [
    "SELECT password AS p FROM sys_user",
    "SELECT upper(password) || '' AS shout, length(password) AS n FROM sys_user",
    "SELECT * FROM sys_user",
    "SELECT * FROM user_secrets",
    "WITH c AS (SELECT password AS x FROM sys_user) SELECT x FROM c",
    "SELECT (SELECT password FROM sys_user WHERE id = 1) AS sub",
    "SELECT name FROM sys_user UNION SELECT password FROM sys_user",
    "SELECT name FROM sys_user WHERE password = 's3cr3t-hunter2'",
    "SELECT name FROM sys_user WHERE password LIKE 's%'",
    "SELECT count(*) AS n FROM sys_user WHERE substr(password, 1, 1) = 's'",
    "SELECT t.pw FROM (SELECT password AS pw FROM sys_user) t",
    "SELECT u.password FROM sys_user u JOIN orders o ON o.user_id = u.id",
    "SELECT api_key FROM sys_user",
]
WRITES = [
    "INSERT INTO sys_dept VALUES (9, 'x')",
    "UPDATE sys_user SET password = 'owned'",
    "DELETE FROM orders",
    "DROP TABLE orders",
    "CREATE TABLE evil (x INTEGER)",
]
STACKED = [
    "SELECT 1; DELETE FROM orders",
    "SELECT name FROM sys_user; UPDATE sys_user SET password = 'owned'",
]


class CatalogContract:
    """What every engine must do. Subclasses define :meth:`connection` (masking on)."""

    engine = ""

    def connection(self, tmp_path: Path, **options: Any) -> Connection:
        raise NotImplementedError

    @pytest.fixture
    def backend(self, tmp_path: Path) -> Backend:
        return backend_for(self.connection(tmp_path))

    @pytest.fixture
    def catalog(self, backend: Backend) -> Catalog:
        return backend.introspect("full", 20, backend.conn.sensitive_extra)

    def test_test_names_the_engine(self, backend: Backend) -> None:
        assert self.engine in backend.test().lower()

    def test_l1_is_names_and_declared_types_only(self, backend: Backend) -> None:
        l1 = backend.introspect("l1", 20, backend.conn.sensitive_extra)
        names = {t.name for t in l1.tables}
        assert {"sys_user", "sys_dept", "orders", "ad_click", "paid_orders", "user_secrets"} <= names
        user = l1.table("sys_user")
        assert user is not None and [c.name for c in user.columns][:3] == ["id", "name", "password"]
        assert user.column("status").type_class == "text"  # type: ignore[union-attr]
        assert user.comment is None and not user.foreign_keys and user.column("status").enum_sample is None  # type: ignore[union-attr]

    def test_l2_has_comments_keys_indexes_views_and_samples(self, catalog: Catalog) -> None:
        user, orders = catalog.table("sys_user"), catalog.table("orders")
        assert user is not None and orders is not None
        assert user.comment == "用户表" and user.column("password").comment == "登录密码"  # type: ignore[union-attr]
        assert user.column("id").primary and user.column("name").unique  # type: ignore[union-attr]
        assert any(fk.ref_table == "sys_user" and fk.columns == ["user_id"] for fk in orders.foreign_keys)
        assert any(ix.columns == ["user_id", "status"] for ix in orders.indexes)
        assert orders.column("status").enum_sample == ["paid", "unpaid"]  # type: ignore[union-attr]
        assert user.column("password").enum_sample is None  # type: ignore[union-attr]
        view = catalog.table("paid_orders")
        assert view is not None and view.kind == "view" and set(view.view_refs) == {"orders", "sys_user"}

    def test_no_secret_is_ever_in_the_catalog(self, catalog: Catalog) -> None:
        dumped = json.dumps([t.__dict__ for t in catalog.tables], default=lambda o: o.__dict__, ensure_ascii=False)
        assert SECRET not in dumped and OTHER_SECRET not in dumped and "key-zs" not in dumped

    def test_find_answers_the_seed_question_in_one_select(self, backend: Backend, catalog: Catalog) -> None:
        answer = find(catalog, backend, SEED_QUESTION, 100, sensitive=backend.conn.sensitive_extra)
        assert answer["status"] == "ok" and answer["table"] == "sys_user" and answer["statements"] == 1
        assert answer["fields"] == [{"field": "密码", "column": "password"}]
        assert answer["sql"].upper().startswith("SELECT") and answer["sql"].count("SELECT") == 1
        assert answer["rows"] == [["[REDACTED]"]] and answer["redacted"] == ["sys_user.password"]

    def test_find_compares_with_the_real_type(self, backend: Backend, catalog: Catalog) -> None:
        answer = find(
            catalog,
            backend,
            {"entity": "订单", "fields": ["金额"], "where": {"status": "paid"}},
            100,
            sensitive=backend.conn.sensitive_extra,
        )
        assert answer["table"] == "orders" and answer["where"][0]["value"] == "paid"
        assert sorted(float(r[0]) for r in answer["rows"]) == [7.0, 10.5]
        numeric = find(
            catalog,
            backend,
            {"entity": "订单", "fields": ["金额"], "where": {"status": 1}},
            100,
            sensitive=backend.conn.sensitive_extra,
        )
        assert numeric["where"][0]["value"] == "1" and numeric["rows"] == [] and "paid" in numeric["notes"][0]

    def test_find_refuses_to_scan_or_guess(self, backend: Backend, catalog: Catalog) -> None:
        assert (
            find(catalog, backend, {"entity": "用户", "fields": ["密码"]}, 100, sensitive=backend.conn.sensitive_extra)[
                "status"
            ]
            == "missing_predicate"
        )
        ambiguous = find(
            catalog,
            backend,
            {"entity": "sys", "fields": [], "where": {"id": 1}},
            100,
            sensitive=backend.conn.sensitive_extra,
        )
        assert ambiguous["status"] == "ambiguous" and {c["table"] for c in ambiguous["candidates"]} == {
            "sys_dept",
            "sys_user",
        }

    def test_row_limit(self, backend: Backend, catalog: Catalog) -> None:
        answer = run_sql(backend, "SELECT id FROM orders ORDER BY id", 2)
        assert answer["rows"] == [[1], [2]] and answer["truncated"] is True

    #: the engine's own ways to read a column's values besides the column (statistics)
    ENGINE_LEAKS: tuple[str, ...] = ()
    #: the engine's whole-row references (a row turned into text or JSON reads every column)
    ROW_LEAKS: tuple[str, ...] = ()

    def test_whole_row_reads_do_not_leak(self, backend: Backend, catalog: Catalog) -> None:
        for sql in self.ROW_LEAKS:
            try:
                rows = json.dumps(run_sql(backend, sql, 100)["rows"], default=str, ensure_ascii=False)
            except UsageError as refused:  # not on the allow-lists (functions, node kinds), or masked
                assert SECRET not in str(refused), sql
                continue
            assert SECRET not in rows and OTHER_SECRET not in rows, sql

    def test_statistics_do_not_leak_either(self, backend: Backend, catalog: Catalog) -> None:
        shown = backend_for(Connection(**{**backend.conn.public(), "sensitive_columns": "show"}))
        for sql in self.ENGINE_LEAKS:  # not a table of the database's own schemas, masked or shown
            for each in (backend, shown):
                with pytest.raises(UsageError, match="statistics are not read"):
                    run_sql(each, sql, 100)

    @pytest.mark.parametrize("sql", LEAKS)
    def test_masking_holds(self, backend: Backend, catalog: Catalog, sql: str) -> None:
        try:
            result = run_sql(backend, sql, 100)
        except UsageError as refused:
            assert "masked" in str(refused) and SECRET not in str(refused)
            return
        answer = json.dumps({k: v for k, v in result.items() if k != "sql"}, default=str, ensure_ascii=False)
        assert SECRET not in answer and OTHER_SECRET not in answer and "key-zs" not in answer

    def test_a_predicate_cannot_probe_a_masked_column(self, backend: Backend, catalog: Catalog) -> None:
        for sql in LEAKS[7:10]:
            with contextlib.suppress(UsageError):  # refused: no answer to probe with
                assert run_sql(backend, sql, 100)["rows"] in ([], [[0]]), sql
        unmasked = run_sql(backend, "SELECT name FROM sys_user WHERE name = '张三'", 10)
        assert unmasked["rows"] == [["张三"]]  # the same shape of query answers when the column is not masked

    def test_show_turns_masking_off(self, tmp_path: Path, catalog: Catalog) -> None:
        shown = backend_for(self.connection(tmp_path, sensitive_columns="show"))
        assert find(catalog, shown, SEED_QUESTION, 100, sensitive=shown.conn.sensitive_extra)["rows"] == [[SECRET]]

    @pytest.mark.parametrize("sql", WRITES + STACKED)
    def test_writes_and_stacked_statements_are_refused(self, backend: Backend, catalog: Catalog, sql: str) -> None:
        with pytest.raises(UsageError):
            run_sql(backend, sql, 100)
        still = run_sql(backend, "SELECT count(*) FROM orders", 10)["rows"]
        assert still == [[3]]

    def test_the_masked_pairs_are_the_base_tables(self, catalog: Catalog) -> None:
        assert secret_pairs(catalog) == {("sys_user", "password"), ("sys_user", "api_key")}


class TestSqlite(CatalogContract):
    engine = "sqlite"

    def connection(self, tmp_path: Path, **options: Any) -> Connection:
        path = tmp_path / "app.db"
        if not path.exists():
            make_sqlite(path)
        return Connection("app", str(path), "sqlite", **options)


class ServerContract(CatalogContract):
    """What a backend on a server must do beside: a credential by reference that never shows."""

    def test_a_wrong_or_missing_password_is_one_line_without_the_secret(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        conn = self.connection(tmp_path)
        assert conn.password_env is not None
        monkeypatch.setenv(conn.password_env, "wrong-secret-value")
        with pytest.raises(CatalogError) as failed:
            backend_for(conn).test()
        assert "wrong-secret-value" not in str(failed.value) and "\n" not in str(failed.value)
        monkeypatch.delenv(conn.password_env)
        with pytest.raises(ConfigError) as unset:
            backend_for(conn).test()
        assert conn.password_env in str(unset.value) and "export it" in str(unset.value)


@pytest.fixture(scope="module")
def pg_loaded(pg_server: PgServer) -> PgServer:
    pg_server.psql(PG_DDL + ";".join(PORTABLE_ROWS) + "; ANALYZE", user="app")  # statistics hold values too
    pg_server.psql(
        "CREATE FUNCTION leak_password(i int) RETURNS text LANGUAGE sql "
        "AS $$ SELECT password FROM sys_user WHERE id = i $$",
        user="app",
    )
    return pg_server


@pytest.fixture(scope="module")
def maria_loaded(maria_server: MariaServer) -> MariaServer:
    maria_server.sql(MYSQL_DDL + ";".join(PORTABLE_ROWS), db="app", as_app=True)  # the app owns its views
    maria_server.sql("ANALYZE TABLE sys_user PERSISTENT FOR ALL", db="app")  # statistics hold values too
    maria_server.sql(
        "CREATE FUNCTION leak_password(i INT) RETURNS TEXT READS SQL DATA "
        "RETURN (SELECT password FROM sys_user WHERE id = i)",
        db="app",
        as_app=True,
    )
    return maria_server


class TestPostgres(ServerContract):
    engine = "postgresql"
    ROW_LEAKS = (
        "SELECT row_to_json(u) AS j FROM sys_user u",
        "SELECT u::text AS t FROM sys_user u",
        "SELECT sys_user::text FROM sys_user",
        "SELECT json_agg(t) FROM (SELECT * FROM user_secrets) t",
        "SELECT to_jsonb(s) FROM (SELECT * FROM sys_user) s",
        "SELECT query_to_xml('select password from sys_user', true, true, '')::text AS x",
        "SELECT table_to_xml('sys_user', true, true, '')::text AS x",
        "SELECT schema_to_xml('public', true, true, '')::text AS x",
        "SELECT leak_password(1) AS x",  # a user's function: the plan cannot see inside it
    )
    ENGINE_LEAKS = (
        "SELECT histogram_bounds::text AS v FROM pg_stats WHERE tablename = 'sys_user' AND attname = 'password'",
        "SELECT s.histogram_bounds::text FROM (SELECT * FROM pg_stats WHERE tablename = 'sys_user') s",
    )

    @pytest.fixture(autouse=True)
    def _server(self, pg_loaded: PgServer, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv(PASSWORD_VAR, APP_PASSWORD)
        self.server = pg_loaded

    def connection(self, tmp_path: Path, **options: Any) -> Connection:
        return Connection("app", self.server.dsn, "postgresql", password_env=PASSWORD_VAR, **options)


class TestMariadb(ServerContract):
    engine = "mariadb"
    ENGINE_LEAKS = ("SELECT min_value, max_value FROM mysql.column_stats WHERE column_name = 'password'",)
    ROW_LEAKS = ("SELECT leak_password(1) AS x",)  # a stored function: the trace cannot see inside it

    @pytest.fixture(autouse=True)
    def _server(self, maria_loaded: MariaServer, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv(PASSWORD_VAR, APP_PASSWORD)
        self.server = maria_loaded

    def connection(self, tmp_path: Path, **options: Any) -> Connection:
        return Connection("app", self.server.dsn, "mysql", password_env=PASSWORD_VAR, **options)
