"""Remote embedders: any OpenAI-compatible ``/embeddings`` endpoint through the ``openai`` client.

One class serves OpenAI, Qwen (DashScope compatible mode), Ollama and any base URL; ``registry.py``
fills in each provider's URL, key variable, default model and batch size. Retries, backoff and key
hygiene are :class:`drsg.models.service.Service`'s. Every answer is checked — valid JSON, one
vector per text, one size for all, finite numbers — and a bad one raises
:class:`BadEmbeddingResponse`; nothing half-checked is ever returned.
"""

from __future__ import annotations

import base64
import binascii
import json
import random
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from drsg.kernel import telemetry
from drsg.kernel.values import Vector
from drsg.models.embedders.base import BadEmbeddingResponse, Embedder, EmbedderError, EmbedderUnavailable
from drsg.models.service import RetryPolicy, Service, retry_after

if TYPE_CHECKING:  # numpy loads with the first answer read, not with the registry: `drsg serve`
    import numpy as np

__all__ = ["RemoteEmbedder", "RetryPolicy", "retry_after"]


class RemoteEmbedder(Embedder):
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
        self.tokens = 0  # input tokens the service reported using
        self._service = Service(
            "embedder",
            name,
            model,
            base_url,
            api_key,
            key_env,
            timeout=timeout,
            retry=retry,
            unavailable=EmbedderUnavailable,
            failed=EmbedderError,
            sleep=sleep,
            rng=rng,
        )

    @property
    def requests(self) -> int:
        """HTTP requests sent, retries included."""
        return self._service.requests

    @property
    def retry(self) -> RetryPolicy:
        return self._service.retry

    def __repr__(self) -> str:
        return f"RemoteEmbedder({self.identity()} at {self.where})"

    def identity(self) -> str:
        """``name:model``, plus ``@N`` when the service was asked for N-dim vectors (another space)."""
        suffix = f"@{self.dimensions}" if self.dimensions else ""
        return f"{self.name}:{self.model}{suffix}"

    @property
    def where(self) -> str:
        return self._service.where

    def _embed(self, texts: list[str]) -> list[Vector]:
        out: list[Vector] = []
        for start in range(0, len(texts), self.batch_size):
            matrix = self._embed_batch(texts[start : start + self.batch_size])
            out.extend(Vector(row.tobytes()) for row in matrix)
        return out

    def _embed_batch(self, batch: list[str]) -> np.ndarray:
        extra: dict[str, Any] = {"dimensions": self.dimensions} if self.dimensions else {}
        raw = self._service.call(
            lambda client: client.embeddings.with_raw_response.create(
                model=self.model, input=batch, encoding_format="float", **extra
            )
        )
        return self._parse(raw.http_response.content, len(batch))

    # ------------------------------------------------------------------ checking an answer

    def _bad(self, problem: str) -> BadEmbeddingResponse:
        return BadEmbeddingResponse(f"the {self.name} embedder at {self.where} {problem}; no vectors were stored")

    def _parse(self, content: bytes, count: int) -> np.ndarray:
        import numpy as np

        try:
            body = json.loads(content)
        except (ValueError, UnicodeDecodeError, RecursionError):  # a body nested past Python's reader
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
                telemetry.model_tokens("embed", self.name, used)
        return matrix

    def _vector(self, value: object, position: int) -> np.ndarray:
        import numpy as np

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
