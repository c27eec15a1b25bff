"""Reads through a Snapshot (store/snapshot.py): current and as-of, every read an ordered-key seek."""

from __future__ import annotations

import random
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

import drsg
from drsg.kernel.asof import AsOf
from drsg.kernel.errors import BadAsOf, NotFound
from drsg.kernel.values import Described, Vector
from drsg.store.database import Database
from drsg.store.transaction import WriteTx


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    database = drsg.open(tmp_path / "g.drsg")
    yield database
    database.close()


def _ids(nodes: Iterator[object]) -> list[int]:
    return [n.id for n in nodes]  # type: ignore[attr-defined]


def test_a_new_database_has_the_startup_plane_at_seq_1(db: Database) -> None:
    assert db.head() == 1
    with db.snapshot() as snap:
        assert snap.at == 1
        assert [(p.id, p.name) for p in snap.planes()] == [(0, "startup")]
        assert list(snap.nodes(0)) == [] and list(snap.edges(0)) == []
    (commit,) = db.commits()
    assert commit.seq == 1 and commit.origin == {"via": "bootstrap"}


def test_label_lookups_return_only_labelled_nodes(db: Database) -> None:
    p = db.plane("startup")

    def setup(tx):  # type: ignore[no-untyped-def]
        tx.create_node(p, "ada", ["Person"])
        tx.create_node(p, "acme", ["Org"])
        tx.create_node(p, "bare")
        tx.create_node(p, "both", ["Person", "Org"])
        tx.create_node(p, "pers", ["Pers"])  # a label that is a prefix of another
        tx.create_node(p, "persons", ["Persons"])  # and one that has it as a prefix

    db.write(setup)
    with db.snapshot() as snap:
        key_of = {n.id: n.key for n in snap.nodes(p.id)}
        assert [key_of[i] for i in _ids(snap.nodes(p.id, label="Person"))] == ["ada", "both"]
        assert [key_of[i] for i in _ids(snap.nodes(p.id, label="Org"))] == ["acme", "both"]
        assert [key_of[i] for i in _ids(snap.nodes(p.id, label="Pers"))] == ["pers"]
        assert [key_of[i] for i in _ids(snap.nodes(p.id, label="Persons"))] == ["persons"]
        assert list(snap.nodes(p.id, label="Nobody")) == []
        assert list(snap.nodes(p.id, label="Perso")) == []
        for node in snap.nodes(p.id, label="Person"):
            assert "Person" in node.labels
    seq_before = db.head()

    # Relabel and delete: label lookups follow, and as-of lookups still see the old labels.
    db.write(lambda tx: tx.update_node(p, "ada", labels=["Org"]))
    db.write(lambda tx: tx.delete_node(p, "both"))
    db.write(lambda tx: tx.update_node(p, "bare", labels=["Person", "Person"]))
    with db.snapshot() as snap:
        assert [n.key for n in snap.nodes(p.id, label="Person")] == ["bare"]
        assert [n.key for n in snap.nodes(p.id, label="Org")] == ["ada", "acme"]
        assert snap.node_by_key(p.id, "bare").labels == ["Person"]  # type: ignore[union-attr]
    with db.snapshot(as_of=seq_before) as snap:
        assert [n.key for n in snap.nodes(p.id, label="Person")] == ["ada", "both"]
        assert [n.key for n in snap.nodes(p.id, label="Org")] == ["acme", "both"]


def test_labels_are_per_plane(db: Database) -> None:
    db.write(lambda tx: tx.create_plane("other"))
    db.write(lambda tx: tx.create_node(tx.plane("other"), "x", ["Person"]))
    db.write(lambda tx: tx.create_node(tx.plane("startup"), "y", ["Person"]))
    with db.snapshot() as snap:
        other = snap.plane("other")
        assert [n.key for n in snap.nodes(other.id, label="Person")] == ["x"]
        assert [n.key for n in snap.nodes(0, label="Person")] == ["y"]


def test_values_survive_the_store(db: Database) -> None:
    p = db.plane("startup")
    props = {
        "none": None,
        "t": True,
        "one": 1,
        "neg0": -0.0,
        "big": 2**63 - 1,
        "small": -(2**63),
        "f": 1.5,
        "s": "ünï",
        "b": b"\x00\xff",
        "v": Vector.of([0.25, -1.0]),
        "l": [1, [b"x", {"k": Vector.of([2])}]],
        "m": {"": None, "$vector": [1]},
        "d": Described("born", 1815),
    }
    node = db.write(lambda tx: tx.create_node(p, "all", ["T"], props)).value
    with db.snapshot() as snap:
        got = snap.node(p.id, node.id)
    assert got is not None and got.props == props
    assert type(got.props["t"]) is bool and type(got.props["one"]) is int
    assert str(got.props["neg0"]) == "-0.0"
    assert isinstance(got.props["b"], bytes) and isinstance(got.props["v"], Vector)


def test_keys_lookups_and_key_reuse_after_delete(db: Database) -> None:
    p = db.plane("startup")
    first = db.write(lambda tx: tx.create_node(p, "k", [], {"gen": 1})).value
    s1 = db.head()
    db.write(lambda tx: tx.delete_node(p, "@k"))
    s2 = db.head()
    second = db.write(lambda tx: tx.create_node(p, "k", [], {"gen": 2})).value
    assert second.id != first.id  # ids are never reused
    with db.snapshot() as snap:
        assert snap.node_by_key(p.id, "k").id == second.id  # type: ignore[union-attr]
        assert snap.node(p.id, first.id) is None
    with db.snapshot(as_of=s1) as snap:
        assert snap.node_by_key(p.id, "k").props == {"gen": 1}  # type: ignore[union-attr]
        assert snap.node(p.id, second.id) is None
    with db.snapshot(as_of=s2) as snap:
        assert snap.node_by_key(p.id, "k") is None
        assert snap.node_id_by_key(p.id, "k") is None


def test_key_lookup_does_not_match_prefixes(db: Database) -> None:
    p = db.plane("startup")
    db.write(lambda tx: [tx.create_node(p, k) for k in ("ab", "abc", "a")])
    with db.snapshot() as snap:
        for k in ("ab", "abc", "a"):
            assert snap.node_by_key(p.id, k).key == k  # type: ignore[union-attr]
        assert snap.node_by_key(p.id, "abcd") is None
        assert snap.node_by_key(p.id, "b") is None


def test_neighbors_directions_types_and_self_loops(db: Database) -> None:
    p = db.plane("startup")

    def build(tx):  # type: ignore[no-untyped-def]
        a, b, c = (tx.create_node(p, k) for k in "abc")
        e1 = tx.create_edge(p, a.id, b.id, "KNOWS")
        e2 = tx.create_edge(p, "@a", "@c", "OWNS")
        e3 = tx.create_edge(p, "c", "a", "KNOWS")
        e4 = tx.create_edge(p, a.id, a.id, "SELF")
        return a.id, b.id, c.id, e1.id, e2.id, e3.id, e4.id

    a, b, c, e1, e2, e3, e4 = db.write(build).value

    def seen(snap, node, direction, edge_type=None):  # type: ignore[no-untyped-def]
        return sorted((n.edge.id, n.node, n.direction) for n in snap.neighbors(p.id, node, direction, edge_type))

    with db.snapshot() as snap:
        assert seen(snap, a, "out") == [(e1, b, "out"), (e2, c, "out"), (e4, a, "out")]
        assert seen(snap, a, "in") == [(e3, c, "in"), (e4, a, "in")]
        assert seen(snap, a, "both") == sorted(seen(snap, a, "out") + seen(snap, a, "in"))
        assert seen(snap, a, "out", "KNOWS") == [(e1, b, "out")]
        assert seen(snap, a, "both", "KNOWS") == [(e1, b, "out"), (e3, c, "in")]
        assert seen(snap, a, "both", "KNOW") == []
        assert seen(snap, b, "out") == [] and seen(snap, b, "in") == [(e1, a, "in")]
        with pytest.raises(ValueError):
            list(snap.neighbors(p.id, a, "sideways"))


def test_adjacency_walk_at_every_seq_of_edges_lives(db: Database) -> None:
    """The adjacency walk steps over a group's versions: at each seq, a node's edges are those made
    at or before it and not yet deleted, newer and older versions of the same entry skipped."""
    p = db.plane("startup")
    a, b, c = db.write(lambda tx: [tx.create_node(p, k).id for k in "abc"]).value
    made = db.head()
    e1 = db.write(lambda tx: tx.create_edge(p, a, b, "R")).value.id
    e2 = db.write(lambda tx: tx.create_edge(p, a, c, "R")).value.id
    db.write(lambda tx: tx.delete_edge(p, e1))
    e3 = db.write(lambda tx: tx.create_edge(p, a, b, "R")).value.id
    db.write(lambda tx: tx.delete_edge(p, e2))
    expected = {made: [], made + 1: [e1], made + 2: [e1, e2], made + 3: [e2], made + 4: [e2, e3], made + 5: [e3]}
    ends = {e1: b, e2: c, e3: b}
    for at, edges in expected.items():
        with db.snapshot(as_of=at) as snap:
            assert [n.edge.id for n in snap.neighbors(p.id, a, "out")] == edges, at
            assert list(snap.neighbor_ids(p.id, a, "out")) == [ends[e] for e in edges], at
            assert [n.edge.id for n in snap.neighbors(p.id, b, "in")] == [e for e in edges if ends[e] == b], at
            assert list(snap.neighbor_ids(p.id, a, "in")) == []


def test_edge_type_change_moves_adjacency(db: Database) -> None:
    p = db.plane("startup")
    a, b = db.write(lambda tx: [tx.create_node(p, k).id for k in "ab"]).value
    edge = db.write(lambda tx: tx.create_edge(p, a, b, "OLD", {"w": 1})).value
    before = db.head()
    db.write(lambda tx: tx.update_edge(p, edge.id, {"w": 2}, edge_type="NEW"))
    with db.snapshot() as snap:
        assert [n.edge.type for n in snap.neighbors(p.id, a, "out")] == ["NEW"]
        assert list(snap.neighbors(p.id, a, "out", "OLD")) == []
        assert [n.edge.props for n in snap.neighbors(p.id, b, "in", "NEW")] == [{"w": 2}]
        assert snap.tally(p.id, b"T") == {"NEW": 1}
    with db.snapshot(as_of=before) as snap:
        assert [(n.edge.type, n.edge.props) for n in snap.neighbors(p.id, a, "out")] == [("OLD", {"w": 1})]
        assert list(snap.neighbors(p.id, a, "out", "NEW")) == []


def test_delete_node_cascades_its_edges(db: Database) -> None:
    p = db.plane("startup")

    def build(tx):  # type: ignore[no-untyped-def]
        a, b, c = (tx.create_node(p, k).id for k in "abc")
        tx.create_edge(p, a, b, "R")
        tx.create_edge(p, c, a, "R")
        tx.create_edge(p, a, a, "R")
        keep = tx.create_edge(p, b, c, "R")
        return a, b, c, keep.id

    a, b, c, keep = db.write(build).value
    result = db.write(lambda tx: tx.delete_node(p, a))
    (commit,) = db.commits(result.seq)
    assert [m.op for m in commit.mutations] == ["edge.delete"] * 3 + ["node.delete"]
    with db.snapshot() as snap:
        assert [e.id for e in snap.edges(p.id)] == [keep]
        assert list(snap.neighbors(p.id, b, "both")) != []
        assert all(n.node != a for n in snap.neighbors(p.id, b, "both"))
        assert all(n.node != a for n in snap.neighbors(p.id, c, "both"))
    assert db.stats().edges == 1 and db.stats().nodes == 2


def test_node_history_lists_every_version_with_its_commit_time(db: Database) -> None:
    p = db.plane("startup")
    node = db.write(lambda tx: tx.create_node(p, "h", ["A"], {"v": 1})).value
    r2 = db.write(lambda tx: tx.update_node(p, "h", {"v": 2}, labels=["B"]))
    r3 = db.write(lambda tx: tx.delete_node(p, "h"))
    db.write(lambda tx: tx.create_node(p, "other"))
    with db.snapshot() as snap:
        history = snap.node_history(p.id, node.id)
    commits = {c.seq: c.ts for c in db.commits()}
    assert [v.seq for v in history] == [2, r2.seq, r3.seq]
    assert [v.ts for v in history] == [commits[2], commits[r2.seq], commits[r3.seq]]
    assert [(v.record.labels, v.record.props) if v.record else None for v in history] == [
        (["A"], {"v": 1}),
        (["B"], {"v": 2}),
        None,
    ]
    with db.snapshot(as_of=r2.seq) as snap:
        assert [v.seq for v in snap.node_history(p.id, node.id)] == [2, r2.seq]


def test_a_key_finds_its_holder_now_else_the_last_node_that_held_it(db: Database) -> None:
    p = db.plane("startup")
    first = db.write(lambda tx: tx.create_node(p, "k")).value.id
    gone = db.write(lambda tx: tx.delete_node(p, "k")).seq
    second = db.write(lambda tx: tx.create_node(p, "k")).value.id  # the key is taken again
    db.write(lambda tx: tx.delete_node(p, "k"))
    with db.snapshot() as snap:
        assert snap.node_id_by_key(p.id, "k") is None
        assert snap.key_holder(p.id, "k") == second != first
        assert snap.key_holder(p.id, "never") is None
    with db.snapshot(as_of=gone) as snap:
        assert snap.key_holder(p.id, "k") == first
    with db.snapshot(as_of=gone + 1) as snap:
        assert snap.key_holder(p.id, "k") == snap.node_id_by_key(p.id, "k") == second


def test_planes_rename_and_drop_as_of(db: Database) -> None:
    db.write(lambda tx: tx.create_plane("work", {"owner": "ada"}))
    work = db.plane("work")
    db.write(lambda tx: tx.create_node(work, "n", ["L"]))
    s_created = db.head()
    db.write(lambda tx: tx.rename_plane("work", "job"))
    s_renamed = db.head()
    db.write(lambda tx: tx.drop_plane("job"))
    with db.snapshot() as snap:
        assert [p.name for p in snap.planes()] == ["startup"]
        assert snap.find_plane("work") is None and snap.find_plane("job") is None
        with pytest.raises(NotFound, match="job"):
            snap.plane("job")
    with db.snapshot(as_of=s_created) as snap:
        assert snap.plane("work").props == {"owner": "ada"}
        assert snap.find_plane("job") is None
        assert [n.key for n in snap.nodes(work.id, label="L")] == ["n"]
    with db.snapshot(as_of=s_renamed) as snap:
        assert snap.find_plane("work") is None
        assert snap.plane("job").id == work.id
    # A new plane may take the old name; it gets a new id.
    new = db.write(lambda tx: tx.create_plane("work")).value
    assert new.id != work.id
    with db.snapshot() as snap:
        assert list(snap.nodes(snap.plane("work").id)) == []


def test_nodes_and_edges_come_in_id_order(db: Database) -> None:
    p = db.plane("startup")
    ids = db.write(lambda tx: [tx.create_node(p, f"n{i}").id for i in range(300)]).value
    db.write(lambda tx: [tx.create_edge(p, ids[i], ids[i + 1], "NEXT") for i in range(0, 299, 3)])
    with db.snapshot() as snap:
        got = _ids(snap.nodes(p.id))
        assert got == sorted(ids) and len(got) == 300
        edge_ids = [e.id for e in snap.edges(p.id)]
        assert edge_ids == sorted(edge_ids) and len(edge_ids) == 100


def test_a_snapshot_does_not_see_later_commits(db: Database) -> None:
    p = db.plane("startup")
    db.write(lambda tx: tx.create_node(p, "before"))
    with db.snapshot() as snap:
        at = snap.at
        # A write from another thread while this read transaction is open.
        t = threading.Thread(target=lambda: db.write(lambda tx: tx.create_node(p, "after")))
        t.start()
        t.join(timeout=10)
        assert not t.is_alive()
        assert db.head() == at + 1
        assert snap.node_by_key(p.id, "after") is None
        assert [n.key for n in snap.nodes(p.id)] == ["before"]
    with db.snapshot() as snap:
        assert [n.key for n in snap.nodes(p.id)] == ["before", "after"]


def test_each_snapshot_reads_the_head_its_transaction_sees(db: Database, tmp_path: Path) -> None:
    """The head is remembered by LMDB's transaction id (store/reader.py): a read after a commit,
    this process's or another's, sees the new head; one still open keeps its own."""
    p = db.plane("startup")
    with db.snapshot() as first:
        assert first.head == first.at == db.head()
    db.write(lambda tx: tx.create_node(p, "here"))
    script = (
        "import sys, drsg; db = drsg.open(sys.argv[1]); "
        "db.write(lambda tx: tx.create_node(tx.plane('startup'), 'there'))"
    )
    with db.snapshot() as before:
        assert before.head == first.head + 1 and before.node_by_key(p.id, "here") is not None
        subprocess.run([sys.executable, "-c", script, str(tmp_path / "g.drsg")], check=True, timeout=60)
        with db.snapshot() as after:  # a second read, begun after the other process's commit
            assert after.head == before.head + 1 and after.node_by_key(p.id, "there") is not None
        assert before.head == first.head + 1 and before.node_by_key(p.id, "there") is None
    with db.snapshot() as last:
        assert last.head == db.head() == first.head + 2


def test_as_of_a_seq_reads_the_head_its_transaction_sees(db: Database, tmp_path: Path) -> None:
    """An as-of read by seq takes the head from the same memo as a current read (store/reader.py):
    a seq past the head is refused until a commit, another process's too, makes it the head."""
    p = db.plane("startup")
    with db.snapshot() as first:  # the memo now holds this head
        head = first.head
    with pytest.raises(BadAsOf, match=f"beyond the head of the log \\({head}\\)"), db.snapshot(AsOf(seq=head + 1)):
        pass
    script = (
        "import sys, drsg; db = drsg.open(sys.argv[1]); "
        "db.write(lambda tx: tx.create_node(tx.plane('startup'), 'there'))"
    )
    subprocess.run([sys.executable, "-c", script, str(tmp_path / "g.drsg")], check=True, timeout=60)
    with db.snapshot(AsOf(seq=head + 1)) as after:
        assert (after.at, after.head) == (head + 1, head + 1)
        assert after.node_by_key(p.id, "there") is not None
    with db.snapshot(AsOf(seq=head)) as before:
        assert (before.at, before.head) == (head, head + 1)
        assert before.node_by_key(p.id, "there") is None


def test_stats_count_live_records(db: Database) -> None:
    p = db.plane("startup")
    db.write(lambda tx: tx.create_plane("other"))
    o = db.plane("other")

    def build(tx):  # type: ignore[no-untyped-def]
        a = tx.create_node(p, "a", ["X", "Y"])
        b = tx.create_node(p, "b", ["Y"])
        tx.create_edge(p, a.id, b.id, "R")
        tx.create_edge(p, b.id, a.id, "S")
        c = tx.create_node(o, "c", ["Z"])
        tx.create_edge(o, c.id, c.id, "R")

    db.write(build)
    stats = db.stats()
    assert (stats.planes, stats.nodes, stats.edges, stats.labels, stats.edge_types) == (2, 3, 3, 3, 2)
    assert stats.commit_seq == db.head()
    db.write(lambda tx: tx.delete_node(p, "a"))
    stats = db.stats()
    assert (stats.nodes, stats.edges, stats.labels, stats.edge_types) == (2, 1, 2, 1)
    db.write(lambda tx: tx.drop_plane("other"))
    stats = db.stats()
    assert (stats.planes, stats.nodes, stats.edges, stats.labels, stats.edge_types) == (1, 1, 0, 1, 0)


def test_stats_count_the_declared_indexes_of_every_plane(db: Database) -> None:
    assert db.stats().to_json()["indexes"] == 0
    p = db.plane("startup")
    db.write(lambda tx: tx.create_plane("other"))
    o = db.plane("other")
    db.write(lambda tx: tx.declare_index(p, "vector", "Doc", "embedding", {"metric": "cosine"}))
    db.write(lambda tx: tx.declare_index(p, "keyword", "Doc", "body", {"language": "english"}))
    db.write(lambda tx: tx.declare_index(o, "keyword", "Note", "text", {}))
    assert db.stats().indexes == 3 and db.stats().to_json()["indexes"] == 3
    db.write(lambda tx: tx.drop_index(p, "keyword", "Doc", "body"))
    assert db.stats().indexes == 2
    db.write(lambda tx: tx.drop_plane("other"))
    assert db.stats().to_json()["indexes"] == 1


def test_walks_are_the_same_when_other_reads_move_the_shared_cursors_between_their_steps(db: Database) -> None:
    """A snapshot's cursors are shared by its reads: a walk (nodes, neighbours) that steps from
    where it left its cursor must find its way again when a lookup or a nested walk moved it."""
    rng = random.Random(7)

    def build(tx: WriteTx) -> None:
        plane = tx.ensure_plane("p")
        for i in range(40):
            tx.create_node(plane, f"n{i}", ["N"], {"i": i})
        for _ in range(120):
            tx.create_edge(plane, f"@n{rng.randrange(40)}", f"@n{rng.randrange(40)}", rng.choice("AB"), {})

    db.write(build)
    for i in range(0, 40, 3):  # older versions behind some groups, and tombstones
        db.write(lambda tx, i=i: tx.update_node(tx.plane("p"), f"@n{i}", {"i": -i}))
    for i in range(1, 40, 7):
        db.write(lambda tx, i=i: tx.delete_node(tx.plane("p"), f"@n{i}"))
    with db.snapshot() as snap:
        plane = snap.plane("p").id
        alone = [(n.id, n.props) for n in snap.nodes(plane)]
        ids = [node_id for node_id, _ in alone]
        interleaved = []
        for node in snap.nodes(plane):
            interleaved.append((node.id, node.props))
            snap.node(plane, rng.choice(ids))  # the nodes cursor moved elsewhere between two steps
        assert interleaved == alone
        for node_id in ids:
            flat = [(n.edge.id, n.node, n.direction) for n in snap.neighbors(plane, node_id)]
            nested = []
            for n in snap.neighbors(plane, node_id):
                nested.append((n.edge.id, n.node, n.direction))
                list(snap.neighbors(plane, n.node))  # a 2-hop walk on the same adjacency cursors
            assert nested == flat, node_id
