"""The aiohttp application: routes, middleware (access log, auth, size limit), start and graceful stop.

Routes live in :data:`ROUTES`; adding one (the feed's ``/ws``, an SSE stream) is one line there or
one item passed as ``extra_routes``. Every route except ``/health`` is behind the guard:

* a token (``DRSG_TOKEN``) is required as ``Authorization: Bearer <token>`` — or, on GET requests
  (WebSocket and SSE, which browsers cannot give headers), as ``?token=`` — else JSON-RPC error
  -32001: in an HTTP 200 answer to the call on ``/rpc`` (as upstream, whose SDKs read the code from
  the body), HTTP 401 on the feeds;
* a browser request from another origin is refused (HTTP 403, -32001) unless the origin is listed
  in ``DRSG_ALLOWED_ORIGINS``: a listed origin's preflight is answered (it carries no token) and
  every answer to it carries the CORS headers its page needs to read it; with no token, the Host
  header must be a loopback name too, so a DNS-rebound page cannot reach a token-less server;
* a body declared larger than ``max_request_bytes`` is refused (HTTP 413, -32600) before it is read,
  and an undeclared (chunked) one is cut off at the limit.

A connection must send a request's head within ``header_timeout_secs`` of connecting (or of its last
answer), else it is closed; one past ``max_connections`` open is closed at once.

Shutdown (SIGTERM or SIGINT): stop listening, let in-flight requests finish (up to
``shutdown_timeout_secs``, then they are cut off), then stop the indexer, save the index sidecars and
exit, without waiting for reads the cut-off calls left running. A second Ctrl-C exits at once (a
repeated SIGTERM does not: supervisors repeat themselves).
"""

from __future__ import annotations

import asyncio
import gc
import hmac
import json
import logging
import os
import signal
import ssl
import sys
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import structlog
from aiohttp import web

from drsg.api.database import Database
from drsg.kernel.errors import INTERNAL_ERROR, INVALID_REQUEST, UNAUTHORIZED, ConfigError, ServeError
from drsg.kernel.telemetry import HTTP_REQUESTS, HTTP_SECONDS
from drsg.surfaces.server import feed_routes, fetch_route, metrics_route, served  # noqa: F401  (served: every method)
from drsg.surfaces.server.config import ServerConfig, is_loopback
from drsg.surfaces.server.health import health
from drsg.surfaces.server.registry import REGISTRY
from drsg.surfaces.server.rpc import Call, Dispatcher, error_body
from drsg.surfaces.server.state import ServerState

log = structlog.get_logger("drsg.surfaces.server")
STATE = web.AppKey("drsg_state", ServerState)
DISPATCHER = web.AppKey("drsg_dispatcher", Dispatcher)
PUBLIC_PATHS = frozenset({"/health", "/", "/favicon.ico"})  # and the dashboard's static files (surfaces/web)
BODY_TIMEOUT = 60.0  # seconds for a request body to arrive, so a stalled client holds nothing for long


def _json_error(status: int, code: int, message: str, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(
        status=status, text=error_body(None, code, message), content_type="application/json", headers=headers
    )


# --------------------------------------------------------------------------- routes


async def rpc_handler(request: web.Request) -> web.StreamResponse:
    state = request.app[STATE]
    try:
        async with asyncio.timeout(BODY_TIMEOUT):
            body = await request.read()
    except web.HTTPRequestEntityTooLarge:
        return _too_large(state.config.max_request_bytes, None)
    except TimeoutError:
        message = f"invalid request: the body did not arrive within {BODY_TIMEOUT:g} s"
        return _json_error(408, INVALID_REQUEST, message, {"Connection": "close"})
    reply = await request.app[DISPATCHER].handle(body, state)
    request["rpc_calls"] = reply.calls
    if reply.body is None:
        return web.Response(status=204)  # only notifications: nothing to answer
    return web.Response(text=reply.body, content_type="application/json")


async def health_handler(request: web.Request) -> web.StreamResponse:
    """``ok``, ``degraded``, ``unavailable`` or ``stopping``: see :mod:`drsg.surfaces.server.health`."""
    status, body = await health(request.app[STATE])
    return web.json_response(body, status=status)


#: The routes. The change feed's (``/ws``, ``/feed/{plane}``) are added by ``feed_routes.install``.
ROUTES: list[web.AbstractRouteDef] = [
    web.post("/rpc", rpc_handler),
    web.get("/health", health_handler),
]


# --------------------------------------------------------------------------- middleware


def _too_large(limit: int, declared: int | None) -> web.Response:
    size = f" of {declared} bytes" if declared is not None else ""
    message = f"invalid request: the body{size} is larger than the server's limit of {limit} bytes (max_request_bytes)"
    return _json_error(413, INVALID_REQUEST, message, {"Connection": "close"})


def _presented_token(request: web.Request) -> str | None:
    header = request.headers.get("Authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip()
    if request.method == "GET":  # WebSocket / EventSource clients cannot set headers
        return request.query.get("token")
    return None


#: What a listed origin's page may send: its browser asks first (a preflight) before a JSON POST with a token.
CORS_PREFLIGHT = {
    "Access-Control-Allow-Methods": "GET, POST",
    "Access-Control-Allow-Headers": "Authorization, Content-Type, Last-Event-ID",
    "Access-Control-Max-Age": "600",
}


def _listed_origin(request: web.Request, config: ServerConfig) -> str | None:
    """The request's Origin when DRSG_ALLOWED_ORIGINS lists it."""
    origin = request.headers.get("Origin")
    return origin if origin is not None and origin.rstrip("/") in config.allowed_origins else None


async def _cors_headers(request: web.Request, response: web.StreamResponse) -> None:
    """Without this header a browser hides the answer from the page of a listed origin."""
    origin = _listed_origin(request, request.app[STATE].config)
    if origin is not None:
        response.headers["Access-Control-Allow-Origin"] = origin
        response.headers["Vary"] = "Origin"


def _auth_problem(request: web.Request, config: ServerConfig) -> tuple[int, str] | None:
    origin = request.headers.get("Origin")
    if origin is not None:
        own = f"{request.scheme}://{request.host}"
        if origin.rstrip("/") != own and _listed_origin(request, config) is None:
            return 403, f"unauthorized: requests from origin {origin} are refused; list it in DRSG_ALLOWED_ORIGINS"
    if config.token is None:
        host = request.host.rsplit(":", 1)[0] if not request.host.endswith("]") else request.host
        if not is_loopback(host.strip("[]")):
            return 403, "unauthorized: this server has no token, so it answers only loopback host names"
        return None
    presented = _presented_token(request)
    if presented is None:
        return 401, "unauthorized: send the token as `Authorization: Bearer <DRSG_TOKEN>`"
    if not hmac.compare_digest(presented.encode(), config.token.encode()):
        return 401, "unauthorized: the token is wrong"
    return None


async def _unauthorized_call(request: web.Request, limit: int, message: str) -> web.Response:
    """A JSON-RPC call without the right token: HTTP 200 carrying error -32001 for the call's id, as
    upstream answers — its SDKs read the code from the body (an HTTP 401 surfaces there as a generic
    transport failure instead of an auth error)."""
    rid = None
    if request.content_length is not None and request.content_length <= limit:
        try:
            async with asyncio.timeout(BODY_TIMEOUT):
                call = json.loads(await request.read())
            rid = call.get("id") if isinstance(call, dict) else None
        except (TimeoutError, ValueError, UnicodeDecodeError, web.HTTPException):
            rid = None
    if not isinstance(rid, str | int) or isinstance(rid, bool):
        rid = None
    return web.Response(
        status=200,
        text=error_body(rid, UNAUTHORIZED, message),
        content_type="application/json",
        headers={"WWW-Authenticate": 'Bearer realm="drsg"'},
    )


@web.middleware
async def guard(request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> Any:
    if request.path in PUBLIC_PATHS or (request.method == "GET" and request.path.startswith("/static/")):
        return await handler(request)
    state = request.app[STATE]
    if request.method == "OPTIONS" and _listed_origin(request, state.config) is not None:
        return web.Response(status=204, headers=CORS_PREFLIGHT)
    problem = _auth_problem(request, state.config)
    if problem is not None:
        status, message = problem
        request["rpc_calls"] = [Call("-", UNAUTHORIZED)]
        if status == 401 and request.path == "/rpc":
            return await _unauthorized_call(request, state.config.max_request_bytes, message)
        headers = {"WWW-Authenticate": 'Bearer realm="drsg"'} if status == 401 else None
        return _json_error(status, UNAUTHORIZED, message, headers)
    declared = request.content_length
    if declared is not None and declared > state.config.max_request_bytes:
        return _too_large(state.config.max_request_bytes, declared)
    return await handler(request)


@web.middleware
async def access_log(request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> Any:
    """One JSON line per HTTP request; a handler's crash becomes a JSON-RPC internal error (500)."""
    state = request.app[STATE]
    started = time.perf_counter()
    state.in_flight += 1
    status = 500
    try:
        response = await handler(request)
        status = response.status
        return response
    except web.HTTPException as exc:
        status = exc.status
        raise
    except asyncio.CancelledError:
        status = 499  # the client went away (or shutdown ran out of time)
        raise
    except Exception:
        log.exception("request failed", path=request.path)
        return _json_error(500, INTERNAL_ERROR, "internal error; the server logged it")
    finally:
        state.in_flight -= 1
        calls: list[Call] = request.get("rpc_calls", [])
        seconds = time.perf_counter() - started
        resource = request.match_info.route.resource
        route = resource.canonical if resource is not None else "-"  # the route, never a path a client made up
        HTTP_REQUESTS.inc((route, str(status)))
        HTTP_SECONDS.observe((route,), seconds)
        fields: dict[str, Any] = {
            "method": request.method,
            "path": request.path,
            "status": status,
            "ms": round(seconds * 1000, 2),
            "remote": request.remote,
        }
        if calls:
            fields["rpc"] = [c.method for c in calls[:10]]
            if len(calls) > 10:
                fields["rpc_calls"] = len(calls)
            errors = [c.code for c in calls if c.code is not None]
            if errors:
                fields["rpc_errors"] = errors[:10]
        (log.warning if status >= 500 else log.info)("http", **fields)


# --------------------------------------------------------------------------- the application


def create_app(state: ServerState, extra_routes: Iterable[web.AbstractRouteDef] = ()) -> web.Application:
    config = state.config
    app = web.Application(client_max_size=config.max_request_bytes, middlewares=[access_log, guard])
    app[STATE] = state
    app[DISPATCHER] = Dispatcher(REGISTRY, max_batch=config.max_batch, max_concurrent=config.max_concurrent)
    app.add_routes([*ROUTES, *extra_routes])

    async def start(app: web.Application) -> None:
        await asyncio.get_running_loop().run_in_executor(None, state.start)

    async def stopping(app: web.Application) -> None:
        state.stopping = True  # in-flight requests still run; the database stays open for them

    async def close(app: web.Application) -> None:
        await asyncio.get_running_loop().run_in_executor(None, state.close)

    app.on_startup.append(start)
    app.on_response_prepare.append(_cors_headers)
    app.on_shutdown.append(stopping)
    app.on_cleanup.append(close)
    feed_routes.install(app, state, app[DISPATCHER])  # /ws, /feed/{plane}; closes them on shutdown
    fetch_route.install(app, state)  # POST /digest/fetch
    metrics_route.install(app)  # GET /metrics (reads the feed hub)
    from drsg.surfaces.server import snapshot_route

    snapshot_route.install(app, state)  # GET /snapshot
    return app  # drsg.surfaces.app mounts the MCP tools (/mcp) and the dashboard (/) on it


def _ssl_context(config: ServerConfig) -> ssl.SSLContext | None:
    if not config.tls_cert or not config.tls_key:
        return None
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    try:
        context.load_cert_chain(config.tls_cert, config.tls_key)
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(f"cannot load [server.tls] cert/key: {exc}") from None
    return context


async def serve(
    db: Database,
    config: ServerConfig,
    announce: Callable[[str], None],
    build: Callable[[ServerState], web.Application] = create_app,
) -> None:
    """Serve ``build``'s application until SIGTERM/SIGINT, then stop gracefully. ``announce`` gets the
    startup line. ``drsg serve`` builds it with the MCP tools and the dashboard (``drsg.surfaces.app``)."""
    ssl_context = _ssl_context(config)  # before anything starts: a bad TLS file leaves nothing running
    state = ServerState(db, config)
    app = build(state)
    runner = web.AppRunner(
        app,
        access_log=None,
        handle_signals=False,
        shutdown_timeout=config.shutdown_timeout,
        # aiohttp's keep-alive timer runs from a connection's start and from each answer until the next
        # request's head is parsed, whatever bytes trickle in: the head timeout (slowloris, idle sockets)
        keepalive_timeout=config.header_timeout,
    )
    await runner.setup()
    _bound_connections(runner, config.max_connections or _auto_connections())
    site = web.TCPSite(runner, config.host, config.port, ssl_context=ssl_context, reuse_address=True)
    try:
        await site.start()
    except BaseException as exc:  # the index workers started with the app: stop them before the database closes
        await runner.cleanup()
        if not isinstance(exc, OSError):
            raise
        reason = (os.strerror(exc.errno) if exc.errno else str(exc)).lower()
        raise ServeError(f"cannot listen on {config.host}:{config.port}: {reason}") from None
    metrics = await _metrics_listener(app, config, runner)
    port = next((int(addr[1]) for addr in runner.addresses if isinstance(addr, tuple)), config.port)
    # What startup built (modules, the MCP and model clients' schemas: ~100k+ objects) lives as long
    # as the server: out of the collector's sight, a full collection walks only what came after, so
    # one triggered on the event loop costs a few ms, not the 100-160 ms measured with them in it.
    gc.collect()
    gc.freeze()
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    log.info("serving", db=db.path, url=config.url(port), token=config.token is not None, methods=len(REGISTRY))
    announce(f"serving {db.path} on {config.url(port)} (JSON-RPC at /rpc)")
    await stop.wait()

    def now() -> None:
        log.warning("second Ctrl-C: exiting without waiting for in-flight requests")
        os._exit(1)

    loop.add_signal_handler(signal.SIGINT, now)  # a second SIGTERM (a supervisor repeating itself) is ignored
    loop.add_signal_handler(signal.SIGTERM, lambda: log.info("already stopping", in_flight=state.in_flight))
    log.info("stopping", in_flight=state.in_flight)
    if metrics is not None:
        await metrics.cleanup()
    await runner.cleanup()
    if state.reading:
        # Reads the calls cut off left running (a stuck embedder, a long scan): the interpreter would
        # wait for their threads at exit, past shutdown_timeout_secs. Every commit is on disk already.
        log.warning("stopped", abandoned_reads=state.reading)
        os._exit(0)
    log.info("stopped")


async def _metrics_listener(app: web.Application, config: ServerConfig, runner: web.AppRunner) -> web.AppRunner | None:
    """``[server] metrics_addr``: a second listener serving only ``GET /metrics``, without the token.
    When it cannot listen, the server stops before serving anything (``runner`` is cleaned up)."""
    if config.metrics_addr is None:
        return None
    host, port = config.metrics_addr
    metrics = web.AppRunner(metrics_route.separate_app(app), access_log=None, handle_signals=False)
    await metrics.setup()
    try:
        await web.TCPSite(metrics, host, port, reuse_address=True).start()
    except OSError as exc:
        await metrics.cleanup()
        await runner.cleanup()
        reason = (os.strerror(exc.errno) if exc.errno else str(exc)).lower()
        raise ServeError(f"cannot listen on {host}:{port} (server.metrics_addr): {reason}") from None
    return metrics


def _auto_connections() -> int:
    """Three quarters of the open-file limit: the rest stays for the database, indexes and outgoing calls."""
    import resource

    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return max(16, soft * 3 // 4) if soft != resource.RLIM_INFINITY else 65536


def _bound_connections(runner: web.AppRunner, limit: int) -> None:
    """Close a connection at once when ``limit`` are already open: idle or slow clients beyond it
    could otherwise take every file descriptor. aiohttp's server has no such option; every
    connection is announced to its ``connection_made``, so the bound sits there."""
    server = runner.server
    assert server is not None
    announce = server.connection_made
    refused = {"count": 0, "logged": 0.0}  # one log line per 10 s however many are refused: a flood stays out

    def bounded(handler: Any, transport: asyncio.Transport) -> None:
        announce(handler, transport)
        if len(server.connections) > limit:
            handler.force_close()  # its task ends before reading; connection_lost forgets it
            refused["count"] += 1
            if time.monotonic() - refused["logged"] >= 10:
                log.warning("connections refused: too many open", limit=limit, refused=refused["count"])
                refused["count"], refused["logged"] = 0, time.monotonic()

    server.connection_made = bounded  # type: ignore[method-assign]


def route_library_logs(json_lines: bool) -> None:
    """aiohttp's own warnings (bad HTTP, dropped connections) in the same format as ours."""
    renderer: Any = structlog.processors.JSONRenderer() if json_lines else structlog.dev.ConsoleRenderer(colors=False)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            processor=renderer,
            foreign_pre_chain=[structlog.stdlib.add_log_level, structlog.processors.TimeStamper(fmt="iso", utc=True)],
        )
    )
    library = logging.getLogger("aiohttp")
    library.handlers[:] = [handler]
    library.setLevel(logging.WARNING)
    library.propagate = False
