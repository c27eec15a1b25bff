"""A subscriber that stops reading for 60 s costs `drsg serve` bounded memory, then catches up (issue #4).

A WebSocket subscriber and an SSE subscriber (each with a fixed 64 KiB receive buffer) stop reading
while another process appends ~100 MB worth of notifications per subscriber over the next ~50 s.
The server's RSS is sampled every 100 ms during the 60 s stall: it must stay flat (the server waits
on the socket; the log is the buffer) — an unbounded per-subscriber queue would grow it by ~200 MB.
RPC calls are answered meanwhile. Then both read again and must get every commit once, in order.
"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.support.process_memory import memory_kb
from tests.support.server import TOKEN, clean_env, start_server

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

STALL = 60.0  # seconds the subscribers do not read
COUNT, SIZE = 24_000, 4000  # commits written during the stall, bytes of text in each
RSS_BOUND_MB = 64  # growth allowed over the baseline

# Paced over ~50 s so the writes (and any buffering) happen while the samples are taken.
WRITER = r"""
import sys, time, drsg
db = drsg.open(sys.argv[1])
plane = db.plane("bulk")
count, size, seconds = int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
text = ("the log is the buffer " * (size // 22 + 1))[:size]
step = 100
began = time.monotonic()
for start in range(0, count, step):
    def fn(tx, start=start):
        for i in range(start, min(start + step, count)):
            tx.create_node(plane, None, ["Bulk"], {"text": text, "i": i})
            tx.commit_point()
    db.write(fn, {"via": "stall-writer"})
    delay = began + seconds * (start + step) / count - time.monotonic()
    if delay > 0:
        time.sleep(delay)
"""


class Sampler(threading.Thread):
    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.samples: list[tuple[float, dict[str, int]]] = []
        self.stop = threading.Event()

    def run(self) -> None:
        began = time.monotonic()
        while not self.stop.wait(0.1):
            self.samples.append((time.monotonic() - began, memory_kb(self.pid)))

    def peak(self, name: str) -> int:
        return max(sample[name] for _, sample in self.samples)


def small_receive_buffer(addr_info: Any) -> socket.socket:
    """No receive-buffer autotuning (up to tcp_rmem's 32 MiB): the client holds 64 KiB, no more."""
    family, kind, proto, _, _ = addr_info
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 16)
    return sock


async def ws_seqs(ws: aiohttp.ClientWebSocketResponse, head: int, timeout: float) -> tuple[list[int], int]:
    """plane.change seqs until `head`; and the bytes read."""
    seqs: list[int] = []
    received = 0
    async with asyncio.timeout(timeout):
        while not seqs or seqs[-1] < head:
            msg = await ws.receive()
            assert msg.type == aiohttp.WSMsgType.TEXT, msg
            received += len(msg.data)
            frame = json.loads(msg.data)
            if frame.get("method") == "plane.change":
                seqs.append(frame["params"]["seq"])
    return seqs, received


class SseReader:
    def __init__(self, resp: aiohttp.ClientResponse) -> None:
        self.resp = resp
        self.buffer = b""  # an event cut in two by a chunk boundary

    async def seqs(self, head: int, timeout: float) -> tuple[list[int], int]:
        """Ids of change events until `head`; and the bytes read."""
        seqs: list[int] = []
        received = 0
        async with asyncio.timeout(timeout):
            async for chunk in self.resp.content.iter_any():
                received += len(chunk)
                *events, self.buffer = (self.buffer + chunk).split(b"\n\n")
                seqs += [int(e.split(b"\n", 1)[0].removeprefix(b"id: ")) for e in events if b"event: change" in e]
                if seqs and seqs[-1] >= head:
                    break
        return seqs, received


def test_a_subscriber_that_stops_reading_for_60_s_costs_bounded_memory_then_catches_up(tmp_path: Path) -> None:
    running = start_server(tmp_path / "g.drsg", tmp_path, name="stall")
    pid = running.proc.pid
    try:
        running.call("plane.create", {"name": "bulk"})
        first = running.head() + 1
        for i in range(300):  # warm up: thread pools, caches, the first feed batches
            running.call("node.create", {"plane": "bulk", "labels": ["Bulk"], "properties": {"text": "warm", "i": i}})
        warm_head = running.head()

        async def scenario() -> dict[str, Any]:
            ws_conn = aiohttp.TCPConnector(socket_factory=small_receive_buffer)
            sse_conn = aiohttp.TCPConnector(socket_factory=small_receive_buffer)
            async with (
                aiohttp.ClientSession(connector=ws_conn) as ws_session,
                aiohttp.ClientSession(connector=sse_conn) as sse_session,
                ws_session.ws_connect(f"{running.url}/ws?token={TOKEN}") as ws,
                sse_session.get(f"{running.url}/feed/bulk?token={TOKEN}&from={first}") as sse,
            ):
                watch = {"plane": "bulk", "from_seq": first}
                await ws.send_str(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "plane.watch", "params": watch}))
                reader = SseReader(sse)
                ws_warm, _ = await ws_seqs(ws, warm_head, 30)
                sse_warm, _ = await reader.seqs(warm_head, 30)
                assert ws_warm == sse_warm == list(range(first, warm_head + 1))
                await asyncio.sleep(1)
                baseline = memory_kb(pid)
                sampler = Sampler(pid)
                sampler.start()
                began = time.monotonic()
                writer = await asyncio.create_subprocess_exec(
                    sys.executable, "-c", WRITER, str(running.db), str(COUNT), str(SIZE), str(STALL - 10),
                    env=clean_env(), stderr=subprocess.PIPE,
                )  # fmt: skip
                rpc_ms: list[float] = []
                while time.monotonic() - began < STALL:  # not reading; the server answers others meanwhile
                    await asyncio.sleep(2)
                    asked = time.monotonic()
                    await asyncio.to_thread(running.call, "db.stats")
                    rpc_ms.append((time.monotonic() - asked) * 1000)
                _, err = await writer.communicate()
                assert writer.returncode == 0, err.decode()
                sampler.stop.set()
                sampler.join()
                stalled_for = time.monotonic() - began
                head = running.head()
                assert head == warm_head + COUNT
                resumed = time.monotonic()
                (ws_after, ws_bytes), (sse_after, sse_bytes) = await asyncio.gather(
                    ws_seqs(ws, head, 120), reader.seqs(head, 120)
                )
                return {
                    "baseline": baseline,
                    "sampler": sampler,
                    "stalled_for": stalled_for,
                    "drained_in": time.monotonic() - resumed,
                    "ws": (ws_after, ws_bytes),
                    "sse": (sse_after, sse_bytes),
                    "head": head,
                    "warm_head": warm_head,
                    "rpc_ms": rpc_ms,
                }

        out = asyncio.run(scenario())
        base, sampler, head = out["baseline"], out["sampler"], out["head"]
        growth = {name: (sampler.peak(name) - base[name]) / 1024 for name in base}
        every_10s = [
            f"{t:.0f}s {s['VmRSS'] // 1024}MB" for t, s in sampler.samples[:: max(1, len(sampler.samples) // 7)]
        ]
        print(
            f"\nstall {out['stalled_for']:.1f} s: server VmRSS baseline {base['VmRSS'] // 1024} MB (RssAnon "
            f"{base['RssAnon'] // 1024} MB); peak growth VmRSS {growth['VmRSS']:.1f} MB, RssAnon "
            f"{growth['RssAnon']:.1f} MB, RssFile {growth['RssFile']:.1f} MB over {len(sampler.samples)} samples "
            f"({', '.join(every_10s)}); held back ws {out['ws'][1] / 1e6:.0f} MB, sse {out['sse'][1] / 1e6:.0f} MB; "
            f"drained in {out['drained_in']:.1f} s; db.stats during the stall max {max(out['rpc_ms']):.0f} ms"
        )
        expected = list(range(out["warm_head"] + 1, head + 1))
        for via in ("ws", "sse"):
            seqs, received = out[via]
            assert seqs == expected, (via, len(seqs), len(expected))  # every commit, once, in order
            assert received > 60e6  # what an unbounded buffer would have had to hold
        assert out["stalled_for"] >= STALL
        assert growth["VmRSS"] < RSS_BOUND_MB and growth["RssAnon"] < RSS_BOUND_MB / 2, growth
        assert max(out["rpc_ms"]) < 2000
    finally:
        assert running.stop() == 0
