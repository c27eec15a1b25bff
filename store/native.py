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

import sys
import tempfile
from typing import Literal, Protocol

import lmdb
import structlog

log = structlog.get_logger("drsg.store")

#: The py-lmdb release whose object layout _walk.c was written against and checked on.
PINNED_LMDB = "1.8.1"
_MDB_DUPSORT = 0x04


class Walk(Protocol):
    """What store/_walk.c offers (its stub: store/_walk.pyi)."""

    def bind(self, path: str, transaction: type, database: type, error: type[BaseException], /) -> None: ...
    def probe(self, txn: object, db: object, /) -> tuple[int, int, int, int, int, bool]: ...
    def neighbors(
        self,
        txn: object,
        tables: tuple[tuple[object, str], ...],
        edges: object,
        prefix: bytes,
        plane_group: bytes,
        inv_at: bytes,
        /,
    ) -> list[tuple[int, int, str, bytes]] | None: ...
    def node_by_key(
        self, txn: object, keys: object, nodes: object, group: bytes, plane_group: bytes, inv_at: bytes, /
    ) -> tuple[int, bytes] | Literal[False] | None: ...


_checked: Walk | None = None  # the module once bound and checked, else None
_state = "unchecked"  # "unchecked", "on" (the check's answer is used) or "off" (the Python walk, forced)


def walker() -> Walk | None:
    """The bound and checked C module, or None: use the Python walk."""
    if _state == "on":
        return _checked
    if _state == "off":
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
    if lmdb.__version__ != PINNED_LMDB:
        return f"py-lmdb {lmdb.__version__}, not {PINNED_LMDB} whose layout was checked"
    extension = sys.modules.get("lmdb.cpython")
    path = getattr(extension, "__file__", None)
    if path is None or lmdb.Transaction is not getattr(extension, "Transaction", None):
        return "py-lmdb runs its cffi binding, not its C extension"
    try:
        with tempfile.TemporaryDirectory(prefix="drsg-walk-") as scratch:
            return _agrees(module, path, scratch)
    except (lmdb.Error, OSError, ImportError, TypeError, ValueError) as exc:
        return f"{type(exc).__name__}: {exc}"


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
        txn_id, flags, own_flags, entries, depth, seen_read_only = module.probe(txn, db)
        stat = txn.stat(db)
        mine = (txn_id, entries, depth, own_flags, bool(flags & _MDB_DUPSORT), seen_read_only)
        theirs = (txn.id(), stat["entries"], stat["depth"], flags, db.flags(txn)["dupsort"], read_only)
        if mine != theirs:
            return f"layout check failed: read {mine}, py-lmdb says {theirs}"
    return None
