"""Shared fixtures: a fresh database path per test, the CLI run in-process, and a Kafka broker."""

from __future__ import annotations

import json
import signal
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from drsg.surfaces.cli.main import cli
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


@dataclass
class Ran:
    code: int
    out: str
    err: str

    def lines(self) -> list[str]:
        return [line for line in self.out.splitlines() if line]

    def json_lines(self) -> list[dict]:  # type: ignore[type-arg]
        return [json.loads(line) for line in self.lines()]


@pytest.fixture
def drsg(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[..., Ran]:
    """Run `drsg --db <tmp db> ARGS…` in-process and capture stdout, stderr and the exit code."""
    for var in ("DRSG_CONFIG", "DRSG_DB", "DRSG_STORE_MAX_MAP_SIZE", "DRSG_STORE_MAP_SIZE"):
        monkeypatch.delenv(var, raising=False)

    def run(*args: str, db: Path | None = None, input: str | None = None) -> Ran:
        runner = CliRunner()
        result = runner.invoke(cli, ["--db", str(db or db_path), *args], input=input, catch_exceptions=False)
        return Ran(result.exit_code, result.stdout, result.stderr)

    return run


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
