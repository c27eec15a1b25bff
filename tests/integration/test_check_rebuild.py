"""`drsg check` finds a lost, altered or extra projection record and a damaged log record, names the
table, and `drsg rebuild` (for the projection) brings back exactly what the log says.

The damage is done with raw LMDB, below drsg, as a bug or a bit flip would do it."""

from __future__ import annotations

from pathlib import Path

import pytest

from drsg.store.verify import PROJECTION
from tests.support.cli import Drsg
from tests.support.damage import Change, alter_record, delete_record, extra_record, tamper
from tests.support.sample import SAMPLE


@pytest.fixture
def seeded(drsg: Drsg, db_path: Path) -> str:
    assert drsg("import", str(SAMPLE), "--plane", "pioneers", "--create-plane").code == 0
    assert drsg("node", "put", "ada", "--plane", "pioneers", "-P", 'title="Countess"').code == 0
    assert drsg("node", "delete", "@dijkstra", "--plane", "pioneers").code == 0
    assert drsg("index", "keyword", "Person", "note", "--plane", "pioneers").code == 0
    exported = drsg("export", "--plane", "pioneers")
    assert exported.code == 0 and drsg("check").code == 0
    return exported.out


@pytest.mark.parametrize("table", PROJECTION)
@pytest.mark.parametrize("change", [delete_record, alter_record, extra_record], ids=["lost", "altered", "extra"])
def test_check_names_a_damaged_projection_table_and_rebuild_repairs_it(
    drsg: Drsg, db_path: Path, seeded: str, table: str, change: Change
) -> None:
    tamper(db_path, table, change)
    found = drsg("check")
    assert found.code == 1
    assert f"table {table}: the projection differs from a replay of the log" in found.err
    assert "drsg rebuild" in found.err
    assert drsg("rebuild").code == 0
    assert drsg("check").code == 0
    assert drsg("export", "--plane", "pioneers").out == seeded


LOG_DAMAGE = [(alter_record, "checksum mismatch"), (delete_record, "missing from the log (gap)")]


@pytest.mark.parametrize(("change", "problem"), LOG_DAMAGE)
def test_check_names_a_damaged_log_record_and_rebuild_refuses_to_hide_it(
    drsg: Drsg, db_path: Path, seeded: str, change: Change, problem: str
) -> None:
    tamper(db_path, "log", change, pick=2)
    found = drsg("check")
    assert found.code == 1
    assert "table log: log record 3 is corrupt" in found.err and problem in found.err
    rebuilt = drsg("rebuild")  # the projection cannot be rebuilt from a log that is not whole
    assert rebuilt.code == 1 and "log record 3 is corrupt" in rebuilt.err
    assert len(rebuilt.err.strip().splitlines()) == 1


def test_check_says_ok_on_a_healthy_database_with_what_it_verified(drsg: Drsg, seeded: str) -> None:
    ran = drsg("check")
    assert ran.code == 0
    assert ran.out.startswith("ok: 5 commits verified, 20 nodes readable across all planes;")
    assert "the projection matches a replay of the log" in ran.out
