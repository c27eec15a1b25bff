"""The guard in front of the C walk (store/native.py): it binds only a layout it has checked, and
on any disagreement, another py-lmdb or a missing build the reads keep to the Python walk."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import lmdb
import pytest
import structlog
from structlog.testing import capture_logs

import drsg
import drsg.store
from drsg.api.database import Database
from drsg.store import _walk, native
from drsg.store.transaction import WriteTx


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    database = drsg.open(tmp_path / "g.drsg")
    database.write(lambda tx: tx.create_plane("p"))

    def graph(tx: WriteTx) -> None:
        plane = tx.plane("p")
        for key in "abc":
            tx.create_node(plane, key, ["N"], {})
        tx.create_edge(plane, "@a", "@b", "T", {"w": 1})
        tx.create_edge(plane, "@a", "@c", "U", {"w": 2})
        tx.create_edge(plane, "@c", "@a", "T", {})

    database.write(graph)
    yield database
    database.close()
    native.recheck()


@pytest.fixture
def debug_logs() -> Iterator[None]:
    """Debug lines reach capture_logs (drsg's default configuration drops them)."""
    saved = structlog.get_config()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.DEBUG))
    yield
    structlog.configure(**saved)


def shifted_probe(txn: object, db: object) -> tuple[int, int, int, int, int, bool]:
    """The probe of a build that reads the transaction one field off: its id comes out wrong."""
    txn_id, *rest = _walk.probe(txn, db)
    return (txn_id + 1, *rest)  # type: ignore[return-value]


def plant(monkeypatch: pytest.MonkeyPatch, module: object) -> None:
    """What ``from drsg.store import _walk`` finds: ``module``, or an ImportError for None."""
    monkeypatch.setitem(sys.modules, "drsg.store._walk", module)
    monkeypatch.delattr(drsg.store, "_walk")
    if module is not None:
        monkeypatch.setattr(drsg.store, "_walk", module, raising=False)


def neighbours_of_a(db: Database) -> list[tuple[int, int, str, str]]:
    with db.snapshot() as snap:
        plane = snap.plane("p").id
        a = snap.node_id_by_key(plane, "a")
        assert a is not None
        return [(n.edge.id, n.node, n.direction, n.edge.type) for n in snap.neighbors(plane, a)]


def test_the_check_passes_on_this_py_lmdb_and_the_walk_is_bound(db: Database) -> None:
    native.recheck()
    assert native.check(_walk) is None
    assert native.walker() is _walk
    zeros = (b"\0" * 12, b"\0" * 4, b"\0" * 8)  # prefix, plane, inverted seq: no node has them
    with db.snapshot() as snap:  # a read transaction: the C walk's; a write's is not (None: the Python walk's)
        assert _walk.neighbors(snap.txn, ((snap.dbs["out"], "out"),), snap.dbs["edges"], *zeros) == []
    in_write = db.write(lambda tx: _walk.neighbors(tx.txn, ((tx.dbs["out"], "out"),), tx.dbs["edges"], *zeros))
    assert in_write.value is None


@pytest.mark.usefixtures("debug_logs")
def test_a_layout_that_disagrees_falls_back_with_one_debug_line(db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    expected = neighbours_of_a(db)
    assert len(expected) == 3
    broken = SimpleNamespace(
        bind=_walk.bind, probe=shifted_probe, neighbors=_walk.neighbors, node_by_key=_walk.node_by_key
    )
    assert native.check(broken) is not None and "layout check failed" in str(native.check(broken))  # type: ignore[arg-type]
    plant(monkeypatch, broken)
    native.recheck()
    with capture_logs() as logs:
        assert native.walker() is None
        assert neighbours_of_a(db) == expected  # the Python walk answers
    assert len(logs) == 1 and logs[0]["log_level"] == "debug" and "layout check failed" in logs[0]["reason"]


@pytest.mark.usefixtures("debug_logs")
def test_another_py_lmdb_or_no_build_falls_back(db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    expected = neighbours_of_a(db)
    monkeypatch.setattr(lmdb, "__version__", "1.9.0")
    assert native.check(_walk) == f"py-lmdb 1.9.0, not {native.PINNED_LMDB} whose layout was checked"
    native.recheck()
    with capture_logs() as logs:
        assert native.walker() is None
    assert [entry["log_level"] for entry in logs] == ["debug"]
    monkeypatch.undo()
    plant(monkeypatch, None)  # what a failed build leaves: no module
    native.recheck()
    with capture_logs() as logs:
        assert native.walker() is None
        assert neighbours_of_a(db) == expected
    assert len(logs) == 1 and "not built" in logs[0]["reason"]


def test_forcing_the_python_walk_gives_the_same_rows(db: Database) -> None:
    native.recheck()
    with_c = neighbours_of_a(db)
    native.use_native(False)
    assert native.walker() is None
    assert neighbours_of_a(db) == with_c
    native.use_native(True)
    assert native.walker() is _walk
