"""A scripted OpenAI-compatible HTTP server on loopback — the one stand-in the tests allow.

Tests drive it through the real ``openai`` client (``base_url=fake.base_url``). Each endpoint
(``/embeddings``, ``/chat/completions``, …, with or without the ``/v1`` prefix) has a queue of
scripted steps; a request takes the next step, or falls back to the endpoint's default handler when
the queue is empty. A step is a :class:`Reply` or a callable ``Request -> Reply``, so an answer can
be computed from what was asked (e.g. one vector too few).

Replies can misbehave on purpose: any status and headers (``Retry-After``), a raw body (malformed
JSON), a delay before answering (slow replies, timeouts), a body cut short after its headers
promised more (``truncate``), a connection dropped without an answer (``drop``), and server-sent
event streams for ``stream=True`` chat (``events``).

Every request is logged (:attr:`FakeOpenAI.requests`) and its tokens counted
(:attr:`FakeOpenAI.usage`): prompt tokens from the request (embedding inputs, chat messages),
completion tokens from the answer's message content. A successful JSON answer to ``/embeddings`` or
``/chat/completions`` that carries no ``usage`` gets one filled in from those counts.

Usage::

    with FakeOpenAI(dims=8) as fake:
        fake.script("/embeddings", error(429, retry_after=0.05), error(500))
        client = openai.OpenAI(base_url=fake.base_url, api_key="sk-test", max_retries=0)
        ...
        assert len(fake.requests_to("/embeddings")) == 3
"""

from __future__ import annotations

import hashlib
import json
import socket
import struct
import threading
import time
from collections import defaultdict, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from drsg.models.testing import count_tokens

# --------------------------------------------------------------------------- requests and replies


@dataclass(frozen=True)
class Request:
    """One request the server received."""

    method: str
    path: str  # as sent, e.g. "/v1/embeddings"
    headers: dict[str, str]  # lower-cased names
    body: bytes
    json: Any  # the parsed body, or None when it is not JSON
    at: float  # time.monotonic() on arrival

    @property
    def endpoint(self) -> str:
        return endpoint_of(self.path)

    @property
    def inputs(self) -> list[str]:
        """The texts of an embeddings request (``input`` as a string or a list of strings)."""
        raw = self.json.get("input") if isinstance(self.json, dict) else None
        if isinstance(raw, str):
            return [raw]
        if isinstance(raw, list):
            return [item if isinstance(item, str) else json.dumps(item) for item in raw]
        return []


@dataclass
class Reply:
    """What to answer. ``body`` (raw) wins over ``json``; ``events`` makes a server-sent event stream."""

    status: int = 200
    json: Any = None
    body: bytes | str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds to wait before answering at all
    truncate: int | None = None  # send only this many body bytes (Content-Length says more), then close
    drop: bool = False  # close the connection without sending anything
    events: list[Any] | None = None  # SSE: dicts are JSON-encoded, strings sent as they are
    event_delay: float = 0.0  # seconds between events
    done: bool = True  # end an event stream with `data: [DONE]`
    content_type: str = "application/json"


Step = Reply | Callable[[Request], Reply]


def endpoint_of(path: str) -> str:
    path = path.split("?", 1)[0].rstrip("/") or "/"
    return path[3:] if path.startswith("/v1/") else path


# --------------------------------------------------------------------------- helpers for tests


def message_tokens(messages: Any) -> int:
    """Prompt tokens of a chat request's ``messages`` (text content, tool call arguments)."""
    total = 0
    for message in messages if isinstance(messages, list) else []:
        if not isinstance(message, dict):
            continue
        content = message.get("content")
        if isinstance(content, str):
            total += count_tokens(content)
        elif isinstance(content, list):
            total += sum(count_tokens(str(part.get("text", ""))) for part in content if isinstance(part, dict))
        for call in message.get("tool_calls") or []:
            if isinstance(call, dict):
                total += count_tokens(str((call.get("function") or {}).get("arguments", "")))
    return total


def fake_vector(text: str, dims: int) -> list[float]:
    """A deterministic unit vector for ``text`` (so tests can check order and identity)."""
    raw = b""
    counter = 0
    while len(raw) < 4 * dims:
        raw += hashlib.sha256(f"{counter}:{text}".encode()).digest()
        counter += 1
    ints = struct.unpack(f"<{dims}i", raw[: 4 * dims])
    floats = [i / 2**31 for i in ints]
    norm = sum(f * f for f in floats) ** 0.5 or 1.0
    return [f / norm for f in floats]


def embeddings_body(request: Request, dims: int = 8) -> dict[str, Any]:
    """The well-formed answer to an embeddings request (tests tamper with it to make bad ones)."""
    texts = request.inputs
    model = request.json.get("model", "fake-embedding") if isinstance(request.json, dict) else "fake-embedding"
    tokens = sum(count_tokens(t) for t in texts)
    return {
        "object": "list",
        "model": model,
        "data": [
            {"object": "embedding", "index": i, "embedding": fake_vector(text, dims)} for i, text in enumerate(texts)
        ],
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }


def error(
    status: int,
    message: str | None = None,
    *,
    retry_after: float | str | None = None,
    retry_after_ms: float | None = None,
    kind: str | None = None,
    delay: float = 0.0,
) -> Reply:
    """An OpenAI-shaped error answer, optionally with ``Retry-After`` / ``retry-after-ms``."""
    headers: dict[str, str] = {}
    if retry_after is not None:
        headers["Retry-After"] = retry_after if isinstance(retry_after, str) else f"{retry_after:g}"
    if retry_after_ms is not None:
        headers["retry-after-ms"] = f"{retry_after_ms:g}"
    kind = kind or ("rate_limit_exceeded" if status == 429 else "server_error" if status >= 500 else "invalid_request")
    body = {"error": {"message": message or f"scripted {status}", "type": kind, "code": kind}}
    return Reply(status=status, json=body, headers=headers, delay=delay)


def malformed(text: str = '{"object": "list", "data": [{"embedding": [0.1, 0.') -> Reply:
    """A 200 whose body is not JSON (by default: JSON cut off mid-number, with a matching length)."""
    return Reply(body=text)


def chat_completion(
    content: str | None = None,
    *,
    tool_calls: list[dict[str, Any]] | None = None,
    finish_reason: str = "stop",
    model: str = "fake-chat",
) -> dict[str, Any]:
    """A chat completion body (usage is filled in by the server from the request and this content)."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = [
            {"id": call.get("id", f"call_{i}"), "type": "function", "function": call["function"]}
            if "function" in call
            else {
                "id": f"call_{i}",
                "type": "function",
                "function": {"name": call["name"], "arguments": json.dumps(call.get("arguments", {}))},
            }
            for i, call in enumerate(tool_calls)
        ]
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
    }


def chat_stream(pieces: Iterable[str], *, finish_reason: str = "stop", model: str = "fake-chat", **kw: Any) -> Reply:
    """A ``stream=True`` chat answer: one chunk per piece, then the finish chunk and ``[DONE]``."""

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": "chatcmpl-fake",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    events: list[Any] = [chunk({"role": "assistant", "content": ""})]
    events += [chunk({"content": piece}) for piece in pieces]
    events.append(chunk({}, finish_reason))
    return Reply(events=events, content_type="text/event-stream", **kw)


# --------------------------------------------------------------------------- the server


class FakeOpenAI:
    """The scripted server; a context manager that runs it on 127.0.0.1 with an ephemeral port."""

    def __init__(self, *, dims: int = 8, api_key: str | None = None) -> None:
        self.dims = dims
        self.api_key = api_key  # when set, requests without `Authorization: Bearer <key>` get a 401
        self._lock = threading.Lock()
        self._scripts: dict[str, deque[Step]] = defaultdict(deque)
        self._defaults: dict[str, Callable[[Request], Reply]] = {
            "/embeddings": lambda req: Reply(json=embeddings_body(req, self.dims)),
            "/models": lambda req: Reply(json={"object": "list", "data": [{"id": "fake", "object": "model"}]}),
        }
        self._requests: list[Request] = []
        self.usage: dict[str, dict[str, int]] = defaultdict(
            lambda: {"requests": 0, "prompt_tokens": 0, "completion_tokens": 0}
        )
        self._stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> FakeOpenAI:
        fake = self

        class Handler(_Handler):
            owner = fake

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        server.block_on_close = False
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, args=(0.05,), name="fake-openai", daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = self._thread = None

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def port(self) -> int:
        assert self._server is not None, "start the server first"
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # ------------------------------------------------------------------ scripting

    def script(self, endpoint: str, *steps: Step) -> FakeOpenAI:
        """Queue answers for the next requests to ``endpoint``, in order."""
        with self._lock:
            self._scripts[endpoint_of(endpoint)].extend(steps)
        return self

    def on(self, endpoint: str, handler: Callable[[Request], Reply]) -> FakeOpenAI:
        """Answer ``endpoint`` with ``handler`` whenever its script is empty."""
        with self._lock:
            self._defaults[endpoint_of(endpoint)] = handler
        return self

    def pending(self, endpoint: str) -> int:
        with self._lock:
            return len(self._scripts[endpoint_of(endpoint)])

    @property
    def requests(self) -> list[Request]:
        with self._lock:
            return list(self._requests)

    def requests_to(self, endpoint: str) -> list[Request]:
        wanted = endpoint_of(endpoint)
        return [r for r in self.requests if r.endpoint == wanted]

    def reset(self) -> None:
        with self._lock:
            self._scripts.clear()
            self._requests.clear()
            self.usage.clear()

    # ------------------------------------------------------------------ used by the handler

    def _answer(self, request: Request) -> Reply:
        with self._lock:
            self._requests.append(request)
            if self.api_key is not None and request.headers.get("authorization") != f"Bearer {self.api_key}":
                return error(401, "Incorrect API key provided", kind="invalid_api_key")
            queue = self._scripts[request.endpoint]
            step: Step | None = queue.popleft() if queue else self._defaults.get(request.endpoint)
        if step is None:
            # 400, not 5xx: a test that forgot to script an answer must fail, not retry.
            return error(400, f"fake server: nothing scripted for {request.method} {request.path}")
        reply = step(request) if callable(step) else step
        self._count(request, reply)
        return reply

    def _count(self, request: Request, reply: Reply) -> None:
        endpoint = request.endpoint
        prompt = 0
        if endpoint == "/embeddings":
            prompt = sum(count_tokens(t) for t in request.inputs)
        elif endpoint == "/chat/completions" and isinstance(request.json, dict):
            prompt = message_tokens(request.json.get("messages"))
        completion = 0
        body = reply.json
        if isinstance(body, dict):
            for choice in body.get("choices") or []:
                content = (choice.get("message") or {}).get("content") if isinstance(choice, dict) else None
                completion += count_tokens(content) if isinstance(content, str) else 0
            if reply.status == 200 and "usage" not in body and endpoint in ("/embeddings", "/chat/completions"):
                body["usage"] = {
                    "prompt_tokens": prompt,
                    "completion_tokens": completion,
                    "total_tokens": prompt + completion,
                }
        for event in reply.events or []:
            if isinstance(event, dict):
                for choice in event.get("choices") or []:
                    piece = (choice.get("delta") or {}).get("content") if isinstance(choice, dict) else None
                    completion += count_tokens(piece) if isinstance(piece, str) else 0
        with self._lock:
            tally = self.usage[endpoint]
            tally["requests"] += 1
            tally["prompt_tokens"] += prompt
            tally["completion_tokens"] += completion

    def _wait(self, seconds: float) -> bool:
        """Sleep unless the server is closing; False when it is."""
        return not self._stopping.wait(seconds) if seconds > 0 else not self._stopping.is_set()


class _Handler(BaseHTTPRequestHandler):
    owner: FakeOpenAI
    protocol_version = "HTTP/1.1"  # keep-alive, like a real service

    def log_message(self, format: str, *args: Any) -> None:
        pass  # quiet: tests read fake.requests instead

    def do_GET(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def do_DELETE(self) -> None:
        self._handle()

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        try:
            parsed = json.loads(body) if body else None
        except ValueError:
            parsed = None
        request = Request(
            method=self.command,
            path=self.path,
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
            json=parsed,
            at=time.monotonic(),
        )
        reply = self.owner._answer(request)
        try:
            self._send(reply)
        except (TimeoutError, BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client gave up (a timeout test); nothing to do

    def _send(self, reply: Reply) -> None:
        if not self.owner._wait(reply.delay):
            self.close_connection = True
            return
        if reply.drop:
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if reply.events is not None:
            self._send_events(reply)
            return
        if reply.body is not None:
            payload = reply.body.encode() if isinstance(reply.body, str) else reply.body
        else:
            payload = json.dumps(reply.json).encode()  # NaN stays NaN: a hostile answer on purpose
        self.send_response(reply.status)
        self.send_header("Content-Type", reply.content_type)
        self.send_header("Content-Length", str(len(payload)))
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.end_headers()
        if reply.truncate is not None:
            self.wfile.write(payload[: reply.truncate])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        self.wfile.write(payload)

    def _send_events(self, reply: Reply) -> None:
        self.send_response(reply.status)
        self.send_header("Content-Type", reply.content_type)
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.close_connection = True
        events = list(reply.events or [])
        if reply.done:
            events.append("[DONE]")
        for i, event in enumerate(events):
            if i and not self.owner._wait(reply.event_delay):
                return
            data = event if isinstance(event, str) else json.dumps(event)
            self.wfile.write(f"data: {data}\n\n".encode())
            self.wfile.flush()
