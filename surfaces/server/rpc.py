"""JSON-RPC 2.0: parsing, batches, notifications, parameter checks, and error mapping.

Transport-free: :meth:`Dispatcher.handle` takes a request body (bytes) and returns the response
body (or None when every call was a notification). Whatever arrives, the answer is a JSON-RPC
response, never an exception: malformed JSON is -32700, a malformed request -32600, an unknown
method -32601, bad params -32602, a drsg error its ``rpc_code``, and a bug -32603 (logged). The
codes (upstream's, ``openrpc.json`` ``x-error-codes``) and which error answers with which are drawn
in :mod:`drsg.kernel.errors`.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import structlog

from drsg.kernel.errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    DrsgError,
    RpcError,
)
from drsg.kernel.telemetry import RPC_CALLS, RPC_SECONDS
from drsg.kernel.values import json_depth
from drsg.surfaces.server.schema import validate

MAX_DEPTH = 64  # nesting of params; deeper is refused before any handler sees it

log = structlog.get_logger("drsg.surfaces.server")
Handler = Callable[[Any, dict[str, Any]], Awaitable[Any]]


@dataclass(frozen=True)
class Method:
    """One RPC method: its handler and its OpenRPC description (the params it accepts)."""

    name: str
    handler: Handler
    schema: dict[str, Any]

    @property
    def params(self) -> list[dict[str, Any]]:
        return self.schema.get("params", [])  # type: ignore[no-any-return]

    @property
    def access(self) -> str:
        return str(self.schema.get("x-access", "read"))

    def bind(self, params: Any) -> dict[str, Any]:
        """Named or positional params → a checked dict; a problem is -32602 naming the param."""
        specs = self.params
        if isinstance(params, list):
            if len(params) > len(specs):
                raise RpcError(INVALID_PARAMS, f"{self.name} takes at most {len(specs)} positional params")
            params = {spec["name"]: value for spec, value in zip(specs, params, strict=False)}
        by_name = {spec["name"]: spec for spec in specs}
        unknown = sorted(set(params) - set(by_name))
        if unknown:
            takes = ", ".join(by_name) or "no params"
            raise RpcError(INVALID_PARAMS, f"{self.name} has no param {unknown[0]!r}; it takes: {takes}")
        bound: dict[str, Any] = {}
        for name, spec in by_name.items():
            value = params.get(name)
            if value is None and not _allows_null(spec.get("schema", {})):
                if spec.get("required"):
                    raise RpcError(INVALID_PARAMS, f"{self.name} needs param {name!r}")
                continue  # absent, or null for "not given"
            problem = validate(value, spec.get("schema", {}), f"param {name!r}")
            if problem:
                raise RpcError(INVALID_PARAMS, f"{self.name}: {problem}")
            bound[name] = value
        return bound


def _allows_null(schema: Mapping[str, Any]) -> bool:
    types = schema.get("type")
    return types == "null" or (isinstance(types, list) and "null" in types)


@dataclass
class Call:
    """What the access log says about one call."""

    method: str
    code: int | None = None  # the error code, None on success


@dataclass
class Reply:
    body: str | None  # None: nothing to send (only notifications)
    calls: list[Call] = field(default_factory=list)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def dumps(obj: Any) -> str:
    """JSON text that can be sent as UTF-8. A lone surrogate (a request's "\\ud800", echoed in an id or
    an error message) cannot be: then every non-ASCII character is escaped instead."""
    text = json.dumps(obj, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    if not text.isascii():
        try:
            text.encode()
        except UnicodeEncodeError:
            return json.dumps(obj, ensure_ascii=True, allow_nan=False, separators=(",", ":"))
    return text


def parse_request(body: bytes | str) -> tuple[Any, str | None]:
    """A request body's JSON, or the parse-error answer to send instead (NaN, Infinity, nesting
    deeper than Python can read, invalid UTF-8 and malformed JSON are all -32700)."""
    try:
        return json.loads(body, parse_constant=_reject_constant), None
    except RecursionError:
        return None, error_body(None, PARSE_ERROR, "parse error: the JSON nests too deeply")
    except (ValueError, UnicodeDecodeError) as exc:
        return None, error_body(None, PARSE_ERROR, f"parse error: {_short(exc)}")


def error_body(rid: Any, code: int, message: str, data: Any = None) -> str:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return dumps({"jsonrpc": "2.0", "id": rid, "error": error})


class Dispatcher:
    def __init__(self, methods: Mapping[str, Method], *, max_batch: int = 1000, max_concurrent: int = 1024) -> None:
        self.methods = dict(methods)
        self.max_batch = max_batch
        self._slots = asyncio.Semaphore(max_concurrent)

    async def handle(self, body: bytes | str, ctx: Any) -> Reply:
        request, problem = parse_request(body)
        if problem is not None:
            return Reply(problem)
        return await self.handle_parsed(request, ctx)

    async def handle_parsed(self, request: Any, ctx: Any) -> Reply:
        reply = Reply(None)
        if isinstance(request, list):
            if not request:
                return Reply(error_body(None, INVALID_REQUEST, "invalid request: an empty batch"))
            if len(request) > self.max_batch:
                message = f"invalid request: a batch of {len(request)} calls; at most {self.max_batch}"
                return Reply(error_body(None, INVALID_REQUEST, message))
            # In order, one after another: a later call may use what an earlier one wrote.
            parts = [await self._one(item, ctx, reply.calls) for item in request]
            answers = [p for p in parts if p is not None]
            reply.body = "[" + ",".join(answers) + "]" if answers else None
            return reply
        reply.body = await self._one(request, ctx, reply.calls)
        return reply

    async def _one(self, request: Any, ctx: Any, calls: list[Call]) -> str | None:
        started = time.perf_counter()
        body = await self._answer(request, ctx, calls)
        call = calls[-1]  # every answer appends its call
        method = call.method if call.method in self.methods else "-"  # a made-up name is no label
        RPC_CALLS.inc((method, "ok" if call.code is None else "error"))
        RPC_SECONDS.observe((method,), time.perf_counter() - started)
        return body

    async def _answer(self, request: Any, ctx: Any, calls: list[Call]) -> str | None:
        if not isinstance(request, dict):
            calls.append(Call("-", INVALID_REQUEST))
            return error_body(None, INVALID_REQUEST, "invalid request: a request is a JSON object")
        rid = request.get("id")
        if rid is not None and (isinstance(rid, bool) or not isinstance(rid, str | int | float)):
            calls.append(Call("-", INVALID_REQUEST))
            return error_body(None, INVALID_REQUEST, "invalid request: id must be a string, a number or null")
        name = request.get("method")
        call = Call(name if isinstance(name, str) else "-")
        calls.append(call)
        problem = None
        if request.get("jsonrpc") != "2.0":
            problem = 'invalid request: "jsonrpc" must be "2.0"'
        elif not isinstance(name, str):
            problem = 'invalid request: "method" must be a string'
        elif "params" in request and not isinstance(request["params"], dict | list):
            problem = 'invalid request: "params" must be an object or an array'
        if problem is not None:
            call.code = INVALID_REQUEST
            return error_body(rid, INVALID_REQUEST, problem)
        notification = "id" not in request
        try:
            result = await self._invoke(str(name), request.get("params", {}), ctx)
            members = {}
            if isinstance(result, WithMembers):
                result, members = result.result, result.members
            try:
                body = None if notification else dumps({"jsonrpc": "2.0", "id": rid, "result": result, **members})
            except (TypeError, ValueError):
                log.exception("rpc result is not JSON", method=name)
                raise RpcError(INTERNAL_ERROR, f"internal error in {name} (the result is not JSON)") from None
        except RpcError as exc:
            call.code = exc.rpc_code
            body = None if notification else error_body(rid, exc.rpc_code, exc.message, exc.data)
        return body

    async def _invoke(self, name: str, params: Any, ctx: Any) -> Any:
        method = self.methods.get(name)
        if method is None:
            raise RpcError(METHOD_NOT_FOUND, f"method not found: {name!r}; rpc.discover lists the methods")
        if json_depth(params, MAX_DEPTH) > MAX_DEPTH:
            raise RpcError(INVALID_PARAMS, f"{name}: params nest deeper than {MAX_DEPTH} levels")
        bound = method.bind(params)
        started = time.perf_counter()
        try:
            async with self._slots:
                return await method.handler(ctx, bound)
        except RpcError:
            raise
        except DrsgError as exc:
            raise RpcError(exc.rpc_code, exc.message, {"error": type(exc).__name__}) from None
        except RecursionError:
            raise RpcError(INVALID_PARAMS, f"{name}: a value nests too deeply") from None
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.exception("rpc method failed", method=name, ms=round((time.perf_counter() - started) * 1000, 2))
            raise RpcError(
                INTERNAL_ERROR, f"internal error in {name} ({type(exc).__name__}); the server logged it"
            ) from None


@dataclass(frozen=True)
class WithMembers:
    """A result that must keep upstream's shape (an array) with more to say: ``members`` go beside
    ``result`` in the response object (JSON-RPC clients ignore members they do not know)."""

    result: Any
    members: dict[str, Any]


def _short(exc: BaseException) -> str:
    text = str(exc)
    return text if len(text) <= 200 else text[:200] + "…"
