"""`drsg serve` on a Kafka log (``DRSG_LOG_URL``, the ``[log] url`` setting): the server's node writes
through the topic and serves JSON-RPC and the change feed from its LMDB copy, so commits another
node makes arrive over SSE and WebSocket, and a subscriber that drops and comes back (SSE
``Last-Event-ID``, WebSocket ``from_seq``) gets every commit once, in order — the embedded feed's
resume semantics, on the copy.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest

import drsg
from drsg.store.kafka.database import KafkaDatabase
from drsg.store.kafka.materialiser import BASE, PREV, u64_header
from drsg.store.log import encode
from drsg.store.mutations import NodePut
from tests.support.feed_clients import Frame, connect, sse_events, sse_url
from tests.support.kafka_broker import Broker
from tests.support.kafka_nodes import produce, serve_on_kafka
from tests.support.server import RunningServer, clean_env, cli, drsg_argv
from tests.support.waiting import wait_until

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def served(tmp_path: Path, kafka_broker: Broker) -> Iterator[tuple[RunningServer, KafkaDatabase]]:
    with serve_on_kafka(tmp_path, kafka_broker.url(f"serve-{uuid.uuid4().hex[:12]}")) as nodes:
        yield nodes


def test_the_server_node_feeds_another_nodes_commits_and_resumes_from_last_event_id(
    served: tuple[RunningServer, KafkaDatabase],
) -> None:
    server, other = served
    made = server.call("node.create", {"plane": "startup", "key": "by-server", "labels": ["Doc"], "properties": {}})
    assert made["external_key"] == "by-server"
    other.catch_up(2)
    assert other.plane("startup").id == 0 and other.stats().nodes == 1  # the server's write reached the other

    def write(i: int) -> int:
        seq = other.write(lambda tx: tx.create_node(tx.plane("startup"), f"k{i}", ["Doc"], {"i": i})).seq
        assert seq is not None
        return seq

    async def scenario() -> list[tuple[str, int, Frame]]:
        seen: list[tuple[str, int, Frame]] = []
        first = [write(i) for i in range(4)]
        async with aiohttp.ClientSession() as session:
            async with session.get(sse_url(server, "startup", "from=3")) as resp:
                assert resp.status == 200
                async for event in sse_events(resp):
                    if event[0] == "change":
                        seen.append(event)
                    if event[1] >= first[1]:
                        break  # drop the stream after two commits
            later = [write(i) for i in range(4, 8)]
            headers = {"Last-Event-ID": str(seen[-1][1])}
            async with session.get(sse_url(server, "startup"), headers=headers) as resp:
                async for event in sse_events(resp):
                    if event[0] == "change":
                        seen.append(event)
                    if event[1] >= later[-1]:
                        break
        return seen

    seen = asyncio.run(asyncio.wait_for(scenario(), 60))
    ids = [seq for _, seq, _ in seen]
    assert ids == sorted(set(ids))  # once each, in order
    keys = [data["changes"][0]["record"]["external_key"] for _, _, data in seen]
    assert keys == [f"k{i}" for i in range(8)]


def test_a_websocket_watch_resumes_from_seq_with_another_nodes_commits_once_in_order(
    served: tuple[RunningServer, KafkaDatabase],
) -> None:
    server, other = served
    other.write(lambda tx: tx.create_plane("docs"))

    def write(plane: str, key: str) -> int:
        seq = other.write(lambda tx: tx.create_node(tx.plane(plane), key, ["Doc"], {})).seq
        assert seq is not None
        return seq

    async def scenario() -> tuple[list[Frame], list[Frame]]:
        start = other.head() + 1
        # the server's node has made its copy of the plane's creation (a watch cannot start past its head)
        wait_until(lambda: server.call("db.stats")["commit_seq"] >= start - 1, "the server's node to catch up")
        async with connect(server) as ws:
            assert (await ws.watch(plane="docs", from_seq=start))["from_seq"] == start
            first = [write("docs", f"d{i}") for i in range(3)]
            seen = await ws.changes_through(first[1])  # two, then the connection drops
        noise = write("startup", "elsewhere")  # another plane's commit: no change for `docs`
        last = [write("docs", f"d{i}") for i in range(3, 6)]
        async with connect(server) as ws:
            resumed = await ws.watch(plane="docs", from_seq=seen[-1]["seq"] + 1)
            assert resumed["from_seq"] == first[2]
            rest = await ws.changes_through(last[-1])
        assert noise not in [m["seq"] for m in seen + rest]
        return seen, rest

    seen, rest = asyncio.run(asyncio.wait_for(scenario(), 60))
    seqs = [m["seq"] for m in seen + rest]
    assert seqs == sorted(set(seqs))
    assert [m["changes"][0]["record"]["external_key"] for m in seen + rest] == [f"d{i}" for i in range(6)]


def test_health_says_how_far_the_copy_is_and_degraded_once_it_stops_following_the_topic(
    served: tuple[RunningServer, KafkaDatabase], kafka_broker: Broker
) -> None:
    server, other = served
    made = other.write(lambda tx: tx.create_node(tx.plane("startup"), "k", ["Doc"], {})).seq
    assert made is not None
    wait_until(lambda: server.get("/health").json()["log"]["materialised"] >= made, "the server's node to catch up")
    health = server.get("/health")
    assert health.status == 200 and {k: health.json()[k] for k in ("status", "version", "log")} == {
        "status": "ok", "version": drsg.__version__,
        "log": {"head": made, "materialised": made, "behind": 0, "poison_records": 0, "failing": False},
    }  # fmt: skip
    # a commit made on another record at the same seq: the topic is not the log this copy holds
    forged = encode(1, {}, [NodePut(0, 99, "forged", ["Doc"], {})])
    produce(kafka_broker, other.kafka.topic, forged, {BASE: u64_header(made), PREV: u64_header(12345)})
    wait_until(lambda: server.get("/health").json()["status"] == "degraded", "the server's node to stop", timeout=30)
    health = server.get("/health")
    assert health.status == 200 and health.json()["log"]["failing"] is True  # it still answers from its copy
    assert health.json()["log"]["materialised"] == made and health.json()["log"]["behind"] >= 1
    assert other.kafka.topic.encode() not in health.body and b"127.0.0.1" not in health.body  # no URL for everyone
    assert "another commit" in server.call("db.stats")["log"]["error"]  # the reason, behind the token


def test_a_poison_record_is_counted_in_db_stats_and_drsg_stats_logged_and_the_node_goes_on(
    served: tuple[RunningServer, KafkaDatabase], kafka_broker: Broker, tmp_path: Path
) -> None:
    server, other = served
    before = server.call("db.stats")
    assert before["log"] == {
        "url": other.log_url, "head": before["commit_seq"], "materialised": before["commit_seq"],
        "poison_records": 0, "error": None, "rebuilt": None,
    }  # fmt: skip
    poison = produce(kafka_broker, other.kafka.topic, b"\x00 not a drsg commit")  # another tool's raw bytes
    other.catch_up(poison)  # else the write may be made before it, land stale, and run again
    made = other.write(lambda tx: tx.create_node(tx.plane("startup"), "after-poison", ["Doc"], {}))
    assert made.seq == poison + 1
    wait_until(lambda: server.head() >= made.seq, "the server's node to materialise the commit after the poison")
    after = server.call("db.stats")
    assert after["nodes"] == before["nodes"] + 1  # it went on past the poison record
    assert after["log"] == {**before["log"], "head": made.seq, "materialised": made.seq, "poison_records": 1}
    skips = [e for e in server.logs() if e["event"] == "kafka_record_skipped"]
    assert [(e["url"], e["seq"], e["level"]) for e in skips] == [(other.log_url, poison, "warning")], skips
    assert skips[0]["reason"]
    # `drsg stats` on a node of its own says so too; the embedded store's output is as it was
    env = clean_env(DRSG_LOG_URL=other.log_url)
    argv = [*drsg_argv(), "--db", str(tmp_path / "third.drsg"), "stats"]
    ran = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60)
    assert ran.returncode == 0, ran.stderr
    assert (
        f"log {other.log_url}: {made.seq} of {made.seq} commits materialised; poison records skipped: 1" in ran.stdout
    )
    drsg.open(tmp_path / "embedded.drsg").close()
    embedded = cli(tmp_path / "embedded.drsg", "stats", "--json")
    lines = cli(tmp_path / "embedded.drsg", "stats").stdout.splitlines()
    assert "log" not in json.loads(embedded.stdout) and not any(line.startswith("log ") for line in lines)
    assert lines[-1] == "history: commits 1..1 may be read"  # the queryable window, not a log line
