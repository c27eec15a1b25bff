"""Queries run side by side; the indexer waits for them, and they wait for it, never for each other.

- :meth:`IndexSet.reading` is shared: two queries hold it at once; a catch-up waits until both end,
  and a query arriving while a catch-up waits queues behind it (the indexer cannot be starved).
- hnswlib keeps one ``ef`` per index (``max(ef_search, 2k)`` per search): searches at the same ef
  share the index, one at another ef waits its turn (``_EfShare``), so threads asking for different
  k at once get exactly the answers they get one at a time.
- A query AS OF an earlier commit never touches the indexes, so it neither waits for a catch-up
  nor holds one up.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

import drsg
from drsg.kernel.values import Vector
from drsg.store.database import Database
from drsg.store.transaction import WriteTx
from drsg.workers.manager import IndexSet
from drsg.workers.search import Searcher
from drsg.workers.vector import _EfShare
from tests.support.glove import rows
from tests.support.waiting import wait_until

N = 3000
PLANE = "words"
TEXT = (Path(__file__).parents[1] / "data" / "ai_native_en.txt").read_text().split()


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Database:
    path = tmp_path_factory.mktemp("concurrent") / "g.drsg"
    db: Database = drsg.open(path)
    vectors = rows(0, N)
    names = [" ".join(TEXT[(7 * i) % len(TEXT) :][:12]) for i in range(N)]  # real sentences' words

    def load(tx: WriteTx) -> None:
        plane = tx.create_plane(PLANE)
        tx.declare_index(plane, "vector", "Word", "embedding", {"metric": "cosine"})
        tx.declare_index(plane, "keyword", "Word", "text", {"language": "english"})
        for i in range(N):
            tx.create_node(plane, f"w{i}", ["Word"], {"embedding": Vector.of(vectors[i]), "text": names[i]})

    db.write(load)
    return db


def started(fn: Callable[[], Any]) -> tuple[threading.Thread, threading.Event]:
    """``fn`` on a thread; the event is set when it returns."""
    done = threading.Event()

    def run() -> None:
        fn()
        done.set()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, done


def test_readers_share_and_the_indexer_waits_for_them(db: Database) -> None:
    indexes = IndexSet(db)
    indexes.catch_up()
    release = threading.Event()
    applied_at_entry: list[int] = []

    def query(entered: threading.Event) -> None:
        with indexes.reading():
            applied_at_entry.append(indexes.applied)
            entered.set()
            assert release.wait(60)

    a_in, b_in, c_in = threading.Event(), threading.Event(), threading.Event()
    a, _ = started(lambda: query(a_in))
    assert a_in.wait(20)
    b, _ = started(lambda: query(b_in))
    assert b_in.wait(20), "a query waited for another query"

    head = db.write(lambda tx: tx.create_node(tx.plane(PLANE), "late", ["Word"], {"text": "late arrival"})).seq
    _, caught_up = started(indexes.catch_up)
    wait_until(lambda: indexes._gate._exclusive, "the catch-up to wait for the queries")
    time.sleep(0.3)  # a window for what must not happen (load can only hide it, never fake it)
    assert not caught_up.is_set(), "a commit was applied under a running query"
    c, _ = started(lambda: query(c_in))  # arrives while the catch-up waits: queues behind it
    time.sleep(0.3)
    assert not c_in.is_set(), "a new query overtook the waiting catch-up"
    release.set()
    assert caught_up.wait(20) and c_in.wait(20)
    for t in (a, b, c):
        t.join(30)
    assert applied_at_entry[2] == head  # the late query saw the indexes after the commit landed


def test_at_most_max_queries_run_at_once(db: Database) -> None:
    searcher = Searcher(db, max_queries=2)
    searcher.indexes.catch_up()  # build the indexes now, not inside the first query
    release = threading.Event()
    inside: list[int] = []

    def query(entered: threading.Event) -> None:
        with searcher.view(PLANE, None), searcher.view(PLANE, None):  # re-entering takes no second slot
            inside.append(1)
            entered.set()
            assert release.wait(60)

    events = [threading.Event() for _ in range(3)]
    threads = [started(lambda e=e: query(e))[0] for e in events]  # type: ignore[misc]
    deadline = time.monotonic() + 60
    while sum(e.is_set() for e in events) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.3)  # time for a third to get in, were it let in
    assert sum(e.is_set() for e in events) == 2, "not exactly two queries running"
    release.set()
    for t in threads:
        t.join(30)
    assert all(e.is_set() for e in events) and len(inside) == 3


def test_catch_up_inside_a_query_on_the_same_thread_is_refused(db: Database) -> None:
    indexes = IndexSet(db)
    indexes.catch_up()
    db.write(lambda tx: tx.create_node(tx.plane(PLANE), None, ["Word"], {"text": "inside"}))
    with indexes.reading(), pytest.raises(RuntimeError, match="inside reading"):
        indexes.catch_up()
    assert indexes.catch_up() == db.head()  # and afterwards it applies normally


def test_threads_asking_different_k_get_their_serial_answers(db: Database) -> None:
    # ef_search 1 (and a recall target it meets, so calibration keeps it): ef = 2k, so a small k
    # searches with a tiny ef whose answers differ from a large ef's (checked below): a search run
    # at another thread's ef would show
    searcher = Searcher(db, IndexSet(db, ef_search=1, recall_target=0.01), max_queries=8)
    queries = [Vector.of(v) for v in rows(20_000, 60)]
    ks = [1, 3, 5, 150]
    serial = {
        (i, k): [h.node.id for h in searcher.vector(PLANE, "Word", "embedding", q, "cosine", k)]
        for i, q in enumerate(queries)
        for k in ks
    }
    wide = [[h.node.id for h in searcher.vector(PLANE, "Word", "embedding", q, "cosine", 150)][:5] for q in queries]
    assert sum(wide[i] != serial[i, 5] for i in range(len(queries))) >= 5, "ef makes no difference here"
    jobs = [(i, k) for i in range(len(queries)) for k in ks] * 8

    def one(job: tuple[int, int]) -> bool:
        i, k = job
        got = [h.node.id for h in searcher.vector(PLANE, "Word", "embedding", queries[i], "cosine", k)]
        return got == serial[job]

    with ThreadPoolExecutor(8) as pool:
        assert all(pool.map(one, jobs))


class FakeIndex:
    """Records set_ef calls and what ef each search ran at."""

    def __init__(self) -> None:
        self.ef = 0
        self.calls: list[int] = []

    def set_ef(self, ef: int) -> None:
        self.ef = ef
        self.calls.append(ef)


def test_ef_share_runs_one_ef_at_a_time_and_a_waiting_ef_is_not_starved() -> None:
    index = FakeIndex()
    share = _EfShare(index, 64)  # type: ignore[arg-type]
    seen: list[tuple[int, int]] = []  # (wanted ef, index ef while searching)
    lock = threading.Lock()
    a_in, a_release = threading.Event(), threading.Event()

    def search(ef: int, hold: threading.Event | None = None, entered: threading.Event | None = None) -> None:
        with share.at(ef):
            with lock:
                seen.append((ef, index.ef))
            if entered:
                entered.set()
            if hold:
                assert hold.wait(10)

    a, _ = started(lambda: search(64, a_release, a_in))
    assert a_in.wait(20)
    b, b_done = started(lambda: search(200))  # another ef: must wait for A
    wait_until(lambda: share.claim == 200, "B to claim the next ef switch")
    time.sleep(0.2)  # a window for what must not happen (load can only hide it, never fake it)
    assert not b_done.is_set()
    c, c_done = started(lambda: search(64))  # A's ef, but behind B's claim
    time.sleep(0.2)
    assert not c_done.is_set(), "a search at the running ef overtook one waiting for another ef"
    a_release.set()
    for t in (a, b, c):
        t.join(30)
    assert b_done.is_set() and c_done.is_set()
    assert all(want == ran for want, ran in seen), seen
    assert seen[0] == (64, 64) and seen[1] == (200, 200)  # B ran before C
    assert index.calls == [64, 200, 64]


def test_as_of_queries_do_not_touch_the_indexes(db: Database, tmp_path: Path) -> None:
    indexes = IndexSet(db)
    searcher = Searcher(db, indexes)
    old = db.head()
    db.write(lambda tx: tx.create_node(tx.plane(PLANE), None, ["Word"], {"text": "newer"}))
    query = Vector.of(rows(20_000, 1)[0])
    holding, release = threading.Event(), threading.Event()

    def indexer_busy() -> None:  # as if applying a long commit
        with indexes._gate.exclusive():
            holding.set()
            assert release.wait(60)

    busy, _ = started(indexer_busy)
    assert holding.wait(20)
    try:
        _, as_of_done = started(lambda: searcher.vector(PLANE, "Word", "embedding", query, "cosine", 5, as_of=old))
        _, kw_done = started(lambda: searcher.keyword(PLANE, "Word", "text", "the", 5, as_of=old))
        assert as_of_done.wait(30) and kw_done.wait(30), "an AS OF query waited for the indexer"
        _, current_done = started(lambda: searcher.vector(PLANE, "Word", "embedding", query, "cosine", 5))
        time.sleep(0.3)
        assert not current_done.is_set(), "a query at the head ran while the indexes were changing"
    finally:
        release.set()
        busy.join(30)
    assert current_done.wait(30)
    del tmp_path


def test_an_interrupted_wait_leaves_no_claim_behind() -> None:
    share = _EfShare(FakeIndex(), 64)  # type: ignore[arg-type]
    with share.at(64):  # a search runs at 64

        def interrupted(timeout: float | None = None) -> bool:
            raise KeyboardInterrupt

        share._cond.wait = interrupted  # type: ignore[method-assign]
        with pytest.raises(KeyboardInterrupt):
            share.at(200).__enter__()  # claims the next switch, then is interrupted
        del share._cond.wait
        assert share.claim is None
        _, joined = started(lambda: share.at(64).__enter__())  # so a search at 64 still gets in at once
        assert joined.wait(20)


def test_a_query_that_fails_while_its_view_opens_holds_nothing_after(db: Database) -> None:
    """Each failure point inside the view (an unknown plane, an AS OF past the head) leaves every
    gate it passed released: the next catch-up takes the index gate alone, and a map resize the
    environment's."""
    indexes = IndexSet(db)
    searcher = Searcher(db, indexes, max_queries=1)
    query = Vector.of(rows(0, 1)[0])
    with pytest.raises(drsg.NotFound, match="no plane named 'nowhere'"):
        searcher.vector("nowhere", "Word", "embedding", query)
    with pytest.raises(drsg.BadAsOf, match="beyond the head"):
        searcher.vector(PLANE, "Word", "embedding", query, as_of=10**9)
    gates = {"queries": searcher._running, "indexes": indexes._gate, "environment": db.env.gate}
    assert {name: gate.readers for name, gate in gates.items()} == dict.fromkeys(gates, 0)
    with indexes._gate.exclusive(timeout=1) as alone, db.env.gate.exclusive(timeout=1) as env_alone:
        assert alone and env_alone
    assert searcher.vector(PLANE, "Word", "embedding", query, k=1)  # the one query slot is free again
