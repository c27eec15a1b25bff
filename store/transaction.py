"""WriteTx: what a commit function sees — validated graph operations that emit mutations.

Each operation checks its input against the current state (inside the writer's transaction), turns
it into resolved mutations (ids assigned, full after-images), and applies them to the projection at
once, so later operations in the same commit read their own writes. Nothing here touches the log;
the writer seals the mutations into a commit record.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import NamedTuple

from drsg.kernel.errors import BadValue, Conflict, NotFound, UsageError
from drsg.kernel.languages import canonical_language
from drsg.kernel.metrics import check_metric
from drsg.kernel.values import Json, Props, Value, Vector, check_name, check_props, pack
from drsg.store.environment import Dbs, Txn
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
from drsg.store.projection import Projector, Tallies
from drsg.store.records import Edge, FusionDecl, IndexDecl, Node, Plane
from drsg.store.snapshot import Snapshot

DEFAULT_PLANE = "startup"
DEFAULT_PLANE_ID = 0

NodeRef = int | str  # a node id, or "@key" / a bare external key

#: What :meth:`WriteTx.put_node` does when a node already holds the key (a free key, or none, is
#: always a new node): ``create`` refuses (Conflict), ``update`` adds the labels and merges the
#: properties into the node's, ``replace`` gives it exactly these labels and properties, ``skip``
#: leaves it as it is.
PUT_MODES = ("create", "update", "replace", "skip")


class NodeWrite(NamedTuple):
    op: str  # "created", "updated", "replaced" or "skipped"
    node: Node


@dataclass
class IdCounters:
    plane: int = 0
    node: int = 1
    edge: int = 1

    def copy(self) -> IdCounters:
        return IdCounters(self.plane, self.node, self.edge)

    def note(self, mutation: Mutation) -> None:
        """Move past the id a mutation assigns: ids are never reused."""
        if isinstance(mutation, PlaneCreate):
            self.plane = max(self.plane, mutation.plane + 1)
        elif isinstance(mutation, NodePut):
            self.node = max(self.node, mutation.id + 1)
        elif isinstance(mutation, EdgePut):
            self.edge = max(self.edge, mutation.id + 1)


class WriteTx:
    """Operations for one commit (or, for bulk writers, a run of commits in one transaction)."""

    def __init__(
        self,
        txn: Txn,
        dbs: Dbs,
        seq: int,
        ids: IdCounters,
        seal: Callable[[WriteTx], int],
        tallies: Tallies | None = None,
        *,
        wired: bool = False,
    ) -> None:
        self.txn = txn
        self.dbs = dbs
        self.ids = ids
        # Sealed from its wires alone (a staged write's sink): every mutation added gets its wire as
        # it is added, and a mutation made in C (store/_bulklines.c) need not be an object at all.
        self.wired = wired
        # Written by whoever seals (the writer: per commit; a staged write: when it finishes).
        self.tallies = Tallies() if tallies is None else tallies
        self.mutations: list[Mutation] = []
        self._seal = seal  # callback(tx) that writes the commit record and returns the next seq
        self._live_planes: set[int] = set()  # planes checked alive in this transaction
        self._start(seq)

    def _start(self, seq: int) -> None:
        self.seq = seq
        self.view = Snapshot(self.txn, self.dbs, seq)
        fresh = (self.ids.node, self.ids.edge)  # ids from these on have never been written
        self._projector = Projector(self.txn, self.dbs, seq, self.view, self.tallies, fresh)
        self.mutations = []
        # A wired transaction's mutations packed, in order, as the sink seals them: an item a
        # mutation kept here, or one for a run of them the import's C line loop made (no objects,
        # store/_bulklines.c); wire_count: how many mutations they hold.
        self.wires: list[bytes] = []
        self.wire_count = 0

    def commit_point(self) -> int:
        """Seal the mutations so far as one commit and start the next; returns the sealed seq.

        Bulk writers (import) call this every N lines so a large job becomes many commits inside
        one LMDB transaction: all-or-nothing on failure, yet no commit is unreasonably large.
        """
        sealed = self.seq
        next_seq = self._seal(self)
        self._start(next_seq)
        return sealed

    def _emit(self, mutation: Mutation) -> None:
        self.keep(mutation)
        self._projector.apply(mutation)

    def keep(self, mutation: Mutation) -> None:
        """Add ``mutation`` to the commit, projected by the caller (store/bulkwrite.py writes its
        entries in sorted runs); in a wired transaction, with its wire."""
        self.mutations.append(mutation)
        if self.wired:
            self.wires.append(pack(mutation.to_wire()))
            self.wire_count += 1

    def apply(self, mutations: Iterable[Mutation]) -> None:
        """Add mutations that are resolved facts already (ids assigned, full after-images: a commit
        appended to the log as it is, see LmdbLog.append), projected like any other; nothing is
        validated beyond their type, and the id counters move past the ids they use."""
        for mutation in mutations:
            if not isinstance(mutation, Mutation):
                raise BadValue(f"a commit holds mutations, not {type(mutation).__name__}")
            self.ids.note(mutation)
            self._emit(mutation)

    # ------------------------------------------------------------------ planes

    def plane(self, name: str) -> Plane:
        return self.view.plane(name)

    def create_plane(self, name: str, props: Mapping[str, Value] | None = None) -> Plane:
        check_name("a plane name", name)
        if self.view.find_plane(name) is not None:
            raise Conflict(f"plane {name!r} already exists; pick another name or use it as it is")
        plane_id = self.ids.plane
        self.ids.plane += 1
        self._emit(PlaneCreate(plane_id, name, check_props(props)))
        return Plane(plane_id, name, check_props(props))

    def ensure_plane(self, name: str) -> Plane:
        return self.view.find_plane(name) or self.create_plane(name)

    def rename_plane(self, name: str, to: str) -> Plane:
        plane = self.view.plane(name)
        check_name("a plane name", to)
        if to != name and self.view.find_plane(to) is not None:
            raise Conflict(f"plane {to!r} already exists; pick another name")
        if to != name:
            self._emit(PlaneRename(plane.id, to))
        return Plane(plane.id, to, plane.props)

    def set_plane_props(self, name: str, props: Mapping[str, Value], unset: Iterable[str] = ()) -> Plane:
        plane = self.view.plane(name)
        merged = {**plane.props, **check_props(props)}
        for prop in unset:
            merged.pop(prop, None)
        self._emit(PlaneSetProps(plane.id, merged))
        return Plane(plane.id, plane.name, merged)

    def drop_plane(self, name: str) -> Plane:
        plane = self.view.plane(name)
        if plane.id == DEFAULT_PLANE_ID:  # by id: renaming `startup` does not make it droppable
            raise UsageError("the startup plane always exists and cannot be dropped")
        self._emit(PlaneDrop(plane.id))
        self._live_planes.discard(plane.id)
        return plane

    # ------------------------------------------------------------------ nodes

    def _live(self, plane: Plane) -> None:
        """A Plane handle may outlive its plane (dropped since it was read): refuse to write into it."""
        if plane.id not in self._live_planes:
            if not self.view.has_plane(plane.id):  # (one seek, no record decoded: each commit asks)
                raise NotFound(f"plane {plane.name!r} no longer exists (it was dropped); look it up again")
            self._live_planes.add(plane.id)

    def resolve(self, plane: Plane, ref: NodeRef) -> Node:
        """The node ``ref`` names (see :meth:`node_id`)."""
        node = self.view.node(plane.id, self.node_id(plane, ref))
        assert node is not None  # node_id found its record in this same transaction
        return node

    def node_id(self, plane: Plane, ref: NodeRef) -> int:
        """The id of the node ``ref`` names — an id, ``@key`` or a bare key — without decoding the
        node (a key names a live node); NotFound names the plane."""
        self._live(plane)
        if isinstance(ref, int) and not isinstance(ref, bool):
            found = ref if self.view.has_node(plane.id, ref) else None
        elif isinstance(ref, str):
            found = self.view.node_id_by_key(plane.id, ref[1:] if ref.startswith("@") else ref)
        else:
            raise BadValue(f"a node reference is an id or a key, not {type(ref).__name__}")
        if found is None:
            raise NotFound(f"no node {ref!r} in plane {plane.name!r}")
        return found

    def create_node(
        self,
        plane: Plane,
        key: str | None = None,
        labels: Iterable[str] = (),
        props: Mapping[str, Value] | None = None,
    ) -> Node:
        if key is not None:
            check_name("a node key", key)
            if self.view.node_id_by_key(plane.id, key) is not None:
                raise Conflict(
                    f"a node with key {key!r} already exists in plane {plane.name!r}; "
                    f"update it instead, or import with --on-conflict update"
                )
        node_id = self.ids.node
        self.ids.node += 1
        return self._put_node(plane, node_id, key, labels, props)

    def put_node(
        self,
        plane: Plane,
        key: str | None,
        labels: Iterable[str] = (),
        props: Mapping[str, Value] | None = None,
        *,
        mode: str = "create",
    ) -> NodeWrite:
        """Write the node with ``key``: a new node, or what ``mode`` (PUT_MODES) says when a node
        already holds the key. The one by-key write behind `drsg node put`, JSON-RPC `node.create`
        and JSONL import."""
        if mode not in PUT_MODES:
            raise UsageError(f"unknown put mode {mode!r}; use one of {', '.join(PUT_MODES)}")
        self._live(plane)
        existing = None if key is None or mode == "create" else self.view.node_by_key(plane.id, key)
        if existing is None:
            return NodeWrite("created", self.create_node(plane, key, labels, props))  # refuses a taken key
        if mode == "update":
            merged = [*existing.labels, *label_list(labels)]
            return NodeWrite("updated", self.update_node(plane, existing.id, props, labels=merged))
        if mode == "replace":
            return NodeWrite("replaced", self._put_node(plane, existing.id, existing.key, labels, props))
        return NodeWrite("skipped", existing)

    def update_node(
        self,
        plane: Plane,
        ref: NodeRef,
        set_props: Mapping[str, Value] | None = None,
        unset: Iterable[str] = (),
        labels: Iterable[str] | None = None,
    ) -> Node:
        node = self.resolve(plane, ref)
        props = {**node.props, **check_props(set_props)}
        for name in unset:
            props.pop(name, None)
        return self._put_node(plane, node.id, node.key, node.labels if labels is None else labels, props)

    def _put_node(
        self,
        plane: Plane,
        node_id: int,
        key: str | None,
        labels: Iterable[str],
        props: Mapping[str, Value] | None,
    ) -> Node:
        self._live(plane)
        kept = label_list(labels)
        checked = check_props(props)
        for value in checked.values():
            if isinstance(value, Vector):
                self._check_vector_dims(plane, kept, checked)
                break
        self._emit(NodePut(plane.id, node_id, key, kept, checked))
        return Node(plane.id, node_id, key, kept, checked)

    def delete_node(self, plane: Plane, ref: NodeRef) -> Node:
        """Delete a node and every edge at it (upstream's DETACH semantics)."""
        node = self.resolve(plane, ref)
        seen: set[int] = set()
        for neighbor in list(self.view.neighbors(plane.id, node.id)):
            if neighbor.edge.id not in seen:
                seen.add(neighbor.edge.id)
                self._emit(EdgeDelete(plane.id, neighbor.edge.id))
        self._emit(NodeDelete(plane.id, node.id))
        return node

    # ------------------------------------------------------------------ edges

    def create_edge(
        self,
        plane: Plane,
        src: NodeRef,
        dst: NodeRef,
        edge_type: str,
        props: Mapping[str, Value] | None = None,
    ) -> Edge:
        check_name("an edge type", edge_type)
        return self.link(plane, self.node_id(plane, src), self.node_id(plane, dst), edge_type, props)

    def link(self, plane: Plane, src: int, dst: int, edge_type: str, props: Mapping[str, Value] | None = None) -> Edge:
        """:meth:`create_edge` between ends the caller has just resolved in this transaction
        (:meth:`node_id`), with a checked edge type: a bulk writer (import) looks each end up once."""
        edge_id = self.ids.edge
        self.ids.edge += 1
        checked = check_props(props)
        self._emit(EdgePut(plane.id, edge_id, src, dst, edge_type, checked))
        return Edge(plane.id, edge_id, src, dst, edge_type, checked)

    def edge(self, plane: Plane, edge_id: int) -> Edge:
        self._live(plane)
        edge = self.view.edge(plane.id, edge_id)
        if edge is None:
            raise NotFound(f"no edge {edge_id} in plane {plane.name!r}")
        return edge

    def update_edge(
        self,
        plane: Plane,
        edge_id: int,
        set_props: Mapping[str, Value] | None = None,
        unset: Iterable[str] = (),
        edge_type: str | None = None,
    ) -> Edge:
        edge = self.edge(plane, edge_id)
        props = {**edge.props, **check_props(set_props)}
        for name in unset:
            props.pop(name, None)
        new_type = edge.type if edge_type is None else check_name("an edge type", edge_type)
        self._emit(EdgePut(plane.id, edge.id, edge.src, edge.dst, new_type, props))
        return Edge(plane.id, edge.id, edge.src, edge.dst, new_type, props)

    def delete_edge(self, plane: Plane, edge_id: int) -> Edge:
        edge = self.edge(plane, edge_id)
        self._emit(EdgeDelete(plane.id, edge.id))
        return edge

    # ------------------------------------------------------------------ index declarations

    def declare_index(self, plane: Plane, kind: str, label: str, prop: str, options: Mapping[str, Json]) -> IndexDecl:
        """Declare a search index; idempotent. ``options`` that identify the index (a vector
        index's ``metric``, a keyword index's ``language``) may not change on re-declaration."""
        self._live(plane)
        check_name("a label", label)
        check_name("a property name", prop)
        existing = self.view.index(plane.id, kind, label, prop)
        wanted = dict(options)
        if kind == "keyword":
            wanted["language"] = canonical_language(str(wanted.get("language", "english")))
        elif kind == "vector":
            wanted["metric"] = check_metric(str(wanted.get("metric", "cosine")))
        else:
            raise BadValue(f"unknown index kind {kind!r}; use vector or keyword")
        if existing is not None:
            for option in ("metric", "language"):
                if option in wanted and existing.options.get(option) != wanted[option]:
                    raise Conflict(
                        f"{label}.{prop} already has a {kind} index with {option} "
                        f"{existing.options.get(option)}; drop it first (`drsg index drop`) to use {wanted[option]}"
                    )
            return existing
        if kind == "vector" and "dims" not in wanted:
            wanted["dims"] = self._first_dims(plane, label, prop)
        self._emit(IndexDeclare(plane.id, kind, label, prop, wanted))
        return IndexDecl(plane.id, kind, label, prop, wanted, self.seq, self.seq)

    def drop_index(self, plane: Plane, kind: str, label: str, prop: str) -> IndexDecl:
        existing = self.view.index(plane.id, kind, label, prop)
        if existing is None:
            raise NotFound(f"no {kind} index on {label}.{prop} in plane {plane.name!r}; see `drsg index list`")
        self._emit(IndexDrop(plane.id, kind, label, prop))
        return existing

    def set_fusion_profile(
        self, plane: Plane, label: str, vector: str, keyword: str, profile: Mapping[str, Json]
    ) -> FusionDecl:
        """Set the fusion profile hybrid queries over (label, vector, keyword) use when they name no
        weights (a commit like any declaration: it has a history, and AS OF an earlier commit does
        not see it). The profile's content is the plan layer's to check (FusionProfile.from_json)."""
        self._live(plane)
        check_name("a label", label)
        check_name("a property name", vector)
        check_name("a property name", keyword)
        profile = dict(profile)
        check_props(profile)
        self._emit(FusionSet(plane.id, label, vector, keyword, profile))
        return FusionDecl(plane.id, label, vector, keyword, profile, self.seq)

    def drop_fusion_profile(self, plane: Plane, label: str, vector: str, keyword: str) -> FusionDecl:
        existing = self.view.fusion_profile(plane.id, label, vector, keyword)
        if existing is None:
            raise NotFound(
                f"no fusion profile for {label} ({vector} + {keyword}) in plane {plane.name!r}; "
                "see `drsg hybrid-eval … --fit --save`"
            )
        self._emit(FusionDrop(plane.id, label, vector, keyword))
        return existing

    def _first_dims(self, plane: Plane, label: str, prop: str) -> int | None:
        for node in self.view.nodes(plane.id, label):
            value = node.props.get(prop)
            if isinstance(value, Vector):
                return value.dims
        return None

    def _check_vector_dims(self, plane: Plane, labels: list[str], props: Props) -> None:
        """Reject a vector whose size differs from its index's, at write time, not search time."""
        for decl in self.view.indexes(plane.id, "vector"):
            value = props.get(decl.prop)
            if decl.label not in labels or not isinstance(value, Vector):
                continue
            if decl.dims is None:
                self._emit(
                    IndexDeclare(plane.id, "vector", decl.label, decl.prop, {**decl.options, "dims": value.dims})
                )
            elif decl.dims != value.dims:
                raise BadValue(
                    f"property {decl.prop!r} of a {decl.label} node has {value.dims} dims, but the vector "
                    f"index on {decl.label}.{decl.prop} holds {decl.dims}-dim vectors; re-embed it with the "
                    f"same model, or drop the index"
                )


def label_list(labels: Iterable[str]) -> list[str]:
    """Labels as a record keeps them: checked, without repeats, sorted."""
    if type(labels) is list and len(labels) == 1:  # the common case, without a set and a sort
        return [check_name("a label", labels[0])]
    if isinstance(labels, str):
        raise BadValue("labels must be a list of strings, not one string")
    return sorted({check_name("a label", label) for label in labels})
