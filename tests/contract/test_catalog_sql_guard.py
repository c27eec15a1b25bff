"""`catalog sql`'s statement check (pipeline/catalog/statement.py) on real SQLite, PostgreSQL and
MariaDB: every attempt of issue #33's adversarial pass (items 9, 13-16, 18, 20-22) against a live
database, each either answered without the secret or refused in one line without it.

Each engine's database holds the contract schema plus what the attempts need: a generated column
over a password, another schema's table with one (PostgreSQL, MariaDB), a materialized view over
one (PostgreSQL) and full-text indexes over one (SQLite)."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from drsg.kernel.errors import UsageError
from drsg.pipeline.catalog.backends import backend_for
from drsg.pipeline.catalog.connections import Connection
from drsg.pipeline.catalog.find import run_sql
from tests.support.catalog_schema import MYSQL_DDL, PG_DDL, PORTABLE_ROWS, SECRET, make_sqlite
from tests.support.db_servers import APP_PASSWORD, MariaServer, PgServer

PASSWORD_VAR = "DRSG_TEST_GUARD_PASSWORD"
HR_SECRET = "hr-staff-pw-7731"
NOTE_SECRET = "fts-note-token-5521"
#: an infinite recursion: only the time limit ends it
FOREVER = "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) AS n FROM r"


def leaked(answer: Any) -> bool:
    text = json.dumps(answer, default=str, ensure_ascii=False)
    return any(secret in text for secret in (SECRET, SECRET.upper(), HR_SECRET, NOTE_SECRET))


class Guard:
    """The attempts every engine must hold against. Subclasses give :meth:`connection` and :meth:`alter`."""

    def connection(self, **options: Any) -> Connection:
        raise NotImplementedError

    def alter(self, sql: str) -> None:
        """Change the live schema behind drsg's back (as the application would)."""
        raise NotImplementedError

    seconds = 30  # the time limit a statement runs under ([catalog] statement_seconds)

    def sql(self, statement: str, **options: Any) -> dict[str, Any]:
        return run_sql(backend_for(self.connection(**options), self.seconds), statement, 100)

    def refused(self, statement: str) -> str:
        with pytest.raises(UsageError) as refused:
            self.sql(statement)
        message = str(refused.value)
        assert not leaked(message) and "\n" not in message, message
        return message

    def test_a_masked_column_through_an_alias_or_an_expression_says_so(self) -> None:  # item 9
        answer = self.sql("SELECT name, password AS p, upper(password) AS u, lower(password) FROM sys_user ORDER BY id")
        assert [row[1:] for row in answer["rows"]] == [["[REDACTED]"] * 3] * 2
        assert answer["rows"][0][0] == "张三" and answer["redacted"] == ["sys_user.password"]
        case = self.sql(
            "SELECT CASE WHEN password LIKE 's%' THEN 1 ELSE 0 END AS c, CASE WHEN id = 1 THEN 'a' END AS d "
            "FROM sys_user ORDER BY id"
        )
        assert case["rows"] == [["[REDACTED]", "a"], ["[REDACTED]", None]]

    def test_a_view_joining_a_masked_table_is_read_unless_it_outputs_the_secret(self) -> None:
        # a view that joins sys_user for its name reads no password, on every engine (PostgreSQL's
        # plan check once counted the scan's whole row as read and refused it for every role); one
        # that outputs a password answers it [REDACTED] (MariaDB's trace check once refused it: the
        # trace holds a merged view's own SELECT, every column of it)
        answer = self.sql("SELECT * FROM paid_orders ORDER BY id")
        assert answer["columns"] == ["id", "amount", "name"] and answer["redacted"] == []
        assert [[row[0], row[2]] for row in answer["rows"]] == [[1, "张三"], [3, "李四"]]
        joined = self.sql("SELECT o.id, u.name FROM orders o JOIN sys_user u ON u.id = o.user_id ORDER BY o.id")
        assert joined["rows"] == [[1, "张三"], [2, "张三"], [3, "李四"]]
        self.alter("CREATE VIEW paid_pw AS SELECT o.id, u.password FROM orders o JOIN sys_user u ON u.id = o.user_id")
        for view in ("paid_pw", "user_secrets"):
            masked = self.sql(f"SELECT * FROM {view}")
            assert not leaked(masked) and masked["rows"] and masked["redacted"], masked
            assert all("[REDACTED]" in row for row in masked["rows"]), masked

    def test_a_column_added_after_indexing_is_masked(self) -> None:  # item 15
        self.alter("CREATE TABLE late_added (id INTEGER PRIMARY KEY, name VARCHAR(20), reset_token VARCHAR(64))")
        self.alter(f"INSERT INTO late_added VALUES (1, 'x', '{SECRET}')")
        self.alter("ALTER TABLE sys_user ADD COLUMN session_token VARCHAR(64)")
        self.alter(f"UPDATE sys_user SET session_token = '{SECRET}'")
        for statement in ("SELECT * FROM late_added", "SELECT session_token FROM sys_user", "SELECT * FROM sys_user"):
            answer = self.sql(statement)
            assert not leaked(answer) and "[REDACTED]" in json.dumps(answer["rows"]), statement
        self.refused("SELECT name FROM late_added WHERE reset_token LIKE 's%'")

    def test_a_generated_column_over_a_password_is_masked(self) -> None:  # item 16
        answer = self.sql("SELECT id, pw_copy FROM gen_user")
        assert answer["rows"] == [[1, "[REDACTED]"]] and not leaked(answer)
        self.refused("SELECT id FROM gen_user WHERE pw_copy = 'X'")

    def test_reads_with_side_effects_are_refused(self) -> None:  # item 22
        for statement in self.SIDE_EFFECTS:
            assert "not on the functions" in self.refused(statement), statement

    def test_an_endless_statement_is_stopped_by_the_time_limit(self) -> None:
        self.seconds = 1  # item 21
        done: list[BaseException] = []

        def run() -> None:
            try:
                self.sql(self.FOREVER)
            except BaseException as exc:  # handed to the test's thread
                done.append(exc)

        started = time.monotonic()
        worker = threading.Thread(target=run, daemon=True)
        worker.start()
        worker.join(20)
        assert not worker.is_alive(), "the statement was not stopped"
        assert time.monotonic() - started < 15
        assert isinstance(done[0], UsageError) and "limit" in str(done[0]), done
        assert self.sql("SELECT count(*) AS n FROM orders")["rows"] == [[3]]  # the next call is answered

    SIDE_EFFECTS: tuple[str, ...] = ()
    FOREVER = FOREVER


class TestSqlite(Guard):
    SIDE_EFFECTS = ("SELECT load_extension('/tmp/evil')", "SELECT readfile('/etc/passwd')")

    @pytest.fixture(autouse=True)
    def _database(self, tmp_path: Path) -> None:
        self.path = make_sqlite(tmp_path / "guard.db")
        self.alter(
            "CREATE TABLE gen_user (id INTEGER PRIMARY KEY, password TEXT, "
            "pw_copy TEXT GENERATED ALWAYS AS (upper(password)) VIRTUAL)"
        )
        self.alter(f"INSERT INTO gen_user (id, password) VALUES (1, '{SECRET}')")
        self.alter("CREATE TABLE notes (id INTEGER PRIMARY KEY, title TEXT, api_token TEXT)")
        self.alter(f"INSERT INTO notes VALUES (1, 'groceries', '{NOTE_SECRET}')")
        self.alter("CREATE VIRTUAL TABLE notes_fts USING fts5(title, api_token, content='notes', content_rowid='id')")
        self.alter("INSERT INTO notes_fts(notes_fts) VALUES ('rebuild')")
        self.alter("CREATE VIRTUAL TABLE memo USING fts5(body, api_token)")
        self.alter(f"INSERT INTO memo VALUES ('call mum', '{NOTE_SECRET}')")

    def connection(self, **options: Any) -> Connection:
        return Connection("guard", str(self.path), "sqlite", **options)

    def alter(self, sql: str) -> None:
        db = sqlite3.connect(self.path)
        db.execute(sql)
        db.commit()
        db.close()

    def test_full_text_indexes_over_a_sensitive_column(self) -> None:  # item 20
        for shadow in ("notes_fts_data", "notes_fts_idx", "notes_fts_docsize", "memo_content", "memo_data"):
            assert "internal table" in self.refused(f"SELECT * FROM {shadow}"), shadow
        for statement in ("SELECT * FROM memo", "SELECT api_token FROM notes_fts", "SELECT body, api_token FROM memo"):
            answer = self.sql(statement)
            assert not leaked(answer) and "[REDACTED]" in json.dumps(answer["rows"]), statement
        self.refused(f"SELECT body FROM memo WHERE memo MATCH '{NOTE_SECRET}'")
        self.refused("SELECT highlight(memo, 1, '[', ']') FROM memo")
        self.refused("SELECT memo FROM memo")


@pytest.fixture(scope="module")
def pg_guard(pg_server: PgServer) -> PgServer:
    pg_server.psql("CREATE DATABASE guard OWNER app", db="postgres")
    pg_server.psql(PG_DDL + ";".join(PORTABLE_ROWS), db="guard", user="app")
    pg_server.psql(
        "CREATE SCHEMA hr; CREATE TABLE hr.staff (id INTEGER PRIMARY KEY, name TEXT, password TEXT);"
        f"INSERT INTO hr.staff VALUES (1, 'Wang', '{HR_SECRET}');"
        "CREATE TABLE gen_user (id INTEGER PRIMARY KEY, password TEXT,"
        " pw_copy TEXT GENERATED ALWAYS AS (upper(password)) STORED);"
        f"INSERT INTO gen_user (id, password) VALUES (1, '{SECRET}');"
        "CREATE MATERIALIZED VIEW mv_login AS SELECT id, name, password AS credential_copy, "
        "  password || '' AS plain FROM sys_user;"
        "CREATE FUNCTION leak_password(i int) RETURNS text LANGUAGE sql "
        "  AS $$ SELECT password FROM sys_user WHERE id = i $$;"
        "CREATE VIEW via_function AS SELECT id, leak_password(id) AS x FROM sys_user",
        db="guard",
        user="app",
    )
    return pg_server


class TestPostgres(Guard):
    SIDE_EFFECTS = (
        "SELECT pg_notify('drsg', 'x')",
        "SELECT pg_advisory_lock(1)",
        "SELECT pg_try_advisory_xact_lock(1)",
        "SELECT pg_sleep(1)",
        "SELECT dblink('dbname=guard', 'select password from sys_user')",
    )

    @pytest.fixture(autouse=True)
    def _server(self, pg_guard: PgServer, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv(PASSWORD_VAR, APP_PASSWORD)
        self.server = pg_guard

    def connection(self, **options: Any) -> Connection:
        dsn = self.server.dsn.rsplit("/", 1)[0] + "/guard"
        return Connection("guard", dsn, "postgresql", password_env=PASSWORD_VAR, **options)

    def alter(self, sql: str) -> None:
        self.server.psql(sql.replace("INTEGER PRIMARY KEY", "INTEGER"), db="guard", user="app")

    def test_ts_rewrite_cannot_run_sql_of_its_own(self) -> None:  # item 13
        self.refused(
            "SELECT ts_rewrite('zz'::tsquery, 'SELECT ''zz''::tsquery, quote_literal(password)::tsquery "
            "FROM sys_user WHERE id = 1')::text"
        )
        for statement in (
            "SELECT query_to_xml('select password from sys_user', true, true, '')::text AS x",
            "SELECT 'select password from sys_user'::tsquery",
            "SELECT u::text FROM sys_user u",
        ):
            self.refused(statement)

    def test_a_materialized_view_over_a_password_is_masked(self) -> None:  # item 16
        answer = self.sql("SELECT * FROM mv_login ORDER BY id")
        assert [row[2:] for row in answer["rows"]] == [["[REDACTED]", "[REDACTED]"]] * 2 and not leaked(answer)
        assert answer["rows"][0][1] == "张三"
        self.refused("SELECT name FROM mv_login WHERE plain LIKE 's%'")
        assert "cannot be checked" in self.refused("SELECT x FROM via_function")

    def test_another_schema_is_masked_too(self) -> None:  # item 18
        answer = self.sql("SELECT s.name, s.password FROM hr.staff s")
        assert answer["rows"] == [["Wang", "[REDACTED]"]]
        self.refused("SELECT name FROM hr.staff WHERE password = 'x'")
        self.refused("SELECT guard.hr.staff.password FROM guard.hr.staff")

    def test_no_server_text_is_echoed(self) -> None:  # a cast's error names the value it could not read
        message = self.refused("SELECT CAST(name AS INTEGER) FROM sys_user")
        assert "张三" not in message and "error" in message


@pytest.fixture(scope="module")
def maria_guard(maria_server: MariaServer) -> MariaServer:
    maria_server.sql(
        "CREATE DATABASE guard CHARACTER SET utf8mb4; GRANT ALL ON guard.* TO 'app'@'127.0.0.1';"
        "CREATE DATABASE hr CHARACTER SET utf8mb4; GRANT ALL ON hr.* TO 'app'@'127.0.0.1'"
    )
    maria_server.sql(MYSQL_DDL + ";".join(PORTABLE_ROWS), db="guard", as_app=True)
    maria_server.sql(
        "CREATE TABLE hr.staff (id INT PRIMARY KEY, name VARCHAR(20), password VARCHAR(64));"
        f"INSERT INTO hr.staff VALUES (1, 'Wang', '{HR_SECRET}');"
        "CREATE TABLE gen_user (id INT PRIMARY KEY, password VARCHAR(64),"
        " pw_copy VARCHAR(64) AS (upper(password)) VIRTUAL);"
        f"INSERT INTO gen_user (id, password) VALUES (1, '{SECRET}')",
        db="guard",
        as_app=True,
    )
    return maria_server


class TestMariadb(Guard):
    SIDE_EFFECTS = ("SELECT GET_LOCK('drsg', 1)", "SELECT RELEASE_ALL_LOCKS()", "SELECT SLEEP(1)")
    #: the server ends a recursion itself (max_recursive_iterations): a billion-row join instead
    FOREVER = (
        "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 1000) "
        "SELECT count(*) AS n FROM r a, r b, r c"
    )

    @pytest.fixture(autouse=True)
    def _server(self, maria_guard: MariaServer, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv(PASSWORD_VAR, APP_PASSWORD)
        self.server = maria_guard

    def connection(self, **options: Any) -> Connection:
        dsn = self.server.dsn.rsplit("/", 1)[0] + "/guard"
        return Connection("guard", dsn, "mysql", password_env=PASSWORD_VAR, **options)

    def alter(self, sql: str) -> None:
        self.server.sql(sql, db="guard", as_app=True)

    def test_the_trace_check_skips_only_a_merged_views_unused_columns(self) -> None:
        # the server's own layer alone (as `find` runs it): a merged view's SELECT lists every column
        # of it, so only what the statement uses of the view counts; its filters and outputs still do
        backend = backend_for(self.connection(), self.seconds)
        pairs = {("sys_user", "password")}
        assert backend.select("SELECT name FROM user_secrets ORDER BY name", [], 10, pairs).rows == [["张三"], ["李四"]]
        self.alter("CREATE VIEW pw_filtered AS SELECT name FROM sys_user WHERE password IS NOT NULL")
        self.alter("CREATE VIEW pw_grouped AS SELECT max(password) AS p, count(*) AS n FROM sys_user")
        for statement in ("SELECT pw FROM user_secrets", "SELECT name FROM pw_filtered", "SELECT n FROM pw_grouped"):
            with pytest.raises(UsageError, match=r"reads sys_user\.password"):
                backend.select(statement, [], 10, pairs)

    def test_an_error_never_carries_a_value(self) -> None:  # item 14
        for statement in (
            "SELECT 1 FROM dual WHERE extractvalue(1, concat(0x7e, (SELECT password FROM sys_user WHERE id = 1)))",
            "SELECT 1 FROM sys_user WHERE updatexml(1, concat(0x7e, password), 1)",
            "SELECT extractvalue(1, concat(0x7e, (SELECT name FROM sys_user WHERE id = 1)))",
        ):
            self.refused(statement)
        message = self.refused("SELECT 1 FROM sys_user WHERE (SELECT name FROM sys_user) = 1")  # > 1 row
        assert "张三" not in message and "error" in message

    def test_another_database_is_masked_too(self) -> None:  # item 18
        answer = self.sql("SELECT s.name, s.password FROM hr.staff s")
        assert answer["rows"] == [["Wang", "[REDACTED]"]]
        self.refused("SELECT name FROM hr.staff WHERE password = 'x'")
