"""What changed in one plane between two commits: nodes and edges created, deleted and changed.

The diff is read, never rebuilt: the commits between the two seqs name every node and edge they
touched (a mutation carries its record's id), and each touched record is then read as of both ends
with one versioned-key seek apiece (store/snapshot.py). The cost is the commits in the window and
the records they touched, whatever the size of the plane. A record touched and put back as it was
(or created and deleted inside the window) is not in the diff: only the two ends are compared.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from drsg.kernel.errors import BadAsOf, NotFound
from drsg.kernel.values import Json, Props
from drsg.store.mutations import EdgeDelete, EdgePut, NodeDelete, NodePut
from drsg.store.reader import Reader
from drsg.store.records import Edge, Node, Plane
from drsg.store.snapshot import Snapshot

__all__ = ["Change", "PlaneDiff", "diff_plane"]


@dataclass(frozen=True)
class Change:
    """One record present at both ends but not the same: its version at each."""

    before: Node | Edge
    after: Node | Edge

    @property
    def id(self) -> int:
        return self.after.id

    def changed_props(self) -> list[str]:
        """The property names whose value differs (added, removed or replaced), sorted."""
        a, b = self.before.props, self.after.props
        return sorted(k for k in a.keys() | b.keys() if k not in a or k not in b or not _same(a[k], b[k]))


@dataclass
class PlaneDiff:
    plane: Plane
    from_seq: int
    to_seq: int
    commits: int = 0  # commits read in the window (over every plane)
    nodes_created: list[Node] = field(default_factory=list)
    nodes_deleted: list[Node] = field(default_factory=list)
    nodes_changed: list[Change] = field(default_factory=list)
    edges_created: list[Edge] = field(default_factory=list)
    edges_deleted: list[Edge] = field(default_factory=list)
    edges_changed: list[Change] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (
            self.nodes_created
            or self.nodes_deleted
            or self.nodes_changed
            or self.edges_created
            or self.edges_deleted
            or self.edges_changed
        )

    def counts(self) -> dict[str, int]:
        return {
            "nodes_created": len(self.nodes_created),
            "nodes_deleted": len(self.nodes_deleted),
            "nodes_changed": len(self.nodes_changed),
            "edges_created": len(self.edges_created),
            "edges_deleted": len(self.edges_deleted),
            "edges_changed": len(self.edges_changed),
        }

    def to_json(self, *, vectors: bool | str = True, hidden: bool = True) -> dict[str, Json]:
        """``{plane, from, to, commits, counts, nodes: {created, deleted, changed}, edges: {…}}``;
        a changed record is ``{id, before, after, changed}`` (``changed``: the property names that
        differ; labels, key, type or ends that differ show in the two records)."""

        def record(r: Node | Edge) -> dict[str, Json]:
            return r.to_json(vectors=vectors, hidden=hidden)

        def change(c: Change) -> dict[str, Json]:
            names: list[Json] = [k for k in c.changed_props() if hidden or not k.startswith("_")]
            return {"id": c.id, "before": record(c.before), "after": record(c.after), "changed": names}

        counts: dict[str, Json] = dict(self.counts())
        return {
            "plane": self.plane.name,
            "from": self.from_seq,
            "to": self.to_seq,
            "commits": self.commits,
            "counts": counts,
            "nodes": {
                "created": [record(n) for n in self.nodes_created],
                "deleted": [record(n) for n in self.nodes_deleted],
                "changed": [change(c) for c in self.nodes_changed],
            },
            "edges": {
                "created": [record(e) for e in self.edges_created],
                "deleted": [record(e) for e in self.edges_deleted],
                "changed": [change(c) for c in self.edges_changed],
            },
        }


def _same(a: object, b: object) -> bool:
    """Equal values of the same type (so 1, 1.0 and True are three different values)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return a == b or (a != a and b != b)  # two NaNs are the same stored value


def _same_props(a: Props, b: Props) -> bool:
    return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)


def _same_node(a: Node, b: Node) -> bool:
    return a.key == b.key and sorted(a.labels) == sorted(b.labels) and _same_props(a.props, b.props)


def _same_edge(a: Edge, b: Edge) -> bool:
    return a.src == b.src and a.dst == b.dst and a.type == b.type and _same_props(a.props, b.props)


def _plane_at_ends(snap_from: Snapshot, snap_to: Snapshot, name: str) -> Plane:
    """The plane ``name`` names at the later end (else the earlier one): by its stable id, so a
    rename in between is the same plane. A plane missing at one end is refused with what to do."""
    later, earlier = (snap_to, snap_from) if snap_to.at >= snap_from.at else (snap_from, snap_to)
    plane = later.find_plane(name) or earlier.find_plane(name)
    if plane is None:
        raise NotFound(
            f"no plane named {name!r} at seq {snap_from.at} or {snap_to.at}; list the planes with `drsg plane list`"
        )
    if later.plane_by_id(plane.id) is None:
        raise NotFound(
            f"plane {name!r} was dropped before seq {later.at}; diff it up to a seq before the drop "
            f"(`drsg log` shows when)"
        )
    return plane


def diff_plane(reader: Reader, plane: str, from_seq: int, to_seq: int) -> PlaneDiff:
    """The changes in ``plane`` from the state at ``from_seq`` to the state at ``to_seq`` (either
    may be the earlier; 0 is the empty state before the first commit)."""
    for seq in (from_seq, to_seq):
        if not 0 <= seq <= reader.head:
            raise BadAsOf(f"seq {seq} is beyond the head of the log ({reader.head}); use 0..{reader.head}")
    snap_from, snap_to = reader.snapshot(from_seq), reader.snapshot(to_seq)
    found = _plane_at_ends(snap_from, snap_to, plane)
    pid = found.id
    lo, hi = min(from_seq, to_seq), max(from_seq, to_seq)
    node_ids: set[int] = set()
    edge_ids: set[int] = set()
    out = PlaneDiff(found, from_seq, to_seq)
    if hi > lo:
        for commit in reader.commits(lo + 1, hi):
            out.commits += 1
            for m in commit.mutations:
                if isinstance(m, NodePut | NodeDelete):
                    if m.plane == pid:
                        node_ids.add(m.id)
                elif isinstance(m, EdgePut | EdgeDelete) and m.plane == pid:
                    edge_ids.add(m.id)
    for node_id in sorted(node_ids):
        a, b = snap_from.node(pid, node_id), snap_to.node(pid, node_id)
        if a is None and b is not None:
            out.nodes_created.append(b)
        elif a is not None and b is None:
            out.nodes_deleted.append(a)
        elif a is not None and b is not None and not _same_node(a, b):
            out.nodes_changed.append(Change(a, b))
    for edge_id in sorted(edge_ids):
        ea, eb = snap_from.edge(pid, edge_id), snap_to.edge(pid, edge_id)
        if ea is None and eb is not None:
            out.edges_created.append(eb)
        elif ea is not None and eb is None:
            out.edges_deleted.append(ea)
        elif ea is not None and eb is not None and not _same_edge(ea, eb):
            out.edges_changed.append(Change(ea, eb))
    return out
