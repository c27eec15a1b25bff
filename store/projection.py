"""Applying mutations to the versioned projection, inside the commit's LMDB transaction.

``apply`` is the single place where graph state changes. The writer calls it as commits are made and
``rebuild`` calls it while replaying the log, so the two can never disagree. Each call writes new
versions keyed by the commit's seq; applying the same mutation twice at the same seq is harmless.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from drsg.kernel.values import pack, unpack
from drsg.store import keys
from drsg.store.environment import Dbs, Txn
from drsg.store.log import LogReader
from drsg.store.mutations import (
    EdgeDelete,
    EdgePut,
    FusionDrop,
    FusionSet,
    IndexDeclare,
    IndexDrop,
    Mutation,
    NodeDelete,
    NodePut,
    PlaneCreate,
    PlaneDrop,
    PlaneRename,
    PlaneSetProps,
)
from drsg.store.records import Edge, Node
from drsg.store.snapshot import Snapshot

_NEVER = 1 << 65  # past every id: no id counts as fresh
_PRESENT = b"\x01"
_TOMBSTONE = b""


class Tallies:
    """Changes to the unversioned tallies (live nodes per label, edges per type, a plane's node and
    edge counts), summed in memory and written by :meth:`flush`: the writer flushes once per commit
    (one read and one write per tally touched, not per mutation), a staged write once when it
    finishes, so that its commits show in no tally before they show in the graph."""

    def __init__(self) -> None:
        self.deltas: dict[bytes, int] = {}  # tally key -> change
        self.counts: dict[int, list[int]] = {}  # plane -> [node change, edge change]

    def add(self, key: bytes, delta: int) -> None:
        self.deltas[key] = self.deltas.get(key, 0) + delta

    def count(self, plane: int, nodes: int = 0, edges: int = 0) -> None:
        change = self.counts.get(plane)
        if change is None:
            change = self.counts[plane] = [0, 0]
        change[0] += nodes
        change[1] += edges

    def add_all(self, other: Tallies) -> None:
        """Add ``other``'s changes to these."""
        for key, delta in other.deltas.items():
            self.add(key, delta)
        for plane, (nodes, edges) in other.counts.items():
            self.count(plane, nodes, edges)

    def forget_plane(self, plane: int) -> None:
        """A dropped plane's tallies are deleted outright: pending changes to them must not return."""
        prefix = keys.plane_group(plane)
        self.deltas = {k: d for k, d in self.deltas.items() if not k.startswith(prefix)}
        self.counts.pop(plane, None)

    def copy(self) -> Tallies:
        twin = Tallies()
        twin.deltas = dict(self.deltas)
        twin.counts = {plane: list(change) for plane, change in self.counts.items()}
        return twin

    def flush(self, txn: Txn, dbs: Dbs) -> None:
        db = dbs["tally"]
        for key, delta in self.deltas.items():
            raw = txn.get(key, db=db)
            count = (0 if raw is None else keys.read_u64(raw)) + delta
            if count > 0:
                txn.put(key, keys.u64(count), db=db)
            elif raw is not None:
                txn.delete(key, db=db)
        for plane, (nodes, edges) in self.counts.items():
            key = keys.counts_key(plane)  # beside the plane's label tallies: the same page
            raw = txn.get(key, db=db)
            n, e = (0, 0) if raw is None else unpack(raw)
            txn.put(key, pack([n + nodes, e + edges]), db=db)
        self.deltas.clear()
        self.counts.clear()


class Projector:
    """Writes mutations of commit ``seq`` through ``txn``.

    ``fresh``: the node and edge id counters when the commit began. Every id ever written is below
    them, so a record with an id at or past them that this commit has not written yet has no
    earlier version, and its write skips reading one. Without it (a replay) every write reads.
    """

    def __init__(
        self,
        txn: Txn,
        dbs: Dbs,
        seq: int,
        view: Snapshot | None = None,
        tallies: Tallies | None = None,
        fresh: tuple[int, int] | None = None,
    ) -> None:
        self.txn = txn
        self.dbs = dbs
        self.seq = seq
        self.view = view or Snapshot(txn, dbs, seq)  # reads see this commit's own writes
        self.tallies = Tallies() if tallies is None else tallies
        self._inv = keys.inv(seq)
        self._fresh_node, self._fresh_edge = fresh or (_NEVER, _NEVER)
        self._made_nodes: set[int] = set()
        self._made_edges: set[int] = set()

    def apply(self, mutation: Mutation) -> None:
        _HANDLERS[type(mutation)](self, mutation)

    # ------------------------------------------------------------------ helpers

    def _put(self, db: str, group: bytes, value: bytes) -> None:
        self.txn.put(group + self._inv, value, db=self.dbs[db])

    def _count(self, plane: int, nodes: int = 0, edges: int = 0) -> None:
        self.tallies.count(plane, nodes, edges)

    def _tally(self, plane: int, kind: bytes, name: str, delta: int) -> None:
        self.tallies.add(keys.tally_key(plane, kind, name), delta)

    def _node_before(self, plane: int, node_id: int) -> Node | None:
        if node_id >= self._fresh_node and node_id not in self._made_nodes:
            self._made_nodes.add(node_id)
            return None
        return self.view.node(plane, node_id)

    def _edge_before(self, plane: int, edge_id: int) -> Edge | None:
        if edge_id >= self._fresh_edge and edge_id not in self._made_edges:
            self._made_edges.add(edge_id)
            return None
        return self.view.edge(plane, edge_id)

    # ------------------------------------------------------------------ planes

    def _plane_create(self, m: PlaneCreate) -> None:
        self._put("planes", keys.plane_group(m.plane), pack([m.name, m.props]))
        self._put("plane_names", keys.plane_name_group(m.name), keys.u32(m.plane))
        self._count(m.plane)

    def _plane_rename(self, m: PlaneRename) -> None:
        old = self.view.plane_by_id(m.plane)
        if old is None:
            return
        self._put("plane_names", keys.plane_name_group(old.name), _TOMBSTONE)
        self._put("plane_names", keys.plane_name_group(m.name), keys.u32(m.plane))
        self._put("planes", keys.plane_group(m.plane), pack([m.name, old.props]))

    def _plane_set_props(self, m: PlaneSetProps) -> None:
        old = self.view.plane_by_id(m.plane)
        if old is not None:
            self._put("planes", keys.plane_group(m.plane), pack([old.name, m.props]))

    def _plane_drop(self, m: PlaneDrop) -> None:
        # The plane id is never reused, so its nodes and edges become unreachable with it: one
        # tombstone drops a plane of any size, and as-of reads before the drop still see it all.
        old = self.view.plane_by_id(m.plane)
        if old is None:
            return
        self._put("planes", keys.plane_group(m.plane), _TOMBSTONE)
        self._put("plane_names", keys.plane_name_group(old.name), _TOMBSTONE)
        self.tallies.forget_plane(m.plane)
        cur = self.txn.cursor(db=self.dbs["tally"])
        prefix = keys.plane_group(m.plane)
        while cur.set_range(prefix) and cur.key().startswith(prefix):
            cur.delete()

    # ------------------------------------------------------------------ nodes

    def _node_put(self, m: NodePut) -> None:
        plane, node_id = m.plane, m.id
        prev = self._node_before(plane, node_id)
        self._put("nodes", keys.node_group(plane, node_id), pack([m.key, m.labels, m.props]))
        if prev is None:  # a new node (the common case, and every line of a fresh import)
            if m.key is not None:
                self._put("keys", keys.key_group(plane, m.key), keys.u64(node_id))
            for label in dict.fromkeys(m.labels):  # (a log's mutation may repeat a label)
                self._put("labels", keys.label_group(plane, label, node_id), _PRESENT)
                self._tally(plane, b"L", label, +1)
            self._count(plane, nodes=+1)
            return
        if prev.key != m.key:
            if prev.key is not None:
                self._put("keys", keys.key_group(plane, prev.key), _TOMBSTONE)
            if m.key is not None:
                self._put("keys", keys.key_group(plane, m.key), keys.u64(node_id))
        prev_labels = set(prev.labels)
        new_labels = set(m.labels)
        for label in new_labels - prev_labels:
            self._put("labels", keys.label_group(plane, label, node_id), _PRESENT)
            self._tally(plane, b"L", label, +1)
        for label in prev_labels - new_labels:
            self._put("labels", keys.label_group(plane, label, node_id), _TOMBSTONE)
            self._tally(plane, b"L", label, -1)

    def _node_delete(self, m: NodeDelete) -> None:
        prev = self.view.node(m.plane, m.id)
        if prev is None:
            return
        self._put("nodes", keys.node_group(m.plane, m.id), _TOMBSTONE)
        if prev.key is not None:
            self._put("keys", keys.key_group(m.plane, prev.key), _TOMBSTONE)
        for label in prev.labels:
            self._put("labels", keys.label_group(m.plane, label, m.id), _TOMBSTONE)
            self._tally(m.plane, b"L", label, -1)
        self._count(m.plane, nodes=-1)

    # ------------------------------------------------------------------ edges

    def _edge_put(self, m: EdgePut) -> None:
        plane = m.plane
        prev = self._edge_before(plane, m.id)
        self._put("edges", keys.edge_group(plane, m.id), pack([m.src, m.dst, m.type, m.props]))
        if prev is not None and (prev.src, prev.dst, prev.type) == (m.src, m.dst, m.type):
            return
        if prev is not None:
            self._unlink(prev.plane, prev.id, prev.src, prev.dst, prev.type)
        else:
            self.tallies.count(plane, 0, +1)
        # Written here rather than through _put: three puts per edge, the bulk of an import's.
        put, inv, dbs = self.txn.put, self._inv, self.dbs
        put(keys.adjacency_group(plane, m.src, m.type, m.id) + inv, keys.u64(m.dst), db=dbs["out"])
        put(keys.adjacency_group(plane, m.dst, m.type, m.id) + inv, keys.u64(m.src), db=dbs["in"])
        self.tallies.add(keys.tally_key(plane, b"T", m.type), +1)

    def _edge_delete(self, m: EdgeDelete) -> None:
        prev = self.view.edge(m.plane, m.id)
        if prev is None:
            return
        self._put("edges", keys.edge_group(m.plane, m.id), _TOMBSTONE)
        self._unlink(m.plane, m.id, prev.src, prev.dst, prev.type)
        self._count(m.plane, edges=-1)

    # ------------------------------------------------------------------ index declarations

    def _index_declare(self, m: IndexDeclare) -> None:
        self._put("indexes", keys.index_group(m.plane, m.kind, m.label, m.property), pack(m.options))

    def _index_drop(self, m: IndexDrop) -> None:
        self._put("indexes", keys.index_group(m.plane, m.kind, m.label, m.property), _TOMBSTONE)

    def _fusion_set(self, m: FusionSet) -> None:
        self._put("indexes", keys.fusion_group(m.plane, m.label, m.vector, m.keyword), pack(m.profile))

    def _fusion_drop(self, m: FusionDrop) -> None:
        self._put("indexes", keys.fusion_group(m.plane, m.label, m.vector, m.keyword), _TOMBSTONE)

    def _unlink(self, plane: int, edge_id: int, src: int, dst: int, edge_type: str) -> None:
        self._put("out", keys.adjacency_group(plane, src, edge_type, edge_id), _TOMBSTONE)
        self._put("in", keys.adjacency_group(plane, dst, edge_type, edge_id), _TOMBSTONE)
        self._tally(plane, b"T", edge_type, -1)


def rebuild(txn: Txn, dbs: Dbs) -> int:
    """Clear the projection and replay the whole log into it; returns the head seq."""
    for name in ("planes", "plane_names", "nodes", "keys", "labels", "edges", "out", "in", "tally", "indexes"):
        txn.drop(dbs[name], delete=False)
    head = 0
    for commit in LogReader(txn, dbs["log"]).iter():
        projector = Projector(txn, dbs, commit.seq)
        for mutation in commit.mutations:
            projector.apply(mutation)
        projector.tallies.flush(txn, dbs)
        head = commit.seq
    return head


_HANDLERS: dict[type[Mutation], Callable[[Projector, Any], None]] = {
    PlaneCreate: Projector._plane_create,
    PlaneRename: Projector._plane_rename,
    PlaneSetProps: Projector._plane_set_props,
    PlaneDrop: Projector._plane_drop,
    NodePut: Projector._node_put,
    NodeDelete: Projector._node_delete,
    EdgePut: Projector._edge_put,
    EdgeDelete: Projector._edge_delete,
    IndexDeclare: Projector._index_declare,
    IndexDrop: Projector._index_drop,
    FusionSet: Projector._fusion_set,
    FusionDrop: Projector._fusion_drop,
}
