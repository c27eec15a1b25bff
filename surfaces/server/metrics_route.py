"""``GET /metrics``: what the server is doing, in the Prometheus text format (0.0.4).

Behind the token like every other route; ``[server] metrics_addr`` also serves it on a second
address without one, for a scraper that cannot send a header (keep that address private). The
counters and histograms are the process's own (:mod:`drsg.kernel.telemetry`: JSON-RPC calls, HTTP
requests, model calls and tokens, fetches the guard refused); the gauges are read here, at each
scrape, in a read thread: the head, bytes on disk, each index's lag, the feeds' subscribers and lag.
docs/metrics.md lists every name.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from aiohttp import web

from drsg.kernel import telemetry
from drsg.kernel.telemetry import Labels
from drsg.surfaces.server.feed_hub import HUB, FeedHub

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
SOURCE = web.AppKey("drsg_metrics_source", FeedHub)  # the feed hub: the server state and the open feeds


@dataclass(frozen=True)
class Reading:
    """The gauges one scrape reads from the database and the indexes (in a read thread)."""

    head: int
    file_bytes: int
    sidecar_bytes: int
    index_lag: list[tuple[Labels, int]]


def _folder_bytes(root: Path) -> int:
    total = 0
    for folder, _dirs, files in os.walk(root):
        for name in files:
            try:
                total += os.stat(os.path.join(folder, name)).st_size
            except OSError:  # saved over or removed while we walked: it no longer counts
                continue
    return total


def read_gauges(hub: FeedHub) -> Reading:
    state = hub.state
    head = state.db.head()
    described = state.indexes.describe()
    names: dict[int, str] = {}
    with state.db.snapshot() as snap:
        for plane in snap.planes():
            names[plane.id] = plane.name
    lag = [
        (
            (names.get(w["plane"], str(w["plane"])), str(w["kind"]), str(w["label"]), str(w["property"])),
            max(0, head - int(w["seq"])),
        )
        for w in described
    ]
    sidecars = sum(_folder_bytes(root) for root in state.indexes.sidecar_folders())
    return Reading(head, state.db.env.file_size(), sidecars, sorted(lag))


def _feeds(hub: FeedHub, head: int) -> Iterator[tuple[str, int]]:
    """Each open subscription's transport and the commits it has yet to hand out."""
    for feed in list(hub.open):
        subscription = feed.subscription
        if subscription is not None:
            yield feed.transport, max(0, head - subscription.position + 1)


def render(hub: FeedHub, reading: Reading) -> str:
    subscribers: dict[str, int] = {"ws": 0, "sse": 0}
    behind: dict[str, int] = {"ws": 0, "sse": 0}
    for transport, lag in _feeds(hub, reading.head):
        subscribers[transport] = subscribers.get(transport, 0) + 1
        behind[transport] = max(behind.get(transport, 0), lag)
    blocks = [
        telemetry.COMMITS.text([((), reading.head)]),
        telemetry.HEAD.text([((), reading.head)]),
        telemetry.DISK_BYTES.text([(("file",), reading.file_bytes), (("sidecars",), reading.sidecar_bytes)]),
        telemetry.INDEX_LAG.text(reading.index_lag),
        telemetry.FEED_SUBSCRIBERS.text(sorted(((t,), n) for t, n in subscribers.items())),
        telemetry.FEED_LAG.text(sorted(((t,), n) for t, n in behind.items())),
        telemetry.START_TIME.text([((), hub.state.started_at)]),
        *(metric.text() for metric in telemetry.COUNTED),
    ]
    return "".join(blocks)


async def metrics(request: web.Request) -> web.Response:
    hub = request.app[SOURCE]
    reading = await hub.state.read(read_gauges, hub)
    return web.Response(body=render(hub, reading).encode(), headers={"Content-Type": CONTENT_TYPE})


ROUTES = [web.get("/metrics", metrics)]


def install(app: web.Application) -> None:
    """``GET /metrics`` on the server's application (after ``feed_routes.install``: it reads the hub)."""
    app[SOURCE] = app[HUB]
    app.add_routes(ROUTES)


def separate_app(app: web.Application) -> web.Application:
    """An application serving only ``GET /metrics`` of ``app``'s server, without a token
    (``[server] metrics_addr``)."""
    own = web.Application()
    own[SOURCE] = app[SOURCE]
    own.add_routes(ROUTES)
    return own
