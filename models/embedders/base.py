"""The embedder port: texts in, float32 vectors out.

An embedder turns a batch of texts into one :class:`~drsg.kernel.values.Vector` each, in order. Backends:
``local.py`` (all-MiniLM-L6-v2 on onnxruntime, offline, no key) and ``remote.py`` (any
OpenAI-compatible ``/embeddings`` endpoint through the ``openai`` client); ``drsg.models.testing``
ships an in-memory one for tests. ``registry.py`` picks one by name. :meth:`Embedder.identity`
names the embedder that produced a property's vectors, so vectors from different embedders are
never mixed in one index.

Errors (in drsg.kernel.errors' tree)::

    ConfigError                 a missing key variable, an unknown provider or model (exit 2)
    BadValue                    a text the embedder cannot take (empty, not a string)
    EmbedderError               an embedder could not produce vectors
    ├── ModelFileError          the local model files are missing or fail their SHA-256 check
    ├── EmbedderUnavailable     the service kept failing (429/5xx/timeouts) past the retry budget
    └── BadEmbeddingResponse    the service answered, but not with one finite vector per text
"""

from __future__ import annotations

from abc import ABC, abstractmethod

from drsg.kernel import telemetry
from drsg.kernel.errors import BadEmbeddingResponse, BadValue, EmbedderError, EmbedderUnavailable, ModelFileError
from drsg.kernel.values import Vector


class Embedder(ABC):
    """Texts in, one float32 :class:`Vector` per text out, in order.

    A backend sets ``name``, ``model`` and ``dims`` and implements :meth:`_embed`; :meth:`embed`
    checks the texts first (:func:`check_texts`), so a backend only ever sees a non-empty list of
    non-blank strings. ``tests/contract/test_embedder_contract.py`` holds what every backend must do.
    """

    #: provider name: "local", "openai", "qwen", "ollama", "url"
    name: str
    #: the model's name as the provider knows it
    model: str
    #: vector size; ``None`` for a remote model until its first answer
    dims: int | None

    def embed(self, texts: list[str]) -> list[Vector]:
        """Embed ``texts`` (batched internally); raises a :class:`DrsgError`, never returns garbage.

        A text that is not a non-blank string is a :class:`BadValue`; no text, no vector."""
        texts = check_texts(texts)
        if not texts:
            return []
        vectors = self._embed(texts)
        telemetry.model_call("embed", self.name)
        return vectors

    @abstractmethod
    def _embed(self, texts: list[str]) -> list[Vector]:
        """One vector per text of a checked, non-empty list, in order (what a backend implements)."""

    def identity(self) -> str:
        """``"<name>:<model>"``, recorded beside the vectors this embedder produced (a backend whose
        options change the vector space adds them)."""
        return f"{self.name}:{self.model}"


def check_texts(texts: list[str]) -> list[str]:
    """Every text must be a non-blank string; returns ``texts`` as a list."""
    if isinstance(texts, str):
        raise BadValue("embed() takes a list of texts, not a single string")
    out = list(texts)
    for i, text in enumerate(out):
        if not isinstance(text, str):
            raise BadValue(f"text {i} is a {type(text).__name__}, not a string; embedders take text")
        if not text.strip():
            raise BadValue(f"text {i} is empty; skip blank texts before embedding them")
    return out


__all__ = [
    "BadEmbeddingResponse",
    "Embedder",
    "EmbedderError",
    "EmbedderUnavailable",
    "ModelFileError",
    "check_texts",
]
