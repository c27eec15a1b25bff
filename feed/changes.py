"""Turning one commit's mutations into change events, upstream's way (pure: no I/O).

A commit may touch the same node or edge several times; subscribers see one change per entity, in
the order the entities were first touched, collapsed from whether the entity existed before the
commit and whether it exists after it:

    existed before   exists after   change
    no               yes            created   (record = state after the commit)
    yes              yes            updated   (record = state after the commit)
    yes              no             deleted   (no record; ``before`` on request)
    no               no             —         (created and deleted in one commit: dropped)

Mutations carry full after-images (store/mutations.py), so the record after the change is the last
put of the entity in the commit; the state before comes from a lookup the caller supplies (the
projection as of ``seq - 1``). Plane and index mutations produce no change events; a plane
subscription learns from :func:`commit_changes` that its plane was renamed or dropped.

Change shape (upstream's ``plane.change`` entries, plus ``before`` and, on all-plane watches,
``plane``)::

    {"kind": "node", "op": "created", "id": 7, "labels": ["Person"], "record": {…NodeRecord}}
    {"kind": "edge", "op": "deleted", "id": 3}

Unlike upstream, a deleted node still carries the labels it had (read from the state before), so a
label-filtered watch sees its nodes go away.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from typing import Any

from drsg.store.mutations import (
    EdgeDelete,
    EdgePut,
    Mutation,
    NodeDelete,
    NodePut,
    PlaneCreate,
    PlaneDrop,
    PlaneRename,
)
from drsg.store.records import Edge, Node

OPS = ("created", "updated", "deleted")

#: ``before(kind, plane_id, id)`` → the record as it was before the commit, or None if absent.
BeforeLookup = Callable[[str, int, int], Node | Edge | None]


@dataclass(frozen=True, slots=True)
class ChangeOptions:
    """What a subscriber asked for: filters, and how much of each record to show."""

    labels: frozenset[str] | None = None  # node changes carrying any of these labels; edges never pass
    ops: frozenset[str] | None = None  # subset of OPS; None = all
    include_before: bool = False  # add "before": the record before the commit (None when created)
    include_vectors: bool = False  # keep vector properties in records
    include_hidden: bool = False  # keep `_`-prefixed (provenance) properties in records

    @classmethod
    def of(
        cls,
        labels: Iterable[str] | str | None = None,
        ops: Iterable[str] | str | None = None,
        *,
        include_before: bool = False,
        include_vectors: bool = False,
        include_hidden: bool = False,
    ) -> ChangeOptions:
        label_set = None if labels is None else frozenset([labels] if isinstance(labels, str) else labels)
        op_set = None if ops is None else frozenset([ops] if isinstance(ops, str) else ops)
        if op_set is not None and not op_set <= set(OPS):
            bad = ", ".join(sorted(op_set - set(OPS)))
            raise ValueError(f"unknown change op(s) {bad}; use created, updated or deleted")
        return cls(label_set or None, op_set or None, include_before, include_vectors, include_hidden)


@dataclass(frozen=True, slots=True)
class Touched:
    """One entity a commit touched, collapsed: its state after the commit (None if deleted)."""

    kind: str  # "node" | "edge"
    plane: int
    id: int
    first_was_delete: bool  # the entity's first mutation in the commit deleted it: it existed before
    after: Node | Edge | None


@dataclass(frozen=True, slots=True)
class CommitChanges:
    """The change events of one commit, and what happened to the watched plane."""

    changes: list[dict[str, Any]]
    plane_name: str | None  # the watched plane's name after the commit (before it, if dropped)
    dropped: bool  # the watched plane was dropped by this commit


def touched(mutations: Iterable[Mutation], planes: Collection[int] | None = None) -> list[Touched]:
    """Collapse node/edge mutations per entity, in first-seen order (``planes``: only these)."""
    order: list[tuple[str, int]] = []
    first_delete: dict[tuple[str, int], bool] = {}
    after: dict[tuple[str, int], Node | Edge | None] = {}
    plane_of: dict[tuple[str, int], int] = {}
    for m in mutations:
        if isinstance(m, NodePut | NodeDelete):
            kind = "node"
        elif isinstance(m, EdgePut | EdgeDelete):
            kind = "edge"
        else:
            continue  # plane, index: no change events
        if planes is not None and m.plane not in planes:
            continue
        key = (kind, m.id)
        if key not in first_delete:
            order.append(key)
            first_delete[key] = isinstance(m, NodeDelete | EdgeDelete)
            plane_of[key] = m.plane
        if isinstance(m, NodePut):
            after[key] = Node(m.plane, m.id, m.key, list(m.labels), m.props)
        elif isinstance(m, EdgePut):
            after[key] = Edge(m.plane, m.id, m.src, m.dst, m.type, m.props)
        else:
            after[key] = None
    return [Touched(k[0], plane_of[k], k[1], first_delete[k], after[k]) for k in order]


def _record_json(record: Node | Edge, options: ChangeOptions) -> dict[str, Any]:
    return record.to_json(vectors=options.include_vectors, hidden=options.include_hidden)


def change_events(
    entities: Iterable[Touched],
    before: BeforeLookup,
    options: ChangeOptions,
    plane_names: dict[int, str] | None = None,
) -> list[dict[str, Any]]:
    """Upstream-shaped changes for collapsed entities; ``plane_names`` tags each with its plane."""
    out: list[dict[str, Any]] = []
    for t in entities:
        prior = before(t.kind, t.plane, t.id)
        existed = prior is not None or t.first_was_delete
        if t.after is None:
            if not existed:
                continue  # created and deleted within the commit
            op = "deleted"
        else:
            op = "updated" if existed else "created"
        if options.ops is not None and op not in options.ops:
            continue
        labels: list[str] | None = None
        if t.kind == "node":
            shown = t.after if t.after is not None else prior
            labels = list(shown.labels) if isinstance(shown, Node) else []
            if options.labels is not None and options.labels.isdisjoint(labels):
                continue
        elif options.labels is not None:
            continue  # upstream: edges pass only on unfiltered watches
        change: dict[str, Any] = {"kind": t.kind, "op": op, "id": t.id}
        if plane_names is not None:
            change["plane"] = plane_names.get(t.plane)
        if labels is not None:
            change["labels"] = labels
        if t.after is not None:
            change["record"] = _record_json(t.after, options)
        if options.include_before:
            change["before"] = None if prior is None else _record_json(prior, options)
        out.append(change)
    return out


def commit_changes(
    mutations: Iterable[Mutation],
    before: BeforeLookup,
    options: ChangeOptions,
    names: dict[int, str],
    plane: int | None = None,
) -> CommitChanges:
    """Everything a subscriber learns from one commit.

    ``names`` maps plane ids to names as of the commit before; it is brought up to date with this
    commit's plane creations, renames and drops (the only thing this function changes).
    ``plane`` is the watched plane's id, or None for a watch over every plane.
    """
    mutations = list(mutations)
    dropped = False
    dropped_name: str | None = None
    for m in mutations:
        if isinstance(m, PlaneCreate | PlaneRename):
            names[m.plane] = m.name
        elif isinstance(m, PlaneDrop) and m.plane == plane:
            dropped, dropped_name = True, names.get(m.plane)
    entities = touched(mutations, None if plane is None else (plane,))
    tag = names if plane is None else None
    changes = change_events(entities, before, options, tag)
    for m in mutations:
        if isinstance(m, PlaneDrop):
            names.pop(m.plane, None)
    name = dropped_name if dropped else (None if plane is None else names.get(plane))
    return CommitChanges(changes, name, dropped)
