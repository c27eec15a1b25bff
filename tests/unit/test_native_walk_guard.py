"""The guard in front of the C walk (store/native.py): it binds only a layout it has checked, and
on any disagreement, another py-lmdb or a missing build the reads keep to the Python walk."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from types import SimpleNamespace

import lmdb
import pytest
import structlog
from structlog.testing import capture_logs

import drsg
import drsg.store
from drsg.api.database import Database
from drsg.kernel.errors import DamagedDatabase
from drsg.kernel.values import Described, Value, Vector
from drsg.store import _walk, keys, native, snapshot
from drsg.store.records import Edge, Neighbor, Node
from drsg.store.transaction import WriteTx

EDGE_FIELDS = ("plane", "id", "src", "dst", "type", "props")
NEIGHBOR_FIELDS = ("edge", "node", "direction")
NODE_FIELDS = ("plane", "id", "key", "labels", "props")


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
    """Debug lines reach capture_logs: the db fixture's Database configures warning when structlog is
    unconfigured (store/database.py, a library's quiet default), which drops them."""
    saved = structlog.get_config()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.DEBUG))
    yield
    structlog.configure(**saved)


def shifted_probe(txn: object, db: object, expected_id: int) -> tuple[int, int, int, int, int, bool]:
    """A probe that finds another transaction id than py-lmdb's, as a build reading the transaction a
    field off would: the C probe stops at the id (no other LMDB call on what may not be an MDB_txn)."""
    return _walk.probe(txn, db, expected_id + 1)  # what C makes of an id it did not expect


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
    zeros = (b"\0" * 12, b"\0" * 4, b"\0" * 8, 0, 0, b"", 256)  # prefix, plane, inverted seq: nobody's
    with db.snapshot() as snap:  # a read transaction: the C walk's; a write's is not (None: the Python walk's)
        assert _walk.neighbors(snap.txn, ((snap.dbs["out"], "out"),), snap.dbs["edges"], *zeros) == ([], 1, b"")
    in_write = db.write(lambda tx: _walk.neighbors(tx.txn, ((tx.dbs["out"], "out"),), tx.dbs["edges"], *zeros))
    assert in_write.value is None


@pytest.mark.usefixtures("debug_logs")
def test_a_layout_that_disagrees_falls_back_with_one_debug_line(db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    expected = neighbours_of_a(db)
    assert len(expected) == 3
    broken = SimpleNamespace(
        bind=_walk.bind,
        records=_walk.records,
        probe=shifted_probe,
        neighbors=_walk.neighbors,
        node_by_key=_walk.node_by_key,
        nodes_at=_walk.nodes_at,
        vectors=_walk.vectors,
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


#: One edge property per msgpack header the C walk decodes itself (the edge record is [src, dst,
#: type, props]: a fixarray, ints, a str, a map).
EVERY_HEADER: dict[str, Value] = {
    "fixint": 7,
    "negative fixint": -7,
    "int8": -100,
    "int16": -30_000,
    "int32": -2_000_000_000,
    "int64": -(2**63),
    "uint8": 200,
    "uint16": 60_000,
    "uint32": 4_000_000_000,
    "uint64": 2**63 - 1,
    "float64": -1.5e-300,
    "zero": -0.0,
    "nil": None,
    "bools": [True, False],
    "str8": "é" * 20,
    "str16": "ω" * 200,
    "str32": "x" * 70_000,
    "bin8": b"\x00\xff",
    "bin16": b"b" * 300,
    "array16": list(range(20)),
    "map16": {f"k{i}": {"nested": [i, str(i)]} for i in range(20)},
    # vectors (extension code 1) in each extension header: fixext 4/8/16, ext 8/16/32
    **{f"vector{dims}": Vector.of([i / 7 for i in range(dims)]) for dims in (1, 2, 4, 3, 60, 128, 16_500)},
}


def test_every_header_decodes_in_c_as_msgpack_does(db: Database) -> None:
    def edge(tx: WriteTx) -> None:
        tx.create_edge(tx.plane("p"), "@b", "@c", "ALL", EVERY_HEADER)
        tx.create_node(tx.plane("p"), "h" * 300, ["N", "Ω"], EVERY_HEADER)

    db.write(edge)
    finished: list[int] = []

    def counting(plane: int, edge_id: int, other: int, direction: str, record: bytes) -> Neighbor:
        finished.append(edge_id)
        return native._finish(plane, edge_id, other, direction, record)

    def counting_node(plane: int, node_id: int, record: bytes) -> Node:
        finished.append(node_id)
        return native._finish_node(plane, node_id, record)

    native.recheck()
    assert native.walker() is _walk
    _walk.records(Edge, Neighbor, Node, EDGE_FIELDS, NEIGHBOR_FIELDS, NODE_FIELDS, counting, counting_node)
    try:
        with db.snapshot() as snap:
            plane = snap.plane("p").id
            b = snap.node_id_by_key(plane, "b")
            assert b is not None
            with_c = list(snap.neighbors(plane, b, "out", "ALL"))
            node_c = snap.node_by_key(plane, "h" * 300)
            assert node_c is not None
            by_id_c = snap.nodes_at(plane, [node_c.id, b])
            native.use_native(False)
            python = list(snap.neighbors(plane, b, "out", "ALL"))
            node_python = snap.node_by_key(plane, "h" * 300)
            by_id_python = snap.nodes_at(plane, [node_c.id, b])
    finally:
        native.recheck()
    assert finished == [] and with_c == python and with_c[0].edge.props == EVERY_HEADER
    assert node_c == node_python and node_c is not None and node_c.props == EVERY_HEADER
    assert by_id_c == by_id_python and by_id_c[0] == node_c
    assert all(type(node_c.props[name]) is Vector for name in EVERY_HEADER if name.startswith("vector"))
    assert repr(with_c[0].edge.props["zero"]) == "-0.0"


def test_a_record_c_does_not_decode_is_the_python_walks_to_make(db: Database) -> None:
    """A described value (an extension holding msgpack) in the record: Python decodes it; a damaged
    record: Python's error."""
    described = {"v": Described("a pair", [Vector.of([1.0, 2.0]), 3])}
    db.write(lambda tx: tx.create_edge(tx.plane("p"), "@b", "@a", "V", described))
    native.recheck()
    with db.snapshot() as snap:
        plane = snap.plane("p").id
        b = snap.node_id_by_key(plane, "b")
        assert b is not None
        (with_c,) = snap.neighbors(plane, b, "out", "V")
        assert with_c.edge.props == described
        edge_id = with_c.edge.id
    env = db.env.env
    with env.begin(write=True) as txn:  # damage the record in place: a msgpack map where a list was
        cur = txn.cursor(db=db.env.dbs["edges"])
        assert cur.set_range(keys.edge_group(plane, edge_id))
        txn.put(cur.key(), b"\x81\xa1a\x01", db=db.env.dbs["edges"])
    errors = []
    for on in (True, False):
        native.use_native(on)
        with pytest.raises(DamagedDatabase) as caught, db.snapshot() as snap:
            list(snap.neighbors(plane, b, "out", "V"))
        errors.append(str(caught.value))
    native.use_native(True)
    assert errors[0] == errors[1] and "not [src, dst, type, props]" in errors[0]


Batch = tuple[list[int], int, bytes]


def test_batches_go_on_where_the_c_walk_stopped_and_the_python_walk_where_it_declined() -> None:
    """snapshot._batches: a C call a batch, made as the caller iterates; on a None (a key only the
    reference judges) the Python walk gives the rest, past the rows already given."""
    rows = list(range(10))
    calls: list[tuple[int, bytes, int]] = []

    def batch(
        table: int, after: bytes, limit: int, decline_at: int | None = None
    ) -> tuple[list[int], int, bytes] | None:
        calls.append((table, after, limit))
        start = int(after or b"0")
        if decline_at is not None and start >= decline_at:
            return None
        part = rows[start : start + 3]
        end = start + len(part)
        return (part, 0, str(end).encode()) if end < len(rows) else (part, 1, b"")

    walked = snapshot._batches(batch, batch(0, b"", 3), 1, lambda: iter(rows))
    assert next(walked) == 0 and len(calls) == 1  # nothing made past the first batch
    assert list(walked) == rows[1:] and len(calls) == 4
    calls.clear()
    declined = snapshot._batches(partial(batch, decline_at=6), batch(0, b"", 3), 1, lambda: iter(rows))
    assert list(declined) == rows and len(calls) == 3
    assert list(snapshot._batches(batch, None, 1, lambda: iter(rows))) == rows  # declined at once


def test_nodes_at_reads_a_processs_first_nodes_in_python_then_checks_the_c_walk(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A one-shot search's few hits run no layout check (its scratch file); a process reading on
    has the C walk checked once it has read snapshot._UNCHECKED nodes, and reads them in C from then."""
    monkeypatch.setattr(snapshot, "_read_unchecked", 0)
    native.recheck()
    with db.snapshot() as snap:
        plane = snap.plane("p").id
        ids = [node.id for node in snap.nodes(plane, "N")]  # three nodes: in Python
        assert native._state == "unchecked"
        first = snap.nodes_at(plane, ids * 10)
        assert native._state == "unchecked"  # 3 + 30 read
        for _ in range(3):  # 33 + 30 read: the next call checks
            assert snap.nodes_at(plane, ids * 10) == first
        assert native._state == "on" and snapshot._read_unchecked >= snapshot._UNCHECKED
        calls: list[int] = []
        monkeypatch.setattr(native, "_checked", SimpleNamespace(nodes_at=lambda *args: calls.append(1)))
        snap.nodes_at(plane, ids)  # (the stand-in answers None: the Python loop reads them)
        assert calls == [1]
