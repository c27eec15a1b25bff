"""Damage to a closed database file done with raw LMDB, below drsg, as a bug or a bit flip would do it:
:func:`tamper` applies one :data:`Change` to one record of a table."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import lmdb

from drsg.store.environment import DB_NAMES

Change = Callable[[lmdb.Transaction, object, bytes, bytes], None]


def tamper(path: Path, table: str, change: Change, pick: int = 1) -> None:
    env = lmdb.open(str(path), subdir=False, max_dbs=len(DB_NAMES) + 2)
    db = env.open_db(table.encode())
    with env.begin(write=True) as txn:
        rows = list(txn.cursor(db=db))
        assert rows, f"table {table} is empty: nothing to damage"
        key, value = rows[min(pick, len(rows) - 1)]
        change(txn, db, key, value)
    env.close()


def delete_record(txn: lmdb.Transaction, db: object, key: bytes, value: bytes) -> None:
    txn.delete(key, db=db)


def alter_record(txn: lmdb.Transaction, db: object, key: bytes, value: bytes) -> None:
    txn.put(key, value[:-1] + bytes([value[-1] ^ 0x01]) if value else b"\x01", db=db)


def extra_record(txn: lmdb.Transaction, db: object, key: bytes, value: bytes) -> None:
    txn.put(key[:-1] + bytes([key[-1] ^ 0x80]), value, db=db)
