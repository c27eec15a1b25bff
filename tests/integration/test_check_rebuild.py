"""`drsg check` finds a lost, altered or extra projection record and a damaged log record, names the
table, and `drsg rebuild` (for the projection) brings back exactly what the log says.

The damage is done with raw LMDB, below drsg, as a bug or a bit flip would do it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import lmdb
import pytest

from drsg.store.environment import DB_NAMES
from drsg.store.verify import PROJECTION
from tests.support.cli import Drsg

SAMPLE = Path(__file__).resolve().parents[2] / "drsg" / "data" / "sample.jsonl"


@pytest.fixture
def seeded(drsg: Drsg, db_path: Path) -> str:
    assert drsg("import", str(SAMPLE), "--plane", "pioneers", "--create-plane").code == 0
    assert drsg("node", "put", "ada", "--plane", "pioneers", "-P", 'title="Countess"').code == 0
    assert drsg("node", "delete", "@dijkstra", "--plane", "pioneers").code == 0
    assert drsg("index", "keyword", "Person", "note", "--plane", "pioneers").code == 0
    exported = drsg("export", "--plane", "pioneers")
    assert exported.code == 0 and drsg("check").code == 0
    return exported.out


Change = Callable[[lmdb.Transaction, object, bytes, bytes], None]


def _tamper(path: Path, table: str, change: Change, pick: int = 1) -> None:
    env = lmdb.open(str(path), subdir=False, max_dbs=len(DB_NAMES) + 2)
    db = env.open_db(table.encode())
    with env.begin(write=True) as txn:
        rows = list(txn.cursor(db=db))
        assert rows, f"table {table} is empty: nothing to damage"
        key, value = rows[min(pick, len(rows) - 1)]
        change(txn, db, key, value)
    env.close()


def _delete(txn: lmdb.Transaction, db: object, key: bytes, value: bytes) -> None:
    txn.delete(key, db=db)


def _alter(txn: lmdb.Transaction, db: object, key: bytes, value: bytes) -> None:
    txn.put(key, value[:-1] + bytes([value[-1] ^ 0x01]) if value else b"\x01", db=db)


def _extra(txn: lmdb.Transaction, db: object, key: bytes, value: bytes) -> None:
    txn.put(key[:-1] + bytes([key[-1] ^ 0x80]), value, db=db)


@pytest.mark.parametrize("table", PROJECTION)
@pytest.mark.parametrize("change", [_delete, _alter, _extra], ids=["lost", "altered", "extra"])
def test_check_names_a_damaged_projection_table_and_rebuild_repairs_it(
    drsg: Drsg, db_path: Path, seeded: str, table: str, change: Change
) -> None:
    _tamper(db_path, table, change)
    found = drsg("check")
    assert found.code == 1
    assert f"table {table}: the projection differs from a replay of the log" in found.err
    assert "drsg rebuild" in found.err
    assert drsg("rebuild").code == 0
    assert drsg("check").code == 0
    assert drsg("export", "--plane", "pioneers").out == seeded


LOG_DAMAGE = [(_alter, "checksum mismatch"), (_delete, "missing from the log (gap)")]


@pytest.mark.parametrize(("change", "problem"), LOG_DAMAGE)
def test_check_names_a_damaged_log_record_and_rebuild_refuses_to_hide_it(
    drsg: Drsg, db_path: Path, seeded: str, change: Change, problem: str
) -> None:
    _tamper(db_path, "log", change, pick=2)
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
