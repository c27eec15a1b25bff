"""Chat models: any OpenAI-compatible ``/chat/completions`` endpoint through the ``openai`` client.

Temperature 0, ``max_tokens`` 8192 by default, retries and key hygiene from
:class:`drsg.models.service.Service`. The envelope of every answer is checked (JSON, one choice,
text content); what the model *says* is only text here — callers validate it as data. The port
(``base.py``) counts the tokens every answer cost.
"""

from __future__ import annotations

import json
from typing import Any

from drsg.kernel.errors import ChatError, ChatUnavailable
from drsg.models.chat.base import ChatAnswer, ChatModel, Message
from drsg.models.service import RetryPolicy, Service

__all__ = ["RemoteChatModel"]


class RemoteChatModel(ChatModel):
    """One chat model at one OpenAI-compatible service; thread-safe."""

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
        super().__init__(name, model)
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

    def __repr__(self) -> str:
        return f"RemoteChatModel({self.identity()} at {self.where})"

    @property
    def where(self) -> str:
        return self._service.where

    @property
    def requests(self) -> int:
        """HTTP requests sent, retries included."""
        return self._service.requests

    def _complete(self, messages: list[Message], max_tokens: int | None) -> ChatAnswer:
        raw = self._service.call(
            lambda client: client.chat.completions.with_raw_response.create(
                model=self.model,
                messages=messages,  # type: ignore[arg-type]
                temperature=0,
                max_tokens=max_tokens or self.max_tokens,
            )
        )
        return self._parse(raw.http_response.content)

    def _bad(self, problem: str) -> ChatError:
        return ChatError(f"{self._service.who} {problem}")

    def _parse(self, content: bytes) -> ChatAnswer:
        try:
            body = json.loads(content)
        except (ValueError, UnicodeDecodeError, RecursionError):  # a body nested past Python's reader
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
