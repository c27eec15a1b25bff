"""Clients of `drsg serve`'s change feed for tests: a /ws JSON-RPC socket (:func:`connect` gives a
:class:`Socket`) and the SSE stream at /feed/PLANE (:func:`sse_url`, :func:`sse_events`)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import aiohttp

from tests.support.server import TOKEN, RunningServer

Frame = dict[str, Any]


def ws_url(server: RunningServer, token: str | None = TOKEN) -> str:
    return f"{server.url}/ws" + (f"?token={token}" if token is not None else "")


def sse_url(server: RunningServer, plane: str, query: str = "", token: str | None = TOKEN) -> str:
    parts = ([f"token={token}"] if token is not None else []) + ([query] if query else [])
    return f"{server.url}/feed/{plane}" + ("?" + "&".join(parts) if parts else "")


class Socket:
    """A /ws client: ``call`` returns the answer to a request; notifications are read in order."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self.ws = ws
        self.rid = 0
        self.pending: list[Frame] = []  # notifications read while waiting for an answer
        self.stats_at: list[float] = []

    async def frame(self, timeout: float = 15) -> Frame:
        if self.pending:
            return self.pending.pop(0)
        return await self.read(timeout)

    async def read(self, timeout: float = 15) -> Frame:
        msg = await self.ws.receive(timeout)
        assert msg.type == aiohttp.WSMsgType.TEXT, (msg.type, msg.data)
        frame: Frame = json.loads(msg.data)
        if frame.get("method") == "db.stats":
            self.stats_at.append(time.monotonic())
        return frame

    async def send(self, request: Any) -> None:
        await self.ws.send_str(request if isinstance(request, str) else json.dumps(request))

    async def call(self, method: str, params: Any = None, timeout: float = 15) -> Frame:
        self.rid += 1
        request: Frame = {"jsonrpc": "2.0", "id": self.rid, "method": method}
        if params is not None:
            request["params"] = params
        await self.send(request)
        return await self.answer(self.rid, timeout)

    async def answer(self, rid: Any, timeout: float = 15) -> Frame:
        async with asyncio.timeout(timeout):
            while True:
                frame = await self.read(timeout)
                if "method" not in frame and frame.get("id") == rid:
                    return frame
                self.pending.append(frame)

    async def watch(self, **params: Any) -> Frame:
        answer = await self.call("plane.watch", params)
        assert "result" in answer, answer
        return answer["result"]  # type: ignore[no-any-return]

    async def until(self, done: Callable[[Frame], bool], timeout: float = 15) -> list[Frame]:
        """Notifications up to and including the first for which ``done`` holds."""
        out: list[Frame] = []
        async with asyncio.timeout(timeout):
            while True:
                frame = await self.frame(timeout)
                out.append(frame)
                if done(frame):
                    return out

    async def changes_through(self, seq: int, timeout: float = 15) -> list[Frame]:
        """``plane.change`` params until the feed has resolved ``seq`` (a change at or past it, or a watermark)."""

        def reached(frame: Frame) -> bool:
            method, params = frame.get("method"), frame.get("params") or {}
            return method in ("plane.change", "plane.resolved") and params.get("seq", 0) >= seq

        frames = await self.until(reached, timeout)
        return [f["params"] for f in frames if f.get("method") == "plane.change"]


@contextlib.asynccontextmanager
async def connect(server: RunningServer, **session_args: Any) -> AsyncIterator[Socket]:
    async with aiohttp.ClientSession(**session_args) as session, session.ws_connect(ws_url(server)) as ws:
        yield Socket(ws)


async def sse_events(resp: aiohttp.ClientResponse) -> AsyncIterator[tuple[str, int, Frame]]:
    """(event, id, data) for each event of a text/event-stream response."""
    fields: dict[str, str] = {}
    async for raw in resp.content:
        line = raw.decode().rstrip("\r\n")
        if not line:
            if "data" in fields:
                yield fields.get("event", "message"), int(fields["id"]), json.loads(fields["data"])
            fields = {}
            continue
        name, _, value = line.partition(":")
        fields[name] = value[1:] if value.startswith(" ") else value
