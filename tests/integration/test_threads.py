"""One process, many threads: writes keep going behind busy readers, and closing waits for them.

py-lmdb 2.0 and later make the abort of a write transaction wait until no other LMDB call is in
flight anywhere in the environment. With two or more threads reading back to back that moment never
comes, and the writer hung: 30 commits took more than five minutes (drsg pins ``lmdb<2``, which has
no such wait; the store's own gate already keeps a map resize away from open transactions). The
writer aborts a transaction whenever a commit function fails (the group's transaction, then the
failed one's own nested one once the others run again nested) and whenever the map is full (it grows
the map and runs the group again),
so both happen here while three threads read without pause.

py-lmdb 1.x in turn does not wait for other threads when the environment is closed: closing while a
read runs unmaps the pages it is reading, and the process crashed (segfault) in most of 30 tries.
``close()`` now takes the store's gate alone first. That check runs in a child process, so a
regression fails the test instead of killing the test run.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import drsg
from drsg.kernel.errors import DatabaseUnavailable, StoreError

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


CLOSE_UNDER_READERS = r"""
import sys, threading, drsg
from drsg.kernel.errors import DatabaseUnavailable
folder, trials = sys.argv[1], int(sys.argv[2])
for trial in range(trials):
    db = drsg.open(f"{folder}/g{trial}.drsg")
    db.write(lambda tx: [tx.create_plane("p")] + [
        tx.create_node(tx.plane("p"), None, ["A"], {"x": "y" * 3000}) for _ in range(50)
    ], {})
    stop, outcomes, reading = threading.Event(), [], [threading.Event() for _ in range(3)]
    def read(reader):
        try:
            while not stop.is_set():
                with db.snapshot() as snap:
                    sum(1 for _ in snap.nodes(snap.plane("p").id))
                reader.set()  # it reads on: the close lands among reads under way
        except DatabaseUnavailable:
            outcomes.append("closed")
        except BaseException as exc:
            outcomes.append(repr(exc))
    readers = [threading.Thread(target=read, args=(reader,)) for reader in reading]
    for t in readers:
        t.start()
    for reader in reading:
        reader.wait()
    db.close()
    stop.set()
    for t in readers:
        t.join()
    assert outcomes == ["closed"] * 3, outcomes
print("ok")
"""


def test_closing_waits_for_running_reads_and_later_reads_fail_cleanly(tmp_path: Path) -> None:
    ran = subprocess.run(
        [sys.executable, "-c", CLOSE_UNDER_READERS, str(tmp_path), "30"], capture_output=True, text=True, timeout=120
    )
    assert ran.returncode == 0 and ran.stdout.strip() == "ok", (ran.returncode, ran.stderr[-2000:])


def test_closing_inside_a_read_of_the_same_thread_is_refused(tmp_path: Path) -> None:
    db = drsg.open(tmp_path / "g.drsg")
    db.write(lambda tx: tx.create_plane("p"), {})
    with db.snapshot() as snap:
        with pytest.raises(StoreError, match="a read is open in this thread"):
            db.close()
        assert snap.plane("p").name == "p"  # nothing was closed under it
    db.close()
    with pytest.raises(DatabaseUnavailable, match="has been closed"):
        db.head()
