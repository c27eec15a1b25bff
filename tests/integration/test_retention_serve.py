"""`drsg serve` with [log] retain_commits compacts history in the background after commits, logs
what it did, reports the window in `plane.history` and `db.stats`, and refuses a read, a
WebSocket watch and an SSE feed from before the horizon with the one line (-32602)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import aiohttp
import pytest

from tests.support.feed_clients import Socket, sse_url, ws_url
from tests.support.server import RunningServer, start_server
from tests.support.waiting import wait_until

KEEP = 3


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    workdir = tmp_path_factory.mktemp("retain-serve")
    env = {"DRSG_LOG_RETAIN_COMMITS": str(KEEP), "DRSG_LOG_COMPACT_EVERY_SECS": "1"}
    running = start_server(workdir / "graph.drsg", workdir, env=env, name="retain")
    yield running
    assert running.stop() == 0


def test_serve_compacts_in_the_background_and_refuses_reads_before_the_horizon(server: RunningServer) -> None:
    server.call("plane.create", {"name": "r"})
    for n in range(10):
        server.call("node.create", {"plane": "r", "key": f"n{n}", "labels": ["N"]})
    head = server.head()
    window = wait_until(
        lambda: (w := server.call("plane.history", {"plane": "r"}))["oldest"] == head - KEEP and w,
        "the background compaction",
        timeout=30,
    )
    assert window["latest"] == head and window["oldest_ms"] is not None
    assert server.call("db.stats")["history"] == {"oldest": head - KEEP, "latest": head}
    assert any(e.get("event") == "history compacted" and e["horizon"] == head - KEEP for e in server.logs())
    oldest = head - KEEP
    line = f"older than the retained history (it starts at commit {oldest}: [log] retain_commits = {KEEP})"

    refused = server.error("node.get", {"plane": "r", "key": "n9", "as_of": oldest - 1})
    assert refused["code"] == -32602 and line in refused["message"]
    assert server.call("node.get", {"plane": "r", "key": "n0", "as_of": oldest}) is not None

    async def feeds() -> None:
        async with aiohttp.ClientSession() as session:
            async with session.ws_connect(ws_url(server)) as raw:
                answer = await Socket(raw).call("plane.watch", {"plane": "r", "from_seq": oldest})
                assert answer["error"]["code"] == -32602 and line in answer["error"]["message"]
            async with session.get(sse_url(server, "r", f"from={oldest}")) as resp:
                assert resp.status == 400
                error = (await resp.json())["error"]
                assert error["code"] == -32602 and line in error["message"]

    asyncio.run(feeds())
