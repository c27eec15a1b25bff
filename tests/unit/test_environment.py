"""The LMDB environment (store/environment.py): the named tables a database holds."""

from __future__ import annotations

from pathlib import Path

import lmdb

import drsg
from drsg.store.environment import DB_NAMES


def _tables(path: Path) -> set[str]:
    env = lmdb.open(str(path), subdir=False, readonly=True, max_dbs=32, lock=False)
    try:
        with env.begin() as txn:
            return {bytes(key).decode() for key, _ in txn.cursor()}
    finally:
        env.close()


def test_a_new_database_holds_exactly_the_named_tables(tmp_path: Path) -> None:
    path = tmp_path / "g.drsg"
    drsg.open(path).close()
    assert _tables(path) == set(DB_NAMES)
    assert "checkpoints" not in _tables(path)  # it was never used by anything


def test_a_database_made_with_the_unused_checkpoints_table_still_opens(tmp_path: Path) -> None:
    path = tmp_path / "g.drsg"
    db = drsg.open(path)
    db.write(lambda tx: tx.create_node(tx.plane("startup"), "ada", ["Person"], {}))
    db.close()
    env = lmdb.open(str(path), subdir=False, max_dbs=32)
    env.open_db(b"checkpoints")  # as databases made before it was removed have it
    env.close()
    for readonly in (True, False):
        db = drsg.open(path, readonly=readonly, create=False)
        with db.snapshot() as snap:
            assert snap.node_by_key(0, "ada") is not None
        if not readonly:
            db.write(lambda tx: tx.create_node(tx.plane("startup"), "bob", [], {}))
        db.close()
    assert "checkpoints" in _tables(path)
