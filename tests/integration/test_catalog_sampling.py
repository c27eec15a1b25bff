"""What `drsg catalog index` samples, on all three engines (real SQLite, PostgreSQL and MariaDB),
end to end through the CLI: estimates that exist, samples isolated from each other's failures,
and no sample ever of a sensitive, unique or generated column (or a view over one) — so none of
their values reaches the log, the verbs or the digest a model reads. And connections that keep
working from another folder."""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from drsg.store.database import Database
from tests.support.catalog_schema import make_sqlite
from tests.support.cli import Drsg, Ran
from tests.support.db_servers import APP_PASSWORD, APP_USER, MariaServer, PgServer

PASSWORD_VAR = "DRSG_TEST_SAMPLING_PASSWORD"
#: values no sample may hold: a camel-case PassWord, a Chinese 登录密码, plural api_tokens, a
#: generated column over the password, a unique e-mail and a name `[catalog] sensitive` adds
NEVER = ["hunter2-ann", "hunter2-bob", "HUNTER2-ANN", "登录-ann", "tok-ann", "ann@example.org", "nick-ann"]
ROWS = [
    (1, "ann@example.org", "staff", "hunter2-ann", "登录-ann", "tok-ann", "nick-ann"),
    (2, "bob@example.org", "guest", "hunter2-bob", "登录-bob", "tok-bob", "nick-bob"),
]
VALUES = ", ".join(f"({i}, '{e}', '{k}', '{p}', '{c}', '{t}', '{n}')" for i, e, k, p, c, t, n in ROWS)
COLUMNS = "(id, email, kind, {q}PassWord{q}, {q}登录密码{q}, api_tokens, nickname)"

SQLITE = f"""
CREATE TABLE person (id INTEGER PRIMARY KEY, email TEXT UNIQUE, kind TEXT, PassWord TEXT, 登录密码 TEXT,
  api_tokens TEXT, nickname TEXT, pw_shout TEXT GENERATED ALWAYS AS (upper(PassWord)) STORED);
CREATE TABLE docs (body TEXT);
INSERT INTO person {COLUMNS.format(q="")} VALUES {VALUES};
INSERT INTO docs VALUES ('{{not json');
CREATE VIEW a_broken AS SELECT kind AS k FROM person, docs WHERE json_extract(docs.body, '$.a') IS NULL;
CREATE VIEW v_shout AS SELECT pw_shout AS s FROM person;
"""
PG = f"""
CREATE TABLE person (id INT PRIMARY KEY, email TEXT, kind TEXT, "PassWord" TEXT, "登录密码" TEXT,
  api_tokens TEXT, nickname TEXT, pw_shout TEXT GENERATED ALWAYS AS (upper("PassWord")) STORED);
CREATE UNIQUE INDEX person_email ON person (email);
INSERT INTO person {COLUMNS.format(q='"')} VALUES {VALUES};
CREATE VIEW a_broken AS SELECT (id / (id - id))::text AS k FROM person;
CREATE VIEW v_shout AS SELECT pw_shout AS s FROM person;
"""
#: a materialized view reads its own rows: its plan does not show that it copied a password
PG_MATERIALIZED = """
CREATE TABLE account (id INT PRIMARY KEY, kind TEXT, password TEXT);
INSERT INTO account VALUES (1, 'staff', 'hunter2-ann'), (2, 'guest', 'hunter2-bob');
CREATE MATERIALIZED VIEW m_pw AS SELECT id, password AS p, kind FROM account;
"""
MARIA = f"""
CREATE TABLE person (id INT PRIMARY KEY, email VARCHAR(64) UNIQUE, kind VARCHAR(16), `PassWord` VARCHAR(64),
  `登录密码` VARCHAR(64), api_tokens VARCHAR(64), nickname VARCHAR(64),
  pw_shout VARCHAR(64) AS (upper(`PassWord`)) STORED);
INSERT INTO person {COLUMNS.format(q="`")} VALUES {VALUES};
CREATE VIEW a_broken AS SELECT (SELECT kind FROM person) AS k FROM person;
CREATE VIEW v_shout AS SELECT pw_shout AS s FROM person;
"""


@pytest.fixture(scope="module")
def pg_sampled(pg_server: PgServer) -> str:
    """A database of its own on the session's server, never ANALYZEd."""
    pg_server.psql(f"CREATE DATABASE sampling OWNER {APP_USER}", db="postgres")
    pg_server.psql(PG, db="sampling", user=APP_USER)
    return pg_server.dsn.rsplit("/", 1)[0] + "/sampling"


@pytest.fixture(scope="module")
def pg_materialized(pg_server: PgServer) -> str:
    pg_server.psql(f"CREATE DATABASE materialized OWNER {APP_USER}", db="postgres")
    pg_server.psql(PG_MATERIALIZED, db="materialized", user=APP_USER)
    return pg_server.dsn.rsplit("/", 1)[0] + "/materialized"


@pytest.fixture(scope="module")
def maria_sampled(maria_server: MariaServer) -> str:
    maria_server.sql(f"CREATE DATABASE sampling; GRANT ALL ON sampling.* TO '{APP_USER}'@'127.0.0.1'")
    maria_server.sql(MARIA, db="sampling", as_app=True)
    return maria_server.dsn.rsplit("/", 1)[0] + "/sampling"


@pytest.fixture(params=["sqlite", "postgresql", "mariadb"])
def indexed(
    request: pytest.FixtureRequest, drsg: Drsg, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[str, Ran]]:
    """`catalog add` + `catalog index` of the engine's sampling schema, `nickname` made sensitive
    by the environment only (not by `catalog add --sensitive`)."""
    monkeypatch.setenv(PASSWORD_VAR, APP_PASSWORD)
    monkeypatch.setenv("DRSG_CATALOG_SENSITIVE", "nickname")
    if request.param == "sqlite":
        path = tmp_path / "sampling.db"
        db = sqlite3.connect(path)
        db.executescript(SQLITE)
        db.close()
        added = drsg("catalog", "add", "s", str(path))
    else:
        dsn = request.getfixturevalue("pg_sampled" if request.param == "postgresql" else "maria_sampled")
        added = drsg("catalog", "add", "s", dsn, "--password-env", PASSWORD_VAR)
    assert added.code == 0, added.err
    ran = drsg("catalog", "index", "s")
    assert ran.code == 0, ran.err
    yield request.param, ran


def _columns(drsg: Drsg, table: str) -> dict[str, dict[str, object]]:
    ran = drsg("catalog", "columns", table, "--json")
    assert ran.code == 0, ran.err
    return {c["name"]: c for c in json.loads(ran.out)["columns"]}


def test_samples_skip_sensitive_unique_and_generated_columns(
    indexed: tuple[str, Ran], drsg: Drsg, db_path: Path
) -> None:
    person = _columns(drsg, "person")
    assert person["kind"]["enum_sample"] == ["guest", "staff"]  # an ordinary column still is sampled
    for name in ("email", "PassWord", "登录密码", "api_tokens", "nickname", "pw_shout"):
        assert "enum_sample" not in person[name], name
    assert person["email"]["unique"] is True  # PostgreSQL: a unique index, not a constraint
    for name in ("PassWord", "登录密码", "api_tokens", "nickname"):
        assert person[name]["sensitive"] is True, name
    assert "enum_sample" not in _columns(drsg, "v_shout")["s"]  # a view over a generated column
    digest = drsg("catalog", "digest").out
    assert re.search(r"nickname \S+ sensitive", digest) and "{guest,staff}" in digest
    shown = drsg("catalog", "schema", "--json").out + digest
    logged = b"".join(p.read_bytes() for p in db_path.parent.glob(db_path.name + "*/**/*") if p.is_file())
    assert logged  # the log's files were read
    for value in NEVER:
        assert value not in shown, value
        assert value.encode() not in logged, value


def test_one_failing_sample_is_a_warning_and_spoils_nothing_after_it(indexed: tuple[str, Ran]) -> None:
    """a_broken sorts first and fails when read (malformed JSON, division by zero, a subquery of
    two rows); person's samples after it are kept, and the warning names the column."""
    engine, ran = indexed
    code = {"sqlite": "(OperationalError SQLITE_ERROR)", "postgresql": "(DivisionByZero 22012)"}.get(engine, "21000")
    assert "warning: a_broken.k: sample failed" in ran.err and code in ran.err, ran.err
    assert "hunter2" not in ran.err and "@example.org" not in ran.err


def test_a_never_analysed_table_is_counted(indexed: tuple[str, Ran], drsg: Drsg) -> None:
    objects = {o["name"]: o for o in drsg("catalog", "objects", "--json").json_lines()}
    assert objects["person"]["row_estimate"] == 2


def test_a_materialized_view_over_a_password_is_not_sampled(
    pg_materialized: str, drsg: Drsg, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(PASSWORD_VAR, APP_PASSWORD)
    assert drsg("catalog", "add", "s", pg_materialized, "--password-env", PASSWORD_VAR).code == 0
    ran = drsg("catalog", "index", "s")
    assert ran.code == 0 and ran.err == "", ran.err
    matview = _columns(drsg, "m_pw")
    assert "enum_sample" not in matview["p"]
    assert "hunter2" not in drsg("catalog", "digest").out


def test_a_name_made_sensitive_later_loses_its_sample_on_the_next_run(
    drsg: Drsg, tmp_path: Path, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert drsg("catalog", "add", "app", str(make_sqlite(tmp_path / "app.db"))).code == 0
    assert drsg("catalog", "index", "app").code == 0
    assert _columns(drsg, "orders")["status"]["enum_sample"] == ["paid", "unpaid"]
    monkeypatch.setenv("DRSG_CATALOG_SENSITIVE", "status")
    digest = drsg("catalog", "digest").out
    assert "status VARCHAR(16) sensitive" in digest and "{paid,unpaid}" not in digest  # hidden at once
    assert drsg("catalog", "index", "app", "--level", "l1").code == 0  # an l1 run keeps l2's facts, not this
    with Database(db_path, readonly=True) as db, db.snapshot() as snap:
        node = snap.node_by_key(snap.plane("catalog_app").id, "c:orders.status")
        assert node is not None and "enum_sample" not in node.props and node.props["sensitive"] is True


def test_a_relative_sqlite_path_works_from_another_folder(
    drsg: Drsg, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    here, elsewhere = tmp_path / "here", tmp_path / "elsewhere"
    here.mkdir()
    elsewhere.mkdir()
    make_sqlite(here / "app.db")
    monkeypatch.chdir(here)
    assert drsg("catalog", "add", "app", "app.db").code == 0
    assert drsg("catalog", "add", "url", "sqlite:///app.db").code == 0
    monkeypatch.chdir(elsewhere)
    for name in ("app", "url"):
        assert drsg("catalog", "test", name).code == 0
        ran = drsg("catalog", "index", name)
        assert ran.code == 0, ran.err
    listed = {c["name"]: c["dsn"] for c in drsg("catalog", "list", "--json").json_lines()}
    assert listed == {"app": str(here / "app.db"), "url": str(here / "app.db")}
