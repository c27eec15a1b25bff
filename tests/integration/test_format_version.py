"""A database of another format version (older, newer, or none recorded) is refused with one line
saying what was found and what to do; nothing in it is touched."""

from __future__ import annotations

from pathlib import Path

import lmdb
import pytest

from drsg.kernel.errors import DatabaseUnavailable
from drsg.store import keys
from drsg.store.database import FORMAT_VERSION, Database
from drsg.store.meta import META_FORMAT
from tests.support.cli import Drsg


def _set_format(path: Path, version: int | None) -> None:
    env = lmdb.open(str(path), subdir=False, max_dbs=32)
    try:
        meta = env.open_db(b"meta", create=False)
        with env.begin(write=True) as txn:
            if version is None:
                txn.delete(META_FORMAT, db=meta)
            else:
                txn.put(META_FORMAT, keys.u32(version), db=meta)
    finally:
        env.close()


@pytest.fixture
def made(db_path: Path) -> Path:
    with Database(db_path) as db:
        db.write(lambda tx: tx.create_node(tx.plane("startup"), "a", ["A"], {}))
    return db_path


OTHERS = {"older": FORMAT_VERSION - 1, "newer": FORMAT_VERSION + 1, "none recorded": None}


@pytest.mark.parametrize("version", OTHERS.values(), ids=list(OTHERS))
@pytest.mark.parametrize("readonly", [False, True], ids=["read-write", "read-only"])
def test_another_format_is_refused_with_what_to_do(made: Path, version: int | None, readonly: bool) -> None:
    _set_format(made, version)
    size = made.stat().st_size
    with pytest.raises(DatabaseUnavailable) as raised:
        Database(made, readonly=readonly)
    message = str(raised.value)
    found = "records no format version" if version is None else f"is format {version}"
    assert f"{made} {found}; this drsg reads format {FORMAT_VERSION} only" in message
    assert "export each plane" in message and "import them into a new database" in message
    assert "\n" not in message
    assert made.stat().st_size == size  # nothing was written
    _set_format(made, FORMAT_VERSION)
    with Database(made, readonly=readonly) as db:  # the refused open left nothing behind (lock, writer)
        assert db.head() == 2


def test_the_format_this_drsg_writes_is_recorded_and_opens(made: Path) -> None:
    env = lmdb.open(str(made), subdir=False, max_dbs=32, readonly=True)
    try:
        with env.begin(db=env.open_db(b"meta", create=False)) as txn:
            assert keys.U32.unpack(txn.get(META_FORMAT))[0] == FORMAT_VERSION
    finally:
        env.close()


@pytest.mark.parametrize("version", OTHERS.values(), ids=list(OTHERS))
def test_the_cli_refuses_it_in_one_line_with_exit_1(drsg: Drsg, made: Path, version: int | None) -> None:
    _set_format(made, version)
    for args in (("stats",), ("get", "@a"), ("node", "put", "b")):
        ran = drsg(*args)
        assert ran.code == 1, (args, ran.err)
        assert len(ran.err.strip().splitlines()) == 1 and ran.err.startswith("error: "), ran.err
        assert f"this drsg reads format {FORMAT_VERSION} only" in ran.err
        assert "internal error" not in ran.err and "Traceback" not in ran.err
    _set_format(made, FORMAT_VERSION)
    assert drsg("get", "@a").code == 0
    assert drsg("get", "@b").code != 0  # the refused `node put` wrote nothing
