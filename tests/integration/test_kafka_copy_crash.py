"""A Kafka node's copy commits without flushing (MDB_NOSYNC), so what a crash leaves of it is judged
by its mark (store/kafka/copymark.py): a process killed with ``kill -9`` loses nothing and its copy is
kept; a copy that was being written when the machine went down (its mark names another boot) is
rebuilt from the topic, byte for byte the other nodes' copy. The rule itself is held on real files
with a boot id given as a parameter; the crashes with real processes and a real broker."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

import drsg
from drsg.store.jsonl import export_lines
from drsg.store.kafka.copymark import SIZE, CopyMark, Mark, boot_id
from drsg.store.kafka.database import KafkaDatabase
from tests.support.kafka_broker import Broker
from tests.support.server import clean_env, drsg_argv

pytestmark = pytest.mark.timeout(180)

WRITER = """
import sys, drsg
from drsg.store.intents import Intent
db = drsg.open(sys.argv[1], log=sys.argv[2])
for i in range(100_000):
    done = db.submit(Intent("node.put", {"plane": "startup", "key": f"k{i % 300}", "properties": {"i": i}}))
    print("acked", done.seq, flush=True)
"""


def mark_of(copy: Path) -> Mark | None:
    return Mark.of(Path(f"{copy}.synced").read_bytes())


def plant_boot(copy: Path, boot: str) -> None:
    """What a restart of the machine looks like to the mark: another boot id than this one's."""
    mark = mark_of(copy)
    assert mark is not None
    with open(f"{copy}.synced", "r+b") as f:
        f.write(Mark(boot, mark.clean, mark.rebuilt).to_bytes())


def canonical(db: KafkaDatabase) -> list[str]:
    return list(export_lines(db, "startup", canonical=True))


def write_then_kill(copy: Path, url: str, writes: int) -> int:
    """A node (a process of its own) writing back to back, killed with ``kill -9`` once ``writes``
    of its writes were acknowledged; the last acknowledged seq."""
    child = subprocess.Popen([sys.executable, "-c", WRITER, str(copy), url], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        acked: list[int] = []
        while len(acked) < writes:  # (its log lines go to stdout too)
            line = child.stdout.readline()
            assert line, "the writer ended early"
            if line.startswith("acked "):
                acked.append(int(line.split()[1]))
        child.kill()
        child.wait(10)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(10)
    return acked[-1]


@pytest.fixture
def url(kafka_broker: Broker) -> str:
    return kafka_broker.url(f"crash-{uuid.uuid4().hex[:12]}")


def test_a_node_killed_mid_writes_keeps_its_copy_and_loses_nothing(tmp_path: Path, url: str) -> None:
    copy = tmp_path / "a.drsg"
    last = write_then_kill(copy, url, 150)
    mark = mark_of(copy)
    assert mark is not None and mark.clean is False and mark.boot == boot_id()  # left in use, this boot
    inode = copy.stat().st_ino
    a = drsg.open(copy, log=url)
    b = drsg.open(tmp_path / "b.drsg", log=url)
    assert isinstance(a, KafkaDatabase) and isinstance(b, KafkaDatabase)
    try:
        assert copy.stat().st_ino == inode and a.stats().rebuilt is None  # kept, not rebuilt
        assert a.head() >= last  # every acknowledged write is there
        b.catch_up(a.head())
        assert canonical(a) == canonical(b)
    finally:
        a.close()
        b.close()
    mark = mark_of(copy)
    assert mark is not None and mark.clean is True  # closed cleanly: flushed and marked so


def test_a_copy_written_when_the_machine_went_down_is_rebuilt_from_the_topic(tmp_path: Path, url: str) -> None:
    copy = tmp_path / "a.drsg"
    write_then_kill(copy, url, 150)
    plant_boot(copy, "another-boot")  # the machine restarted since: its unflushed pages may be lost
    with open(copy, "r+b") as f:  # as they were: pages past the first ones never reached the disk
        f.seek(4 * 4096)
        f.write(os.urandom(copy.stat().st_size - 4 * 4096))
    inode = copy.stat().st_ino
    ran = subprocess.run(
        [*drsg_argv(), "--log", url, "--db", str(copy), "stats", "--json"],
        capture_output=True, text=True, env=clean_env(), timeout=120,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    rebuilt = json.loads(ran.stdout)["log"]["rebuilt"]
    assert "the machine restarted" in rebuilt["reason"] and rebuilt["at"].endswith("Z")
    assert "kafka_copy_rebuilt" in ran.stderr or copy.stat().st_ino != inode
    a = drsg.open(copy, log=url)
    b = drsg.open(tmp_path / "b.drsg", log=url)
    assert isinstance(a, KafkaDatabase) and isinstance(b, KafkaDatabase)
    try:
        assert a.stats().rebuilt == rebuilt  # a later open still says so, and rebuilt nothing more
        b.catch_up(a.kafka.head())
        a.catch_up(b.head())
        assert a.head() == b.head() and canonical(a) == canonical(b)
    finally:
        a.close()
        b.close()
    said = subprocess.run([*drsg_argv(), "--log", url, "--db", str(copy), "stats"], capture_output=True, text=True,
                          env=clean_env(), timeout=120)  # fmt: skip
    assert f"copy rebuilt from the topic at {rebuilt['at']}: the machine restarted" in said.stdout, said.stderr
    check = subprocess.run([*drsg_argv(), "--db", str(copy), "check"], capture_output=True, text=True,
                           env=clean_env(), timeout=120)  # fmt: skip
    assert check.returncode == 0, check.stdout + check.stderr


# ---------------------------------------------------------------- the rule, on real files


def make_copy(path: Path) -> Path:
    path.write_bytes(b"pages")
    return path


def left_in_use(copy: Path, boot: str) -> None:
    """The mark as a process killed while it had the copy open leaves it."""
    Path(f"{copy}.synced").write_bytes(Mark(boot, False, None).to_bytes())


def test_the_mark_trusts_a_copy_left_in_use_this_boot_and_not_after_a_restart(tmp_path: Path) -> None:
    copy = make_copy(tmp_path / "c.drsg")
    left_in_use(copy, "boot-1")
    again = CopyMark(copy, boot=lambda: "boot-1").open()  # the same boot: its pages are in the cache
    assert copy.exists() and again.rebuilt is None and mark_of(copy) == Mark("boot-1", False, None)
    again.release()  # a failed open: left in use
    assert mark_of(copy) == Mark("boot-1", False, None)
    after = CopyMark(copy, boot=lambda: "boot-2").open()  # another boot: the copy is removed
    assert not copy.exists() and after.rebuilt is not None
    assert "the machine restarted" in str(after.rebuilt["reason"])
    assert mark_of(copy) == Mark("boot-2", False, after.rebuilt)
    flushed: list[bool] = []
    after.close(lambda: flushed.append(True))
    assert flushed == [True] and mark_of(copy) == Mark("boot-2", True, after.rebuilt)


def test_a_copy_closed_cleanly_is_trusted_after_a_restart(tmp_path: Path) -> None:
    copy = make_copy(tmp_path / "c.drsg")
    CopyMark(copy, boot=lambda: "boot-1").open().close(lambda: None)
    later = CopyMark(copy, boot=lambda: "boot-2").open()
    assert copy.exists() and later.rebuilt is None and mark_of(copy) == Mark("boot-2", False, None)
    later.close(lambda: None)


def test_only_the_last_process_to_close_flushes_and_marks_the_copy_clean(tmp_path: Path) -> None:
    copy = make_copy(tmp_path / "c.drsg")
    one, two = CopyMark(copy, boot=lambda: "boot-1").open(), CopyMark(copy, boot=lambda: "boot-1").open()
    flushed: list[str] = []
    one.close(lambda: flushed.append("one"))
    assert flushed == [] and mark_of(copy) == Mark("boot-1", False, None)  # two still writes it
    two.close(lambda: flushed.append("two"))
    assert flushed == ["two"] and mark_of(copy) == Mark("boot-1", True, None)


def test_a_mark_that_cannot_be_read_or_a_boot_that_cannot_be_told_is_not_trusted(tmp_path: Path) -> None:
    copy = make_copy(tmp_path / "c.drsg")
    Path(f"{copy}.synced").write_bytes(b"{torn".ljust(SIZE))
    mark = CopyMark(copy, boot=lambda: "boot-1").open()
    assert not copy.exists() and mark.rebuilt is not None and "cannot be read" in str(mark.rebuilt["reason"])
    mark.release()
    make_copy(copy)
    left_in_use(copy, "boot-1")
    unknown = CopyMark(copy, boot=lambda: None).open()  # in use, and no boot id to tell a restart by
    assert not copy.exists() and "no boot id" in str((unknown.rebuilt or {})["reason"])
    unknown.release()


def test_an_open_refused_after_the_mark_was_made_leaves_no_mark(tmp_path: Path) -> None:
    copy = tmp_path / "new.drsg"
    CopyMark(copy, boot=lambda: "boot-1").open().release()
    assert not Path(f"{copy}.synced").exists()
