"""An import's new nodes and edges written as sorted runs, not one entry at a time.

A staged import under ``--on-conflict error`` only ever *creates*: every node it writes has a new id
and no earlier version, every edge too. Its projection entries are then exactly those
store/projection.py writes for a new record (``Projector._node_put`` / ``_edge_put`` with no
previous version), so they need not be written as each line is read: :class:`BulkWrites` keeps them
for the commit, with the keys it gave out, and :meth:`BulkWrites.flush` writes each table's run
sorted — appended with ``MDB_APPEND`` when it lies past the table's last
key (an import into the newest plane), else put in key order, which keeps LMDB's B-tree walks short.
A run is store/_bulkrun.c's (its entries in one buffer, written from C on py-lmdb's transaction once
store/native.py checked the layout), else :class:`PyRun` (a list, written by py-lmdb's putmulti).
The commit record still holds the same mutations (their wires: a staged write's transaction is
sealed from them, and the C line loop makes no object), sealed by the same sink, and
the tallies get the same changes: the file is the same, entry for entry
(tests/property/test_bulk_import_parity.py holds the two paths equal).

What the import reads while entries wait — a key's node, whether an id is a node — is answered
from what this commit gave out first and from the file (everything earlier) after; anything
else that reads the graph (a vector's index check) flushes first. The keys the import made in its
committed transactions are answered from its :class:`KeyMap` (store/_bulkmap.c) without a seek.
"""

from __future__ import annotations

import errno
import heapq
import os
from collections.abc import Callable
from typing import Any, Protocol

import lmdb
import structlog

from drsg.kernel.values import Props, pack
from drsg.store import keys, native
from drsg.store.environment import DbHandle, Dbs, Txn
from drsg.store.mutations import EdgePut, Mutation, NodePut
from drsg.store.projection import Tallies
from drsg.store.readahead import Scan, Scanner
from drsg.store.records import Plane
from drsg.store.transaction import IdCounters, WriteTx

_PRESENT = b"\x01"  # a label entry's value, as the projection writes it
_NO_PROPS = pack({})
_TABLES = ("nodes", "keys", "labels", "edges", "out", "in")
ADJACENCY = ("out", "in")
log = structlog.get_logger("drsg.store")

Entry = tuple[bytes, bytes]


class Run(Protocol):
    """A table's waiting entries: store/_bulkrun.c's (one buffer, written to LMDB from C), or
    :class:`PyRun`."""

    def add(self, key: bytes, value: bytes, /) -> None: ...
    def sort(self) -> None: ...
    def entries(self) -> list[Entry]: ...
    def clear(self) -> None: ...
    def cut(self, n: int, /) -> None: ...  # its first n entries kept (as appended: before a sort)
    def nbytes(self) -> int: ...  # the memory its entries take
    def packed(self) -> Run: ...  # a new run of its entries sorted, laid out in key order (store/_bulkrun.c)
    def write(self, txn: Txn, db: DbHandle, /) -> int | bool | tuple[int, int]: ...
    def __len__(self) -> int: ...


Runs = tuple[Run, Run, Run]
NewRun = Callable[[], Run]


class PyRun:
    """A run as a list of (key, value) pairs, written with py-lmdb's putmulti (the reference)."""

    def __init__(self) -> None:
        self.items: list[Entry] = []

    def add(self, key: bytes, value: bytes) -> None:
        self.items.append((key, value))

    def sort(self) -> None:
        self.items.sort()  # (no key twice: the values never decide)

    def entries(self) -> list[Entry]:
        return list(self.items)

    def clear(self) -> None:
        self.items.clear()

    def cut(self, n: int) -> None:
        del self.items[n:]

    def nbytes(self) -> int:
        return sum(len(key) + len(value) for key, value in self.items)

    def packed(self) -> PyRun:
        self.sort()
        out = PyRun()
        out.items = list(self.items)
        return out

    def write(self, txn: Txn, db: DbHandle) -> bool:
        return False  # put_sorted writes entries() with py-lmdb

    def __len__(self) -> int:
        return len(self.items)


class Encoder(Protocol):
    """A new record's entries, appended to its tables' runs: store/_bulk.c, or :class:`PyEncoder`."""

    @property
    def Run(self) -> NewRun: ...  # a new empty run (the C module's type, named as a type)

    def node(
        self, runs: Runs, plane: int, node_id: int, key: str | None, labels: list[str], inv: bytes, props: bytes, /
    ) -> None: ...
    def edge(
        self, runs: Runs, plane: int, edge_id: int, src: int, dst: int, edge_type: str, inv: bytes, props: bytes, /
    ) -> None: ...
    def key_groups(self, lines: list[Any], plane_group: bytes, /) -> tuple[list[str], list[bytes]]: ...


class PyEncoder:
    """The entries as store/projection.py makes them (the reference store/_bulk.c is held to)."""

    Run = PyRun

    @staticmethod
    def node(
        runs: Runs, plane: int, node_id: int, key: str | None, labels: list[str], inv: bytes, props: bytes
    ) -> None:
        nodes, key_run, label_run = runs
        record = pack([key, labels, []])[:-1] + props  # (props arrive packed: an empty list's byte, replaced)
        nodes.add(keys.node_group(plane, node_id) + inv, record)
        if key is not None:
            key_run.add(keys.key_group(plane, key) + inv, keys.u64(node_id))
        for label in labels:
            label_run.add(keys.label_group(plane, label, node_id) + inv, _PRESENT)

    @staticmethod
    def edge(
        runs: Runs, plane: int, edge_id: int, src: int, dst: int, edge_type: str, inv: bytes, props: bytes
    ) -> None:
        edges, out, in_ = runs
        edges.add(keys.edge_group(plane, edge_id) + inv, pack([src, dst, edge_type, []])[:-1] + props)
        out.add(keys.adjacency_group(plane, src, edge_type, edge_id) + inv, keys.u64(dst))
        in_.add(keys.adjacency_group(plane, dst, edge_type, edge_id) + inv, keys.u64(src))

    @staticmethod
    def key_groups(lines: list[Any], plane_group: bytes) -> tuple[list[str], list[bytes]]:
        """The keys the lines name (a dict's ``external_key``, ``src_key``, ``dst_key`` that are strs),
        each once, in code-point order — their UTF-8 bytes' — with their key groups; a key that is no
        valid UTF-8 is left out (the line's own lookup meets it, as the reference does)."""
        names = {
            name
            for obj in lines
            if type(obj) is dict
            for name in (obj.get("external_key"), obj.get("src_key"), obj.get("dst_key"))
            if type(name) is str
        }
        order = [name for name in sorted(names) if name.isascii() or _encodes(name)]
        return order, [plane_group + keys.name(name) for name in order]  # keys.key_group's bytes


class Native(Encoder, Protocol):
    """store/_bulk.c: the encoder, and its runs' writes to LMDB (store/_bulkrun.c)."""

    def bind_lmdb(self, api: object, /) -> None: ...
    def mutation_slots(
        self, node_put: type[NodePut], node: tuple[str, ...], edge_put: type[EdgePut], edge: tuple[str, ...], /
    ) -> None: ...
    def strerror(self, code: int, /) -> str: ...
    def write_runs(self, txn: Txn, pairs: list[tuple[Run, DbHandle]], /) -> int | bool | tuple[int, int, int]: ...
    def write_merged(self, txn: Txn, db: DbHandle, runs: list[Run], /) -> int | bool | tuple[int, int]: ...
    def merged(self, runs: list[Run], /) -> Run: ...
    def seek_order(self, names: list[str], /) -> list[str]: ...
    def look_up(
        self,
        lines: list[Any],
        txn: Txn,
        keys_db: DbHandle,
        plane_group: bytes,
        inv: bytes,
        known: dict[str, int | None],
        scan: Scan | None,
        keymap: KeyMap | None,
        map_only: bool,
        /,
    ) -> bool: ...

    @property
    def Scan(self) -> Scanner: ...  # a commit's raw lines (or records) read in C (_bulkscan.c)
    @property
    def KeyMap(self) -> Callable[[int], KeyMap]: ...  # the keys an import made (_bulkmap.c)


class KeyMap(Protocol):
    """The keys an import made, answered by store/_bulk.c's look_up without a seek once the LMDB
    transaction that made them committed (store/_bulkmap.c says why that answer is the seek's)."""

    def add(self, key_ids: dict[str, int], /) -> None: ...  # pending
    def publish(self) -> None: ...  # the transaction committed
    def drop(self) -> None: ...  # the transaction runs again
    def get(self, name: str, /) -> int | None: ...
    @property
    def complete(self) -> bool: ...  # every key it was given is held (none left out: the map full)
    def __len__(self) -> int: ...


#: The keys an import's map holds at most, and 32 bytes of names a key: at most ~200 MiB (an entry
#: 32 bytes, its slots up to 128 — 32 bytes each, a short name inline, at most half full — the
#: names), ~12 MiB for upstream's 100k keys; a file of more keys
#: than a large graph's seeks the rest, as before (the same answer). The rest of the import is
#: bounded by a transaction's bytes (tests/integration/test_import_memory.py).
KEY_MAP_KEYS = 1 << 20


def key_map(max_keys: int = KEY_MAP_KEYS) -> KeyMap | None:
    """A new import's map of the keys it makes, when store/_bulk.c answers its look-ups."""
    c_module = _c_module()
    return None if c_module is None else c_module.KeyMap(max_keys)


def _load() -> Native | None:
    try:
        from drsg.store import _bulk
    except ImportError as exc:
        log.debug("C import encoder unavailable, using the Python one", reason=f"not built: {exc}")
        return None
    module: Native = _bulk
    return module


_native = _load()
NATIVE: Encoder = PyEncoder() if _native is None else _native
_encoder: Encoder = NATIVE
_enabled = True
_lines = True
_scan = True


def _c_module() -> Native | None:
    """store/_bulk.c when it is the encoder in use (see use_c): what the scan, the key map and the
    one-call look-up need; None on the Python path."""
    return _native if _encoder is _native else None


def use_c(on: bool) -> None:
    """Encode with store/_bulk.c (``True``, when it is built) or the Python reference (``False``)."""
    global _encoder
    _encoder = NATIVE if on else PyEncoder()


def use_bulk(on: bool) -> None:
    """Write imports entry by entry through WriteTx (``False``: the reference path) or in sorted
    runs (``True``): for the parity tests and the benchmark's before and after."""
    global _enabled
    _enabled = on


def bulk_enabled() -> bool:
    return _enabled


def use_lines(on: bool) -> None:
    """Make the common line shapes into records in C (``True``, store/_bulklines.c) or each line in
    Python (``False``): for the benchmark's before and after."""
    global _lines
    _lines = on


def use_scan(on: bool) -> None:
    """Read the common line shapes in C (``True``, store/_bulkscan.c) or parse each line into a dict
    with msgspec first (``False``, the reference the scan is held to)."""
    global _scan
    _scan = on


def scanner() -> Scanner | None:
    """What reads a commit's raw lines (or records in memory) of the common shapes in C, when the
    C line loop runs."""
    c_module = _c_module()
    return c_module.Scan if c_module is not None and _lines and _scan else None


def new_runs() -> dict[str, Run]:
    """An empty run for each table an import writes, in the order it writes them."""
    return {name: new_run() for name in _TABLES}


def new_run() -> Run:
    """An empty run of the encoder in use."""
    return _encoder.Run()


class Commit(Protocol):
    """The commit :meth:`BulkWrites.take` makes records into: a WriteTx, or a commit made ahead of
    its LMDB transaction (store/importahead.py)."""

    seq: int
    ids: IdCounters
    wired: bool
    wires: list[bytes]
    wire_count: int
    mutations: list[Mutation]
    tallies: Tallies


class BulkWrites:
    """New nodes and edges of one plane in one LMDB transaction, kept until :meth:`flush` (an
    import flushes after each commit: what it holds stays bounded by a commit's lines). ``txn``
    None: commits made ahead of their transaction (store/importahead.py), whose runs another thread
    writes; nothing is flushed."""

    def __init__(
        self,
        txn: Txn | None,
        dbs: Dbs,
        plane: Plane,
        new_nodes_from: int,
        keymap: KeyMap | None = None,
        runs: dict[str, Run] | None = None,
    ) -> None:
        self.txn, self.dbs, self.plane = txn, dbs, plane
        self.keymap = keymap  # the keys the import made: each commit's added, pending until its transaction commits
        self.new_nodes_from = new_nodes_from  # ids from here on were made by this import, in this plane
        _bind_lmdb()
        # ``runs``: an earlier transaction's (BulkWrites.runs), emptied: their memory, grown to a
        # transaction's entries, is not made and faulted in again for each transaction
        self.runs: dict[str, Run] = runs if runs is not None else new_runs()
        for run in self.runs.values():
            run.clear()  # (a transaction run again: what its failed run held is not the file's)
        self.node_runs: Runs = (self.runs["nodes"], self.runs["keys"], self.runs["labels"])
        self.edge_runs: Runs = (self.runs["edges"], self.runs["out"], self.runs["in"])
        self.plane_group = keys.plane_group(plane.id)
        self.keys_db = dbs["keys"]
        self.key_ids: dict[str, int] = {}  # keys given out since the last flush -> their node
        self.known: dict[str, int | None] = {}  # keys looked up as the commit began -> their node
        self.scan: Scan | None = None  # the commit's scanned lines: their keys' answers are kept in it

    def node_id_by_key(self, tx: WriteTx, key: str) -> int | None:
        found = self.key_ids.get(key)
        if found is not None:
            return found
        if key in self.known:
            return self.known[key]
        return self._look_up(tx, [self.plane_group + keys.name(key)])[0]  # keys.key_group's bytes

    def look_up_keys(self, tx: WriteTx, lines: list[Any], scan: Scan | None = None) -> None:
        """The keys a commit's parsed ``lines`` and its ``scan`` name (nodes' and edges' ends) looked
        up at once, in key order, so that each seek lands near the last: what the file holds as the
        commit begins (a scanned line's keep their answers in the scan; unresolved, the Python path
        looks each up when it reads the line)."""
        if self.look_up_in(tx.txn, tx.seq, lines, scan):
            return  # (all in C: store/_bulk.c's look_up, each key as _look_up reads it)
        order, groups = _encoder.key_groups(lines, self.plane_group)
        self.known.update(zip(order, self._look_up(tx, groups), strict=True))

    def look_up_in(self, txn: Txn, seq: int, lines: list[Any], scan: Scan | None, map_only: bool = False) -> bool:
        """:meth:`look_up_keys` in C alone, as of commit ``seq`` in ``txn`` (the write transaction,
        or a read transaction with every key the import made in the complete key map); False: not
        answered here (the Python path's, or no C module). ``map_only``: the key map holds every key
        of the plane (it held none before the import, and the map is complete and published): one
        it does not hold is absent, unsought."""
        self.scan = scan
        c_module = _c_module()
        return c_module is not None and c_module.look_up(
            lines, txn, self.keys_db, self.plane_group, keys.inv(seq), self.known, scan, self.keymap, map_only
        )

    def _look_up(self, tx: WriteTx, groups: list[bytes]) -> list[int | None]:
        """The node each key group names as of this commit: in C (store/_walk.c) when it can, else as
        Snapshot.node_id_by_key reads it."""
        walk = native.walker()
        if walk is not None and groups:
            found = walk.key_ids(tx.txn, self.keys_db, keys.inv(tx.seq), groups)
            if found is not False:
                return found
        values = [tx.view.version("keys", group) for group in groups]
        return [None if value is None else keys.read_u64(value) for value in values]

    def has_node(self, tx: WriteTx, node_id: int) -> bool:
        """Whether ``node_id`` is a node of the plane: one this import made (none is ever deleted by
        it), else one the file holds."""
        if self.new_nodes_from <= node_id < tx.ids.node:
            return True
        return tx.view.has_node(self.plane.id, node_id)

    def create_node(self, tx: WriteTx, key: str | None, labels: list[str], props: Props) -> int:
        """A new node (its key checked free by the caller; ``labels`` as a record keeps them:
        sorted, no repeats; ``props`` checked): the mutation, its entries and its tallies."""
        plane, node_id = self.plane.id, tx.ids.node
        tx.ids.node = node_id + 1
        tx.keep(NodePut(plane, node_id, key, labels, props))
        _encoder.node(
            self.node_runs, plane, node_id, key, labels, keys.inv(tx.seq), pack(props) if props else _NO_PROPS
        )
        if key is not None:
            self.key_ids[key] = node_id
        tallies = tx.tallies
        for label in labels:
            tallies.add(keys.tally_key(plane, b"L", label), +1)
        tallies.count(plane, nodes=+1)
        return node_id

    def link(self, tx: WriteTx, src: int, dst: int, edge_type: str, props: Props) -> None:
        """A new edge between ends the caller resolved (``edge_type`` checked, ``props`` checked)."""
        plane, edge_id = self.plane.id, tx.ids.edge
        tx.ids.edge = edge_id + 1
        tx.keep(EdgePut(plane, edge_id, src, dst, edge_type, props))
        props_packed = pack(props) if props else _NO_PROPS
        _encoder.edge(self.edge_runs, plane, edge_id, src, dst, edge_type, keys.inv(tx.seq), props_packed)
        tx.tallies.count(plane, 0, +1)
        tx.tallies.add(keys.tally_key(plane, b"T", edge_type), +1)

    def take(self, tx: Commit, parsed: list[Any], start: int) -> tuple[int, int, int]:
        """Make the commit's parsed lines from ``start`` on into new records in C while they have the
        common shapes (store/_bulklines.c; a line the commit's scan read, from its tokens): the same
        ids, mutations, entries and tallies the Python path gives them — in a wired transaction the
        mutations as their wires alone (tx.wired: sealed from them; a Kafka node's import needs the
        objects, drsg/api/imports.py). Returns where it stopped
        (that line is the Python path's to read) and the nodes and edges made."""
        lines = getattr(_encoder, "lines", None)  # (store/_bulk.c's alone: PyEncoder has no line loop)
        if lines is None or not _lines:
            return start, 0, 0
        plane, labels, types = self.plane.id, dict[str, int](), dict[str, int]()
        node_from, edge_from = tx.ids.node, tx.ids.edge
        objects, wires = (None, tx.wires) if tx.wired else (tx.mutations, None)  # (wired: sealed from wires alone)
        stop, tx.ids.node, tx.ids.edge = lines(
            parsed, start, self.node_runs, self.edge_runs, plane, keys.inv(tx.seq), node_from, edge_from,
            self.new_nodes_from, self.key_ids, self.known, objects, wires, NodePut, EdgePut, labels, types,
            self.scan,
        )  # fmt: skip
        tallies, nodes, edges = tx.tallies, tx.ids.node - node_from, tx.ids.edge - edge_from
        if tx.wired:
            tx.wire_count += nodes + edges  # (their wires in one item)
        for kind, counts in ((b"L", labels), (b"T", types)):
            for name, n in counts.items():
                tallies.add(keys.tally_key(plane, kind, name), n)
        if nodes or edges:
            tallies.count(plane, nodes, edges)
        return stop, nodes, edges

    def flush(self, adjacency: bool = True) -> None:
        """Write every table's waiting entries, sorted (see the module); ``adjacency=False``: all but
        the ``out`` and ``in`` runs, which wait for the LMDB transaction's end. A commit's adjacency
        keys land all over their trees; a transaction's (~14 commits at 8 MiB) share leaves, and
        LMDB finds each next key on the page it is at: the import's puts cost a third less (flush
        0.78 -> 0.52 s for upstream's 600k lines), for ~2.6 bytes held a byte of the transaction's
        file (tests/bench/RESULTS.md). Nothing the import reads looks at them: an edge line reads
        only edges that were there before it began (jsonl.py's _existing_edge)."""
        txn = self.txn
        assert txn is not None, "a BulkWrites made ahead of its transaction writes nothing"
        runs = {name: run for name, run in self.runs.items() if adjacency or name not in ADJACENCY}
        write_runs(txn, self.dbs, runs)
        for run in runs.values():
            run.clear()
        if self.keymap is not None:
            self.keymap.add(self.key_ids)  # (the C loop's keys too)
        self.key_ids.clear()  # the file answers for them now
        self.known.clear()
        self.scan = None  # (what its look-up found is stale once a vector's flush wrote mid-commit)


def _encodes(name: str) -> bool:
    try:
        name.encode()
    except UnicodeEncodeError:
        return False
    return True


def write_runs(txn: Txn, dbs: Dbs, runs: dict[str, Run]) -> None:
    """Each table's run sorted and put into it (see :func:`put_sorted`): from C in one call that
    lets go of the GIL once, when it can (store/_bulkrun.c's write_runs), else run by run."""
    pairs = [(run, dbs[name]) for name, run in runs.items() if len(run)]
    c_module = _c_module()
    written = False if c_module is None else c_module.write_runs(txn, pairs)
    if written is False:
        for run, db in pairs:
            run.sort()
            put_sorted(txn, db, run)
    elif isinstance(written, tuple):
        raise lmdb_error(written[1], written[2])


def write_merged(txn: Txn, db: DbHandle, runs: list[Run]) -> None:
    """Packed ``runs`` (each sorted, no key twice in all) put into ``db`` in one key order, as
    :func:`put_sorted` puts one run: from C when it can (store/_bulkrun.c's write_merged), else by
    py-lmdb."""
    c_module = _c_module()
    written = False if c_module is None else c_module.write_merged(txn, db, runs)
    if written is False:
        _putmulti(txn, db, list(heapq.merge(*(run.entries() for run in runs))))
    elif isinstance(written, tuple):
        raise lmdb_error(*written)


def merged(runs: list[Run]) -> Run:
    """A new packed run of packed ``runs``' entries (no key twice in all) in one key order: from C,
    without the GIL, when it can (store/_bulkrun.c's merged), else a :class:`PyRun`."""
    c_module = _c_module()
    if c_module is not None:
        return c_module.merged(runs)
    out = PyRun()
    out.items = list(heapq.merge(*(run.entries() for run in runs)))
    return out


def put_sorted(txn: Txn, db: DbHandle, run: Run) -> None:
    """Put ``run`` (sorted, no key twice) into ``db``: appended when its first key is past the
    table's last, else in key order; from C when it can (store/_bulkrun.c), else by py-lmdb."""
    written = run.write(txn, db)
    if written is False:
        _putmulti(txn, db, run.entries())
    elif isinstance(written, tuple):
        raise lmdb_error(*written)


def _putmulti(txn: Txn, db: DbHandle, entries: list[Entry]) -> None:
    """Sorted ``entries`` put by py-lmdb: appended when the first key is past the table's last."""
    if entries:
        cursor = txn.cursor(db=db)
        append = not cursor.last() or entries[0][0] > cursor.key()
        cursor.putmulti(entries, append=append)


_bound = False


_NODE_PUT = ("plane", "id", "key", "labels", "props")
_EDGE_PUT = ("plane", "id", "src", "dst", "type", "props")


def _bind_lmdb() -> None:
    """Hand store/_bulk.c the LMDB functions store/_walk.c found, once its layout check passed, and
    the mutations it may make by setting their slots (else it calls them)."""
    global _bound
    if _bound or _native is None:
        return
    walk = native.walker()
    if walk is not None:
        _native.bind_lmdb(walk.lmdb_api())
    if native.slots_record(NodePut, _NODE_PUT) and native.slots_record(EdgePut, _EDGE_PUT):
        _native.mutation_slots(NodePut, _NODE_PUT, EdgePut, _EDGE_PUT)
    _bound = True


#: py-lmdb's error classes by LMDB's codes (lmdb/cpython.c's table): what py-lmdb's put raises.
_LMDB_ERRORS: dict[int, type[lmdb.Error]] = {
    -30799: lmdb.KeyExistsError,
    -30798: lmdb.NotFoundError,
    -30797: lmdb.PageNotFoundError,
    -30796: lmdb.CorruptedError,
    -30795: lmdb.PanicError,
    -30794: lmdb.VersionMismatchError,
    -30793: lmdb.InvalidError,
    -30792: lmdb.MapFullError,
    -30791: lmdb.DbsFullError,
    -30790: lmdb.ReadersFullError,
    -30789: lmdb.TlsFullError,
    -30788: lmdb.TxnFullError,
    -30787: lmdb.CursorFullError,
    -30786: lmdb.PageFullError,
    -30785: lmdb.MapResizedError,
    -30784: lmdb.IncompatibleError,
    -30783: lmdb.BadRslotError,
    -30782: lmdb.BadTxnError,
    -30781: lmdb.BadValsizeError,
    -30780: lmdb.BadDbiError,
    errno.EACCES: lmdb.ReadonlyError,
    errno.EAGAIN: lmdb.LockError,
    errno.EINVAL: lmdb.InvalidParameterError,
    errno.ENOMEM: lmdb.MemoryError,
    errno.ENOSPC: lmdb.DiskError,
}


def lmdb_error(code: int, element: int) -> lmdb.Error:
    """The error py-lmdb's putmulti raises for LMDB's ``code`` at a run's ``element``, in its words."""
    words = os.strerror(code) if _native is None else _native.strerror(code)
    return _LMDB_ERRORS.get(code, lmdb.Error)(f"mdb_cursor_put() element #{element}: {words}")
