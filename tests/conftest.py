"""Shared fixtures: a fresh database path per test, the CLI run in-process, and a Kafka broker."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cli import Drsg, runner
from tests.support.db_servers import MariaServer, PgServer
from tests.support.kafka_broker import Broker

# A shell starts a background job (`make test &`, nohup) with SIGINT ignored, and children inherit
# that: Python then raises no KeyboardInterrupt, and a `drsg log --follow` the tests Ctrl-C never
# stops. The tests that interrupt a wait need Python's own handler, whatever started pytest (a
# caught signal is reset to its default in a child, so the children get theirs back too).
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "graph.drsg"


@pytest.fixture
def drsg(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> Drsg:
    """Run `drsg --db <tmp db> ARGS…` in-process and capture stdout, stderr and the exit code."""
    for var in ("DRSG_CONFIG", "DRSG_DB", "DRSG_STORE_MAX_MAP_SIZE", "DRSG_STORE_MAP_SIZE"):
        monkeypatch.delenv(var, raising=False)
    return runner(db_path)


@pytest.fixture(scope="session")
def kafka_broker() -> Iterator[Broker]:
    """One memory-only tansu broker on a free loopback port for the whole session (started on first use)."""
    with Broker() as broker:
        yield broker


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    """A throwaway PostgreSQL on a free loopback port for the session (started on first use)."""
    with PgServer() as server:
        yield server


@pytest.fixture(scope="session")
def maria_server() -> Iterator[MariaServer]:
    """A throwaway MariaDB on a free loopback port for the session (started on first use)."""
    with MariaServer() as server:
        yield server
