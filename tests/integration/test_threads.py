"""Writes keep going while several threads of the same process keep reading.

py-lmdb 2.0 and later make the abort of a write transaction wait until no other LMDB call is in
flight anywhere in the environment. With two or more threads reading back to back that moment never
comes, and the writer hung: 30 commits took more than five minutes (drsg pins ``lmdb<2``, which has
no such wait; the store's own gate already keeps a map resize away from open transactions). The
writer aborts a transaction whenever a commit function fails (the caller's error undoes only its
own nested transaction) and whenever the map is full (it grows the map and runs the group again),
so both happen here while three threads read without pause.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

import drsg

READERS = 3
COMMITS = 60
WITHIN = 30.0  # seconds for all the commits; they take well under one on an idle machine


class CallersMistake(Exception):
    pass


def test_failing_commits_and_map_growth_do_not_stall_behind_busy_readers(tmp_path: Path) -> None:
    db = drsg.open(tmp_path / "g.drsg", map_size=1 << 20)  # small: the commits below grow it several times
    db.write(lambda tx: tx.create_plane("p"), {})
    stop = threading.Event()
    reads = [0] * READERS
    problems: list[BaseException] = []

    def read(i: int) -> None:
        try:
            while not stop.is_set():
                with db.snapshot() as snap:
                    snap.plane("p")
                reads[i] += 1
        except BaseException as exc:
            problems.append(exc)

    def fails(tx: Any) -> None:
        tx.create_node(tx.plane("p"), None, ["Doomed"], {"x": "y" * 2000})
        raise CallersMistake("undo only me")

    def grows(tx: Any) -> None:
        for _ in range(10):
            tx.create_node(tx.plane("p"), None, ["Kept"], {"x": "y" * 2000})

    outcomes: list[str] = []

    def write() -> None:
        try:
            for i in range(COMMITS):
                if i % 3 == 0:
                    with pytest.raises(CallersMistake):
                        db.write(fails, {})
                    outcomes.append("failed")
                else:
                    db.write(grows, {})
                    outcomes.append("written")
        except BaseException as exc:
            problems.append(exc)

    readers = [threading.Thread(target=read, args=(i,), daemon=True) for i in range(READERS)]
    writer = threading.Thread(target=write, daemon=True)
    for t in readers:
        t.start()
    began = time.monotonic()
    writer.start()
    writer.join(WITHIN)
    stalled = writer.is_alive()
    took = time.monotonic() - began
    stop.set()  # with the readers gone a stalled writer finishes too, so the test can clean up
    for t in [*readers, writer]:
        t.join(30)
    try:
        assert not stalled, f"the writer stalled behind the readers: {len(outcomes)}/{COMMITS} commits in {took:.0f} s"
        assert not problems, problems
        assert outcomes.count("failed") == COMMITS // 3 and len(outcomes) == COMMITS
        assert min(reads) > 0
        with db.snapshot() as snap:
            plane = snap.plane("p").id
            assert sum(1 for _ in snap.nodes(plane, "Kept")) == 10 * (COMMITS - COMMITS // 3)
            assert not list(snap.nodes(plane, "Doomed"))
        assert db.env.map_size() > 1 << 20  # it grew: the full-map abort happened under the readers
    finally:
        db.close()
