"""Calling an OpenAI-compatible service: one client, retries, and errors a user can act on.

Both remote embedders (``embedders/remote.py``) and chat models (``drsg.models.chat``) talk to
OpenAI, DeepSeek, Qwen (DashScope compatible mode), Ollama or any base URL through the real
``openai`` client. The client's own retries are off: :meth:`Service.call` retries 408/409/429/5xx,
timeouts and dropped connections itself, with exponential backoff and jitter, honouring
``Retry-After`` (and ``retry-after-ms``) under a cap on the total time spent waiting. A refused
request (401/403 → the key variable to check, 404 → the model name and base URL, other 4xx) fails
at once. The API key lives only inside the client: it is never logged, and any text taken from a
server's answer has it masked before it reaches an error message.
"""

from __future__ import annotations

import email.utils
import math
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC
from typing import TYPE_CHECKING, TypeVar
from urllib.parse import urlsplit

import structlog

from drsg.kernel.backoff import backoff
from drsg.kernel.errors import ConfigError, DrsgError

if TYPE_CHECKING:  # the client is imported on the first call: `import openai` alone costs 0.5-7 s
    import openai

log = structlog.get_logger("drsg.models.service")

RETRYABLE_STATUS = frozenset({408, 409, 429})  # and every 5xx
T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    """How hard to try one request: ``attempts`` at most, sleeping at most ``max_wait`` in all."""

    attempts: int = 6
    base_delay: float = 0.5  # first backoff; doubles each retry
    max_delay: float = 8.0  # ceiling of one backoff (a server's Retry-After may ask for more)
    max_wait: float = 60.0  # ceiling of all the sleeping for one request

    def backoff(self, retry: int, rng: Callable[[], float]) -> float:
        """Delay before retry number ``retry`` (1-based): exponential, with jitter in [50 %, 100 %]."""
        return backoff(retry, self.base_delay, self.max_delay, rng)


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


class Service:
    """One OpenAI-compatible endpoint: ``role`` ("embedder", "chat model") names it in messages.

    ``unavailable`` is raised when the retry budget runs out, ``failed`` for a request the service
    refused for a reason other than the key.
    """

    def __init__(
        self,
        role: str,
        name: str,
        model: str,
        base_url: str,
        api_key: str | None,
        key_env: str | None,
        *,
        timeout: float,
        retry: RetryPolicy | None,
        unavailable: type[DrsgError],
        failed: type[DrsgError],
        sleep: Callable[[float], None] = time.sleep,
        rng: Callable[[], float] = random.random,
    ) -> None:
        self.role = role
        self.name = name
        self.model = model
        self.base_url = base_url
        self.key_env = key_env
        self.timeout = timeout
        self.retry = retry or RetryPolicy()
        self.requests = 0  # HTTP requests sent, retries included
        self._unavailable = unavailable
        self._failed = failed
        self._sleep = sleep
        self._rng = rng
        self._secret = api_key or ""
        self._client: openai.OpenAI | None = None

    @property
    def client(self) -> openai.OpenAI:
        """The service's one client, made on first use (a server starts without importing ``openai``)."""
        if self._client is None:
            import openai

            self._client = openai.OpenAI(
                # The client insists on a key; services without one (Ollama, a local server) ignore it.
                api_key=self._secret or "no-key",
                base_url=self.base_url,
                timeout=self.timeout,
                max_retries=0,
            )
        return self._client

    @property
    def where(self) -> str:
        """The service's scheme, host and port (never credentials or the path)."""
        parts = urlsplit(self.base_url)
        port = f":{parts.port}" if parts.port else ""
        return f"{parts.scheme}://{parts.hostname}{port}"

    @property
    def who(self) -> str:
        return f"the {self.name} {self.role} at {self.where}"

    def call(self, send: Callable[[openai.OpenAI], T]) -> T:
        """``send(client)`` with retries; the answer of the first attempt the service accepts."""
        import openai

        waited = 0.0
        problem = ""
        attempt = 0
        for attempt in range(1, self.retry.attempts + 1):
            asked: float | None = None
            try:
                self.requests += 1
                return send(self.client)
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
                problem = f"connection failed: {self.scrub(type(cause).__name__ + ' ' + str(cause))}"
            if attempt == self.retry.attempts:
                break
            delay = asked if asked is not None else self.retry.backoff(attempt, self._rng)
            if waited + delay > self.retry.max_wait:
                if asked is not None:
                    problem += f"; it asked to wait {asked:g} s, past the {self.retry.max_wait:g} s retry budget"
                break
            log.warning(
                f"{self.role} retry", service=self.name, problem=problem, attempt=attempt, delay=round(delay, 3)
            )
            self._sleep(delay)
            waited += delay
        raise self._unavailable(
            f"{self.who} failed after {attempt} request{'s' if attempt != 1 else ''} (last: {problem}); try again later"
        )

    def _refused(self, exc: openai.APIStatusError) -> DrsgError:
        status = exc.status_code
        said = self.server_message(exc.body)
        detail = f" ({said})" if said else ""
        if status in (401, 403):
            var = self.key_env or "the API key variable"
            return ConfigError(f"{self.who} refused the key (HTTP {status}){detail}; check {var}")
        if status == 404:
            return self._failed(
                f"{self.who} answered 404{detail}; check the model name {self.model!r} and the base URL"
            )
        return self._failed(f"{self.who} rejected the request (HTTP {status}){detail}")

    def server_message(self, body: object) -> str:
        if isinstance(body, dict):
            inner = body.get("error", body)
            body = inner.get("message", inner) if isinstance(inner, dict) else inner
        return self.scrub(str(body)) if body else ""

    def scrub(self, text: str) -> str:
        """One line, at most 200 characters, with the key masked."""
        if self._secret:
            text = text.replace(self._secret, "***")
        text = " ".join(text.split())
        return text if len(text) <= 200 else text[:199] + "…"
