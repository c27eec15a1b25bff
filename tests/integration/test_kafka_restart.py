"""A Kafka broker killed (``kill -9``) and restarted under a running `drsg serve --log kafka://…`
(issue #17): the broker keeps its topics (tansu on S3, tests/support/kafka_broker.py), so the node's
copy and the change feed go on across it.

- Subscribers over WebSocket ``plane.watch`` (``from_seq``), SSE (``Last-Event-ID``) and the Python
  iterator (on another node, in this process) keep dropping and resuming while an RPC writer
  commits, the broker dies under it, the subscribers resume against the node during the outage, and a
  second writer commits after the restart: each gets every commit of its filter once, in order,
  message for message what the embedded feed makes of the same log.
- A write during the outage — one caught in flight by a broker that hangs and then dies among them —
  gets the retryable error (DatabaseUnavailable; over JSON-RPC -32000 with ``data.error``) within
  the broker timeout, leaves nothing behind, and the same write succeeds at the first try once the
  broker is back (the producer that sent it is replaced: kafka-python's was wedged for good).
- An import the broker dies under (one group of records, half produced) fails within the bound and
  leaves none of it on any node: the next write after the restart breaks the group.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import aiohttp
import pytest

import drsg
from drsg.feed import Subscription
from drsg.kernel.errors import DatabaseUnavailable
from drsg.store.kafka.database import KafkaDatabase
from tests.support.feed_load import RPC_WRITER, Follower, first_difference
from tests.support.feed_oracle import Filter, Replay
from tests.support.kafka_broker import Broker
from tests.support.kafka_nodes import keys_in, serve_on_kafka, tables
from tests.support.server import TOKEN, RunningServer, clean_env, drsg_argv
from tests.support.waiting import wait_until

pytestmark = pytest.mark.timeout(240)
TIMEOUT = 5.0  # the Kafka log's broker timeout (store/kafka/log.py): the bound on a write in an outage
# what a kill -9 may leave beside the commits: a commit the dying broker kept but did not acknowledge
# lands before the write after it (stale: that write runs again), and one in flight may leave its
# offset empty (tests/support/kafka_broker.py: a gap, kept as an empty commit)
STALE_OR_GAP = ("stale: ", "unreadable: missing from the log (gap)")
BIG = 8192  # bytes of a property: a produce request this big is a commit (a fetch request is ~100)


@pytest.fixture(scope="module")
def persistent_broker() -> Iterator[Broker]:
    with Broker(storage="s3") as started:
        yield started


@pytest.fixture
def broker(persistent_broker: Broker) -> Broker:
    """The module's broker, up (a test that failed while it was killed left it down)."""
    return persistent_broker if persistent_broker.running else persistent_broker.start()


class Recorder(Follower):
    """A Follower that keeps each message whole (to hold it to the embedded feed's), and that can
    also follow a node in this process through the Python iterator (``via="py"``)."""

    def __init__(self, *args: Any, node: KafkaDatabase | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.node = node
        self.messages: list[dict[str, Any]] = []

    def take(self, seq: int, message: dict[str, Any] | None) -> None:
        if message is not None:
            self.messages.append(message)
        super().take(seq, message)

    async def _py(self, session: aiohttp.ClientSession, budget: int) -> None:
        assert self.node is not None
        labels, ops = self.feed.labels, self.feed.ops
        feed = Subscription(self.node, self.feed.plane, self.position, labels=labels, ops=ops, resolved_every=0.2)
        self.connections += 1
        async for message in feed:
            if "resolved" in message:
                self.take(message["resolved"], None)
                continue
            self.take(message["seq"], message)
            budget -= 1
            if budget <= 0 or self.done():
                return


def rpc_writer(server: RunningServer, name: str, count: int, seed: int, lanes: int) -> subprocess.Popen[str]:
    argv = [sys.executable, str(RPC_WRITER), f"{server.url}/rpc", TOKEN, name, str(count), str(seed), str(lanes)]
    return subprocess.Popen(argv, env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def embedded_messages(path: Path, feed: Filter, start: int) -> list[dict[str, Any]]:
    """What the embedded store's feed sends for ``feed`` over the log in the file at ``path``."""
    with drsg.open(path, readonly=True) as db:
        sub = Subscription(db, feed.plane, start, labels=feed.labels, ops=feed.ops, resolved_every=None, follow=False)
        return list(sub)


def test_subscribers_resuming_through_a_broker_restart_get_every_commit_once_in_order(
    tmp_path: Path, broker: Broker
) -> None:
    with serve_on_kafka(tmp_path, broker.url(f"restart-{uuid.uuid4().hex[:12]}")) as (server, node):
        for name in ("load", "other"):
            server.call("plane.create", {"name": name})
        start = server.head() + 1
        node.catch_up(start - 1)
        feeds = [
            ("ws", Filter("load")),
            ("sse", Filter("load")),
            ("py", Filter("load")),
            ("ws", Filter("load", labels=frozenset({"Person"}))),
            ("sse", Filter("other")),
        ]
        followers = [Recorder(server, via, feed, start, seed=i, node=node) for i, (via, feed) in enumerate(feeds)]

        async def scenario() -> None:
            async with aiohttp.ClientSession() as session:
                readers = [asyncio.create_task(f.run(session)) for f in followers]
                before = rpc_writer(server, "before", 100_000, 1, 1)  # one lane: nothing queued behind its failure
                try:
                    await asyncio.to_thread(wait_until, lambda: server.head() >= start + 60, "commits before the kill")
                    broker.kill()
                    _, err = await asyncio.to_thread(before.communicate, timeout=3 * TIMEOUT)
                finally:
                    if before.poll() is None:
                        before.kill()
                assert before.returncode == 1 and "DatabaseUnavailable" in err, err  # the write in the outage
                # every subscriber drops and resumes against the node while the broker is down
                resumed = [f.connections for f in followers]

                def all_resumed() -> bool:
                    for task in readers:
                        if task.done():
                            task.result()  # a subscriber that gave up: its error
                    return all(f.connections > seen for f, seen in zip(followers, resumed, strict=True))

                try:
                    await asyncio.to_thread(wait_until, all_resumed, "every subscriber to resume during the outage")
                except AssertionError as exc:  # which one did not
                    stuck = [(f.via, f.feed, f.connections, f.position) for f in followers]
                    raise AssertionError(
                        f"{exc}: (via, filter, connections, position) {stuck} (before: {resumed})"
                    ) from None
                broker.start()
                after = rpc_writer(server, "after", 80, 2, 4)
                _, err = await asyncio.to_thread(after.communicate, timeout=120)
                assert after.returncode == 0, err  # every write after the restart went through, at once
                head = server.head()
                await asyncio.to_thread(node.catch_up, head)
                for f in followers:
                    f.head = head
                async with asyncio.timeout(90):
                    await asyncio.gather(*readers)

        asyncio.run(scenario())
        with node.snapshot() as snap:
            assert snap.at == server.head()
    with drsg.open(node.path, readonly=True) as copy:
        replay = Replay(copy.commits(1), start)
        origins = [c.origin for c in copy.commits(start)]
    # RPC writes, and no empty commit but a stale one or the dying broker's gap: none broken or poison
    assert all(o.get("via") == "rpc" or str(o.get("skipped")).startswith(STALE_OR_GAP) for o in origins), origins
    for f in followers:  # every commit of its filter, once, in seq order, as the embedded feed sends it
        expected = replay.expected(f.feed)
        assert expected, f.feed
        assert f.got == expected, f"{f.via} {f.feed}: {first_difference(f.got, expected)}"
        embedded = embedded_messages(node.path, f.feed, start)
        assert f.messages == embedded, f"{f.via} {f.feed}: {first_difference(f.messages, embedded)}"


def test_a_write_in_a_broker_outage_gets_the_retryable_error_and_succeeds_after_the_restart(
    tmp_path: Path, broker: Broker
) -> None:
    url = broker.url(f"outage-{uuid.uuid4().hex[:12]}")

    def put(key: str) -> dict[str, Any]:
        properties = {"text": "x" * BIG}  # its produce request stands out among the consumers' fetches
        return server.rpc("node.create", {"plane": "startup", "key": key, "labels": ["Doc"], "properties": properties})

    with serve_on_kafka(tmp_path, url) as (server, other):
        assert "result" in put("before")
        head = server.head()
        broker.freeze()  # then killed with the next commit in flight: the send is retried, then expires
        with ThreadPoolExecutor(1) as pool:
            began = time.monotonic()
            answering = pool.submit(put, "during")
            wait_until(lambda: broker.unread() > BIG, "the commit to reach the frozen broker", timeout=TIMEOUT)
            broker.kill()
            answer = answering.result()
            took = time.monotonic() - began
        assert answer["error"]["code"] == -32000 and answer["error"]["data"] == {"error": "DatabaseUnavailable"}
        assert "retry" in answer["error"]["message"], answer
        assert took < TIMEOUT + 3, took  # within the broker timeout, not a hang
        began = time.monotonic()  # a CLI write: its node cannot open, and says so in one line
        ran = subprocess.run(
            [*drsg_argv(), "--db", str(tmp_path / "cli.drsg"), "node", "put", "cli-during", "-l", "Doc"],
            capture_output=True, text=True, env=clean_env(DRSG_LOG_URL=url), timeout=30,
        )  # fmt: skip
        assert ran.returncode == 1 and ran.stderr.count("\n") == 1 and "start it" in ran.stderr, ran.stderr
        assert time.monotonic() - began < TIMEOUT + 5
        # nothing half-applied: reads go on from the copy, which holds none of it
        assert server.head() == head and server.call("db.stats")["nodes"] == 1
        assert server.call("node.get", {"plane": "startup", "key": "during"}) is None
        broker.start()
        began = time.monotonic()
        assert put("during")["result"]["external_key"] == "during"  # the same call, at the first try
        made = other.write(lambda tx: tx.create_node(tx.plane("startup"), "other-during", ["Doc"], {}))
        assert time.monotonic() - began < TIMEOUT, time.monotonic() - began
        # and the other node's commit reaches the server's node, whose consumer went through it too
        wait_until(lambda: server.head() == made.seq, "the server's node to read the other's commit", timeout=TIMEOUT)
        assert server.call("db.stats")["nodes"] == 3
        with other.snapshot() as snap:
            assert sorted(n.key for n in snap.nodes(0)) == ["before", "during", "other-during"]  # each once


def test_an_import_the_broker_dies_under_leaves_none_of_it_and_writes_go_on_after_the_restart(
    tmp_path: Path, broker: Broker
) -> None:
    url = broker.url(f"import-{uuid.uuid4().hex[:12]}")
    source = tmp_path / "in.jsonl"
    source.write_text("".join(f'{{"external_key":"n{i}","properties":{{"text":"line {i}"}}}}\n' for i in range(2000)))
    importer = drsg.open(tmp_path / "importer.drsg", log=url, settings={"store.import_commit_lines": 5})
    other = drsg.open(tmp_path / "other.drsg", log=url)
    assert isinstance(importer, KafkaDatabase) and isinstance(other, KafkaDatabase)
    try:
        with ThreadPoolExecutor(1) as pool:  # 400 chunk records and a closing one, produced one by one
            importing = pool.submit(importer.import_jsonl, "startup", str(source))
            wait_until(lambda: other.kafka.head() > 30, "the importer to produce part of its chunks", timeout=60)
            broker.kill()
            killed = time.monotonic()
            with pytest.raises(DatabaseUnavailable, match="retry"):
                importing.result()
            assert time.monotonic() - killed < TIMEOUT + 3  # the import's bound, not a hang
        broker.start()
        other.write(lambda tx: tx.create_node(tx.plane("startup"), "after", [], {}))
        again = importer.write(lambda tx: tx.create_node(tx.plane("startup"), "again", [], {}))
        other.catch_up(again.seq)
        assert keys_in(other) == keys_in(importer) == ["after", "again"]  # none of the import, on either node
        assert tables(other) == tables(importer)
        chunks = [c for c in other.commits() if c.origin.get("via") == "import"]  # held, never closed
        assert len(chunks) >= 30 and all(not c.mutations for c in chunks)
        reasons = [str(c.origin["skipped"]) for c in other.commits() if "skipped" in c.origin]
        assert all(r.startswith(STALE_OR_GAP) for r in reasons), reasons
    finally:
        importer.close()
        other.close()
