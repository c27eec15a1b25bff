"""Subscribers that drop and resume, for the feed's load tests against a running `drsg serve`:
a :class:`Follower` follows one filter over /ws or SSE and keeps what it got; :data:`RPC_WRITER` is the
script a JSON-RPC writer process runs."""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import socket
from pathlib import Path
from typing import Any

import aiohttp

from tests.support.feed_oracle import Change, Filter, change_of
from tests.support.server import TOKEN, RunningServer

MIN_RESUMES = 5  # per subscriber; 20 subscribers: 100 at least


RPC_WRITER = Path(__file__).resolve().parents[1] / "support" / "feed_rpc_writer.py"


def changes_of(message: dict[str, Any]) -> list[Change]:
    return [change_of(c["kind"], c["op"], c["id"], c.get("labels", ())) for c in message["changes"]]


def first_difference(got: list[Any], expected: list[Any]) -> str:
    for i, (a, b) in enumerate(zip(got, expected, strict=False)):
        if a != b:
            return f"message {i}: got {a}, expected {b}"
    return f"got {len(got)} messages, expected {len(expected)}"


class Follower:
    """One subscriber: follows a filter, drops its connection at random points, resumes where it was."""

    def __init__(self, server: RunningServer, via: str, feed: Filter, start: int, seed: int) -> None:
        self.server = server
        self.via = via
        self.feed = feed
        self.position = start  # the next seq wanted
        self.rng = random.Random(seed)
        self.got: list[tuple[int, list[Change]]] = []
        self.connections = 0
        self.head: int | None = None  # the last seq, once the writers are done

    @property
    def resumes(self) -> int:
        return max(0, self.connections - 1)

    def done(self) -> bool:
        return self.head is not None and self.position > self.head and self.resumes >= MIN_RESUMES

    def take(self, seq: int, message: dict[str, Any] | None) -> None:
        if message is not None:
            self.got.append((seq, changes_of(message)))
        self.position = max(self.position, seq + 1)

    async def run(self, session: aiohttp.ClientSession) -> None:
        while not self.done():
            # Drop the connection after a random number of changes or a random time, whichever first.
            budget = self.rng.randint(1, 600)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.rng.uniform(0.05, 2.5)):
                    await getattr(self, f"_{self.via}")(session, budget)  # _ws, _sse (or a subclass's)

    async def _ws(self, session: aiohttp.ClientSession, budget: int) -> None:
        params: dict[str, Any] = {"plane": self.feed.plane, "from_seq": self.position, "resolved_every": 0.2}
        if self.feed.labels:
            params["labels"] = sorted(self.feed.labels)
        if self.feed.ops:
            params["ops"] = sorted(self.feed.ops)
        async with session.ws_connect(f"{self.server.url}/ws?token={TOKEN}") as ws:
            try:
                await ws.send_str(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "plane.watch", "params": params}))
                watching = False
                while budget > 0 and not self.done():
                    msg = await ws.receive(30)
                    assert msg.type == aiohttp.WSMsgType.TEXT, (msg.type, msg.data)
                    frame = json.loads(msg.data)
                    method = frame.get("method")
                    if method == "plane.change":
                        assert watching
                        self.take(frame["params"]["seq"], frame["params"])
                        budget -= 1
                    elif method == "plane.resolved":
                        self.take(frame["params"]["seq"], None)
                    elif frame.get("id") == 1:
                        assert frame["result"]["from_seq"] == params["from_seq"], frame
                        watching = True
                        self.connections += 1
            finally:
                if self.rng.random() < 0.5:  # half the time, vanish without a close frame
                    raw = ws.get_extra_info("socket")
                    if raw is not None:
                        with contextlib.suppress(OSError):
                            raw.shutdown(socket.SHUT_RDWR)

    async def _sse(self, session: aiohttp.ClientSession, budget: int) -> None:
        query = [f"token={TOKEN}", "resolved=0.2"]
        if self.feed.labels:
            query.append("label=" + ",".join(sorted(self.feed.labels)))
        if self.feed.ops:
            query += [f"op={op}" for op in sorted(self.feed.ops)]
        headers = {"Last-Event-ID": str(self.position - 1)}
        if self.connections == 0 or self.rng.random() < 0.3:  # `from` works as well as Last-Event-ID
            query.append(f"from={self.position}")
            headers = {}
        url = f"{self.server.url}/feed/{self.feed.plane}?" + "&".join(query)
        async with session.get(url, headers=headers) as resp:
            assert resp.status == 200, await resp.text()
            self.connections += 1
            try:
                buffer = b""
                async for chunk in resp.content.iter_any():
                    buffer += chunk
                    *events, buffer = buffer.split(b"\n\n")
                    for event in events:
                        fields = dict(line.split(": ", 1) for line in event.decode().split("\n") if ": " in line)
                        if "id" not in fields:
                            continue  # "retry: …"
                        data = json.loads(fields["data"])
                        if fields["event"] == "change":
                            self.take(int(fields["id"]), data)
                            budget -= 1
                        else:
                            self.take(int(fields["id"]), None)
                        if budget <= 0 or self.done():
                            return
            finally:
                resp.close()  # drop the connection
