"""Rates a subscriber may ask for are bounded the same way on every transport: ``resolved_every``
of 1e-9 s made one WebSocket client flood the server with 122,590 watermark frames in 3 s."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest

import drsg
from drsg.feed.subscription import RESOLVED_EVERY_RANGE, Subscription
from tests.support.server import RunningServer, start_server

TOO_FAST, TOO_SLOW = 1e-9, 1e9


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    workdir = tmp_path_factory.mktemp("bounds")
    running = start_server(workdir / "graph.drsg", workdir)
    try:
        running.call("plane.create", {"name": "p"})
        yield running
    finally:
        assert running.stop() == 0


@pytest.mark.parametrize("seconds", [TOO_FAST, 0, -1, TOO_SLOW, True, "1"])
def test_python_subscription_refuses_an_unbounded_rate(tmp_path: Path, seconds: object) -> None:
    db = drsg.open(tmp_path / "g.drsg")
    try:
        with pytest.raises(drsg.BadValue, match=r"resolved_every is a number of seconds from 0\.05 to 3600"):
            Subscription(db, "startup", resolved_every=seconds)  # type: ignore[arg-type]
        low, high = RESOLVED_EVERY_RANGE
        for fine in (low, 1, high, None):
            Subscription(db, "startup", resolved_every=fine)
    finally:
        db.close()


@pytest.mark.parametrize("seconds", [TOO_FAST, 0, TOO_SLOW])
def test_websocket_watch_refuses_an_unbounded_rate_and_sends_nothing(server: RunningServer, seconds: float) -> None:
    async def scenario() -> list[dict[str, object]]:
        url = f"{server.url}/ws?token={server.token}"
        async with aiohttp.ClientSession() as session, session.ws_connect(url) as ws:
            watch = {"plane": "p", "resolved_every": seconds}
            await ws.send_str(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "plane.watch", "params": watch}))
            frames = []
            async with asyncio.timeout(15):
                while True:
                    frame = json.loads((await ws.receive()).data)
                    if frame.get("id") == 1:
                        frames.append(frame)
                        break
                    frames.append(frame)  # only db.stats may come before the answer
            return frames

    frames = asyncio.run(scenario())
    answer = frames[-1]
    assert answer["error"]["code"] == -32602 and "from 0.05 to 3600" in answer["error"]["message"]
    assert all(f.get("method") == "db.stats" for f in frames[:-1]), frames


@pytest.mark.parametrize("seconds", ["1e-9", "0", "1e9", "nan", "x"])
def test_sse_refuses_an_unbounded_rate(server: RunningServer, seconds: str) -> None:
    resp = server.get(f"/feed/p?token={server.token}&resolved={seconds}")
    assert resp.status == 400
    assert resp.json()["error"]["code"] == -32602 and "from 0.05 to 3600" in resp.json()["error"]["message"]
