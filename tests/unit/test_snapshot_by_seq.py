"""``Database.snapshot``'s one by-seq path (no Reader): a bare seq and an AsOf by seq read the same
state as a time that resolves to that commit, and what parse_as_of refuses (0, a bool, a negative)
is still refused with one line."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from drsg.kernel.asof import AsOf, parse_as_of
from drsg.kernel.errors import BadAsOf
from drsg.store.database import Database
from drsg.store.transaction import WriteTx


def test_by_seq_and_by_time_read_the_same_state(tmp_path: Path) -> None:
    with Database(tmp_path / "g.drsg") as db:
        made = db.write(lambda tx: tx.create_node(tx.plane("startup"), "a", ["A"], {"v": 1}))

        def update(tx: WriteTx) -> None:
            tx.update_node(tx.plane("startup"), made.value.id, {"v": 2}, [], None)

        time.sleep(0.003)  # a later millisecond: the time names the first commit only
        db.write(update)
        ts = next(iter(db.commits(made.seq, made.seq))).ts
        seen = []
        for as_of in (made.seq, parse_as_of(made.seq), AsOf(seq=made.seq), f"TIME {ts}"):
            with db.snapshot(as_of) as snap:
                node = snap.node(0, made.value.id)
                seen.append((snap.at, None if node is None else node.props["v"]))
        assert seen == [(made.seq, 1)] * 4
        with db.snapshot(AsOf(seq=0)) as empty:  # the empty state before the first commit
            assert empty.at == 0 and empty.node(0, made.value.id) is None
        for refused in (0, True, -1):
            with pytest.raises(BadAsOf), db.snapshot(refused):
                pass


def test_a_refused_snapshot_leaves_no_read_open(tmp_path: Path) -> None:
    """A snapshot is its own read (store/reader.py's SnapshotRead): one refused as it is entered (a
    seq beyond the head, a time before the first commit) has let go of its transaction and the
    gate, and the same object reads again once there is a commit for it; the file then closes."""
    with Database(tmp_path / "g.drsg") as db:
        beyond = db.head() + 1
        for refused, why in ((beyond, "beyond the head"), ("TIME 1", "before the first commit")):
            with pytest.raises(BadAsOf, match=why), db.snapshot(refused):
                pass
            assert db.env.gate.readers == 0 and not db.env.gate.held_here()
        read = db.snapshot(beyond)
        db.write(lambda tx: tx.create_node(tx.plane("startup"), "a", ["A"], {}))
        with read as snap:
            assert snap.at == beyond and snap.node_by_key(0, "a") is not None
            assert db.env.gate.readers == 1
        with db.snapshot() as head, db.snapshot(beyond - 1) as before:  # two reads of one thread
            assert (head.at, before.at) == (beyond, beyond - 1) and before.node_by_key(0, "a") is None
        assert db.env.gate.readers == 0
    assert db.env.closed
