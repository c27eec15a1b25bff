"""Group commit's hand-offs (store/writer.py): many callers each get their own seq exactly once, a
group runs in one transaction until a function fails (then the others run again, each nested), a
lone failing write commits nothing, and waking a group survives a waiter that stopped waiting."""

from __future__ import annotations

import signal
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

import drsg
from drsg.store import writer as writer_module
from drsg.store.database import Database
from drsg.store.transaction import WriteTx
from tests.support.waiting import wait_until


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    database = drsg.open(tmp_path / "g.drsg")
    yield database
    database.close()


class Boom(Exception):
    pass


def _start_all(threads: list[threading.Thread]) -> None:
    for t in threads:
        t.start()


def _join_all(threads: list[threading.Thread], timeout: float = 120) -> None:
    for t in threads:
        t.join(timeout)
    assert not any(t.is_alive() for t in threads), "a writer thread hung"


def test_64_threads_each_get_their_own_seqs_exactly_once_in_commit_order(db: Database) -> None:
    plane = db.plane("startup")
    threads, per_thread = 64, 40
    results: list[list[tuple[int, int, str]]] = [[] for _ in range(threads)]  # (seq, ts, key) per thread
    barrier = threading.Barrier(threads)
    groups_before = db.writer.groups_committed

    def writer(t: int) -> None:
        barrier.wait()
        for i in range(per_thread):
            key = f"{t}-{i}"
            done = db.write(lambda tx, key=key: tx.create_node(plane, key, ["T"], {"t": t}))
            assert done.seq is not None and done.ts is not None
            results[t].append((done.seq, done.ts, key))

    pool = [threading.Thread(target=writer, args=(t,)) for t in range(threads)]
    _start_all(pool)
    _join_all(pool)
    acked = [r for per in results for r in per]
    assert len(acked) == threads * per_thread
    assert sorted(seq for seq, _, _ in acked) == list(range(2, threads * per_thread + 2))  # each once, no gaps
    for per in results:  # one caller's commits come back in the order it made them
        assert [seq for seq, _, _ in per] == sorted(seq for seq, _, _ in per)
    # The log holds each acknowledged commit under its seq, with its own mutation and timestamp,
    # and timestamps never decrease with seq.
    by_seq = {seq: (ts, key) for seq, ts, key in acked}
    last_ts = 0
    for commit in db.commits(2):
        ts, key = by_seq.pop(commit.seq)
        (mutation,) = commit.mutations
        assert (commit.ts, mutation.key) == (ts, key)  # type: ignore[attr-defined]
        assert commit.ts >= last_ts
        last_ts = commit.ts
    assert not by_seq
    assert db.writer.groups_committed - groups_before < threads * per_thread  # batched


def test_a_group_that_meets_a_failure_runs_again_without_it(db: Database) -> None:
    plane = db.plane("startup")
    inside, release = threading.Event(), threading.Event()
    runs: Counter[str] = Counter()
    results: dict[str, object] = {}

    def blocker(tx: WriteTx) -> None:
        inside.set()
        assert release.wait(30)

    def good(name: str):  # type: ignore[no-untyped-def]
        def fn(tx: WriteTx) -> int:
            runs[name] += 1
            return tx.create_node(plane, name, ["Good"]).id

        return fn

    def bad(tx: WriteTx) -> None:
        runs["bad"] += 1
        tx.create_node(plane, "bad", ["Bad"])
        raise Boom("bad")

    def call(name: str, fn: object) -> None:
        try:
            results[name] = db.write(fn)  # type: ignore[arg-type]
        except Exception as exc:
            results[name] = exc

    first = threading.Thread(target=call, args=("blocker", blocker))
    first.start()
    assert inside.wait(30)  # the writer is busy: what follows queues up as one group, in this order
    queued = [("g1", good("g1")), ("bad", bad), ("g2", good("g2"))]
    pool = []
    for name, fn in queued:
        pool.append(threading.Thread(target=call, args=(name, fn)))
        pool[-1].start()
        deadline = time.monotonic() + 30
        while len(db.writer._queue) < len(pool) and time.monotonic() < deadline:
            time.sleep(0.001)
    assert len(db.writer._queue) == 3
    groups = db.writer.groups_committed
    release.set()
    _join_all([first, *pool])
    assert isinstance(results["bad"], Boom)
    assert runs["bad"] == 1  # a failed function is not run again
    assert runs["g1"] == 2 and runs["g2"] == 1  # g1 ran before the failure and again after; g2 once
    assert db.writer.groups_committed == groups + 2  # the blocker's group, then the three as one
    seqs = sorted(results[name].seq for name in ("g1", "g2"))  # type: ignore[attr-defined]
    assert seqs == [db.head() - 1, db.head()]  # the failure took no seq
    with db.snapshot() as snap:
        assert sorted(n.key for n in snap.nodes(plane.id)) == ["g1", "g2"]  # type: ignore[type-var]
        assert not list(snap.nodes(plane.id, label="Bad"))
    for commit in db.commits():
        assert all(getattr(m, "key", None) != "bad" for m in commit.mutations)


def test_a_lone_failing_write_commits_nothing(db: Database) -> None:
    plane = db.plane("startup")
    head, groups = db.head(), db.writer.groups_committed

    def fn(tx: WriteTx) -> None:
        tx.create_node(plane, "x")
        raise Boom("alone")

    with pytest.raises(Boom, match="alone"):
        db.write(fn)
    assert (db.head(), db.writer.groups_committed) == (head, groups)  # no transaction was committed
    assert db.write(lambda tx: tx.create_node(plane, "x")).seq == head + 1


@pytest.mark.parametrize("while_waiting", [True, False], ids=["while-waiting", "as-it-wakes"])
def test_a_waiter_that_stops_waiting_does_not_hold_up_the_rest_of_its_group(db: Database, while_waiting: bool) -> None:
    # Waiters are woken one after another, each by the one before it. The main thread's wait is
    # interrupted (a signal's KeyboardInterrupt) while its request is queued, or just as it is woken:
    # the waiter behind it in the same group must still be woken, and the interrupted request still
    # commits (it was queued; as before, stopping the wait does not withdraw it).
    plane = db.plane("startup")
    inside, release = threading.Event(), threading.Event()
    done: dict[str, int | None] = {}

    def blocker(tx: WriteTx) -> None:
        inside.set()
        assert release.wait(30)

    lead = threading.Thread(target=lambda: db.write(blocker))
    lead.start()
    assert inside.wait(30)

    def behind() -> None:
        deadline = time.monotonic() + 30
        while not db.writer._queue and time.monotonic() < deadline:  # queue after the main thread
            time.sleep(0.001)
        done["behind"] = db.write(lambda tx: tx.create_node(plane, "behind")).seq

    other = threading.Thread(target=behind)
    other.start()

    def interrupt() -> None:
        deadline = time.monotonic() + 30
        while len(db.writer._queue) < 2 and time.monotonic() < deadline:
            time.sleep(0.001)
        if while_waiting:  # at the main thread itself: its wait is interrupted before its group ran
            mine = db.writer._queue[0]  # the main thread's request: "behind" queues only after it
            signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)  # type: ignore[arg-type]
            wait_until(lambda: mine.abandoned, "the main thread to stop waiting", timeout=30, poll=0.001)
            release.set()
        else:  # at this thread: the main thread sees it only once woken, before it wakes the next
            release.set()
            signal.raise_signal(signal.SIGINT)

    timer = threading.Thread(target=interrupt)
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        db.write(lambda tx: tx.create_node(plane, "interrupted"))
    _join_all([timer, lead, other], timeout=30)
    assert done["behind"] is not None
    with db.snapshot() as snap:
        assert sorted(n.key for n in snap.nodes(plane.id)) == ["behind", "interrupted"]  # type: ignore[type-var]


def test_callers_that_do_not_come_straight_back_seldom_wait_for_a_gathering(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    # After a group, the drainer waits a moment for that group's callers to queue again. Callers
    # that think for longer than that wait (here 30 ms against 10 ms) make it run out each time:
    # after one that gathered none of them, the next GATHER_SKIP groups do not wait.
    monkeypatch.setattr(writer_module, "GATHER_WAIT", 0.01)
    plane = db.plane("startup")
    timed_waits = 0
    real = db.writer._filled

    class Counting:
        def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
            nonlocal timed_waits
            timed_waits += timeout > 0
            return real.acquire(blocking, timeout)

        def release(self) -> None:
            real.release()

    monkeypatch.setattr(db.writer, "_filled", Counting())
    threads, rounds = 4, 20
    barrier = threading.Barrier(threads)
    groups = db.writer.groups_committed

    def caller(t: int) -> None:
        barrier.wait()
        for i in range(rounds):
            db.write(lambda tx, i=i: tx.create_node(plane, f"{t}-{i}"))
            time.sleep(0.03)

    pool = [threading.Thread(target=caller, args=(t,)) for t in range(threads)]
    _start_all(pool)
    _join_all(pool)
    assert db.head() == 1 + threads * rounds
    made = db.writer.groups_committed - groups
    assert timed_waits <= 2 + made // (writer_module.GATHER_SKIP + 1), (timed_waits, made)
