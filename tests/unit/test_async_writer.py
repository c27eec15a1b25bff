"""Group commit for asyncio callers: many tasks, few transactions, every commit its own seq."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

import drsg
from drsg.kernel.errors import Conflict
from drsg.store.transaction import WriteTx


def test_many_tasks_are_batched_and_keep_their_own_seqs(tmp_path: Path) -> None:
    db = drsg.open(tmp_path / "g.drsg")
    plane = db.plane("startup")
    groups_before = db.writer.groups_committed

    async def one(i: int) -> int:
        result = await db.awrite(lambda tx: tx.create_node(plane, f"k{i}", ["Doc"], {"i": i}))
        assert result.seq is not None
        return result.seq

    async def main() -> list[int]:
        return await asyncio.gather(*(one(i) for i in range(500)))

    seqs = asyncio.run(main())
    assert sorted(seqs) == list(range(2, 502))  # seq 1 is the bootstrap commit
    assert db.writer.groups_committed - groups_before < 250  # batched, not one txn per commit
    with db.snapshot() as snap:
        for i in range(len(seqs)):
            node = snap.node_by_key(plane.id, f"k{i}")
            assert node is not None and node.props == {"i": i}
        for commit in db.commits(2):
            (mutation,) = commit.mutations
            assert seqs[mutation.props["i"]] == commit.seq  # type: ignore[attr-defined]


def test_a_failing_task_leaves_no_trace_and_others_commit(tmp_path: Path) -> None:
    db = drsg.open(tmp_path / "g.drsg")
    plane = db.plane("startup")
    db.write(lambda tx: tx.create_node(plane, "taken"))

    async def main() -> list[object]:
        def make(i: int):  # type: ignore[no-untyped-def]
            return lambda tx: tx.create_node(plane, "taken" if i % 10 == 0 else f"n{i}")

        return await asyncio.gather(*(db.awrite(make(i)) for i in range(100)), return_exceptions=True)

    results = asyncio.run(main())
    failures = [r for r in results if isinstance(r, BaseException)]
    assert len(failures) == 10 and all(isinstance(f, Conflict) for f in failures)
    seqs = sorted(r.seq for r in results if not isinstance(r, BaseException))  # type: ignore[union-attr]
    assert seqs == list(range(3, 93))  # gap-free: failed commits consumed no seq
    assert db.stats().nodes == 91


def test_threads_and_tasks_write_together(tmp_path: Path) -> None:
    db = drsg.open(tmp_path / "g.drsg")
    plane = db.plane("startup")
    seqs: list[int] = []
    lock = threading.Lock()

    def thread_writer(t: int) -> None:
        for i in range(50):
            r = db.write(lambda tx, i=i: tx.create_node(plane, f"t{t}-{i}"))
            with lock:
                seqs.append(r.seq or 0)

    async def task_writer(t: int) -> None:
        for i in range(50):
            r = await db.awrite(lambda tx, i=i: tx.create_node(plane, f"a{t}-{i}"))
            with lock:
                seqs.append(r.seq or 0)

    threads = [threading.Thread(target=thread_writer, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()

    async def main() -> None:
        await asyncio.gather(*(task_writer(t) for t in range(4)))

    asyncio.run(main())
    for th in threads:
        th.join()
    assert sorted(seqs) == list(range(2, 402))
    assert db.head() == 401


def test_nested_write_is_refused(tmp_path: Path) -> None:
    db = drsg.open(tmp_path / "g.drsg")

    def nested(tx: WriteTx) -> None:
        db.write(lambda inner: None)

    with pytest.raises(drsg.kernel.errors.UsageError, match="cannot start another write"):
        db.write(nested)
    assert db.head() == 1
