"""The `drsg` command run in-process, as the tests' ``drsg`` fixture (tests/conftest.py) runs it: what a
run gave (:class:`Ran`) and the fixture's type (:class:`Drsg`), so a test annotates ``drsg: Drsg``."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from click.testing import CliRunner

from drsg.surfaces.cli.main import cli


@dataclass
class Ran:
    """One run of the command: its exit code and what it wrote to stdout and stderr."""

    code: int
    out: str
    err: str

    def lines(self) -> list[str]:
        return [line for line in self.out.splitlines() if line]

    def json_lines(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.lines()]


class Drsg(Protocol):
    """Run ``drsg --db DB ARGS…`` (DB: the test's database unless ``db`` names another), ``input`` on stdin."""

    def __call__(self, *args: str, db: Path | None = None, input: str | None = None) -> Ran: ...


def runner(db_path: Path) -> Drsg:
    """A :class:`Drsg` whose database is ``db_path`` unless a call names another."""

    def run(*args: str, db: Path | None = None, input: str | None = None) -> Ran:
        result = CliRunner().invoke(cli, ["--db", str(db or db_path), *args], input=input, catch_exceptions=False)
        return Ran(result.exit_code, result.stdout, result.stderr)

    return run


def seed_social(drsg: Drsg) -> None:
    """Plane `social`: Ada and Bob (Person), Ada KNOWS Bob — four commits after the bootstrap."""
    assert drsg("plane", "create", "social").code == 0
    assert drsg("node", "put", "ada", "-p", "social", "-l", "Person", "-P", "born=1815").code == 0
    assert drsg("node", "put", "bob", "-p", "social", "-l", "Person").code == 0
    assert drsg("edge", "put", "@ada", "@bob", "KNOWS", "-p", "social", "-P", "since=1833").code == 0


def head_seq(drsg: Drsg) -> int:
    """The database's head seq, as `drsg stats --json` reports it."""
    return int(drsg("stats", "--json").json_lines()[0]["commit_seq"])
