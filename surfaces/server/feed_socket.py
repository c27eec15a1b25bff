"""The change feed over a WebSocket, ``/ws``: JSON-RPC, upstream's ``plane.watch`` (shared parts: feed_hub).

``GET /ws?token=…`` — JSON-RPC 2.0 text frames. Every RPC method of ``/rpc`` is
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

On shutdown an open socket gets a close frame 1001 (going away); a peer that does not take it
within a few seconds has its connection aborted.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import structlog
from aiohttp import WSCloseCode, WSMsgType, web

from drsg.feed.changes import OPS
from drsg.feed.subscription import Subscription, check_resolved_every
from drsg.kernel.errors import INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, BadValue, RpcError
from drsg.surfaces.server.feed_hub import (
    CLOSE_TIMEOUT,
    HUB,
    RESOLVED_EVERY,
    FeedHub,
    abort,
    being_cancelled,
    cancel,
    comma_names,
    http_error,
    open_subscription,
)
from drsg.surfaces.server.rpc import dumps, error_body, parse_request

log = structlog.get_logger("drsg.surfaces.server")

STATS_EVERY = 2.0  # seconds between db.stats notifications on a socket (upstream's)
OUTBOX = 8  # frames queued for one socket's sender, at most
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


def _names(value: Any, what: str) -> list[str]:
    """A string or a list of strings (each may be comma-separated)."""
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(v, str) for v in items):
        raise RpcError(INVALID_PARAMS, f"plane.watch: {what} must be a string or a list of strings")
    return comma_names(items)


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
    try:
        check_resolved_every(resolved)
    except BadValue as exc:
        raise RpcError(INVALID_PARAMS, f"plane.watch: {exc}") from None
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


class WatchSocket:
    """One ``/ws`` connection: answers requests (the handler's task), sends db.stats and one watch's feed.

    Every frame goes through ``outbox``, a small bounded queue emptied by one sender task that
    awaits the transport's drain: a peer that stops reading holds the outbox, one subscription
    batch and a socket buffer here, no more. Producers (the reader, the feed pump, the stats loop)
    wait on the queue, never on the drain itself, so a watch can be replaced or stopped while the
    peer is stalled without cancelling a send half-way (aiohttp's drain waiter is shared: cancelling
    one waiter would fail every later drain on the connection).
    """

    transport = "ws"

    def __init__(self, hub: FeedHub, ws: web.WebSocketResponse, request: web.Request) -> None:
        self.hub = hub
        self.ws = ws
        self.request = request
        self.outbox: asyncio.Queue[str] = asyncio.Queue(maxsize=OUTBOX)
        self.broken = False  # a send failed: the peer is gone; what is queued is dropped
        self.sender: asyncio.Task[None] | None = None
        self.pump: asyncio.Task[None] | None = None
        self.subscription: Subscription | None = None  # the watch the pump runs (/metrics reads its lag)
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
            await cancel(self.pump)
            await cancel(self.stats)
            await cancel(self.sender)

    async def shutdown(self) -> None:
        """Server stopping: stop the feed, send what is queued and close 1001; abort a peer that
        does not take it within CLOSE_TIMEOUT."""
        await cancel(self.pump)
        await cancel(self.stats)
        try:
            async with asyncio.timeout(CLOSE_TIMEOUT):
                await self.outbox.join()
                await self.ws.close(code=WSCloseCode.GOING_AWAY, message=b"server shutting down")
        except TimeoutError:
            abort(self.request)
        except asyncio.CancelledError:
            abort(self.request)
            if being_cancelled():
                raise
        except Exception as exc:  # the connection is going anyway
            log.debug("feed socket close failed", reason=str(exc))
            abort(self.request)

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
        request, problem = parse_request(text)
        if problem is not None:
            return problem
        if isinstance(request, dict) and request.get("method") in WATCH_METHODS:
            return await self._watch_call(request)
        if isinstance(request, list) and any(isinstance(r, dict) and r.get("method") in WATCH_METHODS for r in request):
            return error_body(None, INVALID_REQUEST, "invalid request: plane.watch and plane.unwatch cannot be batched")
        return (await self.hub.dispatcher.handle_parsed(request, self.hub.state)).body

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
                # a failed watch changes nothing: the old one runs on
                subscription = await open_subscription(self.hub, plane, from_seq, options)
                result = {"watching": plane, **shown, "from_seq": subscription.from_seq}
        except RpcError as exc:
            return None if notification else error_body(rid, exc.rpc_code, exc.message, exc.data)
        await cancel(self.pump)
        self.pump, self.subscription = None, subscription
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
        return http_error(
            400, RpcError(INVALID_REQUEST, "invalid request: /ws speaks WebSocket (JSON-RPC text frames)")
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
