"""Issue #33 item 21 on a real `drsg serve`: endless SQLite `catalog.sql` statements are stopped at
``[catalog] statement_seconds``, each answering a one-line error, and leave no thread spinning —
the read pool answers again and the process goes back to idle."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from drsg.pipeline.catalog.connections import Connection, Connections
from tests.support.catalog_schema import make_sqlite
from tests.support.server import RunningServer, start_server

FOREVER = "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n+1 FROM r) SELECT count(*) FROM r"
LIMIT_SECONDS = 1
CALLS = 8  # as many as the server's read threads: before the limit, every one of them spun on


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    workdir = tmp_path_factory.mktemp("serve-catalog-limit")
    db = workdir / "graph.drsg"
    Connections(db).add(Connection("app", str(make_sqlite(workdir / "app.db")), "sqlite"))
    # the read timeout well above the statement limit: the statement limit must be what answers
    env = {"DRSG_CATALOG_STATEMENT_SECONDS": str(LIMIT_SECONDS), "DRSG_SERVER_QUERY_TIMEOUT_SECS": "20"}
    running = start_server(db, workdir, env=env)
    yield running
    assert running.stop() == 0


def cpu_seconds(pid: int) -> float:
    """The process's user + system CPU time, all threads (``/proc/PID/stat`` fields 14 and 15)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_endless_statements_stop_at_the_limit_and_leave_the_server_idle(served: RunningServer) -> None:
    def call(_: int) -> tuple[float, dict[str, Any]]:
        started = time.monotonic()
        answer = served.rpc("catalog.sql", {"connection": "app", "sql": FOREVER})
        return time.monotonic() - started, answer

    with ThreadPoolExecutor(CALLS) as pool:
        answers = list(pool.map(call, range(CALLS)))
    for took, answer in answers:
        assert "error" in answer, answer
        message = answer["error"]["message"]
        assert answer["error"]["code"] == -32602 and "\n" not in message, answer
        assert f"{LIMIT_SECONDS} s limit" in message and "statement_seconds" in message, message
        assert took < LIMIT_SECONDS + 10, took  # the limit plus slack for 8 threads on 2 cores
    started = time.monotonic()
    assert isinstance(served.call("plane.list"), list)
    assert time.monotonic() - started < 2
    health = served.get("/health")
    assert health.status == 200 and health.json()["status"] == "ok"
    time.sleep(0.5)  # let the last answers' bookkeeping settle
    before = cpu_seconds(served.proc.pid)
    time.sleep(2)
    spent = cpu_seconds(served.proc.pid) - before
    assert spent < 0.3, f"the server burnt {spent:.2f} s of CPU in 2 s after the calls answered"
