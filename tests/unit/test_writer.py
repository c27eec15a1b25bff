"""The writer (store/writer.py): group commit, failure isolation, empty commits, map growth, the full
map, and a corrupt log (store/log.py)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import lmdb
import pytest

import drsg
from drsg.kernel.errors import CorruptRecord, DatabaseUnavailable, NotFound, StoreError, StoreFull, UsageError
from drsg.store import keys
from drsg.store.database import Database
from drsg.store.transaction import WriteTx


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    database = drsg.open(tmp_path / "g.drsg")
    yield database
    database.close()


class Boom(Exception):
    pass


def _run_threads(n: int, target: Callable[[int], None]) -> None:
    errors: list[BaseException] = []
    barrier = threading.Barrier(n)

    def run(i: int) -> None:
        try:
            barrier.wait()
            target(i)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a writer thread hung"
    assert not errors, errors


# --------------------------------------------------------------------------- group commit


def test_group_commit_16_threads_x_200_commits(db: Database) -> None:
    plane = db.plane("startup")
    threads, per_thread = 16, 200
    seqs: list[list[int]] = [[] for _ in range(threads)]
    groups_before = db.writer.groups_committed

    def writer(t: int) -> None:
        for i in range(per_thread):
            result = db.write(lambda tx, i=i: tx.create_node(plane, f"t{t}-{i}", ["W"], {"t": t, "i": i}))
            assert result.seqs == (result.seq,)
            seqs[t].append(result.seq)  # type: ignore[arg-type]

    _run_threads(threads, writer)
    total = threads * per_thread
    flat = [s for per in seqs for s in per]
    assert len(set(flat)) == total  # every returned seq unique
    assert sorted(flat) == list(range(2, total + 2))  # gap-free after the bootstrap commit
    assert db.head() == total + 1
    for per in seqs:
        assert per == sorted(per)  # one thread's commits land in the order it made them
    groups = db.writer.groups_committed - groups_before
    assert 0 < groups < total, f"no batching happened ({groups} groups for {total} commits)"

    # Each commit holds exactly what its caller wrote, under the seq the caller was told.
    for commit in db.commits(2):
        (mutation,) = commit.mutations
        assert seqs[mutation.props["t"]][mutation.props["i"]] == commit.seq  # type: ignore[attr-defined]
    assert [c.seq for c in db.commits()] == list(range(1, total + 2))
    stats = db.stats()
    assert stats.nodes == total and stats.commit_seq == total + 1
    with db.snapshot() as snap:
        assert len(list(snap.nodes(plane.id, label="W"))) == total


def test_group_max_bounds_a_group(tmp_path: Path) -> None:
    with drsg.open(tmp_path / "g.drsg", group_max=1) as db:
        plane = db.plane("startup")
        before = db.writer.groups_committed

        def writer(t: int) -> None:
            for i in range(25):
                db.write(lambda tx, i=i: tx.create_node(plane, f"{t}-{i}"))

        _run_threads(4, writer)
        assert db.writer.groups_committed - before == 100  # one commit per transaction
        assert db.head() == 101


def test_a_failing_commit_leaves_no_trace_while_concurrent_ones_commit(db: Database) -> None:
    plane = db.plane("startup")
    threads, per_thread = 8, 60
    good_seqs: list[int] = []
    failed_in_group: list[int] = []  # groups_committed as seen by the failing functions
    good_in_group: set[int] = set()
    lock = threading.Lock()

    def writer(t: int) -> None:
        for i in range(per_thread):
            fails = (i + t) % 4 == 0  # threads run in near lockstep: stagger who fails

            def fn(tx: WriteTx, i: int = i, fails: bool = fails) -> int:
                group = db.writer.groups_committed  # the same for every function of one group
                node = tx.create_node(plane, f"{'bad' if fails else 'ok'}-{t}-{i}", ["X"], {"v": i})
                tx.create_edge(plane, node.id, node.id, "SELF")
                tx.update_node(plane, node.id, {"w": 1})
                if fails:
                    with lock:
                        failed_in_group.append(group)
                    raise Boom(f"{t}-{i}")
                return group

            if fails:
                with pytest.raises(Boom, match=f"^{t}-{i}$"):
                    db.write(fn)
            else:
                result = db.write(fn)
                with lock:
                    good_seqs.append(result.seq)  # type: ignore[arg-type]
                    good_in_group.add(result.value)

    _run_threads(threads, writer)
    n_good = threads * per_thread * 3 // 4
    assert sorted(good_seqs) == list(range(2, n_good + 2)), "a failed commit consumed a seq"
    assert db.head() == n_good + 1
    assert set(failed_in_group) & good_in_group, "no failing function shared a group with a good one"
    for commit in db.commits():
        for m in commit.mutations:
            assert not str(getattr(m, "key", "") or "").startswith("bad"), commit
    with db.snapshot() as snap:
        keys_now = [n.key for n in snap.nodes(plane.id)]
        assert len(keys_now) == n_good and not any(k.startswith("bad") for k in keys_now)  # type: ignore[union-attr]
        assert len(list(snap.edges(plane.id))) == n_good
        assert len(list(snap.nodes(plane.id, label="X"))) == n_good
    stats = db.stats()
    assert (stats.nodes, stats.edges, stats.labels, stats.edge_types) == (n_good, n_good, 1, 1)
    # The projection the writer left equals the one the log alone produces.
    before = _dump(db)
    db.rebuild_projection()
    assert _dump(db) == before


def _dump(db: Database) -> Any:
    with db.snapshot() as snap:
        return [
            (p.id, p.name, [(n.id, n.key, n.labels, n.props) for n in snap.nodes(p.id)], list(snap.edges(p.id)))
            for p in snap.planes()
        ], db.stats().nodes


def test_the_caller_gets_its_own_exception_object(db: Database) -> None:
    error = Boom("mine")

    def fn(tx: WriteTx) -> None:
        tx.create_node(tx.plane("startup"), "x")
        raise error

    with pytest.raises(Boom) as info:
        db.write(fn)
    assert info.value is error
    assert db.head() == 1
    with db.snapshot() as snap:
        assert snap.node_by_key(0, "x") is None


def test_a_store_error_inside_a_commit_is_isolated_too(db: Database) -> None:
    plane = db.plane("startup")
    db.write(lambda tx: tx.create_node(plane, "taken"))
    with pytest.raises(drsg.kernel.errors.Conflict):
        db.write(lambda tx: (tx.create_node(plane, "fresh"), tx.create_node(plane, "taken")))
    with db.snapshot() as snap:
        assert snap.node_by_key(plane.id, "fresh") is None
    assert db.write(lambda tx: tx.create_node(plane, "fresh")).seq == 3


@pytest.mark.parametrize(
    "write",
    [
        lambda tx, p: tx.create_node(p, "k", [], {"x": float("nan")}),
        lambda tx, p: tx.create_node(p, "k", [], {"x": 2**63}),
        lambda tx, p: tx.create_node(p, "k\x00", []),
        lambda tx, p: tx.create_node(p, "k", ["L\x00"]),
        lambda tx, p: tx.create_node(p, "\ud800", []),
        lambda tx, p: tx.create_node(p, "k", [], {"x": "\udfff"}),
        lambda tx, p: tx.create_edge(p, "a", "a", "T\x00"),
        lambda tx, p: tx.create_plane("p\x00"),
        lambda tx, p: tx.update_node(p, "a", {"big": -(2**63) - 1}),
    ],
    ids=[
        "nan",
        "huge-int",
        "nul-key",
        "nul-label",
        "surrogate-key",
        "surrogate-value",
        "nul-type",
        "nul-plane",
        "huge-update",
    ],
)
def test_values_outside_the_model_are_bad_values_and_leave_no_trace(
    db: Database, write: Callable[[WriteTx, Any], Any]
) -> None:
    plane = db.plane("startup")
    db.write(lambda tx: tx.create_node(plane, "a", [], {"v": 1}))
    head = db.head()

    def fn(tx: WriteTx) -> None:
        tx.create_node(plane, "first-in-commit")
        write(tx, plane)

    with pytest.raises(drsg.kernel.errors.BadValue):
        db.write(fn)
    assert db.head() == head
    with db.snapshot() as snap:
        assert [n.key for n in snap.nodes(plane.id)] == ["a"]
        assert snap.node_by_key(plane.id, "a").props == {"v": 1}  # type: ignore[union-attr]


def test_a_commit_without_mutations_consumes_no_seq(db: Database) -> None:
    plane = db.plane("startup")
    db.write(lambda tx: tx.create_node(plane, "a"))
    head = db.head()
    result = db.write(lambda tx: tx.view.node_by_key(plane.id, "a").key)  # type: ignore[union-attr]
    assert result.value == "a"
    assert result.seqs == () and result.seq is None and result.ts is None
    assert db.write(lambda tx: tx.rename_plane("startup", "startup")).seqs == ()  # a no-op rename
    assert db.write(lambda tx: None).seqs == ()
    assert db.head() == head
    assert [c.seq for c in db.commits()] == list(range(1, head + 1))
    assert db.write(lambda tx: tx.create_node(plane, "b")).seq == head + 1


def test_commit_point_makes_several_commits_in_one_call(db: Database) -> None:
    plane = db.plane("startup")

    def bulk(tx: WriteTx) -> list[int]:
        sealed = []
        for i in range(3):
            tx.create_node(plane, f"n{i}")
            tx.create_node(plane, f"m{i}")
            sealed.append(tx.commit_point())
        return sealed

    result = db.write(bulk)
    assert result.value == [2, 3, 4] and result.seqs == (2, 3, 4)
    assert [[m.key for m in c.mutations] for c in db.commits(2)] == [["n0", "m0"], ["n1", "m1"], ["n2", "m2"]]
    with db.snapshot(as_of=3) as snap:
        assert [n.key for n in snap.nodes(plane.id)] == ["n0", "m0", "n1", "m1"]

    def bulk_then_fail(tx: WriteTx) -> None:
        tx.create_node(plane, "x0")
        tx.commit_point()
        tx.create_node(plane, "x1")
        raise Boom

    with pytest.raises(Boom):
        db.write(bulk_then_fail)
    assert db.head() == 4
    with db.snapshot() as snap:
        assert snap.node_by_key(plane.id, "x0") is None


def test_a_commit_function_cannot_write_again(db: Database) -> None:
    def nested(tx: WriteTx) -> None:
        tx.create_node(tx.plane("startup"), "outer")
        db.write(lambda inner: inner.create_node(inner.plane("startup"), "inner"))

    with pytest.raises(UsageError, match="cannot start another write"):
        db.write(nested)
    assert db.head() == 1
    assert db.write(lambda tx: tx.create_node(tx.plane("startup"), "after")).seq == 2


def test_read_only_databases_refuse_writes(tmp_path: Path) -> None:
    path = tmp_path / "g.drsg"
    drsg.open(path).close()
    with drsg.open(path, readonly=True) as ro:
        with pytest.raises(DatabaseUnavailable):
            ro.write(lambda tx: tx.create_plane("x"))
        assert ro.head() == 1


# --------------------------------------------------------------------------- planes


def test_a_write_through_a_stale_plane_handle_does_not_land_in_a_dropped_plane(db: Database) -> None:
    # `p = db.plane(name)` then `db.write(lambda tx: tx.create_node(p, ...))` is the documented
    # pattern. If the plane is dropped in between, the write must fail, not "succeed" into a plane
    # no reader can reach (its node would be invisible forever).
    db.write(lambda tx: tx.create_plane("tmp"))
    stale = db.plane("tmp")
    db.write(lambda tx: tx.drop_plane("tmp"))
    head = db.head()
    with pytest.raises(NotFound):
        db.write(lambda tx: tx.create_node(stale, "lost", ["L"]))
    assert db.head() == head


def test_the_startup_plane_cannot_be_dropped_even_under_another_name(db: Database) -> None:
    with pytest.raises(UsageError):
        db.write(lambda tx: tx.drop_plane("startup"))
    try:
        db.write(lambda tx: tx.rename_plane("startup", "renamed"))
    except UsageError:
        pass  # refusing to rename it is one way to keep it
    else:
        with pytest.raises(UsageError):
            db.write(lambda tx: tx.drop_plane("renamed"))
    with db.snapshot() as snap:
        assert [p.id for p in snap.planes()] == [0]


# --------------------------------------------------------------------------- the map


def test_the_map_grows_on_demand_while_readers_read(tmp_path: Path) -> None:
    with drsg.open(tmp_path / "g.drsg", map_size=1 << 20) as db:
        plane = db.plane("startup")
        start = db.env.map_size()
        assert start == 1 << 20
        blob = bytes(range(256)) * 1024  # 256 KiB, stored twice (log + projection)
        stop = threading.Event()
        reads: list[int] = []
        reader_errors: list[BaseException] = []

        def reader() -> None:
            try:
                while not stop.is_set():
                    with db.snapshot() as snap:
                        reads.append(len(list(snap.nodes(plane.id))))
            except BaseException as exc:
                reader_errors.append(exc)

        t = threading.Thread(target=reader)
        t.start()
        try:
            for i in range(40):  # ~20 MB in all
                db.write(lambda tx, i=i: tx.create_node(plane, f"blob{i}", [], {"data": blob, "i": i}))
        finally:
            stop.set()
            t.join(timeout=60)
        assert not reader_errors, reader_errors
        assert reads == sorted(reads)
        assert db.env.map_size() >= 16 << 20 > start
        assert db.head() == 41
        with db.snapshot() as snap:
            nodes = list(snap.nodes(plane.id))
        assert [n.props["i"] for n in nodes] == list(range(40))
        assert all(n.props["data"] == blob for n in nodes)


def test_a_full_map_raises_store_full_and_leaves_no_trace(tmp_path: Path) -> None:
    path = tmp_path / "g.drsg"
    with drsg.open(path, map_size=1 << 20, max_map_size=2 << 20) as db:
        plane = db.plane("startup")
        db.write(lambda tx: tx.create_node(plane, "small", [], {"v": 1}))
        head = db.head()
        with pytest.raises(StoreFull) as info:
            db.write(lambda tx: tx.create_node(plane, "huge", [], {"data": b"\x01" * (3 << 20)}))
        assert isinstance(info.value, StoreError) and "max_map_size" in str(info.value)
        assert db.head() == head
        assert [c.seq for c in db.commits()] == list(range(1, head + 1))
        with db.snapshot() as snap:
            assert snap.node_by_key(plane.id, "huge") is None
            assert [n.key for n in snap.nodes(plane.id)] == ["small"]
        # Still usable: a write that fits commits with the next seq.
        assert db.write(lambda tx: tx.update_node(plane, "small", {"v": 2})).seq == head + 1
    with drsg.open(path, map_size=1 << 20, max_map_size=2 << 20) as db, db.snapshot() as snap:
        assert snap.node_by_key(0, "small").props == {"v": 2}  # type: ignore[union-attr]
        assert snap.node_by_key(0, "huge") is None


def test_an_oversized_commit_does_not_fail_the_commits_grouped_with_it(tmp_path: Path) -> None:
    # Failure isolation holds for a caller's exception; it must hold for StoreFull too: a write
    # that alone exceeds max_map_size must not take down small writes that happened to be queued
    # behind it in the same group.
    with drsg.open(tmp_path / "g.drsg", map_size=1 << 20, max_map_size=2 << 20) as db:
        plane = db.plane("startup")
        inside, release = threading.Event(), threading.Event()

        def blocker(tx: WriteTx) -> None:
            inside.set()
            assert release.wait(30)
            tx.create_node(plane, "blocker")

        results: dict[str, Any] = {}

        def call(name: str, fn: Callable[[WriteTx], Any]) -> None:
            try:
                results[name] = db.write(fn).seq
            except Exception as exc:
                results[name] = exc

        first = threading.Thread(target=call, args=("blocker", blocker))
        first.start()
        assert inside.wait(30)  # the writer is busy: what follows queues up as one group
        others = [
            threading.Thread(target=call, args=(f"small{i}", lambda tx, i=i: tx.create_node(plane, f"s{i}")))
            for i in range(4)
        ]
        others.append(
            threading.Thread(
                target=call, args=("huge", lambda tx: tx.create_node(plane, "huge", [], {"b": b"x" * (3 << 20)}))
            )
        )
        for t in others:
            t.start()
        threading.Event().wait(0.5)  # let them all reach the queue
        release.set()
        for t in [first, *others]:
            t.join(timeout=60)
        assert isinstance(results["huge"], StoreFull)
        failed_small = {k: v for k, v in results.items() if k.startswith("small") and not isinstance(v, int)}
        assert not failed_small, (
            f"{sorted(failed_small)} failed with the oversized commit: {failed_small[min(failed_small)]!r}"
        )
        with db.snapshot() as snap:
            assert sorted(n.key for n in snap.nodes(plane.id)) == ["blocker", "s0", "s1", "s2", "s3"]


# --------------------------------------------------------------------------- a corrupt log


def _tamper(path: Path, seq: int, change: Callable[[bytes], bytes | None]) -> None:
    """Rewrite (or, when ``change`` returns None, delete) log record ``seq`` with raw lmdb."""
    env = lmdb.open(str(path), subdir=False, max_dbs=20)
    try:
        log_db = env.open_db(b"log")
        with env.begin(write=True) as txn:
            record = txn.get(keys.u64(seq), db=log_db)
            assert record is not None
            new = change(bytes(record))
            if new is None:
                txn.delete(keys.u64(seq), db=log_db)
            else:
                assert new != record
                txn.put(keys.u64(seq), new, db=log_db)
    finally:
        env.close()


def _flip(offset: int) -> Callable[[bytes], bytes]:
    def change(record: bytes) -> bytes:
        b = bytearray(record)
        b[offset] ^= 0x40
        return bytes(b)

    return change


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (_flip(-1), "checksum"),  # the body
        (_flip(20), "checksum"),
        (_flip(10), "checksum"),  # the timestamp, covered by the checksum
        (_flip(2), "checksum"),  # the checksum itself
        (_flip(0), "format"),  # the format byte
        (lambda r: r[:7], "truncated"),
        (lambda r: None, "gap"),
    ],
    ids=["body-end", "body", "timestamp", "crc", "format", "truncated", "gap"],
)
def test_a_corrupt_log_record_raises_corrupt_record_with_its_seq(
    tmp_path: Path, change: Callable[[bytes], bytes | None], problem: str
) -> None:
    path = tmp_path / "g.drsg"
    with drsg.open(path) as db:
        plane = db.plane("startup")
        for i in range(5):
            db.write(lambda tx, i=i: tx.create_node(plane, f"n{i}", ["L"], {"text": "x" * 40, "i": i}))
        expected = _dump(db)
    _tamper(path, 4, change)

    with drsg.open(path) as db:
        with pytest.raises(CorruptRecord) as info:
            list(db.commits())
        assert info.value.seq == 4
        assert problem in str(info.value) and "4" in str(info.value)
        assert [c.seq for c in db.commits(1, 3)] == [1, 2, 3]  # what lies before is intact
        if problem != "gap":
            assert [c.seq for c in db.commits(5)] == [5, 6]
        # Rebuilding from a corrupt log must fail and leave the projection as it was.
        with pytest.raises(CorruptRecord):
            db.rebuild_projection()
        assert _dump(db) == expected
        # Writing still works (the log is appended past the damage).
        assert db.write(lambda tx: tx.create_node(tx.plane("startup"), "later")).seq == 7


def test_commits_before_a_corrupt_record_are_delivered_before_the_error(tmp_path: Path) -> None:
    # CorruptRecord says "commits before N are intact": a consumer reading the log from 1 (a feed
    # subscriber, an index worker) must receive them, then the error, so it can get as far as the
    # damage and checkpoint there.
    path = tmp_path / "g.drsg"
    with drsg.open(path) as db:
        for i in range(5):
            db.write(lambda tx, i=i: tx.create_node(tx.plane("startup"), f"n{i}"))
    _tamper(path, 4, _flip(-1))
    with drsg.open(path) as db:
        delivered: list[int] = []
        with pytest.raises(CorruptRecord) as info:
            for commit in db.commits():
                delivered.append(commit.seq)
        assert info.value.seq == 4
        assert delivered == [1, 2, 3]
