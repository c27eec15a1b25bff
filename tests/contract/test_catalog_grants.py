"""`drsg catalog grants` and the role warning (issue #33, security) on real PostgreSQL and MariaDB.

The statements `catalog grants` prints are run as a superuser; then, connected as the read role
with the engine's own client (psycopg, PyMySQL — not through drsg), every column that is neither
sensitive nor derived from one reads, and every other one is refused by the server. `catalog test`
and `catalog sql` warn (stderr, one line) for a connection whose role can read a sensitive column,
and not for the read role. These are new commands: on the old code `catalog grants` does not exist
(exit 2, "No such command") and `catalog test`/`catalog sql` print no warning.

Beside the contract schema each database holds what the grants must get right: another schema or
database, a generated column over a password, quoted mixed-case names, a view filtering on a
password, a view whose lineage cannot be checked (a user's function), materialized views
(PostgreSQL), and a table whose name carries a line break and a GRANT — printed in a comment, it
must stay a comment."""

from __future__ import annotations

import re
from typing import Any

import pymysql
import pytest

from tests.support.catalog_schema import MYSQL_DDL, PG_DDL, PORTABLE_ROWS
from tests.support.cli import Drsg, Ran
from tests.support.db_servers import APP_PASSWORD, MariaServer, PgServer

VAR, BOSS_VAR, READER_VAR = "DRSG_TEST_GRANTS_APP", "DRSG_TEST_GRANTS_BOSS", "DRSG_TEST_GRANTS_READER"
BOSS_PASSWORD, READER_PASSWORD = "boss-pw-for-grants", "reader-pw-for-grants"
ODD = 'Odd "Name" t'
EVIL = "evil\nGRANT SELECT ON sys_user TO drsg_reader; -- x"
#: what the read role must NOT read (schema, table, column); None: the whole object. Everything else it must.
REFUSED = {
    ("sys_user", "password"), ("sys_user", "api_key"), ("gen_user", "password"), ("gen_user", "pw_copy"),
    ("staff", "password"), (ODD, "pass word"), (EVIL, "password"), ("user_secrets", None),
    ("active_names", None), ("via_function", None), ("mv_login", None),
}  # fmt: skip


def refused(table: str, column: str) -> bool:
    return (table, column) in REFUSED or (table, None) in REFUSED


class Grants:
    """The checks both engines must pass; subclasses connect and run SQL their engine's way."""

    engine = ""
    absent: frozenset[str] = frozenset()  # objects of REFUSED the engine has no kind of (a materialized view)
    #: the test database's sensitive columns and views' columns over one (more on a server-wide superuser)
    exposed = 14

    def dsn(self, user: str) -> str:
        raise NotImplementedError

    def as_superuser(self, script: str) -> None:
        raise NotImplementedError

    def make_reader(self) -> None:
        """Let the read role log in (PostgreSQL: a password; MariaDB: a user whose default role it is)."""
        raise NotImplementedError

    def objects(self) -> list[tuple[str, str, str]]:
        """Every (schema, table, column) of the test's tables and views, read as the superuser."""
        raise NotImplementedError

    def reader_reads(self, schema: str, table: str, column: str) -> bool:
        """Read one column as the read role with the engine's own client: True, or False when the
        server refuses it for want of a privilege (any other error fails the test)."""
        raise NotImplementedError

    @pytest.fixture(autouse=True)
    def _passwords(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv(VAR, APP_PASSWORD)
        monkeypatch.setenv(BOSS_VAR, BOSS_PASSWORD)
        monkeypatch.setenv(READER_VAR, READER_PASSWORD)

    def grant(self, drsg: Drsg) -> Ran:
        """`catalog grants` for the application's connection, run as the superuser."""
        assert drsg("catalog", "add", "app", self.dsn("app"), "--password-env", VAR).code == 0
        printed = drsg("catalog", "grants", "app")
        assert printed.code == 0, printed.err
        self.as_superuser(printed.out)
        self.make_reader()
        return printed

    def test_the_printed_grants_make_a_role_that_reads_all_but_the_sensitive_columns(self, drsg: Drsg) -> None:
        printed = self.grant(drsg)
        assert "withheld: " + EVIL.replace("\n", "?") in printed.out.replace("public.", "").replace("grants.", "")
        self.as_superuser(printed.out)  # a second run is fine (the role exists; grants are revoked and made again)
        objects = self.objects()
        assert {table for _, table, _ in objects} >= {table for table, _ in REFUSED} - self.absent
        wrong = [
            f"{schema}.{table}.{column}"
            for schema, table, column in objects
            if self.reader_reads(schema, table, column) == refused(table, column)
        ]
        assert not wrong, f"the read role reads what it must not, or not what it should: {wrong}"

    def test_the_json_form_names_what_was_left_out_and_why(self, drsg: Drsg) -> None:
        assert drsg("catalog", "add", "app", self.dsn("app"), "--password-env", VAR).code == 0
        answer = drsg("catalog", "grants", "app", "--role", "other_reader", "--json").json_lines()[0]
        assert answer["engine"] == self.engine and answer["role"] == "other_reader"
        assert all("other_reader" in statement for statement in answer["statements"])
        withheld = {(w["table"], w["column"]): w["why"] for w in answer["withheld"]}
        assert withheld[("gen_user", "pw_copy")] == "generated from a sensitive column"
        assert withheld[("sys_user", "password")] == "sensitive"
        left = {item["table"]: item["why"] for item in answer["left_out"]}
        assert "sys_user.password" in left["active_names"] and "cannot be checked" in left["via_function"]
        bad = drsg("catalog", "grants", "app", "--role", "x; DROP TABLE sys_user")
        assert bad.code == 2 and len(bad.err.splitlines()) == 1 and "plain name" in bad.err

    def test_a_role_that_can_read_sensitive_columns_is_warned_about(self, drsg: Drsg) -> None:
        self.grant(drsg)
        assert drsg("catalog", "add", "boss", self.dsn("grants_boss"), "--password-env", BOSS_VAR).code == 0
        assert drsg("catalog", "add", "reader", self.dsn(self.reader_user), "--password-env", READER_VAR).code == 0
        for name in ("app", "boss"):
            tested = drsg("catalog", "test", name)
            assert tested.code == 0 and tested.out.startswith(f"ok: {name} answered")
            assert len(tested.err.splitlines()) == 1 and tested.err.startswith("warning: "), tested.err
            found = re.search(r"can read (\d+) sensitive columns", tested.err)
            assert found and int(found.group(1)) >= self.exposed and f"drsg catalog grants {name}" in tested.err
        ran = drsg("catalog", "sql", "SELECT name FROM sys_user ORDER BY id", "--conn", "boss", "--json")
        assert ran.code == 0 and ran.json_lines()[0]["rows"] == [["张三"], ["李四"]]
        assert ran.err.startswith("warning: ") and "sensitive column" in ran.err
        tested = drsg("catalog", "test", "reader")
        assert tested.code == 0 and tested.err == "", tested.err
        ran = drsg("catalog", "sql", "SELECT name FROM sys_user ORDER BY id", "--conn", "reader", "--json")
        assert ran.code == 0 and ran.json_lines()[0]["rows"] == [["张三"], ["李四"]] and ran.err == ""
        drsg("catalog", "add", "shown", self.dsn("app"), "--password-env", VAR, "--show-sensitive")
        assert drsg("catalog", "test", "shown").err == ""  # masking off: the operator chose to read them

    def test_the_read_role_reads_views_through_catalog_sql(self, drsg: Drsg) -> None:
        # a view's lineage is read as the read role too (MariaDB: SHOW CREATE VIEW, which the grants
        # allow, where information_schema hides the definition from a column-level grant)
        self.grant(drsg)
        assert drsg("catalog", "add", "reader", self.dsn(self.reader_user), "--password-env", READER_VAR).code == 0
        for statement, rows in (
            ("SELECT id, name FROM paid_orders ORDER BY id", [[1, "张三"], [3, "李四"]]),
            ("SELECT * FROM user_secrets ORDER BY name", None),  # left out of the grants: refused by the server
            (f"SELECT * FROM {self.hr}.staff_names", [[1, "ann"]]),  # another database's view: its own tables
        ):
            ran = drsg("catalog", "sql", statement, "--conn", "reader", "--json")
            if rows is None:
                assert ran.code == 2 and "cannot be checked" not in ran.err and len(ran.err.splitlines()) == 1, ran.err
                continue
            assert ran.code == 0 and ran.err == "", ran.err
            assert ran.json_lines()[0]["rows"] == rows

    reader_user = "drsg_reader"
    hr = "hr"


# ---------------------------------------------------------------------------------------------- PostgreSQL

PG_EXTRA = f"""
CREATE SCHEMA hr; CREATE TABLE hr.staff (id INTEGER PRIMARY KEY, name TEXT, password TEXT);
INSERT INTO hr.staff VALUES (1, 'ann', 'staff-pw'); CREATE VIEW hr.staff_names AS SELECT id, name FROM hr.staff;
CREATE TABLE gen_user (id INTEGER PRIMARY KEY, password TEXT,
  pw_copy TEXT GENERATED ALWAYS AS (upper(password)) STORED);
CREATE TABLE "{ODD.replace('"', '""')}" (id INTEGER, "Mixed Col" TEXT, "pass word" TEXT);
CREATE TABLE "{EVIL}" (id INTEGER, password TEXT);
CREATE MATERIALIZED VIEW mv_login AS SELECT id, name, password AS credential_copy FROM sys_user;
CREATE MATERIALIZED VIEW mv_depts AS SELECT id, dept_name FROM sys_dept;
CREATE VIEW active_names AS SELECT name FROM sys_user WHERE password IS NOT NULL;
CREATE FUNCTION leak_password(i int) RETURNS text LANGUAGE sql AS $$ SELECT password FROM sys_user WHERE id = i $$;
CREATE VIEW via_function AS SELECT id, leak_password(id) AS x FROM sys_user;
"""


@pytest.fixture(scope="module")
def pg_grants(pg_server: PgServer) -> PgServer:
    pg_server.psql("CREATE DATABASE grants OWNER app", db="postgres")
    pg_server.psql(PG_DDL + ";".join(PORTABLE_ROWS) + ";" + PG_EXTRA, db="grants", user="app")
    pg_server.psql(f"CREATE ROLE grants_boss LOGIN SUPERUSER PASSWORD '{BOSS_PASSWORD}'", db="postgres")
    return pg_server


class TestPostgres(Grants):
    engine = "postgresql"

    @pytest.fixture(autouse=True)
    def _server(self, pg_grants: PgServer) -> None:
        self.server = pg_grants

    def dsn(self, user: str) -> str:
        return f"postgresql://{user}@127.0.0.1:{self.server.port}/grants"

    def _connect(self, user: str, password: str) -> Any:
        import psycopg

        return psycopg.connect(
            host="127.0.0.1", port=self.server.port, dbname="grants", user=user, password=password, autocommit=True
        )

    def as_superuser(self, script: str) -> None:
        self.server.psql(script, db="grants", user="postgres")

    def make_reader(self) -> None:
        self.server.psql(f"ALTER ROLE drsg_reader PASSWORD '{READER_PASSWORD}'", db="grants", user="postgres")

    def objects(self) -> list[tuple[str, str, str]]:
        with self._connect("grants_boss", BOSS_PASSWORD) as db:
            return db.execute(
                "select n.nspname, c.relname, a.attname from pg_attribute a join pg_class c on c.oid = a.attrelid "
                "join pg_namespace n on n.oid = c.relnamespace where n.nspname in ('public', 'hr') "
                "and c.relkind in ('r', 'v', 'm') and a.attnum > 0 and not a.attisdropped"
            ).fetchall()

    def reader_reads(self, schema: str, table: str, column: str) -> bool:
        import psycopg
        from psycopg import sql

        with self._connect("drsg_reader", READER_PASSWORD) as db:
            try:
                db.execute(sql.SQL("select {} from {}.{}").format(*map(sql.Identifier, (column, schema, table))))
            except psycopg.errors.InsufficientPrivilege:
                return False
        return True

    def test_a_column_renamed_to_a_sensitive_name_is_revoked_by_the_next_run(self, drsg: Drsg) -> None:
        self.grant(drsg)
        assert self.reader_reads("public", "sys_dept", "dept_name")
        self.server.psql("ALTER TABLE sys_dept RENAME COLUMN dept_name TO dept_secret", db="grants", user="app")
        try:
            # PostgreSQL keeps a column's privileges through a rename: only the REVOKE takes it back
            assert self.reader_reads("public", "sys_dept", "dept_secret")
            self.as_superuser(drsg("catalog", "grants", "app").out)
            assert not self.reader_reads("public", "sys_dept", "dept_secret")
            assert self.reader_reads("public", "sys_dept", "id")
        finally:
            self.server.psql("ALTER TABLE sys_dept RENAME COLUMN dept_secret TO dept_name", db="grants", user="app")


# ---------------------------------------------------------------------------------------------- MariaDB

MARIA_EXTRA = f"""
CREATE TABLE grants_hr.staff (id INT PRIMARY KEY, name VARCHAR(20), password VARCHAR(64));
INSERT INTO grants_hr.staff VALUES (1, 'ann', 'staff-pw');
CREATE VIEW grants_hr.staff_names AS SELECT id, name FROM grants_hr.staff;
CREATE TABLE gen_user (id INT PRIMARY KEY, password VARCHAR(64), pw_copy VARCHAR(64) AS (upper(password)) VIRTUAL);
CREATE TABLE `{ODD}` (id INT, `Mixed Col` TEXT, `pass word` TEXT);
CREATE TABLE `{EVIL}` (id INT, password TEXT);
CREATE VIEW active_names AS SELECT name FROM sys_user WHERE password IS NOT NULL;
CREATE FUNCTION leak_password(i INT) RETURNS TEXT READS SQL DATA RETURN (SELECT password FROM sys_user WHERE id = i);
CREATE VIEW via_function AS SELECT id, leak_password(id) AS x FROM sys_user;
"""
READER_HOST = "'grants_reader'@'127.0.0.1'"


@pytest.fixture(scope="module")
def maria_grants(maria_server: MariaServer) -> MariaServer:
    maria_server.sql(
        "CREATE DATABASE grants CHARACTER SET utf8mb4; CREATE DATABASE grants_hr CHARACTER SET utf8mb4;"
        "GRANT ALL ON grants.* TO 'app'@'127.0.0.1'; GRANT ALL ON grants_hr.* TO 'app'@'127.0.0.1';"
        f"CREATE USER 'grants_boss'@'127.0.0.1' IDENTIFIED BY '{BOSS_PASSWORD}';"
        "GRANT ALL ON *.* TO 'grants_boss'@'127.0.0.1' WITH GRANT OPTION"
    )
    maria_server.sql(MYSQL_DDL + ";".join(PORTABLE_ROWS) + ";" + MARIA_EXTRA, db="grants", as_app=True)
    return maria_server


class TestMariadb(Grants):
    engine = "mysql"
    reader_user = "grants_reader"
    hr = "grants_hr"
    absent = frozenset({"mv_login"})
    exposed = 11

    @pytest.fixture(autouse=True)
    def _server(self, maria_grants: MariaServer) -> None:
        self.server = maria_grants

    def dsn(self, user: str) -> str:
        return f"mysql://{user}@127.0.0.1:{self.server.port}/grants"

    def _connect(self, user: str, password: str) -> Any:
        return pymysql.connect(host="127.0.0.1", port=self.server.port, user=user, password=password, database="grants")

    def as_superuser(self, script: str) -> None:
        self.server.sql(script)

    def make_reader(self) -> None:
        self.server.sql(
            f"CREATE USER IF NOT EXISTS {READER_HOST} IDENTIFIED BY '{READER_PASSWORD}';"
            f"GRANT drsg_reader TO {READER_HOST}; SET DEFAULT ROLE drsg_reader FOR {READER_HOST}"
        )

    def objects(self) -> list[tuple[str, str, str]]:
        db = self._connect("grants_boss", BOSS_PASSWORD)
        try:
            with db.cursor() as cur:
                cur.execute(
                    "SELECT TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME FROM information_schema.COLUMNS "
                    "WHERE TABLE_SCHEMA IN ('grants', 'grants_hr')"
                )
                return [tuple(row) for row in cur.fetchall()]
        finally:
            db.close()

    def reader_reads(self, schema: str, table: str, column: str) -> bool:
        db = self._connect(self.reader_user, READER_PASSWORD)
        try:
            with db.cursor() as cur:
                name = ".".join("`" + part.replace("`", "``") + "`" for part in (schema, table))
                cur.execute(f"SELECT `{column.replace('`', '``')}` FROM {name}")
        except pymysql.MySQLError as exc:
            if exc.args[0] in (1142, 1143):  # table or column access denied
                return False
            raise
        finally:
            db.close()
        return True


def test_sqlite_has_no_roles_to_grant(drsg: Drsg, tmp_path: Any) -> None:
    from tests.support.catalog_schema import make_sqlite

    drsg("catalog", "add", "lite", str(make_sqlite(tmp_path / "app.db")))
    ran = drsg("catalog", "grants", "lite")
    assert ran.code == 2 and ran.out == "" and len(ran.err.splitlines()) == 1 and "SQLite has no roles" in ran.err
    tested = drsg("catalog", "test", "lite")
    assert tested.code == 0 and tested.err == ""
