"""Retention against a twin without it: random histories of creates, updates and deletes of nodes
and edges over two planes are written to two databases; one keeps a random number of commits and
compacts. From the horizon to the head every read answers as on the twin — a node by id and by
key, its neighbours, a plane's nodes and edges, the canonical export — and every read before the
horizon is refused with the one line naming it and the setting."""

from __future__ import annotations

import io
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from drsg.kernel.errors import BadAsOf
from drsg.store import keys
from drsg.store.database import Database
from drsg.store.jsonl import export_jsonl
from drsg.store.retention import PLANE_KEYED, Retention, compact_history
from drsg.store.snapshot import Snapshot
from drsg.store.transaction import WriteTx

PLANES = ("alpha", "beta")
KEYS = ("k1", "k2", "k3", "k4")
props = st.dictionaries(st.sampled_from(["a", "b"]), st.integers(-2, 2), max_size=2)
op = st.one_of(
    st.tuples(st.just("put"), st.sampled_from(PLANES), st.sampled_from(KEYS), props),
    st.tuples(st.just("relabel"), st.sampled_from(PLANES), st.sampled_from(KEYS), st.sampled_from(["A", "B"])),
    st.tuples(st.just("delete"), st.sampled_from(PLANES), st.sampled_from(KEYS)),
    st.tuples(st.just("link"), st.sampled_from(PLANES), st.sampled_from(KEYS), st.sampled_from(KEYS), props),
    st.tuples(st.just("edge_update"), st.sampled_from(PLANES), st.integers(0, 9), props),
    st.tuples(st.just("unlink"), st.sampled_from(PLANES), st.integers(0, 9)),
    st.tuples(st.just("drop"), st.sampled_from(PLANES)),  # the next op on it makes a new plane of that name
)
histories = st.lists(st.lists(op, min_size=1, max_size=3), min_size=1, max_size=14)


def apply(tx: WriteTx, o: tuple[Any, ...]) -> None:
    kind = o[0]
    if kind == "drop":
        if tx.view.find_plane(o[1]) is not None:
            tx.drop_plane(o[1])
        return
    plane = tx.view.find_plane(o[1]) or tx.create_plane(o[1])
    if kind == "put":
        node = tx.view.node_id_by_key(plane.id, o[2])
        if node is None:
            tx.create_node(plane, o[2], ["A"], o[3])
        else:
            tx.update_node(plane, node, o[3], [], None)
    elif kind == "relabel" and (node := tx.view.node_id_by_key(plane.id, o[2])) is not None:
        tx.update_node(plane, node, {}, [], [o[3]])
    elif kind == "delete" and (node := tx.view.node_id_by_key(plane.id, o[2])) is not None:
        tx.delete_node(plane, node)
    elif kind == "link":
        src, dst = tx.view.node_id_by_key(plane.id, o[2]), tx.view.node_id_by_key(plane.id, o[3])
        if src is not None and dst is not None:
            tx.create_edge(plane, src, dst, "R", o[4])
    elif kind in ("edge_update", "unlink"):
        edges = [e.id for e in tx.view.edges(plane.id)]
        if edges:
            edge = edges[o[2] % len(edges)]
            if kind == "unlink":
                tx.delete_edge(plane, edge)
            else:
                tx.update_edge(plane, edge, o[3], [], None)


def reads(db: Database, snap: Snapshot) -> list[Any]:
    """Everything a reader may ask of ``snap``, as plain values."""
    found: list[Any] = []
    for plane in snap.planes():
        nodes = list(snap.nodes(plane.id))
        found.append((plane.name, [n.to_json() for n in nodes], [e.to_json() for e in snap.edges(plane.id)]))
        found.append(snap.counts(plane.id))
        for key in KEYS:
            by_key = snap.node_by_key(plane.id, key)
            found.append((key, None if by_key is None else by_key.to_json()))
        for node_id in range(12):
            node = snap.node(plane.id, node_id)
            found.append((node_id, None if node is None else node.to_json()))
            found.append(sorted((n.edge.id, n.node, n.direction) for n in snap.neighbors(plane.id, node_id)))
    return found


def export(db: Database, seq: int, planes: list[str]) -> list[str]:
    lines = []
    for plane in planes:
        out = io.StringIO()
        export_jsonl(db, plane, out, seq, canonical=True)
        lines.append(out.getvalue())
    return lines


def dropped_at(db: Database, seq: int) -> set[int]:
    """The planes dropped at or before ``seq`` (read from ``db``'s planes table: ids are never reused)."""
    with db.env.read() as txn:
        made = {keys.U32.unpack_from(k)[0] for k, _ in txn.cursor(db=db.env.dbs["planes"])}
    with db.snapshot(seq) as snap:
        return {p for p in made if snap.plane_by_id(p) is None and any(snap.versions("planes", keys.plane_group(p)))}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(history=histories, keep=st.integers(0, 12), batch=st.integers(1, 7))
def test_reads_after_the_horizon_match_a_twin_and_reads_before_it_are_refused(
    history: list[list[tuple[Any, ...]]], keep: int, batch: int
) -> None:
    with (
        tempfile.TemporaryDirectory() as tmp,
        Database(Path(tmp) / "kept.drsg") as kept,
        Database(Path(tmp) / "twin.drsg") as twin,
    ):
        for db in (kept, twin):
            db.write(lambda tx: [tx.create_plane(name) for name in PLANES])
            for commit in history:
                db.write(lambda tx, commit=commit: [apply(tx, o) for o in commit])
        head = kept.head()
        done = compact_history(kept.env, kept.writer.exclusive, Retention(commits=keep), batch=batch)
        horizon = max(1, head - keep) if keep else 1
        assert done.horizon == kept.retained().oldest == horizon
        for seq in range(horizon, head + 1):
            with kept.snapshot(seq) as a, twin.snapshot(seq) as b:
                assert reads(kept, a) == reads(twin, b), seq
            with kept.snapshot(seq) as snap:
                planes = [name for name in PLANES if snap.find_plane(name) is not None]
            assert export(kept, seq, planes) == export(twin, seq, planes)
        assert [c.to_json()["mutations"] for c in kept.commits(horizon)] == [
            c.to_json()["mutations"] for c in twin.commits(horizon)
        ]
        for seq in range(1, horizon):
            refusal = f"commit {seq} is older than the retained history"
            with pytest.raises(BadAsOf, match=refusal) as refused, kept.snapshot(seq):
                pass
            assert f"starts at commit {horizon}: [log] retain_commits = {keep})" in str(refused.value)
            with pytest.raises(BadAsOf, match="older than the retained history"):
                list(kept.commits(seq))
            with pytest.raises(BadAsOf, match="older than the retained history"), kept.read() as reader:
                reader.snapshot(seq)
        gone = dropped_at(twin, horizon)  # a plane dropped by the horizon left nothing behind
        with kept.env.read() as txn:
            for name in PLANE_KEYED:
                assert not {keys.U32.unpack_from(k)[0] for k, _ in txn.cursor(db=kept.env.dbs[name])} & gone, name
        if horizon > 1:  # nothing before the horizon is left: the log starts there
            with kept.env.read() as txn:
                first = next(iter(txn.cursor(db=kept.env.dbs["log"])))[0]
            assert int.from_bytes(first, "big") == horizon
