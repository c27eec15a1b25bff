"""Subscriptions (drsg.feed) against a real database: exactly-once delivery in seq order while
threads, another process and the CLI write; resume from any point; slow subscribers with bounded
memory; resolved watermarks; record contents; plane rename and drop; and `drsg feed`.

Expected deliveries come from an oracle that replays the log with a few lines of its own (not
feed/changes.py), so the two must agree commit by commit.
"""

from __future__ import annotations

import asyncio
import gc
import itertools
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import threading
import time
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import drsg
from drsg.feed import Subscription
from drsg.kernel.errors import BadValue, NotFound
from drsg.kernel.values import Vector
from drsg.store.database import Database
from drsg.store.transaction import WriteTx
from drsg.surfaces.cli.main import cli
from tests.support.feed_oracle import oracle

PLANE = "feed"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    database = drsg.open(tmp_path / "feed.drsg")
    database.write(lambda tx: (tx.create_plane(PLANE), tx.create_plane("other")))
    yield database
    database.close()


def thread_writer(
    db: Database, name: str, count: int, rng: random.Random, go: threading.Event, wrote: threading.Event
) -> None:
    """Creates, updates and deletes nodes (and edges) of its own in PLANE; sometimes writes elsewhere.
    Starts on ``go``; sets ``wrote`` after its first commit."""
    mine: list[str] = []
    assert go.wait(30)
    for i in range(count):
        time.sleep(rng.uniform(0, 0.002))
        roll = rng.random()
        if roll < 0.1:
            db.write(lambda tx: tx.create_node(tx.plane("other"), None, ["Person"], {}), {"via": name})
        elif roll < 0.25 and mine:
            key = rng.choice(mine)
            db.write(lambda tx, key=key, i=i: tx.update_node(tx.plane(PLANE), "@" + key, {"n": i}), {"via": name})
        elif roll < 0.33 and len(mine) > 2:
            key = mine.pop(rng.randrange(len(mine)))
            db.write(lambda tx, key=key: tx.delete_node(tx.plane(PLANE), "@" + key), {"via": name})
        else:
            key = f"{name}-{i}"
            labels = ["Person"] if i % 2 else ["Robot"]

            def create(tx: WriteTx, key: str = key, labels: list[str] = labels, i: int = i) -> None:
                p = tx.plane(PLANE)
                node = tx.create_node(p, key, labels, {"i": i})
                if mine and rng.random() < 0.5:
                    tx.create_edge(p, node.id, "@" + mine[-1], "NEXT")

            db.write(create, {"via": name})
            mine.append(key)
        wrote.set()


PROCESS_WRITER = r"""
import json, os, sys, time
import drsg
db = drsg.open(sys.argv[1])
count = int(sys.argv[2])
for i in range(count):
    if i == count // 2:
        sys.stdin.readline()  # halfway: wait until the test has seen a thread commit, so the writers overlap
    r = db.write(lambda tx: tx.create_node(tx.plane("feed"), f"proc-{i}", ["Person"], {"i": i}), {"via": "proc"})
    os.write(1, (json.dumps({"seq": r.seq, "at": time.time()}) + "\n").encode())
"""


class Collector:
    """One subscriber that disconnects at random points and resumes from the last seq it saw."""

    def __init__(self, db: Database, start: int, rng: random.Random, **options: Any) -> None:
        self.db, self.next_seq, self.rng, self.options = db, start, rng, options
        self.seqs: list[int] = []
        self.received_at: dict[int, float] = {}
        self.reconnects = 0
        self.end: int | None = None  # set once the writers are done: stop when past it

    def _take(self, message: dict[str, Any]) -> bool:
        """Record one message; True when the collector has reached the end."""
        if "resolved" in message:
            assert message["resolved"] >= self.next_seq - 1, "a watermark went backwards"
            self.next_seq = message["resolved"] + 1
            return self.end is not None and message["resolved"] >= self.end
        assert message["seq"] >= self.next_seq, f"seq {message['seq']} again or out of order"
        assert message["changes"] and message["truncated"] is False
        self.seqs.append(message["seq"])
        self.received_at[message["seq"]] = time.time()
        self.next_seq = message["seq"] + 1
        return self.end is not None and message["seq"] >= self.end

    def _subscription(self) -> Subscription:
        return Subscription(self.db, PLANE, self.next_seq, resolved_every=0.05, **self.options)

    async def run_async(self) -> None:
        while True:
            budget = self.rng.randint(1, 8)
            async for message in self._subscription():
                if self._take(message):
                    return
                budget -= 1
                if budget == 0:
                    break
            self.reconnects += 1

    async def run_with_timeouts(self) -> None:
        """Pulls with wait_for: a cancelled pull must not lose, repeat or reorder anything."""
        while True:
            budget = self.rng.randint(1, 8)
            subscription = self._subscription()
            while budget:
                try:
                    message = await asyncio.wait_for(subscription.__anext__(), self.rng.choice([0.0005, 0.002, 1]))
                except TimeoutError:
                    continue
                if self._take(message):
                    return
                budget -= 1
            self.reconnects += 1

    def run_sync(self) -> None:
        while True:
            budget = self.rng.randint(1, 8)
            for message in self._subscription():
                if self._take(message):
                    return
                budget -= 1
                if budget == 0:
                    break
            self.reconnects += 1


def test_every_commit_once_in_order_while_threads_a_process_and_the_cli_write(db: Database) -> None:
    rng = random.Random(4)
    start = db.head() + 1
    collectors = {
        "all": Collector(db, start, random.Random(rng.random())),
        "person": Collector(db, start, random.Random(rng.random()), labels="Person"),
        "created": Collector(db, start, random.Random(rng.random()), ops="created"),
        "timeouts": Collector(db, start, random.Random(rng.random())),
    }
    errors: list[BaseException] = []

    def guarded(fn: Callable[..., None], *args: Any) -> threading.Thread:
        def run() -> None:
            try:
                fn(*args)
            except BaseException as exc:  # reported by the test thread
                errors.append(exc)

        thread = threading.Thread(target=run)
        thread.start()
        return thread

    sync_thread = guarded(collectors["created"].run_sync)
    # The threads start with the other process's first commit; the process pauses halfway until a
    # thread has committed (`wrote`), so the writers overlap however the machine schedules them.
    go, wrote = threading.Event(), threading.Event()
    writers = [guarded(thread_writer, db, f"t{t}", 200, random.Random(t), go, wrote) for t in range(2)]
    proc = subprocess.Popen(
        [sys.executable, "-c", PROCESS_WRITER, db.path, "150"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )

    def resume_process() -> None:
        assert wrote.wait(30), "no thread committed"
        assert proc.stdin is not None
        proc.stdin.write("\n")
        proc.stdin.close()

    writers.append(guarded(resume_process))
    cli_keys = [f"cli-{i}" for i in range(3)]

    def cli_writer() -> None:
        for key in cli_keys:
            exe = [
                sys.executable,
                "-m",
                "drsg.surfaces.cli",
                "--db",
                db.path,
                "node",
                "put",
                key,
                "-l",
                "Person",
                "-p",
                PLANE,
            ]
            subprocess.run(exe, check=True, capture_output=True, cwd=ROOT, timeout=60)

    writers.append(guarded(cli_writer))
    acks: dict[int, float] = {}

    def read_acks() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            ack = json.loads(line)
            acks[ack["seq"]] = ack["at"]
            go.set()

    writers.append(guarded(read_acks))

    def finish() -> None:
        for thread in writers:
            thread.join()
        assert proc.wait(60) == 0
        end = db.write(lambda tx: tx.create_node(tx.plane(PLANE), "END", ["Person"], {})).seq
        for collector in collectors.values():
            collector.end = end

    finisher = guarded(finish)

    async def subscribers() -> None:
        await asyncio.wait_for(
            asyncio.gather(
                collectors["all"].run_async(),
                collectors["person"].run_async(),
                collectors["timeouts"].run_with_timeouts(),
            ),
            timeout=60,
        )

    try:
        asyncio.run(subscribers())
    finally:
        finisher.join(60)
        sync_thread.join(60)
        if proc.poll() is None:
            proc.kill()
    assert not errors, errors

    assert len(acks) == 150
    assert collectors["all"].seqs == oracle(db, PLANE, start)
    assert collectors["timeouts"].seqs == oracle(db, PLANE, start)
    assert collectors["person"].seqs == oracle(db, PLANE, start, label="Person")
    assert collectors["created"].seqs == oracle(db, PLANE, start, created_only=True)
    assert set(acks) <= set(collectors["all"].seqs)  # the other process's commits all arrived
    by_threads = [c.seq for c in db.commits(start) if c.origin.get("via") in ("t0", "t1")]
    assert any(min(acks) < seq < max(acks) for seq in by_threads), "the writers did not overlap"
    with db.snapshot() as snap:
        cli_ids = {snap.node_by_key(db.plane(PLANE).id, key).id for key in cli_keys}  # type: ignore[union-attr]
    seen_ids = set()
    for message in Subscription(db, PLANE, start, resolved_every=None, follow=False):
        seen_ids |= {c["id"] for c in message["changes"] if c["kind"] == "node"}
    assert cli_ids <= seen_ids

    # Commits made by another process reach a subscriber within a bounded delay.
    lags = sorted(collectors["all"].received_at[seq] - at for seq, at in acks.items())
    assert lags[-1] < 3.0, f"a commit of the other process arrived {lags[-1]:.2f}s after its ack"
    reconnects = sum(c.reconnects for c in collectors.values())
    assert reconnects >= 100, reconnects
    print(
        f"\nfeed: {len(collectors['all'].seqs)} commits, {reconnects} resumes, "
        f"cross-process lag median {lags[len(lags) // 2] * 1000:.1f} ms, max {lags[-1] * 1000:.1f} ms"
    )


def test_slow_subscriber_catches_up_and_memory_stays_bounded(db: Database) -> None:
    text = "a real sentence of some length, repeated so records are not tiny. " * 8  # ~550 bytes
    plane = db.plane(PLANE)
    piled = 20_000

    def pile_up() -> None:
        for chunk in range(piled // 2000):

            def bulk(tx: WriteTx, chunk: int = chunk) -> None:
                for i in range(2000):
                    tx.create_node(plane, None, ["Doc"], {"text": text, "i": chunk * 2000 + i})
                    tx.commit_point()

            db.write(bulk)

    async def main() -> tuple[int, int, int]:
        subscription = Subscription(db, PLANE, None, resolved_every=None)
        first = db.write(lambda tx: tx.create_node(plane, "first", [], {})).seq
        assert (await subscription.__anext__())["seq"] == first
        gc.collect()
        baseline = tracemalloc.get_traced_memory()[0]
        await asyncio.to_thread(pile_up)  # the subscriber sleeps meanwhile
        gc.collect()
        held_while_asleep = tracemalloc.get_traced_memory()[0] - baseline
        tracemalloc.reset_peak()
        expected = first + 1
        async for message in subscription:
            assert message["seq"] == expected
            assert message["changes"][0]["record"]["properties"]["i"] == expected - first - 1
            expected += 1
            if expected % 2500 == 0:
                await asyncio.sleep(0.01)  # a slow consumer
            if expected > first + piled:
                break
        return held_while_asleep, tracemalloc.get_traced_memory()[1] - baseline, expected - first - 1

    tracemalloc.start()
    try:
        held, peak, delivered = asyncio.run(main())
    finally:
        tracemalloc.stop()
    assert delivered == piled
    payload = piled * len(text)  # what buffering the backlog would cost, at the very least
    assert held < 512 * 1024, f"the subscriber held {held} bytes while asleep"
    assert peak < 4 * 1024 * 1024 < payload, f"peak {peak} bytes while catching up on {payload} bytes of records"
    print(
        f"\nfeed: slow subscriber caught up on {piled} commits; "
        f"peak {peak / 1e6:.2f} MB vs backlog {payload / 1e6:.1f} MB"
    )


def test_resolved_watermarks_appear_when_quiet_and_never_run_ahead(db: Database) -> None:
    def write(i: int) -> None:
        labels = ["Person"] if i % 3 == 0 else ["Robot"]
        name = PLANE if i % 5 else "other"
        db.write(lambda tx: tx.create_node(tx.plane(name), None, labels, {"i": i}))

    for i in range(60):
        write(i)

    def trickle() -> None:
        for i in range(60, 75):
            time.sleep(0.03)
            write(i)

    events: list[dict[str, Any]] = []

    async def watch() -> None:
        writer = asyncio.create_task(asyncio.to_thread(trickle))
        subscription = Subscription(db, PLANE, 1, labels="Person", resolved_every=0.05)
        deadline = time.monotonic() + 120  # only a hang gets there
        quiet_marks = 0  # watermarks after the last write
        async for message in subscription:
            events.append({**message, "at": time.monotonic()})
            if writer.done() and "resolved" in message:
                quiet_marks += 1
            if quiet_marks >= 6:
                break
            assert time.monotonic() < deadline, f"{quiet_marks} watermarks in 120 s after the writes"
        await writer

    asyncio.run(watch())
    expected = oracle(db, PLANE, label="Person")
    delivered: list[int] = []
    marks = []
    for event in events:
        if "resolved" in event:
            marks.append(event)
            # Everything up to the watermark has been delivered, and nothing beyond it yet.
            assert delivered == [s for s in expected if s <= event["resolved"]], event
        else:
            delivered.append(event["seq"])
    assert delivered == expected[: len(delivered)] and delivered[-1] == expected[-1]
    assert [m["resolved"] for m in marks] == sorted(m["resolved"] for m in marks)
    assert marks[-1]["resolved"] == db.head()
    assert len(marks) >= 5
    gaps = [b["at"] - a["at"] for a, b in itertools.pairwise(marks[-5:])]  # all after the writes
    assert min(gaps) > 0.02 and statistics.median(gaps) < 0.5, gaps  # periodic while idle (one stall allowed)

    # Catching up through commits none of which match: watermarks show the progress.
    progress = []
    for message in Subscription(db, PLANE, 1, labels="Nobody", resolved_every=0.05):
        assert "resolved" in message
        progress.append(message["resolved"])
        if message["resolved"] == db.head():
            break
    assert progress == sorted(progress) and progress[-1] == db.head()


def test_records_before_after_vectors_and_hidden_properties(db: Database) -> None:
    start = db.head() + 1
    props = {"name": "Ada", "_source": "notes.txt", "emb": Vector.of([0.5, 1.5])}
    db.write(lambda tx: tx.create_node(tx.plane(PLANE), "ada", ["Person"], props))
    db.write(lambda tx: tx.update_node(tx.plane(PLANE), "@ada", {"born": 1815}))
    db.write(lambda tx: tx.delete_node(tx.plane(PLANE), "@ada"))

    def changes(**options: Any) -> list[dict[str, Any]]:
        messages = list(Subscription(db, PLANE, start, resolved_every=None, follow=False, **options))
        return [m["changes"][0] for m in messages]

    created, updated, deleted = changes()
    assert created["op"] == "created" and created["record"]["properties"] == {"name": "Ada"}
    assert updated["op"] == "updated" and updated["record"]["properties"] == {"name": "Ada", "born": 1815}
    assert deleted == {"kind": "node", "op": "deleted", "id": created["id"], "labels": ["Person"]}
    assert all("before" not in c for c in (created, updated, deleted))

    created, updated, deleted = changes(include_before=True, include_vectors=True, include_hidden=True)
    full = {"name": "Ada", "_source": "notes.txt", "emb": {"$vector": [0.5, 1.5]}}
    assert created["before"] is None and created["record"]["properties"] == full
    assert updated["before"]["properties"] == full and updated["record"]["properties"] == {**full, "born": 1815}
    assert "record" not in deleted and deleted["before"]["properties"] == {**full, "born": 1815}
    assert changes(include_hidden=True)[0]["record"]["properties"] == {"name": "Ada", "_source": "notes.txt"}
    assert changes(ops="deleted") == [changes()[2]]


def test_rename_keeps_a_subscription_and_drop_ends_it(db: Database) -> None:
    db.write(lambda tx: tx.create_plane("live"))
    start = db.head() + 1

    async def watch() -> list[dict[str, Any]]:
        received = []
        async for message in Subscription(db, "live", None, resolved_every=None):
            received.append(message)
        return received

    async def main() -> list[dict[str, Any]]:
        task = asyncio.create_task(watch())
        assert await asyncio.to_thread(db.log.await_waiters, 1, 10)  # it is there before the first write
        await db.awrite(lambda tx: tx.create_node(tx.plane("live"), "a", [], {}))
        await db.awrite(lambda tx: tx.rename_plane("live", "alive"))
        await db.awrite(lambda tx: tx.create_node(tx.plane("alive"), "b", [], {}))
        await db.awrite(lambda tx: tx.create_node(tx.plane(PLANE), "elsewhere", [], {}))
        await db.awrite(lambda tx: (tx.create_node(tx.plane("alive"), "c", [], {}), tx.drop_plane("alive")))
        await db.awrite(lambda tx: tx.create_plane("live"))  # a new plane with the old name
        await db.awrite(lambda tx: tx.create_node(tx.plane("live"), "new", [], {}))
        return await asyncio.wait_for(task, 5)  # ends by itself

    received = asyncio.run(main())
    keys = [[c["record"]["external_key"] for c in m["changes"]] for m in received]
    assert keys == [["a"], ["b"], ["c"]]
    assert [m["plane"] for m in received] == ["live", "alive", "alive"]
    assert received[-1]["dropped"] is True and all("dropped" not in m for m in received[:-1])

    # Resuming by the old name from before the drop follows the same plane to its end.
    resumed = list(Subscription(db, "live", received[0]["seq"] + 1, resolved_every=None))
    assert [m["seq"] for m in resumed] == [m["seq"] for m in received[1:]] and resumed[-1]["dropped"]
    # From 1, a name means the first plane to bear it; from now on, the plane bearing it now.
    assert [m["seq"] for m in Subscription(db, "alive", 1, resolved_every=None)][-1] == received[-1]["seq"]
    now = list(Subscription(db, "live", received[-1]["seq"] + 1, resolved_every=None, follow=False))
    assert [c["record"]["external_key"] for m in now for c in m["changes"]] == ["new"]
    assert start <= received[0]["seq"]


def test_start_points_and_errors(db: Database) -> None:
    db.write(lambda tx: tx.create_node(tx.plane(PLANE), "x", [], {}))
    head = db.head()
    assert list(Subscription(db, PLANE, None, follow=False)) == []  # "now" skips history
    assert [m["seq"] for m in Subscription(db, PLANE, 1, follow=False, resolved_every=None)] == [head]
    assert list(Subscription(db, PLANE, head + 1, follow=False)) == []
    with pytest.raises(BadValue, match="log ends at seq"):
        Subscription(db, PLANE, head + 2)
    with pytest.raises(BadValue):
        Subscription(db, PLANE, 0)
    with pytest.raises(NotFound, match="no plane named 'nope'"):
        Subscription(db, "nope")
    with pytest.raises(BadValue, match="unknown change op"):
        Subscription(db, PLANE, ops=["renamed"])
    everything = list(Subscription(db, None, 1, follow=False, resolved_every=None))
    assert everything[0]["plane"] is None and {c["plane"] for m in everything for c in m["changes"]} == {PLANE}


# ---------------------------------------------------------------------- the CLI


def test_cli_feed_prints_one_json_object_per_commit(tmp_path: Path) -> None:
    path = tmp_path / "cli.drsg"
    with drsg.open(path) as db:
        db.write(lambda tx: tx.create_plane(PLANE))
        for key in ("a", "b", "c"):
            db.write(lambda tx, key=key: tx.create_node(tx.plane(PLANE), key, ["Person"], {"_src": "x"}))
        db.write(lambda tx: tx.delete_node(tx.plane(PLANE), "@b"))
        head = db.head()
    runner = CliRunner()

    def run(*args: str) -> Any:
        return runner.invoke(cli, ["--db", str(path), "feed", "--plane", PLANE, *args], catch_exceptions=False)

    result = run("--from", "1", "--json", "--no-follow")
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [m["seq"] for m in lines] == list(range(head - 3, head + 1))
    assert lines[0]["changes"][0]["record"] == {"id": 1, "external_key": "a", "labels": ["Person"], "properties": {}}
    assert lines[-1]["changes"] == [{"kind": "node", "op": "deleted", "id": 2, "labels": ["Person"]}]

    result = run("--from", "1", "--json", "--until", str(head - 2), "--hidden")
    assert [json.loads(line)["seq"] for line in result.stdout.splitlines()] == [head - 3, head - 2]
    assert json.loads(result.stdout.splitlines()[0])["changes"][0]["record"]["properties"] == {"_src": "x"}

    result = run("--from", str(head - 1), "--no-follow", "--op", "deleted", "--before")
    assert result.exit_code == 0 and result.stdout.count("\n") == 1
    assert "\tfeed\tdeleted node #2 @b [Person]" in result.stdout and result.stdout.startswith(f"seq {head}\t")

    result = runner.invoke(cli, ["--db", str(path), "feed", "--plane", "nope"])
    assert result.exit_code == 1 and "no plane named 'nope'" in result.stderr
    result = runner.invoke(cli, ["--db", str(path), "feed", "--from", str(head + 5)])
    assert result.exit_code == 2 and "log ends at seq" in result.stderr


def test_cli_feed_follows_another_process_and_stops_on_ctrl_c(tmp_path: Path) -> None:
    path = tmp_path / "follow.drsg"
    with drsg.open(path) as db:
        db.write(lambda tx: tx.create_plane(PLANE))
    feed = ["--db", str(path), "feed", "--plane", PLANE, "--json"]  # the real `drsg` command, as installed
    proc = subprocess.Popen(  # faulthandler: a hang is answered with every thread's stack (see below)
        [sys.executable, "-X", "faulthandler", "-m", "drsg.surfaces.cli", *feed],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )
    try:
        with drsg.open(path) as db:
            deadline = time.time() + 20
            # The feed starts "now": keep writing until the first commit it sees comes out.
            assert proc.stdout is not None
            os.set_blocking(proc.stdout.fileno(), False)
            line = b""
            while not line.endswith(b"\n") and time.time() < deadline:
                db.write(lambda tx: tx.create_node(tx.plane(PLANE), None, ["Person"], {}))
                time.sleep(0.1)
                line += proc.stdout.read() or b""
            first = json.loads(line.splitlines()[0])
            assert first["plane"] == PLANE and first["changes"][0]["op"] == "created"
        proc.send_signal(signal.SIGINT)
        try:
            code = proc.wait(30)  # generous: CI machines are busy
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGABRT)  # faulthandler prints where every thread is stuck
            proc.wait(10)
            raise AssertionError(f"drsg feed ignored Ctrl-C for 30 s:\n{proc.stderr.read().decode()}") from None
        assert code == 0, proc.stderr.read() if proc.stderr else ""
    finally:
        if proc.poll() is None:
            proc.kill()
