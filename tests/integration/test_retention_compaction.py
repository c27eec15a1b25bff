"""History compaction on a real file: under a steady update workload the file stops growing once
compaction runs (and keeps growing without it), and compaction running while writers commit in
threads loses nothing any of them was told was committed."""

from __future__ import annotations

import threading
from pathlib import Path

from drsg.feed.subscription import Subscription
from drsg.store.database import Database
from drsg.store.retention import Retention, compact_history
from drsg.store.transaction import WriteTx

NODES = 200
PER_COMMIT = 20


def _sizes(path: Path, keep: int, rounds: int = 20) -> list[int]:
    """The file's size after each round of updating every one of NODES nodes (same-sized values)."""
    with Database(path) as db:
        made = db.write(
            lambda tx: [tx.create_node(tx.plane("startup"), f"k{i}", ["A"], {"v": 0}) for i in range(NODES)]
        )
        ids = [node.id for node in made.value]
        sizes = []
        for r in range(rounds):
            text = f"{r:03d}" * 70
            for at in range(0, NODES, PER_COMMIT):
                chunk = ids[at : at + PER_COMMIT]
                db.write(
                    lambda tx, c=chunk, t=text: [
                        tx.update_node(tx.plane("startup"), i, {"text": t}, [], None) for i in c
                    ]
                )
            if keep:
                db.compact_history(Retention(commits=keep))
            sizes.append(db.env.file_size())
        return sizes


def test_the_file_stops_growing_once_compaction_runs(tmp_path: Path) -> None:
    kept = _sizes(tmp_path / "kept.drsg", keep=10)
    unbounded = _sizes(tmp_path / "all.drsg", keep=0)
    assert kept[-1] <= kept[4] * 1.1, kept  # steady from round 5 on
    assert unbounded[-1] > 2 * unbounded[4], unbounded  # without retention every round adds its versions


def test_compaction_under_concurrent_writers_loses_nothing(tmp_path: Path) -> None:
    writers, writes = 4, 150
    acknowledged: list[tuple[str, int, int]] = []  # (key, value, seq) each writer was told is durable
    lock = threading.Lock()
    stop = threading.Event()
    with Database(tmp_path / "g.drsg") as db:

        def write(w: int) -> None:
            for n in range(writes):
                key = f"w{w}-{n % 7}"

                def put(tx: WriteTx, key: str = key, n: int = n) -> None:
                    plane = tx.plane("startup")
                    found = tx.view.node_id_by_key(plane.id, key)
                    if found is None:
                        tx.create_node(plane, key, ["W"], {"n": n})
                    else:
                        tx.update_node(plane, found, {"n": n}, [], None)

                done = db.write(put)
                assert done.seq is not None
                with lock:
                    acknowledged.append((key, n, done.seq))

        def compact() -> None:
            while not stop.is_set():
                compact_history(db.env, db.writer.exclusive, Retention(commits=25), batch=40)

        threads = [threading.Thread(target=write, args=(w,)) for w in range(writers)]
        compactor = threading.Thread(target=compact)
        compactor.start()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        stop.set()
        compactor.join()
        compact_history(db.env, db.writer.exclusive, Retention(commits=25))

        assert len(acknowledged) == writers * writes
        horizon, head = db.retained().oldest, db.head()
        assert horizon == head - 25
        last: dict[str, int] = {}
        for key, n, seq in sorted(acknowledged, key=lambda a: a[2]):
            last[key] = n
            if seq >= horizon:  # each acknowledged write is readable as of its commit
                with db.snapshot(seq) as snap:
                    node = snap.node_by_key(0, key)
                    assert node is not None and node.props["n"] == n, (key, seq)
        with db.snapshot() as snap:
            assert last == {k: node.props["n"] for k in last if (node := snap.node_by_key(0, k)) is not None}
        assert [c.seq for c in db.commits(horizon)] == list(range(horizon, head + 1))


def test_a_live_subscription_holds_the_horizon_until_it_has_read(tmp_path: Path) -> None:
    """Upstream's floor: the oldest live reader. A feed reads across transactions; compaction leaves
    the commits it has yet to read, and moves on once it has read them (or has ended)."""
    with Database(tmp_path / "g.drsg") as db:
        write = lambda n: db.write(lambda tx: tx.create_node(tx.plane("startup"), f"k{n}", ["N"], {}))  # noqa: E731
        for n in range(3):
            write(n)
        start = db.head()  # the subscription reads from here: it needs the state at start - 1
        feed = Subscription(db, "startup", from_seq=start, to_seq=start + 7)
        for n in range(3, 10):
            write(n)
        assert db.compact_history(Retention(commits=2)).horizon == start - 1
        assert [m["seq"] for m in feed] == list(range(start, start + 8))  # every commit delivered, none refused
        assert db.compact_history(Retention(commits=2)).horizon == db.head() - 2
