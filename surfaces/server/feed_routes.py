"""The change feed over the network: WebSocket ``/ws`` (JSON-RPC, upstream's ``plane.watch``) and SSE.

Both read the log through :class:`~drsg.feed.Subscription`, which holds one batch at most; every
frame or event is sent with ``await`` on the transport's drain, so a subscriber that stops reading
stalls only its own subscription (TCP pushes back, the log is the buffer) and catches up when it
reads again. Nothing is dropped: ``truncated`` is always false. Commits by other processes (the
CLI, other writers) wake the subscriptions through the database's commit notification
(store/notify.py: inotify on the database file), so they reach subscribers within a millisecond or
so rather than a poll later.

**WebSocket** ``GET /ws?token=…`` — JSON-RPC 2.0 text frames. Every RPC method of ``/rpc`` is
answered here too; in addition::

    → {"jsonrpc":"2.0","id":1,"method":"plane.watch","params":{"plane":"social","label":"Person"}}
    ← {"jsonrpc":"2.0","id":1,"result":{"watching":"social","label":"Person","from_seq":43}}
                                     (+ "labels": [...] when the watch named a `labels` list)
    ← {"jsonrpc":"2.0","method":"plane.change","params":{"plane":"social","seq":43,"ts":…,
        "truncated":false,"changes":[{"kind":"node","op":"created","id":7,"labels":[…],"record":{…}}]}}
    ← {"jsonrpc":"2.0","method":"plane.resolved","params":{"plane":"social","seq":57}}
    ← {"jsonrpc":"2.0","method":"db.stats","params":{…db.stats result…}}     (at once, then every 2 s)
    → {"jsonrpc":"2.0","id":2,"method":"plane.unwatch"}
    ← {"jsonrpc":"2.0","id":2,"result":{"watching":null}}

``plane.watch`` params: ``plane`` (required), ``label`` (upstream) and/or ``labels`` (a list),
``ops`` (created / updated / deleted), ``from_seq`` (resume: the first commit to deliver; default
now), ``include_before``, ``include_vectors``, ``include_hidden``, ``resolved_every`` (seconds of
quiet between ``plane.resolved`` watermarks, default 1; null: none). One watch per connection: a new
``plane.watch`` replaces the old one — every notification after its answer belongs to the new one —
and a failed ``plane.watch`` leaves the old one in place. ``plane.resolved`` {seq} means every
matching commit up to seq has been sent; resume with ``from_seq`` = the last seq seen + 1. A watch
whose plane is dropped ends after a last ``plane.change`` carrying ``"dropped": true``.

**SSE** ``GET /feed/{plane}?token=…&from=SEQ&label=L&op=created`` (``label`` and ``op`` repeatable
or comma-separated; ``resolved=SECONDS``; ``before=1``, ``vectors=1``, ``hidden=1``)::

    id: 43
    event: change
    data: {"plane":"social","seq":43,"ts":…,"truncated":false,"changes":[…]}

    id: 57
    event: resolved
    data: {"plane":"social","seq":57}

The event id is the seq, so an EventSource that reconnects with ``Last-Event-ID`` resumes exactly
after what it saw (``Last-Event-ID`` wins over ``from``). An unknown plane is HTTP 404, bad
parameters HTTP 400 (bodies are JSON-RPC errors, -32602).

**Shutdown**: open WebSockets get a close frame 1001 (going away), SSE streams end cleanly; a peer
that does not take them within a few seconds has its connection aborted.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from typing import Any

import structlog
from aiohttp import WSCloseCode, WSMsgType, web

from drsg.feed.changes import OPS
from drsg.feed.subscription import Message, Subscription
from drsg.kernel.errors import BadValue, DrsgError, NotFound
from drsg.surfaces.server import methods
from drsg.surfaces.server.rpc import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    PARSE_ERROR,
    Dispatcher,
    RpcError,
    dumps,
    error_body,
)
from drsg.surfaces.server.state import ServerState

log = structlog.get_logger("drsg.surfaces.server")

STATS_EVERY = 2.0  # seconds between db.stats notifications on a socket (upstream's)
STATS_FRESH = 0.5  # seconds one db.stats result serves every socket
RESOLVED_EVERY = 1.0  # default seconds of quiet between resolved watermarks
CLOSE_TIMEOUT = 3.0  # seconds a peer has to take the close frame / end of stream on shutdown
OUTBOX = 8  # frames queued for one socket's sender, at most
FALLBACK_POLL = 0.2  # seconds between a subscription's own head checks; the commit notification wakes it sooner
WATCH_METHODS = ("plane.watch", "plane.unwatch")
WATCH_PARAMS = (
    "plane",
    "label",
    "labels",
    "ops",
    "from_seq",
    "include_before",
    "include_vectors",
    "include_hidden",
    "resolved_every",
)


class FeedHub:
    """What the feed routes share: the server state, the RPC dispatcher, and the open feeds."""

    def __init__(self, state: ServerState, dispatcher: Dispatcher) -> None:
        self.state = state
        self.dispatcher = dispatcher
        self.open: set[WatchSocket | EventStream] = set()
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


async def _cancel(task: asyncio.Task[Any] | None) -> None:
    if task is None or task.done():
        return
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await task


def _being_cancelled() -> bool:
    """Whether the running task itself is being cancelled (rather than a shared future it awaited)."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


def _abort(request: web.Request) -> None:
    transport = request.transport
    if transport is not None:
        transport.abort()  # close() would wait for a buffer that a stalled peer never takes


# --------------------------------------------------------------------------- parameters


def _names(value: Any, what: str) -> list[str]:
    """A string or a list of strings (each may be comma-separated)."""
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(v, str) for v in items):
        raise RpcError(INVALID_PARAMS, f"plane.watch: {what} must be a string or a list of strings")
    return [part.strip() for item in items for part in item.split(",") if part.strip()]


def _flag(value: Any, what: str) -> bool:
    if not isinstance(value, bool):
        raise RpcError(INVALID_PARAMS, f"plane.watch: {what} must be true or false")
    return value


def watch_options(params: dict[str, Any]) -> tuple[str, int | None, dict[str, Any], dict[str, Any]]:
    """``plane.watch`` params → (plane, from_seq, what the answer reports besides the plane,
    Subscription options)."""
    unknown = sorted(set(params) - set(WATCH_PARAMS))
    if unknown:
        raise RpcError(INVALID_PARAMS, f"plane.watch has no param {unknown[0]!r}; it takes: {', '.join(WATCH_PARAMS)}")
    plane = params.get("plane")
    if not isinstance(plane, str) or not plane:
        raise RpcError(INVALID_PARAMS, "plane.watch requires a `plane`")
    label = params.get("label")
    if label is not None and not isinstance(label, str):
        raise RpcError(INVALID_PARAMS, "plane.watch: label must be a string")
    labels = ([label] if label else []) + (_names(params["labels"], "labels") if params.get("labels") else [])
    ops = _names(params["ops"], "ops") if params.get("ops") is not None else None
    if ops is not None and not set(ops) <= set(OPS):
        raise RpcError(INVALID_PARAMS, f"plane.watch: ops are {', '.join(OPS)}, not {sorted(set(ops) - set(OPS))[0]!r}")
    from_seq = params.get("from_seq")
    if from_seq is not None and (isinstance(from_seq, bool) or not isinstance(from_seq, int) or from_seq < 1):
        raise RpcError(INVALID_PARAMS, "plane.watch: from_seq must be a commit seq (an integer, 1 or more)")
    resolved = params.get("resolved_every", RESOLVED_EVERY)
    if resolved is not None and (isinstance(resolved, bool) or not isinstance(resolved, int | float) or resolved <= 0):
        raise RpcError(INVALID_PARAMS, "plane.watch: resolved_every must be a positive number of seconds, or null")
    options: dict[str, Any] = {
        "labels": labels or None,
        "ops": ops or None,
        "resolved_every": resolved,
    }
    for name in ("include_before", "include_vectors", "include_hidden"):
        if params.get(name) is not None:
            options[name] = _flag(params[name], name)
    shown: dict[str, Any] = {"label": label}  # upstream's answer: the label filter or null
    if params.get("labels"):
        shown["labels"] = sorted(set(labels))
    return plane, from_seq, shown, options


async def _open(
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


# --------------------------------------------------------------------------- WebSocket /ws


class WatchSocket:
    """One ``/ws`` connection: answers requests (the handler's task), sends db.stats and one watch's feed.

    Every frame goes through ``outbox``, a small bounded queue emptied by one sender task that
    awaits the transport's drain: a peer that stops reading holds the outbox, one subscription
    batch and a socket buffer here, no more. Producers (the reader, the feed pump, the stats loop)
    wait on the queue, never on the drain itself, so a watch can be replaced or stopped while the
    peer is stalled without cancelling a send half-way (aiohttp's drain waiter is shared: cancelling
    one waiter would fail every later drain on the connection).
    """

    def __init__(self, hub: FeedHub, ws: web.WebSocketResponse, request: web.Request) -> None:
        self.hub = hub
        self.ws = ws
        self.request = request
        self.outbox: asyncio.Queue[str] = asyncio.Queue(maxsize=OUTBOX)
        self.broken = False  # a send failed: the peer is gone; what is queued is dropped
        self.sender: asyncio.Task[None] | None = None
        self.pump: asyncio.Task[None] | None = None
        self.stats: asyncio.Task[None] | None = None

    async def send(self, text: str) -> None:
        await self.outbox.put(text)

    async def notify(self, method: str, params: Any) -> None:
        await self.send(dumps({"jsonrpc": "2.0", "method": method, "params": params}))

    async def _send_loop(self) -> None:
        while True:
            text = await self.outbox.get()
            try:
                if not self.broken:
                    await self.ws.send_str(text)  # waits while the transport is above its high-water mark
            except Exception:
                self.broken = True
            finally:
                self.outbox.task_done()

    # ------------------------------------------------------------------ the connection's life

    async def run(self) -> None:
        self.sender = asyncio.create_task(self._send_loop())
        self.stats = asyncio.create_task(self._stats_loop())
        try:
            async for msg in self.ws:
                if msg.type == WSMsgType.TEXT:
                    await self._on_text(msg.data)
                elif msg.type == WSMsgType.BINARY:
                    await self.send(error_body(None, INVALID_REQUEST, "invalid request: send JSON-RPC as text frames"))
                else:  # ERROR: the connection broke
                    break
        finally:
            await _cancel(self.pump)
            await _cancel(self.stats)
            await _cancel(self.sender)

    async def shutdown(self) -> None:
        """Server stopping: stop the feed, send what is queued and close 1001; abort a peer that
        does not take it within CLOSE_TIMEOUT."""
        await _cancel(self.pump)
        await _cancel(self.stats)
        try:
            async with asyncio.timeout(CLOSE_TIMEOUT):
                await self.outbox.join()
                await self.ws.close(code=WSCloseCode.GOING_AWAY, message=b"server shutting down")
        except TimeoutError:
            _abort(self.request)
        except asyncio.CancelledError:
            _abort(self.request)
            if _being_cancelled():
                raise
        except Exception as exc:  # the connection is going anyway
            log.debug("feed socket close failed", reason=str(exc))
            _abort(self.request)

    # ------------------------------------------------------------------ requests

    async def _on_text(self, text: str) -> None:
        try:
            body = await self._answer(text)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("feed socket request failed")
            body = error_body(None, INTERNAL_ERROR, "internal error; the server logged it")
        if body is not None:
            await self.send(body)

    async def _answer(self, text: str) -> str | None:
        try:
            request = json.loads(text)
        except ValueError as exc:
            return error_body(None, PARSE_ERROR, f"parse error: {exc}")
        if isinstance(request, dict) and request.get("method") in WATCH_METHODS:
            return await self._watch_call(request)
        if isinstance(request, list) and any(isinstance(r, dict) and r.get("method") in WATCH_METHODS for r in request):
            return error_body(None, INVALID_REQUEST, "invalid request: plane.watch and plane.unwatch cannot be batched")
        return (await self.hub.dispatcher.handle(text.encode(), self.hub.state)).body

    async def _watch_call(self, request: dict[str, Any]) -> str | None:
        """Answer plane.watch / plane.unwatch. A successful answer is queued here, between stopping
        the old feed and starting the new one, so every notification after it is the new watch's."""
        rid = request.get("id")
        if rid is not None and (isinstance(rid, bool) or not isinstance(rid, str | int | float)):
            return error_body(None, INVALID_REQUEST, "invalid request: id must be a string, a number or null")
        notification = "id" not in request
        try:
            if request.get("jsonrpc") != "2.0":
                raise RpcError(INVALID_REQUEST, 'invalid request: "jsonrpc" must be "2.0"')
            params = request.get("params", {})
            if params is None:
                params = {}
            if isinstance(params, list):  # positional: plane, label
                params = dict(zip(("plane", "label"), params, strict=False))
            if not isinstance(params, dict):
                raise RpcError(INVALID_REQUEST, 'invalid request: "params" must be an object or an array')
            subscription: Subscription | None = None
            if request["method"] == "plane.unwatch":
                result: dict[str, Any] = {"watching": None}
            else:
                plane, from_seq, shown, options = watch_options(params)
                subscription = await _open(self.hub, plane, from_seq, options)  # a failed watch changes nothing
                result = {"watching": plane, **shown, "from_seq": subscription.from_seq}
        except RpcError as exc:
            return None if notification else error_body(rid, exc.code, exc.message, exc.data)
        await _cancel(self.pump)
        self.pump = None
        if not notification:
            await self.send(dumps({"jsonrpc": "2.0", "id": rid, "result": result}))
        if subscription is not None:
            self.pump = asyncio.create_task(self._pump(subscription, result["watching"]))
            log.info("feed watch", via="ws", plane=result["watching"], from_seq=subscription.from_seq)
        return None

    # ------------------------------------------------------------------ what the server sends

    async def _pump(self, subscription: Subscription, plane: str) -> None:
        try:
            async for message in subscription:
                if "resolved" in message:
                    await self.notify("plane.resolved", {"plane": plane, "seq": message["resolved"]})
                else:
                    plane = message["plane"] or plane
                    await self.notify("plane.change", message)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("feed watch failed", via="ws", plane=plane)
            with contextlib.suppress(Exception):
                await self.ws.close(code=WSCloseCode.INTERNAL_ERROR, message=b"the feed failed; the server logged it")

    async def _stats_loop(self) -> None:
        while True:
            try:
                await self.notify("db.stats", await self.hub.stats())
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("db.stats notification failed", reason=str(exc))
            await asyncio.sleep(STATS_EVERY)


async def feed_socket(request: web.Request) -> web.StreamResponse:
    hub = request.app[HUB]
    # No heartbeat: a ping queues behind the data a stalled reader has not taken, so it would cut off
    # exactly the slow subscribers the feed is meant to carry; TCP keepalive finds dead peers.
    ws = web.WebSocketResponse(
        timeout=CLOSE_TIMEOUT, max_msg_size=hub.state.config.max_request_bytes, compress=False, autoping=True
    )
    if not ws.can_prepare(request).ok:
        return web.Response(
            status=400,
            text=error_body(None, INVALID_REQUEST, "invalid request: /ws speaks WebSocket (JSON-RPC text frames)"),
            content_type="application/json",
        )
    await ws.prepare(request)
    socket = WatchSocket(hub, ws, request)
    if hub.closing:  # accepted just before the server stopped listening
        await socket.shutdown()
        return ws
    hub.open.add(socket)
    try:
        await socket.run()
    finally:
        hub.open.discard(socket)
    return ws


# --------------------------------------------------------------------------- SSE /feed/{plane}


def _query_names(request: web.Request, name: str) -> list[str]:
    return [part.strip() for value in request.query.getall(name, []) for part in value.split(",") if part.strip()]


def _query_flag(request: web.Request, name: str) -> bool:
    value = request.query.get(name)
    if value is None:
        return False
    if value.lower() in ("", "1", "true", "yes", "on"):
        return True
    if value.lower() in ("0", "false", "no", "off"):
        return False
    raise RpcError(INVALID_PARAMS, f"invalid params: {name} must be 1 or 0, not {value!r}")


def _query_seq(value: str, what: str) -> int:
    try:
        seq = int(value)
    except ValueError:
        raise RpcError(INVALID_PARAMS, f"invalid params: {what} must be a commit seq, not {value!r}") from None
    if seq < 0:
        raise RpcError(INVALID_PARAMS, f"invalid params: {what} must be a commit seq, not {value!r}")
    return seq


def sse_options(request: web.Request) -> tuple[int | None, dict[str, Any]]:
    """The query string (and ``Last-Event-ID``) → (from_seq, Subscription options)."""
    from_seq: int | None = None
    last = request.headers.get("Last-Event-ID")
    if last is not None and last.strip():
        from_seq = _query_seq(last.strip(), "Last-Event-ID") + 1  # resume just after what was seen
    elif request.query.get("from"):
        from_seq = _query_seq(request.query["from"], "from")
        if from_seq < 1:
            raise RpcError(INVALID_PARAMS, "invalid params: from must be 1 or more")
    ops = _query_names(request, "op")
    if not set(ops) <= set(OPS):
        raise RpcError(INVALID_PARAMS, f"invalid params: op is one of {', '.join(OPS)}")
    resolved = RESOLVED_EVERY
    if request.query.get("resolved"):
        try:
            resolved = float(request.query["resolved"])
        except ValueError:
            resolved = -1.0
        if not 0.05 <= resolved <= 3600:
            raise RpcError(INVALID_PARAMS, "invalid params: resolved is a number of seconds from 0.05 to 3600")
    options = {
        "labels": _query_names(request, "label") or None,
        "ops": ops or None,
        "resolved_every": resolved,  # also how soon a vanished client is noticed when nothing happens
        "include_before": _query_flag(request, "before"),
        "include_vectors": _query_flag(request, "vectors"),
        "include_hidden": _query_flag(request, "hidden"),
    }
    return from_seq, options


def sse_event(message: Message, plane: str) -> tuple[bytes, str]:
    """One message as an SSE event (and the plane's current name)."""
    if "resolved" in message:
        seq, kind, data = message["resolved"], "resolved", dumps({"plane": plane, "seq": message["resolved"]})
    else:
        plane = message["plane"] or plane
        seq, kind, data = message["seq"], "change", dumps(message)
    return f"id: {seq}\nevent: {kind}\ndata: {data}\n\n".encode(), plane


class EventStream:
    """One SSE stream: the subscription is pumped by its own task so that shutdown can stop it."""

    def __init__(
        self,
        request: web.Request,
        response: web.StreamResponse,
        subscription: Subscription,
        plane: str,
    ) -> None:
        self.request = request
        self.response = response
        self.subscription = subscription
        self.plane = plane
        self.pump: asyncio.Task[None] | None = None
        self.closing = False

    async def run(self) -> None:
        self.pump = asyncio.create_task(self._pump())
        try:
            await self.pump
        except asyncio.CancelledError:
            if not self.closing:
                raise  # the handler itself was cancelled
        await self._end()

    async def _pump(self) -> None:
        try:
            await self.response.write(b"retry: 1000\n\n")
            async for message in self.subscription:
                event, self.plane = sse_event(message, self.plane)
                await self.response.write(event)
        except ConnectionError:
            return  # the client went away
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("feed stream failed", via="sse", plane=self.plane)

    async def _end(self) -> None:
        transport = self.request.transport
        if transport is None or transport.is_closing():
            return
        try:
            async with asyncio.timeout(CLOSE_TIMEOUT):
                await self.response.write_eof()
        except TimeoutError:
            _abort(self.request)
        except asyncio.CancelledError:
            # The pump was cancelled waiting for a drain: aiohttp's drain waiter is shared, so the
            # stream cannot wait for the peer any more. The peer was not reading anyway.
            _abort(self.request)
            if _being_cancelled():
                raise
        except (ConnectionError, RuntimeError):
            pass

    async def shutdown(self) -> None:
        self.closing = True
        await _cancel(self.pump)


def _http_error(status: int, exc: RpcError) -> web.Response:
    return web.Response(status=status, text=error_body(None, exc.code, exc.message), content_type="application/json")


async def feed_events(request: web.Request) -> web.StreamResponse:
    hub = request.app[HUB]
    plane = request.match_info["plane"]
    try:
        from_seq, options = sse_options(request)
        subscription = await _open(hub, plane, from_seq, options, "invalid params")
    except RpcError as exc:
        return _http_error(404 if exc.message.startswith("no such plane") else 400, exc)
    if hub.closing:  # accepted just before the server stopped listening
        return _http_error(503, RpcError(INVALID_REQUEST, "the server is stopping; reconnect to it later"))
    response = web.StreamResponse(
        headers={
            "Content-Type": "text/event-stream; charset=utf-8",
            "Cache-Control": "no-cache",
            "X-Accel-Buffering": "no",  # proxies: do not buffer the stream
        }
    )
    await response.prepare(request)
    stream = EventStream(request, response, subscription, plane)
    hub.open.add(stream)
    log.info("feed watch", via="sse", plane=plane, from_seq=subscription.from_seq)
    try:
        await stream.run()
    finally:
        hub.open.discard(stream)
    return response


# --------------------------------------------------------------------------- registration

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
