"""feed/changes.py: collapsing a commit's mutations into upstream-shaped change events."""

from __future__ import annotations

from typing import Any

import pytest

from drsg.feed.changes import ChangeOptions, commit_changes, touched
from drsg.kernel.values import Vector
from drsg.store.mutations import (
    EdgeDelete,
    EdgePut,
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

P = 1  # the watched plane
Q = 2  # another plane


def lookup(existing: dict[tuple[str, int], Node | Edge] | None = None) -> Any:
    existing = existing or {}
    return lambda kind, plane, entity: existing.get((kind, entity))


def run(
    mutations: list[Mutation],
    existing: dict[tuple[str, int], Node | Edge] | None = None,
    plane: int | None = P,
    names: dict[int, str] | None = None,
    **options: Any,
) -> list[dict[str, Any]]:
    names = {P: "p", Q: "q"} if names is None else names
    return commit_changes(mutations, lookup(existing), ChangeOptions.of(**options), names, plane).changes


def ops(changes: list[dict[str, Any]]) -> list[tuple[str, str, int]]:
    return [(c["kind"], c["op"], c["id"]) for c in changes]


def node(i: int, labels: list[str] | None = None, **props: Any) -> NodePut:
    return NodePut(P, i, f"k{i}", labels or ["Person"], props)


def old(i: int, labels: list[str] | None = None, **props: Any) -> Node:
    return Node(P, i, f"k{i}", labels or ["Person"], props)


# ---------------------------------------------------------------------- collapsing


def test_put_of_a_new_entity_is_created_and_of_an_existing_one_updated() -> None:
    changes = run([node(1), node(2, name="b")], existing={("node", 2): old(2)})
    assert ops(changes) == [("node", "created", 1), ("node", "updated", 2)]
    assert changes[1]["record"] == {"id": 2, "external_key": "k2", "labels": ["Person"], "properties": {"name": "b"}}
    assert changes[0]["labels"] == ["Person"]


def test_created_then_updated_is_created_with_the_last_record() -> None:
    changes = run([node(1, n=1), node(1, n=2), node(1, n=3)])
    assert ops(changes) == [("node", "created", 1)]
    assert changes[0]["record"]["properties"] == {"n": 3}


def test_created_then_deleted_in_one_commit_is_dropped() -> None:
    assert run([node(1), EdgePut(P, 5, 1, 1, "SELF", {}), EdgeDelete(P, 5), NodeDelete(P, 1)]) == []


def test_updated_then_deleted_is_deleted_without_record() -> None:
    changes = run([node(1, n=9), NodeDelete(P, 1)], existing={("node", 1): old(1, n=1)})
    assert ops(changes) == [("node", "deleted", 1)]
    assert "record" not in changes[0] and "before" not in changes[0]


def test_deleted_node_keeps_the_labels_it_had() -> None:
    changes = run([NodeDelete(P, 1)], existing={("node", 1): old(1, ["Person", "Admin"])})
    assert changes == [{"kind": "node", "op": "deleted", "id": 1, "labels": ["Person", "Admin"]}]


def test_delete_of_an_entity_the_lookup_cannot_find_still_counts_as_deleted() -> None:
    assert ops(run([EdgeDelete(P, 4)])) == [("edge", "deleted", 4)]


def test_first_seen_order_is_kept_across_kinds() -> None:
    existing: dict[tuple[str, int], Node | Edge] = {("node", 3): old(3), ("edge", 7): Edge(P, 7, 3, 3, "T", {})}
    mutations: list[Mutation] = [
        node(2),
        EdgeDelete(P, 7),
        node(1),
        NodeDelete(P, 3),
        EdgePut(P, 8, 1, 2, "KNOWS", {"w": 1}),
        node(2, again=True),
    ]
    assert ops(run(mutations, existing)) == [
        ("node", "created", 2),
        ("edge", "deleted", 7),
        ("node", "created", 1),
        ("node", "deleted", 3),
        ("edge", "created", 8),
    ]


def test_node_and_edge_with_the_same_id_are_different_entities() -> None:
    changes = run([node(1), EdgePut(P, 1, 1, 1, "T", {})])
    assert ops(changes) == [("node", "created", 1), ("edge", "created", 1)]
    assert changes[1]["record"] == {"id": 1, "src": 1, "dst": 1, "type": "T", "properties": {}}
    assert "labels" not in changes[1]


def test_touched_reports_the_state_after_the_commit() -> None:
    entities = touched([node(1, n=1), NodeDelete(P, 1), EdgeDelete(P, 2), node(3)])
    assert [(t.kind, t.id, t.first_was_delete, t.after is None) for t in entities] == [
        ("node", 1, False, True),
        ("edge", 2, True, True),
        ("node", 3, False, False),
    ]


# ---------------------------------------------------------------------- planes and indexes


def test_plane_and_index_mutations_produce_no_changes() -> None:
    mutations: list[Mutation] = [
        PlaneCreate(3, "new", {}),
        PlaneRename(P, "renamed"),
        PlaneSetProps(P, {"a": 1}),
        IndexDeclare(P, "vector", "Person", "emb", {"metric": "cosine", "dims": 2}),
        IndexDrop(P, "vector", "Person", "emb"),
    ]
    result = commit_changes(mutations, lookup(), ChangeOptions(), {P: "p"}, P)
    assert result.changes == [] and not result.dropped and result.plane_name == "renamed"


def test_other_planes_are_left_out_of_a_plane_watch() -> None:
    assert ops(run([NodePut(Q, 9, None, [], {}), node(1)])) == [("node", "created", 1)]


def test_all_plane_watch_tags_each_change_with_its_plane_name_after_the_commit() -> None:
    names = {P: "p", Q: "q"}
    mutations: list[Mutation] = [PlaneCreate(5, "fresh", {}), NodePut(5, 9, None, [], {}), PlaneRename(Q, "q2")]
    mutations += [NodePut(Q, 8, None, [], {}), node(1)]
    changes = run(mutations, plane=None, names=names)
    assert [(c["plane"], c["id"]) for c in changes] == [("fresh", 9), ("q2", 8), ("p", 1)]
    assert names == {P: "p", Q: "q2", 5: "fresh"}


def test_dropping_the_watched_plane_ends_with_its_changes_and_old_name() -> None:
    names = {P: "p", Q: "q"}
    result = commit_changes([node(1), PlaneDrop(P)], lookup(), ChangeOptions(), names, P)
    assert result.dropped and result.plane_name == "p" and ops(result.changes) == [("node", "created", 1)]
    assert P not in names
    names = {P: "p", Q: "q"}
    other = commit_changes([PlaneDrop(Q)], lookup(), ChangeOptions(), names, P)
    assert not other.dropped and other.plane_name == "p" and names == {P: "p"}


# ---------------------------------------------------------------------- filters


def test_label_filter_keeps_matching_nodes_and_drops_edges() -> None:
    existing: dict[tuple[str, int], Node | Edge] = {("node", 3): old(3, ["Admin"]), ("node", 4): old(4, ["Person"])}
    mutations: list[Mutation] = [
        node(1, ["Person"]),
        node(2, ["Robot"]),
        EdgePut(P, 1, 1, 2, "KNOWS", {}),
        NodeDelete(P, 3),
        NodeDelete(P, 4),
    ]
    assert ops(run(mutations, existing, labels=["Person"])) == [("node", "created", 1), ("node", "deleted", 4)]
    assert ops(run(mutations, existing, labels=["Admin", "Robot"])) == [("node", "created", 2), ("node", "deleted", 3)]
    assert len(run(mutations, existing)) == 5


def test_label_filter_uses_labels_after_the_change_for_updates() -> None:
    existing: dict[tuple[str, int], Node | Edge] = {("node", 1): old(1, ["Person"])}
    assert run([node(1, ["Robot"])], existing, labels="Person") == []
    assert ops(run([node(1, ["Robot"])], existing, labels="Robot")) == [("node", "updated", 1)]


def test_op_filter_applies_after_collapsing() -> None:
    existing: dict[tuple[str, int], Node | Edge] = {("node", 2): old(2), ("node", 3): old(3)}
    mutations: list[Mutation] = [node(1), node(1, x=1), node(2, x=2), NodeDelete(P, 3)]
    assert ops(run(mutations, existing, ops=["created"])) == [("node", "created", 1)]
    assert ops(run(mutations, existing, ops="deleted")) == [("node", "deleted", 3)]
    assert ops(run(mutations, existing, ops=["updated", "deleted"])) == [("node", "updated", 2), ("node", "deleted", 3)]


def test_unknown_op_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown change op"):
        ChangeOptions.of(ops=["removed"])


# ---------------------------------------------------------------------- record contents


def test_vectors_and_hidden_properties_are_stripped_unless_asked() -> None:
    props = {"name": "a", "_source": "doc.txt", "emb": Vector.of([1.0, 2.0])}
    mutations: list[Mutation] = [NodePut(P, 1, None, ["Doc"], props), EdgePut(P, 2, 1, 1, "T", props)]
    plain = run(mutations)
    assert [c["record"]["properties"] for c in plain] == [{"name": "a"}, {"name": "a"}]
    full = run(mutations, include_vectors=True, include_hidden=True)
    assert full[0]["record"]["properties"] == {"name": "a", "_source": "doc.txt", "emb": {"$vector": [1.0, 2.0]}}
    assert full[1]["record"]["properties"] == full[0]["record"]["properties"]
    assert run(mutations, include_hidden=True)[0]["record"]["properties"] == {"name": "a", "_source": "doc.txt"}


def test_include_before_adds_the_record_before_the_commit() -> None:
    existing: dict[tuple[str, int], Node | Edge] = {
        ("node", 2): old(2, n=1, _src="x"),
        ("node", 3): old(3, n=5),
        ("edge", 4): Edge(P, 4, 2, 3, "T", {"w": 1}),
    }
    mutations: list[Mutation] = [node(1), node(2, n=2), NodeDelete(P, 3), EdgeDelete(P, 4)]
    changes = run(mutations, existing, include_before=True)
    assert changes[0]["before"] is None
    assert changes[1]["before"]["properties"] == {"n": 1}  # hidden props stripped from `before` too
    assert changes[1]["record"]["properties"] == {"n": 2}
    assert changes[2]["before"] == {"id": 3, "external_key": "k3", "labels": ["Person"], "properties": {"n": 5}}
    assert "record" not in changes[2]
    assert changes[3]["before"] == {"id": 4, "src": 2, "dst": 3, "type": "T", "properties": {"w": 1}}
