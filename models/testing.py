"""Test doubles of the two model ports, for drsg's tests and for your own: no network, no model files.

``BagOfWordsEmbedder`` is an :class:`~drsg.models.embedders.base.Embedder` that hashes each word of
a text into one of ``dims`` buckets: deterministic, and texts sharing words are closer, so searches
by meaning behave plausibly. ``ScriptedChatModel`` is a :class:`~drsg.models.chat.base.ChatModel`
that answers from a script — a list of answers, or a function of the prompt — can raise the port's
errors to simulate a failing service, and records every prompt it was given::

    from drsg.kernel.errors import ChatUnavailable
    from drsg.models.testing import BagOfWordsEmbedder, ScriptedChatModel

    embedder = BagOfWordsEmbedder(dims=64)
    chat = ScriptedChatModel(['{"entities": []}', ChatUnavailable("down"), '{"entities": []}'])
    ...
    assert chat.calls == 2 and len(chat.prompts) == 3

Token counts use a stand-in tokenizer (:func:`count_tokens`: words and punctuation marks), close
enough for tests of accounting.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections import deque
from collections.abc import Callable, Iterable

import numpy as np

from drsg.kernel.errors import ChatError
from drsg.kernel.values import Vector
from drsg.models.chat.base import ChatAnswer, ChatModel, Message
from drsg.models.embedders.base import Embedder

_WORD = re.compile(r"\w+")
_TOKEN = re.compile(r"\w+|[^\w\s]")


def count_tokens(text: str) -> int:
    """A stand-in tokenizer: words and punctuation marks."""
    return len(_TOKEN.findall(text))


class BagOfWordsEmbedder(Embedder):
    """Each text's words (case-folded) counted into ``dims`` hashed buckets, L2-normalised.

    Every vector is a unit vector with no negative component, so two texts with no word in common
    (nor a bucket) score 0 by cosine and the same text always scores 1. A text with no word
    character at all counts as one word, itself. ``batches`` records the texts of every call.
    """

    name = "testing"
    dims: int  # known from the start

    def __init__(self, dims: int = 128) -> None:
        if dims < 1:
            raise ValueError("dims must be at least 1")
        self.dims = dims
        self.model = f"bag-of-words-{dims}"
        self.batches: list[list[str]] = []

    def _embed(self, texts: list[str]) -> list[Vector]:
        self.batches.append(list(texts))
        return [self._vector(text) for text in texts]

    def _vector(self, text: str) -> Vector:
        counts = np.zeros(self.dims, dtype=np.float64)
        for word in _WORD.findall(text.casefold()) or [text.strip()]:
            digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
            counts[int.from_bytes(digest, "little") % self.dims] += 1.0
        unit = counts / np.linalg.norm(counts)
        return Vector(unit.astype("<f4").tobytes())


#: one scripted step: the answer's text, a whole answer (to set ``finish_reason``), or an error to raise
Step = str | ChatAnswer | BaseException
#: a script: steps taken one per call, in order, or a function of the prompt giving the answer
Script = Iterable[Step] | Callable[[list[Message]], str | ChatAnswer]


class ScriptedChatModel(ChatModel):
    """A chat model answering from ``script``; thread-safe.

    A list script is consumed one step per call; a call after its end raises :class:`ChatError`
    (a test that forgot an answer fails instead of hanging or passing). A function script is called
    with each prompt's messages and may raise. A text answer stops with ``"stop"`` and costs the
    tokens :func:`count_tokens` gives for the prompt and the text. ``prompts`` records every call's
    messages, failed ones included; the port's counters (``calls``, ``prompt_tokens``,
    ``completion_tokens``) count the answers.
    """

    def __init__(self, script: Script, *, name: str = "scripted", model: str = "script") -> None:
        if isinstance(script, str):
            raise TypeError("a script is a list of answers or a function of the prompt; put one answer in a list")
        super().__init__(name, model)
        self._function = script if callable(script) else None
        self._steps: deque[Step] = deque() if callable(script) else deque(script)
        self._script_lock = threading.Lock()
        self.prompts: list[list[Message]] = []

    @property
    def remaining(self) -> int:
        """Steps of a list script not taken yet."""
        with self._script_lock:
            return len(self._steps)

    def _complete(self, messages: list[Message], max_tokens: int | None) -> ChatAnswer:
        with self._script_lock:
            self.prompts.append([dict(message) for message in messages])
            call = len(self.prompts)
            step: Step | None = self._steps.popleft() if self._steps else None
        if self._function is not None:
            step = self._function(messages)
        if step is None:
            raise ChatError(f"the {self.identity()} chat model has no answer scripted for call {call}")
        if isinstance(step, BaseException):
            raise step
        if isinstance(step, ChatAnswer):
            return step
        prompt = sum(count_tokens(message.get("content", "")) for message in messages)
        return ChatAnswer(step, "stop", prompt, count_tokens(step))


__all__ = ["BagOfWordsEmbedder", "Script", "ScriptedChatModel", "Step", "count_tokens"]
