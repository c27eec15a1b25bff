"""The one list of model services drsg knows by name, for chat and for embeddings.

Each preset says where the service is, which variable holds its key (keys come from the
environment, else ``[llm]`` in ``drsg.toml`` — never from a flag or a request) and its default
models. The embedder registry (:mod:`drsg.models.embedders.registry`) and the chat registry
(:mod:`drsg.models.chat.providers`) both read it; the server shows it (the schema of ``digest.run``
and ``plane.vectorize``), and the dashboard takes its list from there.

This module imports nothing heavy: a surface may name a choice without loading a model client.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Preset:
    name: str
    base_url: str | None  # None: the caller gives one (`url`)
    key_env: str | None  # None: the service takes no key
    chat_model: str | None  # None: the model must be named
    embed_model: str | None  # None: the model must be named (or, with no_embeddings, there is none)
    embed_batch: int = 64  # texts per embeddings request
    no_embeddings: str | None = None  # why the service cannot embed, when it cannot


PRESETS: dict[str, Preset] = {
    p.name: p
    for p in (
        Preset("openai", "https://api.openai.com/v1", "OPENAI_API_KEY", "gpt-4o-mini", "text-embedding-3-small", 256),
        Preset(
            "deepseek",
            "https://api.deepseek.com",
            "DEEPSEEK_API_KEY",
            "deepseek-chat",
            None,
            no_embeddings="DeepSeek has no embeddings API",
        ),
        Preset(
            "qwen",
            "https://dashscope.aliyuncs.com/compatible-mode/v1",
            "DASHSCOPE_API_KEY",
            "qwen-plus",
            "text-embedding-v4",
            10,
        ),
        Preset("ollama", "http://localhost:11434/v1", None, "llama3.1", "nomic-embed-text", 64),
        Preset("url", None, None, None, None, 64),
    )
}
#: the embedder that runs in process, needing no service
LOCAL = "local"


def chat_presets() -> list[Preset]:
    return list(PRESETS.values())


def embedding_presets() -> list[Preset]:
    """The services that embed (the local model, which is no service, is not among them)."""
    return [p for p in PRESETS.values() if p.no_embeddings is None]


@dataclass(frozen=True)
class EmbedderChoice:
    """An embedder as a flag, a request or the configuration names it: a preset name (or a base URL),
    a model, a base URL, the name of the variable holding its key — each None when not given."""

    name: str | None = None
    model: str | None = None
    url: str | None = None
    key_env: str | None = None

    @property
    def explicit(self) -> bool:
        """Whether anything was given at all (a key variable alone included)."""
        return any((self.name, self.model, self.url, self.key_env))

    @property
    def names_one(self) -> bool:
        """Whether it names an embedder (a key variable alone names none: it goes with the one chosen)."""
        return any((self.name, self.model, self.url))


@dataclass(frozen=True)
class ChatChoice:
    """A chat model as flags name it (``--chat``, ``--model``, ``--chat-url``, ``--chat-key-env``):
    a preset name (or a base URL), a model, a base URL, the variable holding its key — each None when
    not given (then the ``digest.chat``/``digest.model`` settings decide)."""

    name: str | None = None
    model: str | None = None
    url: str | None = None
    key_env: str | None = None
