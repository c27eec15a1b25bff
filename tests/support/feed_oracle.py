"""What a change-feed subscriber must receive, worked out from the log by a replay that shares no
code with drsg.feed (the spec in feed/changes.py, re-derived).

Per commit and per entity (node or edge, in the order the commit first touches it): did it exist
before the commit, does it exist after? created / updated / deleted / (created and deleted: nothing).
A node change shows the node's labels after the commit (before it, if deleted); a label filter
passes node changes carrying any of its labels and never passes edges. A commit whose changes are
all filtered out sends nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from drsg.store.database import Database
from drsg.store.log import Commit
from drsg.store.mutations import EdgeDelete, EdgePut, NodeDelete, NodePut, PlaneCreate

#: One change as a subscriber sees it: (kind, op, id, labels — () for edges).
Change = tuple[str, str, int, tuple[str, ...]]


@dataclass(frozen=True)
class Filter:
    plane: str
    labels: frozenset[str] | None = None
    ops: frozenset[str] | None = None

    def passes(self, change: Change) -> bool:
        kind, op, _, labels = change
        if self.ops is not None and op not in self.ops:
            return False
        if self.labels is not None:
            return kind == "node" and not self.labels.isdisjoint(labels)
        return True


def change_of(kind: str, op: str, entity: int, labels: Iterable[str] = ()) -> Change:
    return (kind, op, entity, tuple(sorted(labels)))


class Replay:
    """Walks the log once; :meth:`expected` then answers for any number of filters."""

    def __init__(self, commits: Iterable[Commit], from_seq: int) -> None:
        plane_ids: dict[str, int] = {}
        nodes: dict[tuple[int, int], list[str]] = {}  # (plane, node id) -> labels
        edges: set[tuple[int, int]] = set()  # (plane, edge id)
        #: (seq, {plane id: that plane's changes in first-touched order}) for each commit >= from_seq
        self.commits: list[tuple[int, dict[int, list[Change]]]] = []
        for commit in commits:
            order: list[tuple[str, int, int]] = []
            before: dict[tuple[str, int, int], list[str] | None] = {}
            for m in commit.mutations:
                if isinstance(m, PlaneCreate):
                    plane_ids[m.name] = m.plane
                    continue
                if not isinstance(m, NodePut | NodeDelete | EdgePut | EdgeDelete):
                    continue
                kind = "node" if isinstance(m, NodePut | NodeDelete) else "edge"
                key = (kind, m.plane, m.id)
                if key not in before:
                    order.append(key)
                    if kind == "node":
                        before[key] = nodes.get((m.plane, m.id))
                    else:
                        before[key] = [] if (m.plane, m.id) in edges else None
                if isinstance(m, NodePut):
                    nodes[m.plane, m.id] = list(m.labels)
                elif isinstance(m, NodeDelete):
                    nodes.pop((m.plane, m.id), None)
                elif isinstance(m, EdgePut):
                    edges.add((m.plane, m.id))
                else:
                    edges.discard((m.plane, m.id))
            if commit.seq < from_seq:
                continue
            by_plane: dict[int, list[Change]] = {}
            for key in order:
                kind, plane, entity = key
                had = before[key]
                after = nodes.get((plane, entity)) if kind == "node" else ([] if (plane, entity) in edges else None)
                if had is None and after is None:
                    continue
                op = "created" if had is None else ("deleted" if after is None else "updated")
                labels = (after if after is not None else had) if kind == "node" else []
                by_plane.setdefault(plane, []).append(change_of(kind, op, entity, labels or []))
            self.commits.append((commit.seq, by_plane))
        self.plane_ids = plane_ids

    def expected(self, feed: Filter) -> list[tuple[int, list[Change]]]:
        """(seq, changes) of every commit the filter lets through, in seq order."""
        plane = self.plane_ids[feed.plane]
        out = []
        for seq, by_plane in self.commits:
            shown = [c for c in by_plane.get(plane, []) if feed.passes(c)]
            if shown:
                out.append((seq, shown))
        return out


def oracle(
    db: Database, plane: str, from_seq: int = 1, label: str | None = None, created_only: bool = False
) -> list[int]:
    """Seqs of the commits a subscription must deliver (with a label filter, or of creations only),
    by a coarser replay of the live database's log: the feed's end-to-end tests check against it."""
    plane_id = db.plane(plane).id
    labels_of: dict[int, list[str]] = {}
    edges: set[int] = set()
    out: list[int] = []
    for commit in db.commits(1):
        hit = False
        for m in commit.mutations:
            if getattr(m, "plane", None) != plane_id:
                continue
            if isinstance(m, NodePut):
                new = m.id not in labels_of
                labels_of[m.id] = m.labels
                hit |= (label in m.labels) if label else (new or not created_only)
            elif isinstance(m, NodeDelete):
                had = labels_of.pop(m.id)
                hit |= (label in had) if label else not created_only
            elif isinstance(m, EdgePut):
                new = m.id not in edges
                edges.add(m.id)
                hit |= label is None and (new or not created_only)
            elif isinstance(m, EdgeDelete):
                edges.discard(m.id)
                hit |= label is None and not created_only
        if hit and commit.seq >= from_seq:
            out.append(commit.seq)
    return out
