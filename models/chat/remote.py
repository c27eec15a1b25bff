"""Chat models: any OpenAI-compatible ``/chat/completions`` endpoint through the ``openai`` client.

Temperature 0, ``max_tokens`` 8192 by default, retries and key hygiene from
:class:`drsg.models.service.Service`. The envelope of every answer is checked (JSON, one choice,
text content); what the model *says* is only text here — callers validate it as data. Token use is
summed across threads (digest calls the model from a bounded pool).
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from typing import Any

from drsg.kernel.errors import ChatError, ChatUnavailable
from drsg.models.service import RetryPolicy, Service

Message = dict[str, str]


@dataclass(frozen=True)
class ChatAnswer:
    """One completion: its text, why it stopped ("stop", "length", …) and the tokens it cost."""

    text: str
    finish_reason: str
    prompt_tokens: int
    completion_tokens: int

    @property
    def cut_off(self) -> bool:
        """The token limit ended the answer, so its JSON is almost certainly incomplete."""
        return self.finish_reason == "length"


class ChatModel:
    """One chat model at one service; thread-safe."""

    def __init__(
        self,
        name: str,
        model: str,
        base_url: str,
        api_key: str | None,
        key_env: str | None = None,
        *,
        timeout: float = 300.0,
        max_tokens: int = 8192,
        retry: RetryPolicy | None = None,
    ) -> None:
        self.name = name
        self.model = model
        self.max_tokens = max_tokens
        self._service = Service(
            "chat model",
            name,
            model,
            base_url,
            api_key,
            key_env,
            timeout=timeout,
            retry=retry,
            unavailable=ChatUnavailable,
            failed=ChatError,
        )
        self._lock = threading.Lock()
        self.calls = 0  # answers received (one per request that succeeded)
        self.prompt_tokens = 0
        self.completion_tokens = 0

    def __repr__(self) -> str:
        return f"ChatModel({self.identity()} at {self.where})"

    def identity(self) -> str:
        return f"{self.name}:{self.model}"

    @property
    def where(self) -> str:
        return self._service.where

    @property
    def requests(self) -> int:
        """HTTP requests sent, retries included."""
        return self._service.requests

    def complete(self, messages: list[Message], *, max_tokens: int | None = None) -> ChatAnswer:
        """The model's answer to ``messages`` (system/user turns), at temperature 0."""
        raw = self._service.call(
            lambda client: client.chat.completions.with_raw_response.create(
                model=self.model,
                messages=messages,  # type: ignore[arg-type]
                temperature=0,
                max_tokens=max_tokens or self.max_tokens,
            )
        )
        answer = self._parse(raw.http_response.content)
        with self._lock:
            self.calls += 1
            self.prompt_tokens += answer.prompt_tokens
            self.completion_tokens += answer.completion_tokens
        return answer

    def _bad(self, problem: str) -> ChatError:
        return ChatError(f"{self._service.who} {problem}")

    def _parse(self, content: bytes) -> ChatAnswer:
        try:
            body = json.loads(content)
        except (ValueError, UnicodeDecodeError):
            raise self._bad(f"answered with a malformed body ({len(content)} bytes); try again") from None
        choices = body.get("choices") if isinstance(body, dict) else None
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise self._bad("answered without a choice")
        message = choices[0].get("message")
        text = message.get("content") if isinstance(message, dict) else None
        if text is None:
            text = ""
        if not isinstance(text, str):
            raise self._bad("answered with non-text content")
        finish = choices[0].get("finish_reason")
        usage = body.get("usage")
        return ChatAnswer(
            text,
            finish if isinstance(finish, str) else "stop",
            _count(usage, "prompt_tokens"),
            _count(usage, "completion_tokens"),
        )


def _count(usage: Any, field: str) -> int:
    value = usage.get(field) if isinstance(usage, dict) else None
    return value if type(value) is int and value >= 0 else 0
