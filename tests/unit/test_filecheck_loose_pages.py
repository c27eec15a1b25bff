"""A healthy LMDB file can be shorter than its header says: pages allocated and freed within one
transaction ("loose" pages) count in the header's last page but are never written. The check made
before mapping a file must let such a file open, and still refuse one missing a page in use."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import lmdb
import pytest

from drsg.kernel.errors import DamagedDatabase
from drsg.store.filecheck import check_file


def _loose_tail(path: Path) -> tuple[int, int]:
    """A file whose last allocated pages were freed in the transactions that allocated them."""
    env = lmdb.open(str(path), subdir=False, map_size=1 << 30, max_dbs=4)
    table = env.open_db(b"t")
    with env.begin(write=True) as txn:
        for i in range(2000):
            txn.put(b"%06d" % i, b"x" * 100, db=table)
    for _ in range(3):
        with env.begin(write=True) as txn:
            for i in range(3000):
                txn.put(b"b%06d" % i, b"y" * 300, db=table)
            for i in range(50):
                txn.put(b"o%03d" % i, b"z" * 20000, db=table)  # overflow pages
            for i in range(3000):
                txn.delete(b"b%06d" % i, db=table)
            for i in range(50):
                txn.delete(b"o%03d" % i, db=table)
    last_page = env.info()["last_pgno"]
    env.close()
    return os.path.getsize(path), last_page


def test_a_file_shorter_than_its_header_by_free_pages_opens(tmp_path: Path) -> None:
    path = tmp_path / "loose.lmdb"
    size, last_page = _loose_tail(path)
    assert size < (last_page + 1) * 4096  # the situation itself: the header claims unwritten pages
    check_file(path)  # healthy: accepted (it was refused as truncated before)
    env = lmdb.open(str(path), subdir=False, readonly=True, max_dbs=4, lock=False)
    with env.begin() as txn:
        assert sum(1 for _ in txn.cursor(db=env.open_db(b"t", txn=txn, create=False))) == 2000
    env.close()


def test_a_file_missing_a_page_in_use_is_still_refused(tmp_path: Path) -> None:
    path = tmp_path / "loose.lmdb"
    size, _ = _loose_tail(path)
    cut = tmp_path / "cut.lmdb"
    shutil.copy(path, cut)
    os.truncate(cut, size // 2)  # half the file: pages of the tree itself go
    with pytest.raises(DamagedDatabase, match="truncated"):
        check_file(cut)
