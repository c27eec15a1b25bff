"""Remote embedders: any OpenAI-compatible ``/embeddings`` endpoint through the ``openai`` client.

One class serves OpenAI, Qwen (DashScope compatible mode), Ollama and any base URL; ``registry.py``
fills in each provider's URL, key variable, default model and batch size. The client's own retries
are off: this module retries 408/409/429/5xx, timeouts and dropped connections itself, with
exponential backoff and jitter, honouring ``Retry-After`` (and ``retry-after-ms``) under a cap on
the total time spent waiting. Every answer is checked — valid JSON, one vector per text, one size
for all, finite numbers — and a bad one raises :class:`BadEmbeddingResponse`; nothing half-checked
is ever returned. The API key lives only inside the client: it is never logged, and any text taken
from a server's answer has it masked before it reaches an error message.
"""

from __future__ import annotations

import base64
import binascii
import email.utils
import json
import math
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC
from typing import Any
from urllib.parse import urlsplit

import numpy as np
import openai
import structlog

from drsg.errors import ConfigError
from drsg.values import Vector
from drsg.workers.embedders.base import (
    BadEmbeddingResponse,
    EmbedderError,
    EmbedderUnavailable,
    check_texts,
)

log = structlog.get_logger("drsg.workers.embedders")

RETRYABLE_STATUS = frozenset({408, 409, 429})  # and every 5xx


@dataclass(frozen=True)
class RetryPolicy:
    """How hard to try one batch: ``attempts`` requests at most, sleeping at most ``max_wait`` in all."""

    attempts: int = 6
    base_delay: float = 0.5  # first backoff; doubles each retry
    max_delay: float = 8.0  # ceiling of one backoff (a server's Retry-After may ask for more)
    max_wait: float = 60.0  # ceiling of all the sleeping for one batch

    def backoff(self, retry: int, rng: Callable[[], float]) -> float:
        """Delay before retry number ``retry`` (1-based): exponential, with jitter in [50 %, 100 %]."""
        ceiling = min(self.max_delay, self.base_delay * 2 ** (retry - 1))
        return ceiling * (0.5 + 0.5 * rng())


def retry_after(headers: Mapping[str, str], now: Callable[[], float] = time.time) -> float | None:
    """Seconds a server asked us to wait (``retry-after-ms``, ``Retry-After`` seconds or HTTP date)."""
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            value = float(millis) / 1000
            if math.isfinite(value) and value >= 0:
                return value
        except ValueError:
            pass
    text = headers.get("retry-after")
    if text is None:
        return None
    try:
        value = float(text)
        return value if math.isfinite(value) and value >= 0 else None
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, when.timestamp() - now())


class RemoteEmbedder:
    """Embeddings from an OpenAI-compatible service, batched, retried and validated."""

    def __init__(
        self,
        name: str,
        model: str,
        base_url: str,
        api_key: str | None,
        key_env: str | None = None,
        *,
        batch_size: int = 64,
        timeout: float = 60.0,
        dimensions: int | None = None,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], None] = time.sleep,
        rng: Callable[[], float] = random.random,
    ) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self.name = name
        self.model = model
        self.base_url = base_url
        self.key_env = key_env
        self.batch_size = batch_size
        self.timeout = timeout
        self.dimensions = dimensions  # asked of the service (OpenAI's `dimensions`), if set
        self.dims: int | None = dimensions
        self.retry = retry or RetryPolicy()
        self.requests = 0  # HTTP requests sent, retries included
        self.tokens = 0  # input tokens the service reported using
        self._sleep = sleep
        self._rng = rng
        self._secret = api_key or ""
        self._client = openai.OpenAI(
            # The client insists on a key; services without one (Ollama, a local server) ignore it.
            api_key=api_key or "no-key",
            base_url=base_url,
            timeout=timeout,
            max_retries=0,
        )

    def __repr__(self) -> str:
        return f"RemoteEmbedder({self.identity()} at {self.where})"

    def identity(self) -> str:
        """``name:model``, plus ``@N`` when the service was asked for N-dim vectors (another space)."""
        suffix = f"@{self.dimensions}" if self.dimensions else ""
        return f"{self.name}:{self.model}{suffix}"

    @property
    def where(self) -> str:
        """The service's scheme, host and port (never credentials or the path)."""
        parts = urlsplit(self.base_url)
        port = f":{parts.port}" if parts.port else ""
        return f"{parts.scheme}://{parts.hostname}{port}"

    def embed(self, texts: list[str]) -> list[Vector]:
        texts = check_texts(texts)
        out: list[Vector] = []
        for start in range(0, len(texts), self.batch_size):
            matrix = self._embed_batch(texts[start : start + self.batch_size])
            out.extend(Vector(row.tobytes()) for row in matrix)
        return out

    # ------------------------------------------------------------------ one batch, with retries

    def _embed_batch(self, batch: list[str]) -> np.ndarray:
        waited = 0.0
        problem = ""
        for attempt in range(1, self.retry.attempts + 1):
            asked: float | None = None
            try:
                self.requests += 1
                extra: dict[str, Any] = {"dimensions": self.dimensions} if self.dimensions else {}
                raw = self._client.embeddings.with_raw_response.create(
                    model=self.model, input=batch, encoding_format="float", **extra
                )
            except openai.APIStatusError as exc:
                status = exc.status_code
                if status not in RETRYABLE_STATUS and status < 500:
                    raise self._refused(exc) from None
                problem = f"HTTP {status}"
                asked = retry_after(exc.response.headers)
            except openai.APITimeoutError:
                problem = f"no answer within {self.timeout:g} s"
            except openai.APIConnectionError as exc:
                cause = exc.__cause__ or exc
                problem = f"connection failed: {self._scrub(type(cause).__name__ + ' ' + str(cause))}"
            else:
                return self._parse(raw.http_response.content, len(batch))
            if attempt == self.retry.attempts:
                break
            delay = asked if asked is not None else self.retry.backoff(attempt, self._rng)
            if waited + delay > self.retry.max_wait:
                if asked is not None:
                    problem += f"; it asked to wait {asked:g} s, past the {self.retry.max_wait:g} s retry budget"
                break
            log.warning(
                "embedder retry", embedder=self.identity(), problem=problem, attempt=attempt, delay=round(delay, 3)
            )
            self._sleep(delay)
            waited += delay
        raise EmbedderUnavailable(
            f"the {self.name} embedder at {self.where} failed after {attempt} "
            f"request{'s' if attempt != 1 else ''} (last: {problem}); try again later"
        )

    def _refused(self, exc: openai.APIStatusError) -> Exception:
        status = exc.status_code
        said = self._server_message(exc.body)
        detail = f" ({said})" if said else ""
        if status in (401, 403):
            var = self.key_env or "the API key variable"
            return ConfigError(
                f"the {self.name} embedder at {self.where} refused the key (HTTP {status}){detail}; check {var}"
            )
        if status == 404:
            return EmbedderError(
                f"the {self.name} embedder at {self.where} answered 404{detail}; "
                f"check the model name {self.model!r} and the base URL"
            )
        return EmbedderError(f"the {self.name} embedder at {self.where} rejected the request (HTTP {status}){detail}")

    def _server_message(self, body: object) -> str:
        if isinstance(body, dict):
            inner = body.get("error", body)
            body = inner.get("message", inner) if isinstance(inner, dict) else inner
        return self._scrub(str(body)) if body else ""

    def _scrub(self, text: str) -> str:
        """One line, at most 200 characters, with the key masked."""
        if self._secret:
            text = text.replace(self._secret, "***")
        text = " ".join(text.split())
        return text if len(text) <= 200 else text[:199] + "…"

    # ------------------------------------------------------------------ checking an answer

    def _bad(self, problem: str) -> BadEmbeddingResponse:
        return BadEmbeddingResponse(f"the {self.name} embedder at {self.where} {problem}; no vectors were stored")

    def _parse(self, content: bytes, count: int) -> np.ndarray:
        try:
            body = json.loads(content)
        except (ValueError, UnicodeDecodeError):
            raise self._bad(f"answered with malformed JSON ({len(content)} bytes)") from None
        data = body.get("data") if isinstance(body, dict) else None
        if not isinstance(data, list):
            raise self._bad("answered without a `data` list")
        if len(data) != count:
            raise self._bad(f"returned {len(data)} vectors for {count} texts")
        rows: list[np.ndarray | None] = [None] * count
        for position, item in enumerate(data):
            if not isinstance(item, dict):
                raise self._bad(f"returned a data item that is not an object (item {position})")
            index = item.get("index", position)
            if type(index) is not int or not 0 <= index < count or rows[index] is not None:
                raise self._bad(f"returned a bad or repeated index {index!r} (item {position})")
            rows[index] = self._vector(item.get("embedding"), position)
        sizes = sorted({len(row) for row in rows if row is not None})
        if len(sizes) != 1:
            raise self._bad(f"returned vectors of different sizes ({', '.join(map(str, sizes))})")
        size = sizes[0]
        if size == 0:
            raise self._bad("returned empty vectors")
        if self.dims is not None and size != self.dims:
            raise self._bad(f"returned {size}-dim vectors where {self.dims} dims were expected")
        with np.errstate(over="ignore"):
            matrix = np.stack([row for row in rows if row is not None]).astype("<f4")
        if not np.isfinite(matrix).all():
            raise self._bad("returned non-finite numbers (NaN, infinity or beyond float32)")
        self.dims = size
        usage = body.get("usage")
        if isinstance(usage, dict):
            used = usage.get("prompt_tokens", usage.get("total_tokens"))
            if type(used) is int and used >= 0:
                self.tokens += used
        return matrix

    def _vector(self, value: object, position: int) -> np.ndarray:
        if isinstance(value, list):
            if not all(type(x) is float or type(x) is int for x in value):
                raise self._bad(f"returned a vector holding something other than numbers (item {position})")
            return np.asarray(value, dtype=np.float64)
        if isinstance(value, str):  # encoding_format=base64, which some servers send regardless
            try:
                raw = base64.b64decode(value, validate=True)
            except (binascii.Error, ValueError):
                raise self._bad(f"returned an undecodable base64 vector (item {position})") from None
            if len(raw) % 4:
                raise self._bad(f"returned a base64 vector that is not float32 (item {position})")
            return np.frombuffer(raw, dtype="<f4").astype(np.float64)
        raise self._bad(f"returned an item without an embedding (item {position})")
