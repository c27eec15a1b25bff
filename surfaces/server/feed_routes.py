"""The change feed over the network: its routes, and starting and stopping them with the server.

    feed_hub.py     what both transports share: the hub (state, dispatcher, open feeds),
                    opening a subscription, task and transport helpers
    feed_socket.py  WebSocket ``/ws``: JSON-RPC, every ``/rpc`` method plus upstream's ``plane.watch``
    feed_sse.py     server-sent events ``/feed/{plane}``, resumable by ``Last-Event-ID``

**Shutdown**: open WebSockets get a close frame 1001 (going away), SSE streams end cleanly; a peer
that does not take them within a few seconds has its connection aborted.
"""

from __future__ import annotations

import asyncio

import structlog
from aiohttp import web

from drsg.surfaces.server.feed_hub import HUB, FeedHub
from drsg.surfaces.server.feed_socket import feed_socket
from drsg.surfaces.server.feed_sse import feed_events
from drsg.surfaces.server.rpc import Dispatcher
from drsg.surfaces.server.state import ServerState

log = structlog.get_logger("drsg.surfaces.server")

ROUTES: list[web.AbstractRouteDef] = [
    web.get("/ws", feed_socket),
    web.get("/feed/{plane}", feed_events),
]


async def close_feeds(app: web.Application) -> None:
    """on_shutdown: close every open feed (WS close 1001, SSE end of stream) so the server can stop."""
    hub = app[HUB]
    hub.closing = True
    feeds = list(hub.open)
    if feeds:
        log.info("closing feeds", feeds=len(feeds))
        await asyncio.gather(*(feed.shutdown() for feed in feeds), return_exceptions=True)


def install(app: web.Application, state: ServerState, dispatcher: Dispatcher) -> None:
    """Add the feed routes to ``app`` and close the feeds when it shuts down."""
    app[HUB] = FeedHub(state, dispatcher)
    app.add_routes(ROUTES)
    app.on_shutdown.append(close_feeds)


__all__ = ["HUB", "ROUTES", "FeedHub", "close_feeds", "feed_events", "feed_socket", "install"]
