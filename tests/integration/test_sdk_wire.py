"""What upstream's Python SDK does on the wire, against a real `drsg serve`.

Upstream's client is not installable here (see tests/compat/upstream_sdk_check.py, which runs the
real one from a checkout); these tests pin the wire behaviour it relies on: calls without a
`params` member, error codes read from the body of an HTTP 200 (never an HTTP 401, which it would
report as a transport failure), and `watch()` — a WebSocket opened with an `Authorization` header
whose `plane.watch` is a notification (no `id`), then `plane.change` messages only.
"""

from __future__ import annotations

import asyncio
import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.support.server import TOKEN, RunningServer, start_server


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    workdir = Path(tmp_path_factory.mktemp("sdk-wire"))
    running = start_server(workdir / "graph.drsg", workdir)
    yield running
    assert running.stop() == 0


def sdk_call(server: RunningServer, method: str, params: dict[str, Any] | None, token: str) -> dict[str, Any]:
    """One call exactly as the SDK's `_call` makes it (urllib, `params` left out when empty)."""
    payload: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "id": 1}
    if params:
        payload["params"] = params
    request = urllib.request.Request(
        f"{server.url}/rpc",
        data=json.dumps(payload).encode(),
        headers={"content-type": "application/json", "authorization": f"Bearer {token}"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as resp:  # raises on any HTTP error status
        return json.loads(resp.read())  # type: ignore[no-any-return]


def test_calls_and_auth_errors_arrive_as_json_rpc_bodies(served: RunningServer) -> None:
    stats = sdk_call(served, "db.stats", None, TOKEN)
    assert stats["id"] == 1 and stats["result"]["planes"] >= 1
    refused = sdk_call(served, "db.stats", None, "wrong")
    assert refused["id"] == 1 and refused["error"]["code"] == -32001


def test_watch_as_the_sdk_does_it(served: RunningServer) -> None:
    served.call("plane.create", {"name": "wire"})

    async def scenario() -> list[dict[str, Any]]:
        headers = {"Authorization": f"Bearer {TOKEN}"}
        async with aiohttp.ClientSession() as session, session.ws_connect(f"{served.url}/ws", headers=headers) as ws:
            await ws.send_str(json.dumps({"jsonrpc": "2.0", "method": "plane.watch", "params": {"plane": "wire"}}))
            # A notification gets no answer: the watch's first watermark says it is live (the SDK skips it).
            await _next(ws, "plane.resolved")
            loop = asyncio.get_running_loop()
            await loop.run_in_executor(None, _writes, served)
            return [(await _next(ws, "plane.change"))["params"] for _ in range(3)]  # all the SDK looks at

    changes = asyncio.run(scenario())
    assert [(c["kind"], c["op"]) for e in changes for c in e["changes"]] == [
        ("node", "created"),
        ("node", "updated"),
        ("node", "deleted"),
    ]
    assert all(e["plane"] == "wire" and isinstance(e["seq"], int) for e in changes)


async def _next(ws: aiohttp.ClientWebSocketResponse, method: str) -> dict[str, Any]:
    """The next message calling ``method`` (others are skipped, as the SDK skips them)."""
    while True:
        message: dict[str, Any] = json.loads((await ws.receive(timeout=60)).data)
        if message.get("method") == method:
            return message


def _writes(server: RunningServer) -> None:
    made = server.call("node.create", {"plane": "wire", "key": "k", "labels": ["L"]})
    server.call("node.update", {"plane": "wire", "id": made["id"], "set": {"x": 1}})
    server.call("node.delete", {"plane": "wire", "key": "k"})
