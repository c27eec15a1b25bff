"""What the change feed's routes share: the hub (server state, dispatcher, open feeds),
opening a subscription, and the task and transport helpers both transports use.

Both transports (WebSocket ``/ws``, :mod:`~drsg.surfaces.server.feed_socket`; SSE ``/feed/{plane}``,
:mod:`~drsg.surfaces.server.feed_sse`) read the log through :class:`~drsg.feed.Subscription`, which
holds one batch at most; every frame or event is sent with ``await`` on the transport's drain, so
a subscriber that stops reading stalls only its own subscription (TCP pushes back, the log is the
buffer) and catches up when it reads again. Nothing is dropped: ``truncated`` is always false.
Commits by other processes (the CLI, other writers) wake the subscriptions through the database's
commit notification (store/notify.py: inotify on the database file), so they reach subscribers
within a millisecond or so rather than a poll later.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any, Protocol

from aiohttp import web

from drsg.feed.subscription import Subscription
from drsg.kernel.errors import INVALID_PARAMS, BadValue, DrsgError, NotFound, RpcError
from drsg.surfaces.server import methods
from drsg.surfaces.server.rpc import Dispatcher, error_body
from drsg.surfaces.server.state import ServerState

STATS_FRESH = 0.5  # seconds one db.stats result serves every socket
RESOLVED_EVERY = 1.0  # default seconds of quiet between resolved watermarks
CLOSE_TIMEOUT = 3.0  # seconds a peer has to take the close frame / end of stream on shutdown
FALLBACK_POLL = 0.2  # seconds between a subscription's own head checks; the commit notification wakes it sooner


class Feed(Protocol):
    """An open feed (a watching socket or an event stream), closed when the server stops; /metrics
    reads its subscription's lag, labelled by its transport (ws, sse)."""

    @property
    def transport(self) -> str: ...

    @property
    def subscription(self) -> Subscription | None: ...

    async def shutdown(self) -> None: ...


class FeedHub:
    """What the feed routes share: the server state, the RPC dispatcher, and the open feeds."""

    def __init__(self, state: ServerState, dispatcher: Dispatcher) -> None:
        self.state = state
        self.dispatcher = dispatcher
        self.open: set[Feed] = set()
        self.closing = False  # the server is stopping: feeds that open now are closed at once
        self._stats: tuple[float, Any] | None = None  # (when, db.stats result), shared by the sockets
        self._stats_lock = asyncio.Lock()

    async def stats(self) -> Any:
        """db.stats for the notifications, computed at most once per STATS_FRESH seconds however
        many sockets are open."""
        async with self._stats_lock:
            now = time.monotonic()
            if self._stats is None or now - self._stats[0] > STATS_FRESH:
                self._stats = (now, await methods.db_stats(self.state, {}))
            return self._stats[1]

    async def subscribe(self, plane: str, from_seq: int | None, **options: Any) -> Subscription:
        """A subscription, made in a read thread (it looks the plane up in the log's history)."""
        options.setdefault("poll", FALLBACK_POLL)
        return await self.state.read(lambda: Subscription(self.state.db, plane, from_seq, **options))


HUB = web.AppKey("drsg_feed_hub", FeedHub)


async def cancel(task: asyncio.Task[Any] | None) -> None:
    if task is None or task.done():
        return
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await task


def being_cancelled() -> bool:
    """Whether the running task itself is being cancelled (rather than a shared future it awaited)."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


def abort(request: web.Request) -> None:
    transport = request.transport
    if transport is not None:
        transport.abort()  # close() would wait for a buffer that a stalled peer never takes


async def open_subscription(
    hub: FeedHub, plane: str, from_seq: int | None, options: dict[str, Any], what: str = "plane.watch"
) -> Subscription:
    """A subscription, or -32602 naming what is wrong (an unknown plane: upstream's "no such plane")."""
    try:
        return await hub.subscribe(plane, from_seq, **options)
    except NotFound as exc:
        raise RpcError(INVALID_PARAMS, f"no such plane: {exc.message.removeprefix('no plane named ')}") from None
    except BadValue as exc:
        raise RpcError(INVALID_PARAMS, f"{what}: {exc.message}") from None
    except DrsgError as exc:
        raise RpcError(exc.rpc_code, exc.message) from None


def comma_names(items: list[str]) -> list[str]:
    """Names given as a list, each item possibly comma-separated (``["a,b", "c"]`` -> a, b, c)."""
    return [part.strip() for item in items for part in item.split(",") if part.strip()]


def http_error(status: int, exc: RpcError) -> web.Response:
    """An HTTP answer whose body is the JSON-RPC error (the feeds' refusals before they start)."""
    return web.Response(
        status=status, text=error_body(None, exc.rpc_code, exc.message), content_type="application/json"
    )
