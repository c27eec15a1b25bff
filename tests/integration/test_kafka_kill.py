"""A node on a Kafka log killed with ``kill -9`` at random points while another node writes: its LMDB
copy and its index sidecars keep their checkpoint with their effect, so after each restart it goes
on from there — in the end its copy is byte for byte the writer's, and its keyword index holds
exactly what an index built from scratch over the same log holds (no commit lost, none applied
twice). The node is `drsg serve` with ``DRSG_LOG_URL`` (materialiser and index workers, as deployed),
stopped in turn by SIGTERM (which saves its sidecars) and by ``kill -9`` (which leaves them behind
its copy, so the restart replays from their checkpoint).
"""

from __future__ import annotations

import random
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

import drsg
from drsg.store.backends import open_log
from drsg.store.kafka.database import KafkaDatabase
from drsg.store.records import Plane
from drsg.store.transaction import WriteTx
from drsg.workers.keyword import KeywordIndex
from drsg.workers.manager import IndexSet
from tests.bench.common import text_lines
from tests.support.kafka_broker import Broker
from tests.support.kafka_nodes import tables
from tests.support.server import start_server
from tests.support.waiting import wait_until

pytestmark = pytest.mark.timeout(300)
COMMITS = 300
KILLS = 4
QUERIES = ["the", "module", "return value", "file name", "error", "python"]


def plane(tx: WriteTx) -> Plane:
    return tx.plane("startup")


def keyword_index(db: KafkaDatabase) -> KeywordIndex:
    indexes = IndexSet(db)
    indexes.catch_up()
    worker = indexes.get(0, "keyword", "Doc", "text")
    assert isinstance(worker, KeywordIndex)
    return worker


def test_a_node_killed_at_random_points_loses_nothing_and_applies_nothing_twice(
    tmp_path: Path, kafka_broker: Broker
) -> None:
    url = kafka_broker.url(f"kill-{uuid.uuid4().hex[:12]}")
    chance = random.Random()
    lines = text_lines(COMMITS)
    writer = drsg.open(tmp_path / "writer.drsg", log=url)
    assert isinstance(writer, KafkaDatabase)
    writer.write(lambda tx: tx.declare_index(tx.plane("startup"), "keyword", "Doc", "text", {"language": "english"}))
    follower_path = tmp_path / "follower.drsg"
    env = {"DRSG_LOG_URL": url}
    done = threading.Event()
    failures: list[BaseException] = []

    def write() -> None:
        try:
            for i, line in enumerate(lines):
                key = f"d{chance.randrange(max(1, i))}"
                roll = chance.random()
                with writer.snapshot() as snap:
                    exists = snap.node_by_key(0, key) is not None
                if roll < 0.15 and exists:
                    writer.write(lambda tx, key=key, line=line: tx.update_node(plane(tx), f"@{key}", {"text": line}))
                elif roll < 0.25 and exists:
                    writer.write(lambda tx, key=key: tx.delete_node(plane(tx), f"@{key}"))
                else:
                    writer.write(lambda tx, i=i, line=line: tx.create_node(plane(tx), f"d{i}", ["Doc"], {"text": line}))
                time.sleep(chance.uniform(0, 0.01))
        except BaseException as exc:
            failures.append(exc)
        finally:
            done.set()

    server = start_server(follower_path, tmp_path, env=env, name="follower")
    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    try:
        for round in range(2 * KILLS):
            time.sleep(chance.uniform(0.3, 1.5))
            if round % 2:
                server.proc.kill()  # kill -9: its sidecars stay at the checkpoint of the last save
                server.proc.wait(10)
            else:
                assert server.stop() == 0  # SIGTERM saves them: the next kill then finds a checkpoint behind
            server = start_server(follower_path, tmp_path, env=env, name="follower")
        assert done.wait(240), "the writer did not finish"
        assert not failures, failures
        head = writer.head()
        wait_until(lambda: server.call("db.stats")["commit_seq"] >= head, "the follower to catch up", timeout=60)
    finally:
        assert server.stop() == 0  # SIGTERM: its sidecars are saved
    follower = drsg.open(follower_path, log=url)
    assert isinstance(follower, KafkaDatabase)
    try:
        assert follower.head() == writer.head()
        assert tables(follower) == tables(writer)  # the copy: nothing lost, nothing twice
        assert [c.to_json() for c in follower.commits()] == [c.to_json() for c in writer.commits()]
        kept, fresh = keyword_index(follower), keyword_index(writer)  # from its sidecar / from scratch
        with writer.snapshot() as snap:
            live = {n.id for n in snap.nodes(0, label="Doc")}
        assert kept.node_ids() == fresh.node_ids() == live
        assert len(kept) == len(fresh) == len(live)  # one document per node: none applied twice
        for query in QUERIES:
            assert set(kept.search_arrays(query, 10_000)[0]) == set(fresh.search_arrays(query, 10_000)[0]), query
    finally:
        follower.close()
        writer.close()


IMPORTER = """
import sys, drsg
db = drsg.open(sys.argv[1], log=sys.argv[2], settings={"store.import_commit_lines": 5})
print("open", db.head(), flush=True)
db.import_jsonl("startup", sys.argv[3])
print("imported", flush=True)
"""


def test_a_writer_killed_while_producing_an_import_leaves_none_of_it(tmp_path: Path, kafka_broker: Broker) -> None:
    url = kafka_broker.url(f"kill-import-{uuid.uuid4().hex[:12]}")
    source = tmp_path / "in.jsonl"
    source.write_text("".join(f'{{"external_key":"n{i}","properties":{{"text":"line {i}"}}}}\n' for i in range(3000)))
    watch = open_log(url)
    child = subprocess.Popen(
        [sys.executable, "-c", IMPORTER, str(tmp_path / "importer.drsg"), url, str(source)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None and child.stdout.readline().split() == ["open", "1"]
        wait_until(lambda: watch.head() > 30, "the importer to produce part of its chunks", timeout=60)
        child.kill()  # kill -9 half-way through its chunks (600 records, then the closing one)
        child.wait(10)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(10)
        watch.close()
    other = drsg.open(tmp_path / "other.drsg", log=url)
    try:
        made = other.write(lambda tx: tx.create_node(tx.plane("startup"), "after", [], {}))
        with other.snapshot() as snap:
            assert [n.key for n in snap.nodes(0)] == ["after"]  # none of the import
        produced = sum(c.origin.get("via") == "import" for c in other.commits())
        assert 30 <= produced < 600, produced  # the chunks the importer got out before it died: held, never closed
        assert [c.origin for c in other.commits() if "skipped" in c.origin or "refused" in c.origin] == []
        assert made.seq is not None and made.seq > produced + 1  # nothing waited for the import to close
        importer = drsg.open(tmp_path / "importer.drsg", log=url)  # the killed node's own copy, reopened
        try:
            importer.catch_up(made.seq)
            assert tables(importer) == tables(other)
        finally:
            importer.close()
    finally:
        other.close()
