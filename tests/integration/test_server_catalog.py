"""`catalog.index`, `catalog.find` and `catalog.sql` over JSON-RPC on a real `drsg serve` process,
against a real SQLite file and the session's PostgreSQL (its password from the server's env)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from drsg.pipeline.catalog.connections import Connection, Connections
from tests.support.catalog_schema import PG_DDL, PORTABLE_ROWS, SECRET, make_sqlite
from tests.support.db_servers import APP_PASSWORD, PgServer
from tests.support.server import RunningServer, start_server
from tests.support.waiting import wait_until

SEED = {"entity": "用户", "fields": ["密码"], "where": {"name": "张三"}}
VAR = "DRSG_TEST_SERVED_PG_PASSWORD"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, pg_server: PgServer) -> Iterator[RunningServer]:
    workdir = tmp_path_factory.mktemp("serve-catalog")
    pg_server.psql("CREATE DATABASE served OWNER app", db="postgres")
    pg_server.psql(PG_DDL + ";".join(PORTABLE_ROWS), db="served", user="app")
    db = workdir / "graph.drsg"
    conns = Connections(db)
    conns.add(Connection("app", str(make_sqlite(workdir / "app.db")), "sqlite"))
    dsn = pg_server.dsn.rsplit("/", 1)[0] + "/served"
    conns.add(Connection("pg", dsn, "postgresql", password_env=VAR))
    running = start_server(db, workdir, env={VAR: APP_PASSWORD})
    yield running
    assert running.stop() == 0


def test_index_then_find_in_one_select(served: RunningServer) -> None:
    reports = served.call("catalog.index", {"connection": "app"})
    assert [r["level"] for r in reports] == ["l1", "l2"] and reports[0]["created"] > 0
    answer = served.call("catalog.find", {"connection": "app", **SEED})
    assert answer["status"] == "ok" and answer["table"] == "sys_user" and answer["rows"] == [["[REDACTED]"]]
    assert served.call("catalog.find", {"connection": "app", "entity": "用户"})["status"] == "missing_predicate"
    listed = {m["name"] for m in served.call("rpc.discover")["methods"]}
    assert {"catalog.index", "catalog.find", "catalog.sql"} <= listed


def test_postgres_over_rpc_with_the_password_from_the_servers_env(served: RunningServer) -> None:
    served.call("catalog.index", {"connection": "pg"})
    answer = served.call("catalog.find", {"connection": "pg", **SEED})
    assert answer["rows"] == [["[REDACTED]"]] and answer["sql"].count("%s") == 2
    rows = served.call("catalog.sql", {"connection": "pg", "sql": "SELECT status FROM orders ORDER BY id", "limit": 2})
    assert rows["rows"] == [["paid"], ["unpaid"]] and rows["truncated"] is True


def test_l2_in_the_background_lands_after_l1(served: RunningServer) -> None:
    served.call("plane.delete", {"plane": "catalog_app"})
    reports = served.call("catalog.index", {"connection": "app", "background": True})
    assert [r["level"] for r in reports] == ["l1", "l2"] and reports[1] == {"level": "l2", "background": True}

    def l2_landed() -> bool:
        planes = {p["name"]: p for p in served.call("plane.list")}
        return "catalog_l2_at" in planes["catalog_app"]["properties"]

    wait_until(l2_landed, "the background L2 commit", timeout=30)
    answer = served.call(
        "catalog.find", {"connection": "app", "entity": "订单", "fields": ["金额"], "where": {"status": "paid"}}
    )
    assert len(answer["rows"]) == 2


def test_errors_are_one_line_and_write_nothing(served: RunningServer) -> None:
    head = served.head()
    refused = served.error("catalog.sql", {"connection": "app", "sql": "DELETE FROM orders"})
    assert refused["code"] == -32602 and "read-only" in refused["message"]
    leak = served.error("catalog.sql", {"connection": "pg", "sql": "SELECT name FROM user_secrets WHERE pw LIKE 's%'"})
    assert leak["code"] == -32602 and "masked" in leak["message"] and SECRET not in str(leak)
    missing = served.error("catalog.find", {"connection": "nope", "entity": "x"})
    assert "drsg catalog add" in missing["message"] and "\n" not in missing["message"]
    assert served.head() == head
