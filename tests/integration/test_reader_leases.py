"""Readers in other processes hold the retention horizon (store/readers.py), with real processes: a
`drsg log --follow` that is behind (stopped with SIGSTOP) is not compacted past by `drsg compact
--history` in a third process, and reads every commit once it goes on; one killed with SIGKILL holds
history until its lease expires, then no longer."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from drsg.feed.subscription import Subscription
from drsg.store.database import Database
from drsg.store.readers import leases_dir
from drsg.store.retention import Retention
from drsg.store.transaction import WriteTx
from tests.support.server import clean_env, drsg_argv
from tests.support.waiting import Lines, wait_until


def _commit(db: Database, count: int) -> int:
    for n in range(count):

        def put(tx: WriteTx, n: int = n) -> None:
            tx.create_node(tx.plane("startup"), f"k{db.head()}-{n}", ["A"], {})

        db.write(put)
    return db.head()


def _reader(proc: subprocess.Popen[str]) -> int:
    """The pid that reads: `drsg` runs its command in a child (surfaces/cli/supervise.py)."""
    children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
    assert len(children) == 1, children
    return int(children[0])


@contextmanager
def _follower(path: Path, lease_secs: int) -> Iterator[tuple[subprocess.Popen[str], Lines]]:
    proc = subprocess.Popen(
        [*drsg_argv(), "--db", str(path), "log", "--follow", "--from", "2", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=clean_env(DRSG_LOG_READER_LEASE_SECS=str(lease_secs)),
    )
    try:
        assert proc.stdout is not None
        yield proc, Lines(proc.stdout)
    finally:
        if proc.poll() is None:
            with contextlib.suppress(OSError, AssertionError):
                os.kill(_reader(proc), signal.SIGKILL)  # (a stopped one too)
            proc.kill()
        proc.wait(10)


def _compact_cli(path: Path, *args: str) -> str:
    """`drsg compact --history` keeping the last 2 commits, in a process of its own."""
    done = subprocess.run(
        [*drsg_argv(), "--db", str(path), "compact", "--history", *args],
        capture_output=True,
        text=True,
        env=clean_env(DRSG_LOG_RETAIN_COMMITS="2"),
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _compact(path: Path) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(_compact_cli(path, "--json"))
    return found


def test_a_reader_behind_in_another_process_is_not_compacted_past(tmp_path: Path) -> None:
    path = tmp_path / "g.drsg"
    with Database(path) as db:
        first = _commit(db, 8)
        with _follower(path, lease_secs=60) as (follower, lines):
            lines.until(lambda line: json.loads(line)["seq"] == first, "the commits before it stopped")
            reader = _reader(follower)
            os.kill(reader, signal.SIGSTOP)  # behind from here on: it reads nothing more
            head = _commit(db, 12)
            done = _compact(path)
            assert done["horizon"] <= first  # what it has yet to read stays
            assert done["asked"] == head - 2
            assert [who.split(" on ")[0] for who in done["held_by"]] == [f"pid {reader}"]
            assert f"for readers still behind: pid {reader} on " in _compact_cli(path)
            stats = subprocess.run(
                [*drsg_argv(), "--db", str(path), "stats"], capture_output=True, text=True, env=clean_env(), timeout=60
            )
            assert f"long readers: 1 (they read from commit {done['horizon']:,} on; " in stats.stdout, stats.stdout
            assert f": pid {reader} on " in stats.stdout
            os.kill(reader, signal.SIGCONT)
            lines.until(lambda line: json.loads(line)["seq"] == head, "the commits made while it was stopped")
            assert [json.loads(line)["seq"] for line in lines.seen] == list(range(2, head + 1))
            assert follower.poll() is None, follower.stderr.read() if follower.stderr else ""
            follower.send_signal(signal.SIGINT)
            assert follower.wait(30) == 0
        assert not leases_dir(path).exists()  # its lease went with it, and the folder with the last one


def test_a_dead_reader_holds_history_only_until_its_lease_expires(tmp_path: Path) -> None:
    path = tmp_path / "g.drsg"
    with Database(path) as db:
        first = _commit(db, 6)
        with _follower(path, lease_secs=2) as (follower, lines):
            lines.until(lambda line: json.loads(line)["seq"] == first, "the commits before it died")
            os.kill(_reader(follower), signal.SIGKILL)  # (drsg's parent process exits with it)
            follower.wait(10)
            killed = time.monotonic()
            head = _commit(db, 6)
            held = _compact(path)
            if time.monotonic() - killed < 1.0:  # (renewed every 2/3 s: it holds at least 1.3 s past the kill)
                assert held["horizon"] <= first
            wait_until(lambda: time.monotonic() - killed > 2.5, "its lease's term to pass")
            done = _compact(path)
            assert (done["horizon"], done["held_by"]) == (head - 2, [])
            assert list(leases_dir(path).glob("*.lease")) == []  # the expired lease was removed


def test_a_feed_subscription_holds_history_for_another_opening_of_the_file(tmp_path: Path) -> None:
    """A subscription's lease is what another process's compaction reads: a second opening of the
    file has pins of its own, as another process would, and is held by the first one's lease."""
    path = tmp_path / "g.drsg"
    with Database(path) as mine, Database(path) as other:
        first = _commit(mine, 4)
        feed = Subscription(mine, None, from_seq=2, resolved_every=None)
        head = _commit(mine, 6)
        assert other.compact_history(Retention(commits=1)).horizon == 1  # it still reads the state at 1
        assert next(iter(feed))["seq"] == 2
        feed.stop()
        assert list(feed) == []  # ended: its lease goes
        assert not leases_dir(path).exists()
        assert other.compact_history(Retention(commits=1)).horizon == head - 1
        assert first < head - 1
