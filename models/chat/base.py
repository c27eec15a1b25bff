"""The chat model port: messages in, one answer out.

A chat model answers a list of system/user turns with one :class:`ChatAnswer` (its text, why it
stopped, the tokens it cost), at temperature 0. What the model *says* is only text here — callers
validate it as data. Backends: ``remote.py`` (any OpenAI-compatible ``/chat/completions``
endpoint through the ``openai`` client); ``drsg.models.testing`` ships a scripted one for tests.
``providers.py`` picks one by name.

Errors (in drsg.kernel.errors' tree)::

    ConfigError                 a missing key variable, an unknown provider or model (exit 2)
    ChatError                   the model refused the request or answered with something that is not an answer
    └── ChatUnavailable         the service kept failing (429/5xx/timeouts) past the retry budget
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from dataclasses import dataclass

from drsg.kernel import telemetry
from drsg.kernel.errors import ChatError, ChatUnavailable

#: one turn: ``{"role": "system" | "user" | "assistant", "content": text}``
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


class ChatModel(ABC):
    """One chat model; thread-safe (digest calls it from a bounded pool).

    A backend implements :meth:`_complete`; :meth:`complete` counts what every answer cost, so the
    counters mean the same for every backend. ``tests/contract/test_chat_contract.py`` holds what
    every backend must do.
    """

    def __init__(self, name: str, model: str) -> None:
        self.name = name  # provider name: "openai", "deepseek", "qwen", "ollama", "url", …
        self.model = model  # the model's name as the provider knows it
        self._lock = threading.Lock()
        self.calls = 0  # answers received
        self.prompt_tokens = 0
        self.completion_tokens = 0

    def identity(self) -> str:
        """``"<name>:<model>"``, which keys cached answers and names the model in provenance."""
        return f"{self.name}:{self.model}"

    def complete(self, messages: list[Message], *, max_tokens: int | None = None) -> ChatAnswer:
        """The model's answer to ``messages``; ``max_tokens`` caps its length (``None``: the backend's
        default). Raises :class:`ChatUnavailable` or :class:`ChatError`, never returns a half answer."""
        answer = self._complete(messages, max_tokens)
        with self._lock:
            self.calls += 1
            self.prompt_tokens += answer.prompt_tokens
            self.completion_tokens += answer.completion_tokens
        telemetry.model_call("chat", self.name)
        telemetry.model_tokens("chat", self.name, answer.prompt_tokens, answer.completion_tokens)
        return answer

    @abstractmethod
    def _complete(self, messages: list[Message], max_tokens: int | None) -> ChatAnswer:
        """One answer (what a backend implements); may be called from several threads at once."""


__all__ = ["ChatAnswer", "ChatError", "ChatModel", "ChatUnavailable", "Message"]
