"""Reading the versioned projection at one commit seq: current reads and as-of reads alike.

Every read is an ordered-key seek (store/keys.py): a single record at seq ``at`` is the first key at
or after ``group + ~at``; a set of records walks the groups under a prefix, seeking once per group.
Nothing here replays the log.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from functools import partial
from itertools import islice
from typing import TypeVar

from drsg.kernel.errors import DamagedDatabase, NotFound
from drsg.kernel.values import MAX_ID, unpack
from drsg.store import keys, native
from drsg.store.environment import Cursor, DbHandle, Dbs, Txn
from drsg.store.log import LogReader
from drsg.store.records import Edge, FusionDecl, IndexDecl, Neighbor, Node, Plane, Version, edge_of, node_of

_FUSION_KIND = keys.FUSION_KIND.encode()
_SKIP_GROUP = b"\xff" * keys.SEQ_WIDTH  # sorts after every version of a group (seqs start at 1)
_NODE_GROUP = keys.node_group(0, 0).__len__()  # plane + node id (an edge's group is as long)
_NODE_KEY = _NODE_GROUP + keys.SEQ_WIDTH
_TABLES = {"out": ("out",), "in": ("in",), "both": ("out", "in")}  # the adjacency tables a direction walks
_BATCH = 256  # rows a C walk makes a call: most nodes' edges in one; a hub's as they are iterated
#: reads (a node each: nodes_at's, a write's key and plane checks) the Python path makes before it
#: has the C walk checked: the check writes a scratch file (≈10 ms with tempfile and shutil loaded),
#: more than a one-shot search's few hits or a one-shot write's checks save; a process reading or
#: writing more pays it once
_UNCHECKED = 64
_read_unchecked = 0
T = TypeVar("T")


def _walk_soon(reads: int = 1) -> native.Walk | None:
    """The C walk once checked; until a process's first ``_UNCHECKED`` reads are made (these
    ``reads`` counted), None: the Python path's."""
    global _read_unchecked
    walk = native.walker(check=_read_unchecked >= _UNCHECKED)
    if walk is None:
        _read_unchecked += reads
    return walk


class Snapshot:
    """The graph as of commit ``at`` inside one LMDB transaction (read or write)."""

    __slots__ = ("_cursors", "_inv_at", "_inv_int", "at", "dbs", "head", "txn")

    def __init__(self, txn: Txn, dbs: Dbs, at: int, head: int | None = None) -> None:
        self.txn = txn
        self.dbs = dbs
        self.at = at
        self.head = at if head is None else head  # the newest commit this transaction can see
        self._inv_int = inv_int = keys.inv_int(at)  # to pack with a group (keys.RECORD_AT)
        self._inv_at = keys.U64.pack(inv_int)  # keys.inv(at) from it: every read makes a snapshot
        self._cursors: dict[str, Cursor] = {}

    def _cursor(self, db: str) -> Cursor:
        cur = self._cursors.get(db)
        if cur is None:
            cur = self._cursors[db] = self.txn.cursor(db=self.dbs[db])
        return cur

    # ------------------------------------------------------------------ primitives

    def version(self, db: str, group: bytes) -> bytes | None:
        """The value of ``group`` at seq ``at``; None when absent or a tombstone."""
        cur = self._cursors.get(db) or self._cursor(db)
        if not cur.set_range(group + self._inv_at):
            return None
        key = cur.key()
        if len(key) != len(group) + keys.SEQ_WIDTH or not key.startswith(group):
            return None
        return cur.value() or None

    def appeared_after(self, db: str, group: bytes) -> int | None:
        """The first seq after ``at``, up to ``head``, at which ``group`` has a value: why a name
        missing from an as-of read exists now. None when it does not (or this is the head)."""
        if self.head <= self.at:
            return None
        cur = self._cursor(db)
        first = None
        ok = cur.set_range(group + keys.inv(self.head))  # newest first: walk down to `at`
        while ok:
            key = cur.key()
            if len(key) != len(group) + keys.SEQ_WIDTH or not key.startswith(group) or keys.seq_of(key) <= self.at:
                break
            if cur.value():
                first = keys.seq_of(key)
            ok = cur.next()
        return first

    def groups(self, db: str, prefix: bytes) -> Iterator[tuple[bytes, bytes]]:
        """``(group, value)`` for every group under ``prefix`` alive at seq ``at``."""
        cur = self._cursor(db)
        at = self.at
        ok = cur.set_range(prefix)
        while ok:
            key = cur.key()
            if not key.startswith(prefix):
                return
            group = key[: -keys.SEQ_WIDTH]
            if keys.seq_of(key) > at:
                # Newest version is too new: seek the one in force at `at`, if any.
                if not cur.set_range(group + keys.inv(at)):
                    return
                key = cur.key()
                if key[: -keys.SEQ_WIDTH] != group:
                    continue  # this group did not exist yet at `at`; `key` starts the next one
            value = cur.value()
            if value:
                yield group, value
            ok = _next_group(cur, group, db)

    def versions(self, db: str, group: bytes) -> Iterator[tuple[int, bytes | None]]:
        """Every version of one group with seq <= at, oldest first."""
        cur = self._cursor(db)
        found: list[tuple[int, bytes | None]] = []
        ok = cur.set_range(group + keys.inv(self.at))
        while ok:
            key = cur.key()
            if len(key) != len(group) + keys.SEQ_WIDTH or not key.startswith(group):
                break
            found.append((keys.seq_of(key), cur.value() or None))
            ok = cur.next()
            if ok and cur.key() <= key:
                raise _out_of_order(db)
        return reversed(found)

    # ------------------------------------------------------------------ planes

    def planes(self) -> list[Plane]:
        return [Plane(keys.U32.unpack(group)[0], *unpack(value)) for group, value in self.groups("planes", b"")]

    def plane_by_id(self, plane_id: int) -> Plane | None:
        value = self.version("planes", keys.plane_group(plane_id))
        return None if value is None else Plane(plane_id, *unpack(value))

    def has_plane(self, plane_id: int) -> bool:
        """Whether the plane is there, without decoding its record (a write's check, each commit)."""
        return self._has("planes", keys.plane_group(plane_id))

    def find_plane(self, name: str) -> Plane | None:
        value = self.version("plane_names", keys.plane_name_group(name))
        return None if value is None else self.plane_by_id(keys.U32.unpack(value)[0])

    def plane_name_history(self, name: str) -> list[tuple[int, int | None]]:
        """Which plane bore ``name``, version by version up to ``at``, oldest first: ``(seq, plane
        id)``, with None from a seq where the name was given up (a rename or a drop)."""
        return [
            (seq, None if value is None else int(keys.U32.unpack(value)[0]))
            for seq, value in self.versions("plane_names", keys.plane_name_group(name))
        ]

    def plane(self, name: str) -> Plane:
        plane = self.find_plane(name)
        if plane is None:
            since = self.appeared_after("plane_names", keys.plane_name_group(name))
            if since is not None:  # an as-of read before the plane was made: creating it is no fix
                raise NotFound(
                    f"no plane named {name!r} at seq {self.at}: it was created at seq {since}; "
                    f"read as of seq {since} or later"
                )
            known = ", ".join(sorted(p.name for p in self.planes())) or "none"
            raise NotFound(f"no plane named {name!r} (planes: {known}); create it with `drsg plane create {name}`")
        return plane

    # ------------------------------------------------------------------ nodes

    def node(self, plane: int, node_id: int) -> Node | None:
        if not 0 <= node_id <= MAX_ID:
            return None  # an id no record can have (a caller's -1 or 10^23): not found, not a crash
        cur = self._cursors.get("nodes") or self._cursor("nodes")
        start = keys.RECORD_AT.pack(plane, node_id, self._inv_int)
        if not cur.set_range(start):
            return None
        key, value = cur.item()
        if not value or len(key) != _NODE_KEY or key[:_NODE_GROUP] != start[:_NODE_GROUP]:
            return None
        return node_of(plane, node_id, unpack(value))

    def nodes_at(self, plane: int, node_ids: Iterable[int]) -> list[Node | None]:
        """``[self.node(plane, i) for i in node_ids]`` in one loop: what a search reads for its hits
        and an index build its nodes (one seek and one decode per node, none of the per-call work
        of :meth:`node`). A read transaction reads them in C (store/_walk.c), vectors decoded there
        too, once the C walk is checked: a process's first ``_UNCHECKED`` nodes are read here."""
        ids = node_ids if type(node_ids) is list else list(node_ids)
        walk = _walk_soon(len(ids))
        if walk is not None:
            found = walk.nodes_at(self.txn, self.dbs["nodes"], keys.U32.pack(plane), self._inv_at, plane, ids)
            if found is not None:
                return found
        node_ids = ids
        cur = self._cursors.get("nodes") or self._cursor("nodes")
        seek, item, sought, decode = cur.set_range, cur.item, keys.RECORD_AT.pack, unpack
        inv_at = self._inv_int
        out: list[Node | None] = []
        for node_id in node_ids:
            node = None
            if 0 <= node_id <= MAX_ID:
                start = sought(plane, node_id, inv_at)
                if seek(start):
                    key, value = item()
                    if value and len(key) == _NODE_KEY and key[:_NODE_GROUP] == start[:_NODE_GROUP]:
                        try:
                            external, labels, props = decode(value)
                        except (TypeError, ValueError):
                            node = node_of(plane, node_id, decode(value))  # says what is wrong with it
                        else:
                            node = Node(plane, node_id, external, labels, props)
            out.append(node)
        return out

    def has_node(self, plane: int, node_id: int) -> bool:
        """Whether the node is there, without decoding its record."""
        return 0 <= node_id <= MAX_ID and self._has("nodes", keys.node_group(plane, node_id))

    def _has(self, db: str, group: bytes) -> bool:
        """``self.version(db, group) is not None``: in C once the walk is checked (each write asks it
        of the plane it writes into)."""
        walk = _walk_soon()
        if walk is not None:
            found = walk.has_version(self.txn, self.dbs[db], group, self._inv_at)
            if found is not None:
                return found
        return self.version(db, group) is not None

    def node_id_by_key(self, plane: int, key: str) -> int | None:
        """The id of the node holding ``key`` at ``at``. In C once the walk is checked (1-hop and
        2-hop reads start here, after a lookup or a walk that checked it; a write checks the key it
        takes here, and resolves its edges' keys); a one-shot write runs no check."""
        walk = _walk_soon()
        if walk is not None:
            found = walk.node_id_by_key(self.txn, self.dbs["keys"], plane, key, self._inv_at)
            if found is not False:
                return found
        value = self.version("keys", keys.key_group(plane, key))
        return None if value is None else keys.read_u64(value)

    def keyed_node_ids(self, plane: int) -> Iterator[tuple[str, int]]:
        """``(key, node id)`` for every keyed node of a plane, in key order, from the key index alone.

        The index's groups are the key's UTF-8 bytes and a NUL (which no key contains), so they
        sort as the keys' bytes do, and UTF-8's byte order is code-point order: that of ``sorted``."""
        prefix = keys.plane_group(plane)
        start = len(prefix)
        for group, value in self.groups("keys", prefix):
            yield group[start:-1].decode(), keys.read_u64(value)

    def key_holder(self, plane: int, key: str) -> int | None:
        """The node holding ``key`` at ``at``, else the last one that held it: a deleted node's key
        resolves no more, but its history is still reached by it."""
        node_id = self.node_id_by_key(plane, key)
        if node_id is not None:
            return node_id
        held = [value for _, value in self.versions("keys", keys.key_group(plane, key)) if value]
        return keys.read_u64(held[-1]) if held else None

    def node_by_key(self, plane: int, key: str) -> Node | None:
        """:meth:`node_id_by_key`'s seek written out here: a lookup by key is the read users make most.
        A read transaction looks up in C (store/_walk.c), as :meth:`neighbors` walks."""
        walk = native.walker()
        if walk is not None:
            dbs = self.dbs
            node = walk.node_by_key(self.txn, dbs["keys"], dbs["nodes"], plane, key, self._inv_at)
            if node is not False:
                return node
        group = keys.key_group(plane, key)
        cur = self._cursors.get("keys") or self._cursor("keys")
        if not cur.set_range(group + self._inv_at):
            return None
        found, value = cur.item()
        if not value or len(found) != len(group) + keys.SEQ_WIDTH or not found.startswith(group):
            return None
        return self.node(plane, keys.read_u64(value))

    def nodes(self, plane: int, label: str | None = None) -> Iterator[Node]:
        """Nodes of a plane (or of one label), in id order; a label walk never scans the plane."""
        if label is None:
            for group, value in self.groups("nodes", keys.plane_group(plane)):
                yield node_of(plane, keys.read_u64(group, 4), unpack(value))
            return
        ids = self.node_ids_with_label(plane, label)
        while batch := list(islice(ids, _BATCH)):  # a batch a call: nodes_at reads them in C
            yield from (node for node in self.nodes_at(plane, batch) if node is not None)

    def node_ids_with_label(self, plane: int, label: str) -> Iterator[int]:
        for group, _ in self.groups("labels", keys.label_prefix(plane, label)):
            yield keys.read_u64(group, len(group) - 8)

    def node_history(self, plane: int, node_id: int) -> list[Version]:
        log = LogReader(self.txn, self.dbs["log"])
        return [
            Version(seq, log.ts(seq) or 0, None if value is None else node_of(plane, node_id, unpack(value)))
            for seq, value in self.versions("nodes", keys.node_group(plane, node_id))
        ]

    # ------------------------------------------------------------------ edges

    def edge(self, plane: int, edge_id: int) -> Edge | None:
        if not 0 <= edge_id <= MAX_ID:
            return None
        value = self.version("edges", keys.edge_group(plane, edge_id))
        return None if value is None else edge_of(plane, edge_id, unpack(value))

    def edges(self, plane: int) -> Iterator[Edge]:
        for group, value in self.groups("edges", keys.plane_group(plane)):
            yield edge_of(plane, keys.read_u64(group, 4), unpack(value))

    def neighbors(
        self, plane: int, node_id: int, direction: str = "both", edge_type: str | None = None
    ) -> Iterator[Neighbor]:
        """Edges at a node by adjacency lookup (``direction``: out, in or both).

        One loop per table, the walk of :meth:`_adjacency` and the edge read of :meth:`edge` written
        out in it: a node's neighbourhood is what graph reads and the hybrid graph channel ask for most,
        and nested generators and per-edge calls cost more than the seeks. A read transaction walks in
        C (store/_walk.c, guarded by store/native.py); a write's, which sees its own writes as it goes,
        and any read the C walk cannot bind to take this loop, the reference."""
        if direction not in ("out", "in", "both"):
            raise ValueError(f"direction must be out, in or both, not {direction!r}")
        prefix, plane_group = keys.adjacency_prefix(plane, node_id, edge_type), keys.plane_group(plane)
        walk = native.walker()
        if walk is None:
            yield from self._neighbors(plane, plane_group, prefix, direction)
            return
        dbs = self.dbs
        tables = _tables(dbs, direction)
        args = (self.txn, tables, dbs["edges"], prefix, plane_group, self._inv_at, plane)
        got = walk.neighbors(*args, 0, b"", _BATCH)
        if got is not None and got[1] == len(tables):
            yield from got[0]  # the whole neighbourhood in one call: most nodes'
            return
        python = partial(self._neighbors, plane, plane_group, prefix, direction)
        yield from _batches(partial(walk.neighbors, *args), got, len(tables), python)

    def _neighbors(self, plane: int, plane_group: bytes, prefix: bytes, direction: str) -> Iterator[Neighbor]:
        """:meth:`neighbors`' walk in Python: the reference the C walk is held to."""
        inv_at, decode, u64_at = self._inv_at, unpack, keys.U64.unpack_from  # read_u64 without its frame
        txn, dbs = self.txn, self.dbs
        edges = self._cursor("edges")
        edge_seek, edge_item = edges.set_range, edges.item
        for db in _TABLES[direction]:
            cur = txn.cursor(db=dbs[db])  # the walk of :meth:`_adjacency`, written out
            if not cur.set_range(prefix):
                continue
            decided = b""
            for key, other in cur.iternext():
                if not key.startswith(prefix):
                    break
                group = key[:-8]
                if group == decided or key[-8:] < inv_at:
                    continue
                decided = group
                if not other:
                    continue
                # The edge's group from the adjacency key's bytes (its id is their last 8): no unpack and pack.
                edge_group = plane_group + group[-8:]
                if edge_seek(edge_group + inv_at):
                    edge_key, record = edge_item()
                    if record and len(edge_key) == _NODE_KEY and edge_key[:_NODE_GROUP] == edge_group:
                        edge_id = u64_at(edge_group, 4)[0]
                        try:
                            src, dst, edge_type_, props = decode(record)
                        except (TypeError, ValueError):
                            edge = edge_of(plane, edge_id, decode(record))  # says what is wrong with it
                        else:
                            edge = Edge(plane, edge_id, src, dst, edge_type_, props)
                        yield Neighbor(edge, u64_at(other)[0], db)

    def _adjacency(self, db: str, prefix: bytes) -> Iterator[tuple[bytes, bytes]]:
        """``(group, other end)`` of each adjacency entry under ``prefix`` live at ``at``.

        A cursor of this walk's own, stepped by py-lmdb's iterator: no read between two of its
        yields can move it (a nested walk, a lookup), and a step costs less than a call to next()
        and one to item(). A group's versions sort newest first and are few (an edge is made and
        deleted, never changed), so they are stepped over rather than sought past."""
        cur = self.txn.cursor(db=self.dbs[db])
        if not cur.set_range(prefix):
            return
        inv_at = self._inv_at
        decided = b""  # the group whose version at `at` was found: its older versions follow
        for key, other in cur.iternext():
            if not key.startswith(prefix):
                return
            group = key[:-8]
            if group == decided or key[-8:] < inv_at:
                continue  # an older version of a group seen, or a version newer than `at`
            decided = group
            if other:
                yield group, other

    def neighbor_ids(
        self, plane: int, node_id: int, direction: str = "both", edge_type: str | None = None
    ) -> Iterator[int]:
        """The node at the other end of each of a node's edges, from the adjacency alone: no edge
        record is read (an edge and its two adjacency entries are written, and deleted, together)."""
        if direction not in ("out", "in", "both"):
            raise ValueError(f"direction must be out, in or both, not {direction!r}")
        prefix = keys.adjacency_prefix(plane, node_id, edge_type)
        walk = native.walker()
        if walk is None:
            yield from self._neighbor_ids(prefix, direction)
            return
        tables = _tables(self.dbs, direction)
        args = (self.txn, tables, prefix, self._inv_at)
        got = walk.ends(*args, 0, b"", _BATCH)
        if got is not None and got[1] == len(tables):
            yield from got[0]
            return
        yield from _batches(partial(walk.ends, *args), got, len(tables), partial(self._neighbor_ids, prefix, direction))

    def _neighbor_ids(self, prefix: bytes, direction: str) -> Iterator[int]:
        """:meth:`neighbor_ids` in Python: the reference the C walk is held to."""
        u64_at = keys.U64.unpack_from
        for db in _TABLES[direction]:
            for _, other in self._adjacency(db, prefix):
                yield u64_at(other)[0]

    def parallel_edges(self, plane: int, src: int, edge_type: str, dst: int) -> list[int]:
        """Ids of the live edges ``src -[edge_type]-> dst``, lowest first (from the adjacency alone)."""
        return [
            keys.read_u64(group, len(group) - 8)
            for _, group, value in self._adjacent(plane, src, "out", edge_type)
            if keys.read_u64(value) == dst
        ]

    def _adjacent(
        self, plane: int, node_id: int, direction: str, edge_type: str | None
    ) -> Iterator[tuple[str, bytes, bytes]]:
        """``(table, group, other end)`` for each live adjacency entry of a node."""
        if direction not in ("out", "in", "both"):
            raise ValueError(f"direction must be out, in or both, not {direction!r}")
        for db in ("out", "in") if direction == "both" else (direction,):
            for group, value in self._adjacency(db, keys.adjacency_prefix(plane, node_id, edge_type)):
                yield db, group, value

    def edge_history(self, plane: int, edge_id: int) -> list[Version]:
        log = LogReader(self.txn, self.dbs["log"])
        return [
            Version(seq, log.ts(seq) or 0, None if value is None else edge_of(plane, edge_id, unpack(value)))
            for seq, value in self.versions("edges", keys.edge_group(plane, edge_id))
        ]

    # ------------------------------------------------------------------ index declarations

    def indexes(self, plane: int, kind: str | None = None) -> list[IndexDecl]:
        prefix = keys.plane_group(plane) + (b"" if kind is None else keys.name(kind))
        out = []
        for group, _value in self.groups("indexes", prefix):
            kind_b, label_b, prop_b = group[4:].split(b"\x00")[:3]
            if kind_b == _FUSION_KIND:
                continue  # a fusion profile (below), not an index
            decl = self.index(plane, kind_b.decode(), label_b.decode(), prop_b.decode())
            if decl is not None:
                out.append(decl)
        return out

    def index(self, plane: int, kind: str, label: str, prop: str) -> IndexDecl | None:
        """The declaration in force; ``since`` is the seq that (re)declared it, ``born`` the one that
        began its unbroken run of declarations, so an index dropped and declared again is a new
        index, never the old one's leftovers, and one restated (its dims learnt) is the same."""
        group = keys.index_group(plane, kind, label, prop)
        value = self.version("indexes", group)
        if value is None:
            return None
        cur = self._cursor("indexes")
        since = born = keys.seq_of(cur.key())
        while cur.next() and cur.value() and cur.key()[: -keys.SEQ_WIDTH] == group:  # older, unbroken
            born = keys.seq_of(cur.key())
        return IndexDecl(plane, kind, label, prop, unpack(value), since, born)

    def index_declared_after(self, plane: int, kind: str, label: str, prop: str) -> int | None:
        """The seq after ``at`` that declared this index, when an as-of read predates it."""
        return self.appeared_after("indexes", keys.index_group(plane, kind, label, prop))

    def fusion_profile(self, plane: int, label: str, vector: str, keyword: str) -> FusionDecl | None:
        """The fusion profile in force for hybrid queries over (label, vector, keyword), if any;
        ``since``: the commit that set it."""
        value = self.version("indexes", keys.fusion_group(plane, label, vector, keyword))
        if value is None:
            return None
        since = keys.seq_of(self._cursor("indexes").key())
        return FusionDecl(plane, label, vector, keyword, unpack(value), since)

    def fusion_profiles(self, plane: int) -> list[FusionDecl]:
        out = []
        for group, _value in self.groups("indexes", keys.plane_group(plane) + keys.name(keys.FUSION_KIND)):
            label, vector, keyword = (part.decode() for part in group[4:].split(b"\x00")[1:4])
            decl = self.fusion_profile(plane, label, vector, keyword)
            if decl is not None:
                out.append(decl)
        return out

    # ------------------------------------------------------------------ tallies (current state only)

    def counts(self, plane: int) -> tuple[int, int]:
        """Live (nodes, edges) of a plane at ``at``: the kept counters at the head; before it, by
        walking the snapshot (the counters are kept for the current state only)."""
        if self.at == self.head:
            value = self.txn.get(keys.counts_key(plane), db=self.dbs["tally"])
            if value is None:
                return 0, 0
            nodes, edges = unpack(value)  # the projection keeps [nodes, edges]
            return int(nodes), int(edges)
        return sum(1 for _ in self.nodes(plane)), sum(1 for _ in self.edges(plane))

    def labels_and_types(self, plane: int) -> tuple[dict[str, int], dict[str, int]]:
        """Live nodes per label and edges per type at ``at`` (kept tallies at the head, else walked)."""
        if self.at == self.head:
            return self.tally(plane, b"L"), self.tally(plane, b"T")
        labels: dict[str, int] = {}
        types: dict[str, int] = {}
        for node in self.nodes(plane):
            for label in node.labels:
                labels[label] = labels.get(label, 0) + 1
        for edge in self.edges(plane):
            types[edge.type] = types.get(edge.type, 0) + 1
        return labels, types

    def tally(self, plane: int, kind: bytes) -> dict[str, int]:
        """Live nodes per label (kind ``L``) or edges per type (kind ``T``)."""
        prefix = keys.plane_group(plane) + kind
        out: dict[str, int] = {}
        cur = self.txn.cursor(db=self.dbs["tally"])
        ok = cur.set_range(prefix)
        while ok:
            key = cur.key()
            if not key.startswith(prefix):
                break
            out[key[len(prefix) : -1].decode()] = keys.read_u64(cur.value())
            ok = cur.next()
            if ok and cur.key() <= key:
                raise _out_of_order("tally")
        return out


def _tables(dbs: Dbs, direction: str) -> tuple[tuple[DbHandle, str], ...]:
    """The adjacency tables a direction walks, with their names (a C walk's argument)."""
    if direction == "both":
        return (dbs["out"], "out"), (dbs["in"], "in")
    return ((dbs[direction], direction),)


def _batches(
    batch: Callable[[int, bytes, int], tuple[list[T], int, bytes] | None],
    got: tuple[list[T], int, bytes] | None,
    tables: int,
    python: Callable[[], Iterator[T]],
) -> Iterator[T]:
    """A C walk's rows from its first call's ``got`` on, :data:`_BATCH` a call, as the caller iterates
    (a hub's edges are never all made for a caller that stops early). Where the C walk declines (None:
    not a read transaction, a key only the reference judges), the Python walk goes on past the rows
    already given: the two give the same rows in the same order (tests/property/test_native_walk.py)."""
    made = 0
    while got is not None:
        rows, table, after = got
        made += len(rows)
        yield from rows
        if table >= tables:
            return
        got = batch(table, after, _BATCH)
    yield from islice(python(), made, None)


def _next_group(cur: Cursor, group: bytes, table: str) -> bool:
    """Move past every version of ``group`` in ``table``; False past the table's end. Most groups hold
    one version, so from one of them a step usually lands on the next group: 0.1-0.25 µs less than a
    seek (py-lmdb, 20k nodes). But a snapshot's cursors are shared, and a read between two steps of a
    walk (a lookup while a plane is exported, a nested walk) may have moved this one elsewhere: then
    only a seek finds the way. A damaged page can send the cursor backwards: that raises, rather than
    walking in a loop."""
    width = keys.SEQ_WIDTH
    if cur.key()[:-width] == group and cur.next():
        key = cur.key()
        if key[:-width] == group:  # another version of it: seek past them all
            if not cur.set_range(group + _SKIP_GROUP):
                return False
            key = cur.key()
    elif cur.set_range(group + _SKIP_GROUP):
        key = cur.key()
    else:
        return False
    if key <= group:
        raise _out_of_order(table)
    return True


def _out_of_order(table: str) -> DamagedDatabase:
    return DamagedDatabase(
        f"table {table} is damaged (its keys do not advance); run `drsg check` to see the damage, then "
        "`drsg rebuild` to rebuild the projection from the log"
    )
