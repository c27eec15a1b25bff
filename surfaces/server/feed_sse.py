"""The change feed as server-sent events, ``/feed/{plane}`` (shared parts: feed_hub).

``GET /feed/{plane}?token=…&from=SEQ&label=L&op=created`` (``label`` and ``op`` repeatable
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

On shutdown an open stream ends cleanly; a peer that does not take the end within a few seconds
has its connection aborted.
"""

from __future__ import annotations

import asyncio
from typing import Any

import structlog
from aiohttp import web

from drsg.feed.changes import OPS
from drsg.feed.subscription import RESOLVED_EVERY_RANGE, Message, Subscription, check_resolved_every
from drsg.kernel.errors import INVALID_PARAMS, INVALID_REQUEST, BadValue, RpcError
from drsg.surfaces.server.feed_hub import (
    CLOSE_TIMEOUT,
    HUB,
    RESOLVED_EVERY,
    abort,
    being_cancelled,
    cancel,
    comma_names,
    http_error,
    open_subscription,
)
from drsg.surfaces.server.rpc import dumps

log = structlog.get_logger("drsg.surfaces.server")


def _query_names(request: web.Request, name: str) -> list[str]:
    return comma_names(request.query.getall(name, []))


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
            check_resolved_every(resolved)
        except (ValueError, BadValue):
            low, high = RESOLVED_EVERY_RANGE
            raise RpcError(
                INVALID_PARAMS, f"invalid params: resolved is a number of seconds from {low} to {high:g}"
            ) from None
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

    transport = "sse"

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
            abort(self.request)
        except asyncio.CancelledError:
            # The pump was cancelled waiting for a drain: aiohttp's drain waiter is shared, so the
            # stream cannot wait for the peer any more. The peer was not reading anyway.
            abort(self.request)
            if being_cancelled():
                raise
        except (ConnectionError, RuntimeError):
            pass

    async def shutdown(self) -> None:
        self.closing = True
        await cancel(self.pump)


async def feed_events(request: web.Request) -> web.StreamResponse:
    hub = request.app[HUB]
    plane = request.match_info["plane"]
    try:
        from_seq, options = sse_options(request)
        subscription = await open_subscription(hub, plane, from_seq, options, "invalid params")
    except RpcError as exc:
        return http_error(404 if exc.message.startswith("no such plane") else 400, exc)
    if hub.closing:  # accepted just before the server stopped listening
        return http_error(503, RpcError(INVALID_REQUEST, "the server is stopping; reconnect to it later"))
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
