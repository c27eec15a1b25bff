"""Streamable HTTP at `/mcp` on `drsg serve`: the MCP SDK's session manager behind an aiohttp route.

The server's guard (surfaces/server/app.py) has already checked the bearer token (the JSON-RPC
token) and the Origin; this route also answers only a loopback Host name (an MCP endpoint is for
agents on this machine: a DNS-rebinding page names another host). Each POST is one stateless JSON
exchange; the tools' calls are bounded by the server's ``max_concurrent``.

The MCP SDK is imported after the server starts listening (≈0.7 s, longer on a loaded machine):
its modules load in a worker thread while the server already answers, and a request to `/mcp`
that comes first waits for them — never an error.
"""

from __future__ import annotations

import asyncio
from collections.abc import MutableMapping
from typing import Any

from aiohttp import web

from drsg.kernel.errors import UNAUTHORIZED
from drsg.surfaces.server.config import is_loopback
from drsg.surfaces.server.rpc import error_body
from drsg.surfaces.server.state import ServerState

PATH = "/mcp"
MANAGER = web.AppKey("drsg_mcp_manager", object)
RUNNING = web.AppKey("drsg_mcp_running", object)


def _host_name(host: str) -> str:
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def _load_sdk() -> None:
    """Import the SDK and the tools (run in a worker thread: the event loop keeps answering)."""
    import mcp.server.transport_security  # noqa: F401

    import drsg.surfaces.mcp.tools  # noqa: F401


def _manager(state: ServerState) -> Any:
    """The tools' MCP server's session manager, its SDK imported (by :func:`_load_sdk`)."""
    from mcp.server.transport_security import TransportSecuritySettings

    from drsg.surfaces.mcp.tools import build, mcp_bound

    server = build(state, allow_path=False, max_concurrent=mcp_bound(state.config))
    server.streamable_http_app(
        streamable_http_path=PATH,
        stateless_http=True,
        json_response=True,
        max_request_body_size=state.config.max_request_bytes,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),  # checked here
    )
    return server.session_manager


def install(app: web.Application, state: ServerState) -> None:
    stop = asyncio.Event()

    async def run_manager(ready: asyncio.Future[Any]) -> None:
        try:
            await asyncio.to_thread(_load_sdk)
            manager = _manager(state)
        except Exception as exc:  # a broken install: each /mcp request fails with it, the rest still serves
            ready.set_exception(exc)
            return
        async with manager.run():
            ready.set_result(manager)
            await stop.wait()

    async def start(app: web.Application) -> None:
        ready = asyncio.get_running_loop().create_future()
        app[MANAGER] = ready
        app[RUNNING] = asyncio.create_task(run_manager(ready))
        await asyncio.sleep(0)

    async def close(app: web.Application) -> None:
        stop.set()
        task = app[RUNNING]
        assert isinstance(task, asyncio.Task)
        await task
        ready = app[MANAGER]
        assert isinstance(ready, asyncio.Future)
        if ready.done() and not ready.cancelled():
            ready.exception()  # seen: a load that failed was each /mcp request's error already

    async def handler(request: web.Request) -> web.StreamResponse:
        if not is_loopback(_host_name(request.host)):
            message = f"unauthorized: /mcp answers loopback host names only, not {request.host!r}; use 127.0.0.1"
            return web.Response(
                status=403, text=error_body(None, UNAUTHORIZED, message), content_type="application/json"
            )
        ready = request.app[MANAGER]
        assert isinstance(ready, asyncio.Future)
        manager = await asyncio.shield(ready)  # the SDK still loading: this request waits for it
        return await _asgi(request, manager.handle_request)

    app.on_startup.append(start)
    app.on_cleanup.append(close)
    app.router.add_route("*", PATH, handler)


async def _asgi(request: web.Request, asgi: Any) -> web.StreamResponse:
    """Run one request through an ASGI app, streaming its answer back through aiohttp."""
    body = await request.read()
    scope: MutableMapping[str, Any] = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": request.method,
        "scheme": request.scheme,
        "path": request.path,
        "raw_path": request.raw_path.encode(),
        "query_string": request.query_string.encode(),
        "root_path": "",
        "headers": [(k.lower(), v) for k, v in request.raw_headers],
        "client": (request.remote or "", 0),
        "server": (request.host, 0),
    }
    sent = False
    disconnected = asyncio.Event()

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await disconnected.wait()
        return {"type": "http.disconnect"}

    response: web.StreamResponse | None = None

    async def send(message: dict[str, Any]) -> None:
        nonlocal response
        if message["type"] == "http.response.start":
            response = web.StreamResponse(status=message["status"])
            for k, v in message.get("headers", []):
                response.headers.add(k.decode("latin-1"), v.decode("latin-1"))
            await response.prepare(request)
        elif message["type"] == "http.response.body" and response is not None:
            chunk = message.get("body", b"")
            if chunk:
                await response.write(chunk)
            if not message.get("more_body", False):
                await response.write_eof()

    try:
        await asgi(scope, receive, send)
    finally:
        disconnected.set()
    if response is None:
        return web.Response(status=500, text="the MCP transport gave no answer")
    return response
