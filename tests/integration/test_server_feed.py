"""The change feed over the network (surfaces/server/feed_routes.py), against the real server in a subprocess.

WebSocket ``/ws`` (upstream's ``plane.watch`` / ``plane.change`` / ``db.stats``, plus ``from_seq``
resume and ``plane.resolved`` watermarks) and SSE ``/feed/{plane}`` (``Last-Event-ID`` resume):
writes over RPC and from other processes arrive in order and in shape; filters; unwatch and a
replacing watch; auth; malformed frames; a client that stops reading costs bounded memory and then
catches up; SIGTERM closes subscribers; and a load test where writers in four processes race six
subscribers that keep dropping and resuming — each must see its commits exactly once, in order.

Expected deliveries come from tests/support/feed_oracle.py's oracle, a replay of the log independent of the feed code.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

import drsg
from tests.support.feed_clients import Frame, Socket, connect, sse_events, sse_url, ws_url
from tests.support.feed_oracle import oracle
from tests.support.process_memory import memory_kb
from tests.support.server import TOKEN, RunningServer, clean_env, cli, start_server
from tests.support.tcp import tcp_sockets

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    workdir = tmp_path_factory.mktemp("feed-serve")
    running = start_server(workdir / "graph.drsg", workdir, name="feed")
    for name in ("social", "other"):
        running.call("plane.create", {"name": name})
    yield running
    assert running.stop() == 0


def small_receive_buffer(addr_info: Any) -> socket.socket:
    """A client socket with a fixed 64 KiB receive buffer (no autotuning up to tcp_rmem's 32 MiB), so
    a client that stops reading makes the server wait after a few MiB rather than tens."""
    family, kind, proto, _, _ = addr_info
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 16)
    return sock


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def node(server: RunningServer, plane: str, key: str, labels: list[str], **props: Any) -> dict[str, Any]:
    return server.call("node.create", {"plane": plane, "key": key, "labels": labels, "properties": props})  # type: ignore[no-any-return]


# --------------------------------------------------------------------------- WebSocket: the basics


def test_watch_sends_rpc_and_cli_writes_in_upstream_shape(server: RunningServer) -> None:
    async def scenario() -> None:
        async with connect(server) as ws:
            first = await ws.read(timeout=1)  # db.stats at once, before anything is asked
            assert first["method"] == "db.stats" and "id" not in first
            assert first["params"]["commit_seq"] <= server.head() and first["params"]["planes"] >= 3
            head = server.head()
            assert await ws.watch(plane="social") == {"watching": "social", "label": None, "from_seq": head + 1}
            ada = node(server, "social", "ada", ["Person"], name="Ada")
            ran = cli(server.db, "node", "put", "bob", "-p", "social", "-l", "Person", "-P", "name=Bob", "--json")
            assert ran.returncode == 0, ran.stderr
            bob = json.loads(ran.stdout)
            edge = server.call("edge.create", {"plane": "social", "src": ada["id"], "dst": "bob", "type": "KNOWS"})
            server.call("node.update", {"plane": "social", "id": ada["id"], "set": {"age": 36}})
            server.call("node.delete", {"plane": "social", "key": "bob"})
            node(server, "other", "elsewhere", ["Person"])  # another plane: resolved, never sent
            changes = await ws.changes_through(head + 6)

            assert [c["seq"] for c in changes] == [head + 1, head + 2, head + 3, head + 4, head + 5]
            for c in changes:
                assert set(c) == {"plane", "seq", "ts", "truncated", "changes"}
                assert c["plane"] == "social" and c["truncated"] is False and isinstance(c["ts"], int)
            ada_record = {"id": ada["id"], "external_key": "ada", "labels": ["Person"], "properties": {"name": "Ada"}}
            assert changes[0]["changes"] == [
                {"kind": "node", "op": "created", "id": ada["id"], "labels": ["Person"], "record": ada_record}
            ]
            assert changes[1]["changes"][0]["record"]["external_key"] == "bob"  # written by another process
            assert changes[1]["changes"][0]["op"] == "created" and changes[1]["changes"][0]["id"] == bob["id"]
            edge_record = {"id": edge["id"], "src": ada["id"], "dst": bob["id"], "type": "KNOWS", "properties": {}}
            assert changes[2]["changes"] == [{"kind": "edge", "op": "created", "id": edge["id"], "record": edge_record}]
            updated = changes[3]["changes"][0]
            assert updated["op"] == "updated" and updated["record"]["properties"] == {"name": "Ada", "age": 36}
            assert sorted(changes[4]["changes"], key=lambda c: c["kind"]) == [
                {"kind": "edge", "op": "deleted", "id": edge["id"]},
                {"kind": "node", "op": "deleted", "id": bob["id"], "labels": ["Person"]},  # ours: labels kept
            ]

            # db.stats keeps coming every 2 s, with the counts of the moment.
            await ws.until(lambda f: f.get("method") == "db.stats" and len(ws.stats_at) >= 3, timeout=6)
            gaps = [b - a for a, b in zip(ws.stats_at, ws.stats_at[1:], strict=False)]
            assert all(1.5 < gap < 4.0 for gap in gaps), gaps

    run(scenario())


def test_label_and_op_filters(server: RunningServer) -> None:
    async def scenario() -> None:
        async with connect(server) as people, connect(server) as created, connect(server) as either:
            head = server.head()
            assert (await people.watch(plane="social", label="Person"))["label"] == "Person"
            assert (await created.watch(plane="social", ops=["created"]))["label"] is None
            answer = await either.watch(plane="social", labels=["Person", "Company"], ops="created,updated")
            assert answer == {
                "watching": "social",
                "label": None,
                "labels": ["Company", "Person"],
                "from_seq": head + 1,
            }
            carol = node(server, "social", "carol", ["Person"])  # head+1
            acme = node(server, "social", "acme", ["Company"])  # head+2
            server.call("edge.create", {"plane": "social", "src": "carol", "dst": "acme", "type": "WORKS_AT"})  # +3
            server.call("node.update", {"plane": "social", "key": "acme", "set": {"size": 3}})  # head+4
            server.call("node.delete", {"plane": "social", "key": "carol"})  # head+5 (and its edge)
            seen = await people.changes_through(head + 5)
            assert [(m["seq"], [(c["kind"], c["op"], c["id"]) for c in m["changes"]]) for m in seen] == [
                (head + 1, [("node", "created", carol["id"])]),
                (head + 5, [("node", "deleted", carol["id"])]),
            ]
            seen = await created.changes_through(head + 5)
            assert [(m["seq"], [(c["kind"], c["op"]) for c in m["changes"]]) for m in seen] == [
                (head + 1, [("node", "created")]),
                (head + 2, [("node", "created")]),
                (head + 3, [("edge", "created")]),
            ]
            assert seen[1]["changes"][0]["id"] == acme["id"]
            seen = await either.changes_through(head + 5)
            assert [(m["seq"], [(c["kind"], c["op"]) for c in m["changes"]]) for m in seen] == [
                (head + 1, [("node", "created")]),
                (head + 2, [("node", "created")]),
                (head + 4, [("node", "updated")]),
            ]

    run(scenario())


def test_unwatch_and_a_second_watch_replacing_the_first(server: RunningServer) -> None:
    async def scenario() -> None:
        async with connect(server) as ws:
            await ws.watch(plane="social")
            # A second watch replaces the first: everything after its answer is the new watch's.
            assert (await ws.watch(plane="other", label="Person")) == {
                "watching": "other",
                "label": "Person",
                "from_seq": server.head() + 1,
            }
            node(server, "social", "dave", ["Person"])
            mine = node(server, "other", "erin", ["Person"])
            seen = await ws.changes_through(server.head())
            assert [(m["plane"], m["changes"][0]["id"]) for m in seen] == [("other", mine["id"])]

            assert await ws.call("plane.unwatch") == {"jsonrpc": "2.0", "id": ws.rid, "result": {"watching": None}}
            node(server, "other", "frank", ["Person"])
            await asyncio.sleep(0.5)  # the feed polls every 20 ms: a change would be on its way by now
            answer = await ws.call("db.stats")
            assert answer["result"]["commit_seq"] == server.head()
            assert not [f for f in ws.pending if f["method"] in ("plane.change", "plane.resolved")], ws.pending
            # Unwatching when not watching is fine too.
            assert (await ws.call("plane.unwatch"))["result"] == {"watching": None}

    run(scenario())


def test_from_seq_resumes_with_exactly_the_missed_commits(server: RunningServer) -> None:
    async def scenario() -> None:
        start = server.head() + 1
        async with connect(server) as ws:
            assert (await ws.watch(plane="social", from_seq=start))["from_seq"] == start
            keys = [f"resume-{i}" for i in range(10)]
            for key in keys[:4]:
                node(server, "social", key, ["Doc"])
            node(server, "other", "noise", [])
            seen = await ws.changes_through(start + 1)  # read two, then drop the connection
            assert [m["seq"] for m in seen] == [start, start + 1]
        for key in keys[4:]:
            node(server, "social", key, ["Doc"])
        head = server.head()
        async with connect(server) as ws:
            assert (await ws.watch(plane="social", from_seq=seen[-1]["seq"] + 1))["from_seq"] == start + 2
            rest = await ws.changes_through(head)
            got = [m["changes"][0]["record"]["external_key"] for m in seen + rest]
            assert got == keys
            seqs = [m["seq"] for m in seen + rest]
            assert seqs == sorted(set(seqs)) and start + 4 not in seqs  # the `other` plane's commit
            # Past the end of the log is an error; right at its end is "from now".
            error = (await ws.call("plane.watch", {"plane": "social", "from_seq": head + 5}))["error"]
            assert error["code"] == -32602 and f"the log ends at seq {head}" in error["message"]
            assert (await ws.watch(plane="social", from_seq=head + 1))["from_seq"] == head + 1

    run(scenario())


def test_auth_is_checked_before_the_upgrade(server: RunningServer) -> None:
    async def scenario() -> None:
        async with aiohttp.ClientSession() as session:
            for token in (None, "wrong-token"):
                with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                    await session.ws_connect(ws_url(server, token))
                assert refused.value.status == 401
                async with session.get(sse_url(server, "social", token=token)) as resp:
                    assert resp.status == 401 and (await resp.json())["error"]["code"] == -32001
            # The header works too (for clients that can set one).
            headers = {"Authorization": f"Bearer {TOKEN}"}
            async with session.ws_connect(f"{server.url}/ws", headers=headers) as raw:
                assert (await Socket(raw).read(timeout=5))["method"] == "db.stats"
            # A plain GET on /ws is told to speak WebSocket.
            async with session.get(ws_url(server)) as resp:
                assert resp.status == 400 and (await resp.json())["error"]["code"] == -32600

    run(scenario())


def test_bad_frames_get_json_rpc_errors_and_the_connection_stays_usable(server: RunningServer) -> None:
    async def scenario() -> None:
        async with connect(server) as ws:
            await ws.watch(plane="social")
            cases: list[tuple[Any, int, str]] = [
                ("this is not json", -32700, "parse error"),
                ('{"jsonrpc":"2.0","id":1,"method":"plane.watch"', -32700, "parse error"),
                ({"jsonrpc": "2.0", "id": 2, "method": "plane.frobnicate"}, -32601, "method not found"),
                ({"jsonrpc": "2.0", "id": 3, "method": "plane.watch", "params": {}}, -32602, "requires a `plane`"),
                ({"jsonrpc": "2.0", "id": 4, "method": "plane.watch", "params": {"plane": "nope"}}, -32602, "no such"),
                ({"jsonrpc": "2.0", "id": 5, "method": "plane.watch", "params": {"plane": 7}}, -32602, "`plane`"),
                (
                    {"jsonrpc": "2.0", "id": 6, "method": "plane.watch", "params": {"plane": "social", "ops": ["x"]}},
                    -32602,
                    "ops are",
                ),
                (
                    {"jsonrpc": "2.0", "id": 7, "method": "plane.watch", "params": {"plane": "social", "from_seq": 0}},
                    -32602,
                    "from_seq",
                ),
                (
                    {"jsonrpc": "2.0", "id": 8, "method": "plane.watch", "params": {"plane": "social", "bogus": 1}},
                    -32602,
                    "no param 'bogus'",
                ),
                ({"jsonrpc": "1.0", "id": 9, "method": "plane.watch", "params": {"plane": "social"}}, -32600, "2.0"),
                ([{"jsonrpc": "2.0", "id": 10, "method": "plane.unwatch"}], -32600, "batched"),
                ({"jsonrpc": "2.0", "id": 11, "method": "node.get", "params": {"plane": "social"}}, -32602, "node.get"),
                ("[]", -32600, "empty batch"),
            ]
            for request, code, words in cases:
                await ws.send(request)
                answer = await ws.answer(request.get("id") if isinstance(request, dict) else None)
                assert answer["error"]["code"] == code and words in answer["error"]["message"], (request, answer)
            await ws.ws.send_bytes(b"\x00\x01")
            answer = await ws.answer(None)
            assert answer["error"]["code"] == -32600 and "text frames" in answer["error"]["message"]
            # Still usable: ordinary RPC over the socket, and the watch that was in place still runs
            # (a failed plane.watch changes nothing).
            assert (await ws.call("plane.list"))["result"][0]["name"] == "startup"
            made = node(server, "social", "after-errors", [])
            seen = await ws.changes_through(server.head())
            assert seen[-1]["changes"][0]["id"] == made["id"]
            # A notification-style watch (no id) is obeyed but not answered.
            await ws.send({"jsonrpc": "2.0", "method": "plane.unwatch"})
            assert (await ws.call("db.stats"))["id"] == ws.rid

    run(scenario())


# --------------------------------------------------------------------------- SSE


def test_sse_resumes_with_last_event_id_exactly_once_in_order(server: RunningServer) -> None:
    async def scenario() -> None:
        start = server.head() + 1
        for i in range(12):
            node(server, "social", f"sse-{i}", ["Person"] if i % 3 else ["Robot"])
        node(server, "other", "sse-noise", ["Person"])
        async with aiohttp.ClientSession() as session:
            seen: list[tuple[str, int, Frame]] = []
            async with session.get(sse_url(server, "social", f"from={start}&label=Person&resolved=0.2")) as resp:
                assert resp.status == 200 and resp.headers["Content-Type"].startswith("text/event-stream")
                async for event in sse_events(resp):
                    seen.append(event)
                    if len(seen) == 3:
                        break  # drop the stream mid-way
            for i in range(12, 16):
                node(server, "social", f"sse-{i}", ["Person"])
            head = server.head()
            last_id = seen[-1][1]
            headers = {"Last-Event-ID": str(last_id)}
            query = f"from={start}&label=Person&resolved=0.2"  # Last-Event-ID wins over `from`
            async with session.get(sse_url(server, "social", query), headers=headers) as resp:
                async for event in sse_events(resp):
                    seen.append(event)
                    if event[1] >= head:
                        break
            changes = [data for kind, _, data in seen if kind == "change"]
            ids = [seq for kind, seq, _ in seen if kind == "change"]
            assert ids == [data["seq"] for data in changes] == sorted(set(ids))
            keys = [data["changes"][0]["record"]["external_key"] for data in changes]
            assert keys == [f"sse-{i}" for i in range(16) if i % 3 or i >= 12]
            assert all(set(data) == {"plane", "seq", "ts", "truncated", "changes"} for data in changes)
            resolved = [data for kind, _, data in seen if kind == "resolved"]
            assert all(set(data) == {"plane", "seq"} and data["plane"] == "social" for data in resolved)

            # op filter (repeatable or comma-separated), and the errors.
            async with session.get(sse_url(server, "social", f"from={start}&op=updated,deleted")) as resp:
                server.call("node.delete", {"plane": "social", "key": "sse-0"})
                async for kind, seq, data in sse_events(resp):
                    if kind == "change":
                        assert seq == head + 1 and data["changes"][0]["op"] == "deleted"
                        break
            async with session.get(sse_url(server, "nope")) as resp:
                assert resp.status == 404 and "no such plane" in (await resp.json())["error"]["message"]
            for query in ("op=renamed", "from=x", f"from={head + 10}", "resolved=0"):
                async with session.get(sse_url(server, "social", query)) as resp:
                    assert resp.status == 400, query
                    assert (await resp.json())["error"]["code"] == -32602
            async with session.get(sse_url(server, "social"), headers={"Last-Event-ID": "junk"}) as resp:
                assert resp.status == 400

    run(scenario())


# --------------------------------------------------------------------------- a client that stops reading

BULK_WRITER = r"""
import sys, drsg
db = drsg.open(sys.argv[1])
plane = db.plane(sys.argv[2])
count, size, per_txn = int(sys.argv[3]), int(sys.argv[4]), 1000
text = ("the log is the buffer " * (size // 22 + 1))[:size]
for start in range(0, count, per_txn):
    def fn(tx, start=start):
        for i in range(start, min(start + per_txn, count)):
            tx.create_node(plane, None, ["Bulk"], {"text": text, "i": i})
            tx.commit_point()
    db.write(fn, {"via": "bulk"})
"""


def bulk_write(db: Path, plane: str, count: int, size: int) -> None:
    ran = subprocess.run(
        [sys.executable, "-c", BULK_WRITER, str(db), plane, str(count), str(size)],
        capture_output=True,
        text=True,
        env=clean_env(),
        timeout=120,
    )
    assert ran.returncode == 0, ran.stderr


def unsent_bytes(local_port: int, remote_port: int) -> int:
    """Bytes the kernel holds unsent (or unacknowledged) on the TCP socket local_port → remote_port."""
    for local, remote, unsent, _ in tcp_sockets():
        if (local, remote) == (local_port, remote_port):
            return unsent
    raise AssertionError(f"no TCP socket {local_port} → {remote_port}")


class MemoryWatch(threading.Thread):
    """Samples a process's RSS every 20 ms; ``peak`` holds the largest values seen."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.peak = memory_kb(pid)
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(0.02):
            for name, kb in memory_kb(self.pid).items():
                self.peak[name] = max(self.peak[name], kb)


class Stall:
    """What one stalled subscriber cost the server, and how it caught up."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.baseline = memory_kb(pid)
        self.watch = MemoryWatch(pid)
        self.watch.start()
        self.began = time.monotonic()
        self.backlog = self.bytes = 0
        self.stalled_for = self.drained_in = 0.0

    def stalled(self, server_port: int, client_port: int) -> None:
        # The server's socket is backed up: the client is not taking what it was sent.
        self.backlog = unsent_bytes(server_port, client_port)
        self.stalled_for = time.monotonic() - self.began
        self.watch.stop.set()
        self.watch.join()
        self.began = time.monotonic()

    def drained(self, received: int) -> None:
        self.bytes = received
        self.drained_in = time.monotonic() - self.began

    @property
    def growth_mb(self) -> dict[str, int]:
        return {name: (self.watch.peak[name] - self.baseline[name]) // 1024 for name in self.baseline}

    def report(self, via: str) -> str:
        return (
            f"{via}: {self.bytes / 1e6:.1f} MB of notifications held back {self.stalled_for:.1f} s "
            f"(socket backlog {self.backlog / 1e6:.1f} MB); server RSS {self.baseline['VmRSS'] // 1024} MB, "
            f"peak growth {self.growth_mb} MB; drained in {self.drained_in:.1f} s"
        )


def test_a_client_that_stops_reading_costs_bounded_memory_then_catches_up(tmp_path: Path) -> None:
    """20k commits (~85 MB of notifications) are written while a WS subscriber, then an SSE one,
    does not read. The server waits on the socket (the log is the buffer): its memory stays flat
    (an unbounded outbox grows RssAnon by ~80 MB here), it keeps serving others, and the subscriber
    then gets every commit, in order."""
    running = start_server(tmp_path / "g.drsg", tmp_path, name="stall")
    count, size = 20_000, 4000
    pid = running.proc.pid
    try:
        running.call("plane.create", {"name": "bulk"})

        async def scenario() -> tuple[Stall, Stall, float]:
            small = aiohttp.TCPConnector(socket_factory=small_receive_buffer)
            async with connect(running, connector=small) as ws:
                assert (await ws.watch(plane="bulk"))["watching"] == "bulk"
                # Warm up (thread pools, caches) so the baseline is the steady state.
                bulk_write(running.db, "bulk", 500, size)
                warm = await ws.changes_through(running.head())
                assert len(warm) == 500
                first = warm[-1]["seq"] + 1
                stall = Stall(pid)
                await asyncio.to_thread(bulk_write, running.db, "bulk", count, size)  # not reading meanwhile
                head = running.head()
                await asyncio.sleep(3)  # keep not reading: the server must wait, not buffer
                began = time.monotonic()
                assert running.call("db.stats")["commit_seq"] == head  # others are served meanwhile
                rpc_ms = (time.monotonic() - began) * 1000
                stall.stalled(running.port, ws.ws.get_extra_info("sockname")[1])
                received = 0
                seqs: list[int] = []
                while not seqs or seqs[-1] < head:
                    msg = await ws.ws.receive(30)
                    assert msg.type == aiohttp.WSMsgType.TEXT, msg
                    received += len(msg.data)
                    frame = json.loads(msg.data)
                    if frame.get("method") == "plane.change":
                        seqs.append(frame["params"]["seq"])
                        assert frame["params"]["changes"][0]["record"]["properties"]["i"] == len(seqs) - 1
                stall.drained(received)
                assert seqs == list(range(first, head + 1))  # everything, in order, nothing twice

            small = aiohttp.TCPConnector(socket_factory=small_receive_buffer)
            async with (
                aiohttp.ClientSession(connector=small) as session,
                session.get(sse_url(running, "bulk", f"from={first}")) as resp,
            ):
                sse_stall = Stall(pid)
                await asyncio.sleep(3)
                transport = resp.connection.transport if resp.connection is not None else None
                assert transport is not None
                sse_stall.stalled(running.port, transport.get_extra_info("sockname")[1])
                ids: list[int] = []
                received = 0
                async for kind, seq, data in sse_events(resp):
                    if kind == "change":
                        ids.append(seq)
                        received += len(json.dumps(data))
                        if seq == head:
                            break
                sse_stall.drained(received)
                assert ids == list(range(first, head + 1))
            return stall, sse_stall, rpc_ms

        stall, sse_stall, rpc_ms = run(scenario())
        print(f"\n{stall.report('ws')}; db.stats meanwhile {rpc_ms:.0f} ms\n{sse_stall.report('sse')}")
        # The payload is several times what the kernel's socket buffers can hold (client 64 KiB,
        # server send buffer at most tcp_wmem's max): the rest waited in the log, not in the server.
        wmem_max = int(Path("/proc/sys/net/ipv4/tcp_wmem").read_text().split()[2])
        for measured in (stall, sse_stall):
            assert measured.backlog > 0 and measured.bytes > 3 * (wmem_max + (1 << 17))
            # RssAnon is the server's own memory; VmRSS adds the LMDB pages it has mapped (file
            # cache, reclaimable), which grow with whatever the server — or its indexer — has read.
            assert measured.growth_mb["RssAnon"] < 40 and measured.growth_mb["VmRSS"] < 150, measured.growth_mb
        assert rpc_ms < 2000
    finally:
        assert running.stop() == 0


def test_a_stalled_client_can_stop_its_watch(server: RunningServer) -> None:
    """plane.unwatch sent while the server waits on the socket: answered after what was already on
    its way, with nothing of the old watch after it, and the connection stays healthy."""
    server.call("plane.create", {"name": "backlog"})
    first = server.head() + 1
    bulk_write(server.db, "backlog", 8000, 1000)  # ~10 MB of notifications: more than the socket holds

    async def scenario() -> None:
        small = aiohttp.TCPConnector(socket_factory=small_receive_buffer)
        async with connect(server, connector=small) as ws:
            await ws.watch(plane="backlog", from_seq=first)
            await asyncio.sleep(1)  # not reading: the server is waiting on the socket
            await ws.send({"jsonrpc": "2.0", "id": "stop", "method": "plane.unwatch"})
            frames = await ws.until(lambda f: f.get("id") == "stop", timeout=30)
            assert frames[-1]["result"] == {"watching": None}
            seqs = [f["params"]["seq"] for f in frames if f.get("method") == "plane.change"]
            assert seqs == list(range(first, first + len(seqs))) and len(seqs) < 8000
            await asyncio.sleep(0.3)
            answer = await ws.call("db.stats")
            assert answer["result"]["commit_seq"] == server.head()
            assert not [f for f in ws.pending if f.get("method") in ("plane.change", "plane.resolved")]

    run(scenario())


# --------------------------------------------------------------------------- shutdown


def test_sigterm_closes_subscribers_and_the_server_exits(tmp_path: Path) -> None:
    running = start_server(tmp_path / "g.drsg", tmp_path, name="sigterm")
    running.call("plane.create", {"name": "social"})
    bulk_write(running.db, "social", 8000, 1000)  # enough to fill a stalled client's buffers

    async def scenario() -> tuple[float, int | None, bool, int]:
        small = aiohttp.TCPConnector(socket_factory=small_receive_buffer)
        async with (
            aiohttp.ClientSession() as session,
            aiohttp.ClientSession(connector=small) as stalled_session,
            session.ws_connect(ws_url(running)) as reader,
            stalled_session.ws_connect(ws_url(running)) as stalled,
            session.get(sse_url(running, "social")) as sse,
            stalled_session.get(sse_url(running, "social", "from=1")) as stalled_sse,
        ):
            await Socket(reader).watch(plane="social")
            watch = {"jsonrpc": "2.0", "id": 1, "method": "plane.watch", "params": {"plane": "social", "from_seq": 1}}
            await stalled.send_str(json.dumps(watch))
            assert sse.status == 200 and stalled_sse.status == 200
            await sse.content.readline()  # the stream is open ("retry: …")
            await asyncio.sleep(1.0)  # the stalled ones fill their buffers
            began = time.monotonic()
            running.proc.send_signal(signal.SIGTERM)
            frames = [msg async for msg in reader]  # ends at the close frame
            closed_in = time.monotonic() - began
            assert all(msg.type == aiohttp.WSMsgType.TEXT for msg in frames)
            await asyncio.wait_for(sse.content.read(), 10)  # the end of the stream, cleanly (no payload error)
            ended = sse.content.at_eof()
            exit_code = await asyncio.to_thread(running.proc.wait, 15)
            return closed_in, reader.close_code, ended, exit_code

    began = time.monotonic()
    closed_in, close_code, sse_ended, exit_code = run(scenario())
    exited_in = time.monotonic() - began
    assert close_code == 1001 and closed_in < 2.0
    assert sse_ended
    assert exit_code == 0 and exited_in < 8, exited_in
    events = [line["event"] for line in running.logs()]
    assert "closing feeds" in events and events[-1] == "stopped"


# --------------------------------------------------------------------------- load

LOAD_WRITER = r"""
import random, sys, time, drsg
path, name, count, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
rng = random.Random(seed)
db = drsg.open(path)
mine = []
for i in range(count):
    time.sleep(rng.uniform(0, 0.004))
    roll = rng.random()
    if roll < 0.08:
        db.write(lambda tx: tx.create_node(tx.plane("other"), None, ["Person"], {}), {"via": name})
    elif roll < 0.22 and mine:
        key = rng.choice(mine)
        db.write(lambda tx: tx.update_node(tx.plane("load"), "@" + key, {"n": i}), {"via": name})
    elif roll < 0.32 and len(mine) > 2:
        key = mine.pop(rng.randrange(len(mine)))
        db.write(lambda tx: tx.delete_node(tx.plane("load"), "@" + key), {"via": name})
    else:
        key, labels, link = f"{name}-{i}", ["Person"] if rng.random() < 0.5 else ["Robot"], rng.random() < 0.4
        def create(tx):
            p = tx.plane("load")
            made = tx.create_node(p, key, labels, {"i": i})
            if mine and link:
                tx.create_edge(p, made.id, "@" + mine[-1], "NEXT")
        db.write(create, {"via": name})
        mine.append(key)
"""

FILTERS: list[tuple[str, dict[str, Any]]] = [
    ("all", {}),
    ("Person", {"label": "Person"}),
    ("created", {"ops": ["created"]}),
]


RPC_WRITER = r"""
import http.client, json, random, sys, time
host, port, token, name = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
count, seed = int(sys.argv[5]), int(sys.argv[6])
rng = random.Random(seed)
conn = http.client.HTTPConnection(host, port, timeout=60)
def call(method, params):
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
    conn.request("POST", "/rpc", body, {"Authorization": "Bearer " + token, "Content-Type": "application/json"})
    answer = json.loads(conn.getresponse().read())
    assert "result" in answer, (method, params, answer)
mine = []
for i in range(count):
    time.sleep(rng.uniform(0, 0.004))
    roll = rng.random()
    if roll < 0.08:
        call("node.create", {"plane": "other", "labels": ["Person"]})
    elif roll < 0.22 and mine:
        call("node.update", {"plane": "load", "key": rng.choice(mine), "set": {"n": i}})
    elif roll < 0.32 and len(mine) > 2:
        call("node.delete", {"plane": "load", "key": mine.pop(rng.randrange(len(mine)))})
    else:
        key, labels = f"{name}-{i}", ["Person"] if rng.random() < 0.5 else ["Robot"]
        call("node.create", {"plane": "load", "key": key, "labels": labels, "properties": {"i": i}})
        if mine and rng.random() < 0.4:  # a second commit: the edge
            call("edge.create", {"plane": "load", "src": key, "dst": mine[-1], "type": "NEXT"})
        mine.append(key)
"""


class Subscriber:
    """Follows plane `load` through one filter, dropping the connection at random and resuming."""

    MIN_RECONNECTS = 18  # six subscribers: at least 108 resumes between them

    def __init__(self, server: RunningServer, kind: str, filter_name: str, start: int, seed: int) -> None:
        self.server = server
        self.kind = kind
        self.filter_name = filter_name
        self.params = dict(FILTERS)[filter_name]
        self.position = start  # the next seq wanted
        self.start = start
        self.rng = random.Random(seed)
        self.messages: list[Frame] = []
        self.reconnects = 0
        self.final_head: int | None = None  # set once the writers are done
        self.connected = False

    def take(self, seq: int, message: Frame | None) -> None:
        if message is not None:
            self.messages.append(message)
        self.position = max(self.position, seq + 1)

    def done(self) -> bool:
        return (
            self.final_head is not None and self.position > self.final_head and self.reconnects >= self.MIN_RECONNECTS
        )

    async def run(self, session: aiohttp.ClientSession) -> None:
        while not self.done():
            budget = self.rng.uniform(0.05, 0.25)
            self.connected = False
            if self.kind == "ws":
                await self._ws(session, budget)
            else:
                await self._sse(session, budget)
            self.reconnects += self.connected  # a resume: the feed was (re)started at self.position

    # Each connection is dropped ``budget`` seconds after its first frame: a budget that began at the
    # connect could run out, on a loaded machine, before a feed far behind the head sent anything —
    # every connection then dropped with nothing read, and the subscribers never caught up.

    def _frame(self, frame: Frame) -> None:
        if frame.get("method") == "plane.change":
            self.take(frame["params"]["seq"], frame["params"])
        elif frame.get("method") == "plane.resolved":
            self.take(frame["params"]["seq"], None)

    async def _ws(self, session: aiohttp.ClientSession, budget: float) -> None:
        async with session.ws_connect(ws_url(self.server)) as raw:
            ws = Socket(raw)
            try:
                await ws.watch(plane="load", from_seq=self.position, resolved_every=0.1, **self.params)
                self.connected = True
                self._frame(await ws.frame())
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(budget):
                        while not self.done():
                            self._frame(await ws.frame())
            finally:
                if self.rng.random() < 0.5:  # drop it without a close frame
                    transport = raw.get_extra_info("socket")
                    if transport is not None:
                        with contextlib.suppress(OSError):
                            transport.shutdown(socket.SHUT_RDWR)

    async def _sse(self, session: aiohttp.ClientSession, budget: float) -> None:
        query = "resolved=0.1"
        if "label" in self.params:
            query += f"&label={self.params['label']}"
        if "ops" in self.params:
            query += "&op=" + ",".join(self.params["ops"])
        headers = {}
        if self.reconnects == 0:
            query += f"&from={self.position}"
        else:
            headers["Last-Event-ID"] = str(self.position - 1)
        async with session.get(sse_url(self.server, "load", query), headers=headers) as resp:
            assert resp.status == 200, await resp.text()
            self.connected = True
            events = aiter(sse_events(resp))
            try:
                async with asyncio.timeout(15):
                    kind, seq, data = await anext(events)
                self.take(seq, data if kind == "change" else None)
                async with asyncio.timeout(budget):
                    while not self.done():
                        kind, seq, data = await anext(events)
                        self.take(seq, data if kind == "change" else None)
            except (TimeoutError, StopAsyncIteration):  # dropped, or the server ended the stream
                pass
            finally:
                resp.close()  # drop the connection


def test_load_writers_in_four_processes_and_subscribers_that_keep_resuming(tmp_path: Path) -> None:
    running = start_server(tmp_path / "g.drsg", tmp_path, name="load")
    try:
        for name in ("load", "other"):
            running.call("plane.create", {"name": name})
        start = running.head() + 1
        per_writer = 750

        async def scenario() -> list[Subscriber]:
            subscribers = [
                Subscriber(running, kind, filter_name, start, seed)
                for seed, (kind, filter_name) in enumerate(
                    (kind, name) for kind in ("ws", "sse") for name, _ in FILTERS
                )
            ]
            async with aiohttp.ClientSession() as session:
                readers = [asyncio.create_task(s.run(session)) for s in subscribers]
                local = [sys.executable, "-c", LOAD_WRITER, str(running.db)]
                remote = [sys.executable, "-c", RPC_WRITER, running.host, str(running.port), TOKEN]
                argvs = [[*local, f"proc{i}", str(per_writer), str(i)] for i in range(2)]
                argvs += [[*remote, f"rpc{i}", str(per_writer), str(10 + i)] for i in range(2)]
                processes = [
                    await asyncio.create_subprocess_exec(*argv, env=clean_env(), stderr=subprocess.PIPE)
                    for argv in argvs
                ]
                for proc in processes:
                    _, err = await proc.communicate()
                    assert proc.returncode == 0, err.decode()
                head = running.head()
                for s in subscribers:
                    s.final_head = head
                try:
                    async with asyncio.timeout(60):
                        await asyncio.gather(*readers)
                except TimeoutError:  # where each one got to, to tell a slow feed from a stuck one
                    states = [(s.kind, s.filter_name, s.position, s.reconnects, s.connected) for s in subscribers]
                    raise AssertionError(f"subscribers not done 60 s after head {head}: {states}") from None
            return subscribers

        began = time.monotonic()
        subscribers = run(scenario())
        took = time.monotonic() - began
        with drsg.open(running.db, readonly=True) as db:
            commits = db.head() - start + 1
            expected = {
                "all": oracle(db, "load", start),
                "Person": oracle(db, "load", start, label="Person"),
                "created": oracle(db, "load", start, created_only=True),
            }
        resumes = sum(s.reconnects for s in subscribers)
        print(f"\nload: {commits} commits, {resumes} resumes over 6 subscribers in {took:.1f} s")
        assert commits >= 3000 and resumes >= 100
        by_filter: dict[str, list[list[Frame]]] = {}
        for s in subscribers:
            seqs = [m["seq"] for m in s.messages]
            assert seqs == expected[s.filter_name], (s.kind, s.filter_name, len(seqs), len(expected[s.filter_name]))
            by_filter.setdefault(s.filter_name, []).append(s.messages)
        for name, (ws_messages, sse_messages) in by_filter.items():
            assert ws_messages == sse_messages, name  # the same commits, byte for byte, both ways
        assert len(expected["Person"]) < len(expected["all"]) and len(expected["created"]) < len(expected["all"])
    finally:
        assert running.stop() == 0
