"""Model calls for one digest or one question: the chat model behind the answer cache, with counted tokens.

``ask_json`` serves the digest's clean-up passes: one call (or a cache hit), the answer read as a
JSON object, ``None`` when unreadable (a pass then changes nothing). Extraction (``digest/extract.py``)
and ``ask``'s loop have their own loops but go through :meth:`ModelCalls.complete` so every call is
counted.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

from drsg.kernel.errors import ConfigError
from drsg.kernel.settings import Settings
from drsg.models.chat.base import ChatAnswer, ChatModel, Message
from drsg.models.chat.providers import chat_identity, get_chat
from drsg.pipeline.llm.answers import MalformedAnswer, json_object
from drsg.pipeline.llm.cache import AnswerCache


class ModelCalls:
    """``model`` names the chat model (``provider:model``); ``connect`` builds its client on the
    first call that the cache cannot answer, so a fully cached run needs no key at all."""

    def __init__(self, model: str, connect: Callable[[], ChatModel] | None, cache: AnswerCache | None) -> None:
        self.model = model
        self._connect = connect
        self.cache = cache
        self.chat: ChatModel | None = None
        self._lock = threading.Lock()

    @classmethod
    def for_chat(
        cls,
        chat: str | None,
        model: str | None,
        url: str | None = None,
        key_env: str | None = None,
        settings: Settings | None = None,
        cache: AnswerCache | None = None,
        hint: str = "",
    ) -> ModelCalls:
        """Calls to the chat model a surface chose by name (``--chat``, ``--model``, …); its key is
        read from the environment or the settings on the first call, never passed in. ``hint`` ends
        the error a choice that cannot connect (a missing key) raises: another way the user has."""

        def connect() -> ChatModel:
            try:
                return get_chat(chat, model, url, key_env, settings)
            except ConfigError as exc:
                if not hint:
                    raise
                raise ConfigError(f"{exc}, {hint}") from None

        return cls(chat_identity(chat, model, url), connect, cache)

    def complete(self, messages: list[Message]) -> ChatAnswer:
        with self._lock:
            if self.chat is None:
                if self._connect is None:
                    raise ConfigError("this digest needs a chat model; choose one with --chat (and its key variable)")
                self.chat = self._connect()
        return self.chat.complete(messages)

    def cached(self, kind: str, asked: str) -> tuple[str, str | None]:
        """The cache key for (kind, asked) and the cached answer, if any."""
        if self.cache is None:
            return "", None
        key = AnswerCache.key(self.model, kind, asked)
        return key, self.cache.get(key)

    def remember(self, key: str, answer: str) -> None:
        if self.cache is not None and key:
            self.cache.put(key, answer)

    def ask_json(self, kind: str, messages: list[Message]) -> dict[str, Any] | None:
        key, hit = self.cached(kind, json.dumps(messages, ensure_ascii=False, sort_keys=True))
        if hit is not None:
            return json_object(hit)
        answer = self.complete(messages)
        try:
            found = json_object(answer.text)
        except MalformedAnswer:
            return None
        self.remember(key, json.dumps(found, ensure_ascii=False))
        return found
