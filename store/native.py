"""The C walk (store/_walk.c), bound to py-lmdb's loaded extension and checked before it is used.

The C module reads py-lmdb's Transaction and _Database objects by their layout in py-lmdb 1.8.1.
Before the first walk, :func:`walker` checks that layout on real transactions of a scratch file
(transaction ids, each table's entries and depth, its flags and whether the transaction is read-only,
as the C module reads them and as py-lmdb answers): on another py-lmdb version, a failed build or
any disagreement it logs one debug line and answers None, and every read keeps to the Python walk
in store/snapshot.py, which stays the reference (tests/property/test_native_walk.py holds the two
equal).
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from typing import Literal, Protocol

import lmdb
import structlog

from drsg.kernel.values import EXT_VECTOR, Vector, unpack
from drsg.store.records import Edge, Neighbor, Node, edge_of, node_of

log = structlog.get_logger("drsg.store")

#: The py-lmdb release whose object layout _walk.c was written against and checked on.
PINNED_LMDB = "1.8.1"
_MDB_DUPSORT = 0x04


class Walk(Protocol):
    """What store/_walk.c offers (its stub: store/_walk.pyi)."""

    def bind(self, path: str, transaction: type, database: type, error: type[BaseException], /) -> None: ...
    def probe(self, txn: object, db: object, expected_id: int, /) -> tuple[int, int, int, int, int, bool]: ...
    def records(
        self,
        edge: type[Edge],
        neighbor: type[Neighbor],
        node: type[Node],
        edge_fields: tuple[str, ...],
        neighbor_fields: tuple[str, ...],
        node_fields: tuple[str, ...],
        finish: Callable[[int, int, int, str, bytes], Neighbor],
        finish_node: Callable[[int, int, bytes], Node],
        /,
    ) -> None: ...
    def neighbors(
        self,
        txn: object,
        tables: tuple[tuple[object, str], ...],
        edges: object,
        prefix: bytes,
        plane_group: bytes,
        inv_at: bytes,
        plane: int,
        table: int,
        key: bytes,
        limit: int,
        /,
    ) -> tuple[list[Neighbor], int, bytes] | None: ...
    def ends(
        self,
        txn: object,
        tables: tuple[tuple[object, str], ...],
        prefix: bytes,
        inv_at: bytes,
        table: int,
        key: bytes,
        limit: int,
        /,
    ) -> tuple[list[int], int, bytes] | None: ...
    def node_by_key(
        self, txn: object, keys: object, nodes: object, plane: int, key: str, inv_at: bytes, /
    ) -> Node | Literal[False] | None: ...
    def node_id_by_key(
        self, txn: object, keys: object, plane: int, key: str, inv_at: bytes, /
    ) -> int | Literal[False] | None: ...
    def key_ids(
        self, txn: object, keys: object, inv_at: bytes, groups: list[bytes], /
    ) -> list[int | None] | Literal[False]: ...
    def has_version(self, txn: object, db: object, group: bytes, inv_at: bytes, /) -> bool | None: ...
    def nodes_at(
        self, txn: object, nodes: object, plane_group: bytes, inv_at: bytes, plane: int, ids: list[int], /
    ) -> list[Node | None] | None: ...
    def vectors(self, vector: type[Vector], field: str, code: int, /) -> None: ...
    def lmdb_api(self) -> object: ...


_checked: Walk | None = None  # the module once bound and checked, else None
_state = "unchecked"  # "unchecked", "on" (the check's answer is used) or "off" (the Python walk, forced)


def walker(check: bool = True) -> Walk | None:
    """The bound and checked C module, or None: use the Python walk. ``check`` False: None while
    the module is not checked yet (the check writes a scratch file: the caller's read is too short
    to pay for it)."""
    if _state == "on":
        return _checked
    if _state == "off" or not check:
        return None
    return _check_once()


def use_native(on: bool) -> None:
    """Force the Python walk (``False``) or use the C one again if its check passed (``True``): for
    the benchmarks' before and after and the parity tests."""
    global _state
    if not on:
        _state = "off"
    elif _state == "off":
        _state = "unchecked" if _checked is None else "on"


def recheck() -> None:
    """Forget the check's answer: the next walk checks again (the guard's tests)."""
    global _checked, _state
    _checked, _state = None, "unchecked"


def _check_once() -> Walk | None:
    global _checked, _state
    _checked, _state = _load(), "on"
    return _checked


def _load() -> Walk | None:
    try:
        from drsg.store import _walk
    except ImportError as exc:
        log.debug("native walk unavailable, using the Python walk", reason=f"not built: {exc}")
        return None
    reason = check(_walk)
    if reason is not None:
        log.debug("native walk unavailable, using the Python walk", reason=reason)
        return None
    return _walk


def check(module: Walk) -> str | None:
    """Bind ``module`` and check the layout it reads; why not to use it, or None when it agrees."""
    made = _records(module)
    if made is not None:
        return made
    if lmdb.__version__ != PINNED_LMDB:
        return f"py-lmdb {lmdb.__version__}, not {PINNED_LMDB} whose layout was checked"
    extension = sys.modules.get("lmdb.cpython")
    path = getattr(extension, "__file__", None)
    if path is None or lmdb.Transaction is not getattr(extension, "Transaction", None):
        return "py-lmdb runs its cffi binding, not its C extension"
    import tempfile  # here: with shutil, bz2 and lzma ≈6 ms of a start that walks nothing (a Cypher scan)

    try:
        with tempfile.TemporaryDirectory(prefix="drsg-walk-") as scratch:
            return _agrees(module, path, scratch)
    except (lmdb.Error, OSError, ImportError, TypeError, ValueError) as exc:
        return f"{type(exc).__name__}: {exc}"


def _records(module: Walk) -> str | None:
    """Tell the module the records it makes, after checking they are what it makes them as: slots
    dataclasses whose __init__ sets each field in order and does nothing more."""
    shapes = (
        (Edge, ("plane", "id", "src", "dst", "type", "props")),
        (Neighbor, ("edge", "node", "direction")),
        (Node, ("plane", "id", "key", "labels", "props")),
    )
    for cls, names in shapes:
        if not slots_record(cls, names):
            return f"{cls.__name__} is not the slots record {names} the C walk makes"
    if tuple(f.name for f in dataclasses.fields(Vector)) != ("data",) or Vector.__slots__ != ("data",):
        return "Vector is not the slots record ('data',) the C decoding makes"
    try:
        module.records(Edge, Neighbor, Node, shapes[0][1], shapes[1][1], shapes[2][1], _finish, _finish_node)
        module.vectors(Vector, "data", EXT_VECTOR)
    except (TypeError, ValueError) as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


def slots_record(cls: type, names: tuple[str, ...]) -> bool:
    """Whether C may make a ``cls`` by setting its slots ``names`` in order: a slots dataclass of
    exactly those fields whose __init__ sets each and does nothing more (no __post_init__)."""
    fields = tuple(f.name for f in dataclasses.fields(cls))
    return fields == names and getattr(cls, "__slots__", None) == names and not hasattr(cls, "__post_init__")


def _finish(plane: int, edge_id: int, other: int, direction: str, record: bytes) -> Neighbor:
    """A Neighbor whose record the C walk leaves to Python (an extension type in it, another shape,
    damage): the Python walk's decoding, and its error."""
    return Neighbor(edge_of(plane, edge_id, unpack(record)), other, direction)


def _finish_node(plane: int, node_id: int, record: bytes) -> Node:
    """A Node whose record the C lookup leaves to Python, as :func:`_finish` an edge's."""
    return node_of(plane, node_id, unpack(record))


def _agrees(module: Walk, path: str, scratch: str) -> str | None:
    env = lmdb.open(scratch, max_dbs=3, map_size=1 << 20, sync=False, metasync=False)
    try:
        tables = [env.open_db(b"a"), env.open_db(b"b", dupsort=True), env.open_db(b"c")]
        with env.begin(write=True) as txn:  # distinct entries per table: a wrong handle shows
            for n, db in enumerate(tables):
                for i in range(3 * n + 1):
                    txn.put(b"%03d" % i, b"v", db=db)
            module.bind(path, type(txn), type(tables[0]), lmdb.Error)
            wrong = _differs(module, txn, tables, read_only=False)
        if wrong is None:
            with env.begin() as txn:
                wrong = _differs(module, txn, tables, read_only=True)
        return wrong
    finally:
        env.close()


def _differs(module: Walk, txn: lmdb.Transaction, tables: list[lmdb._Database], read_only: bool) -> str | None:
    for db in tables:
        txn_id, flags, own_flags, entries, depth, seen_read_only = module.probe(txn, db, txn.id())
        stat = txn.stat(db)
        mine = (txn_id, entries, depth, own_flags, bool(flags & _MDB_DUPSORT), seen_read_only)
        theirs = (txn.id(), stat["entries"], stat["depth"], flags, db.flags(txn)["dupsort"], read_only)
        if mine != theirs:
            return f"layout check failed: read {mine}, py-lmdb says {theirs}"
    return None
