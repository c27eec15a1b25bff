"""Choosing a chat model by name (``--chat NAME``, ``--model``, ``--chat-url``, ``--chat-key-env``).

Presets as upstream: ``openai`` (gpt-4o-mini), ``deepseek`` (deepseek-chat; it has no embeddings,
so ``--embed`` is chosen separately), ``qwen`` (DashScope compatible mode, qwen-plus), ``ollama``
(llama3.1, no key), ``url`` (needs ``--chat-url`` and ``--model``), or a base URL itself. Keys come
from the environment, else ``[llm]`` in ``drsg.toml`` — never from a flag or a request.
"""

from __future__ import annotations

from dataclasses import dataclass

from drsg.kernel.errors import ConfigError
from drsg.kernel.settings import Settings
from drsg.models.chat.base import ChatModel
from drsg.models.chat.remote import RemoteChatModel
from drsg.models.embedders.registry import provider_name, secret, service_key, service_url
from drsg.models.providers import chat_presets
from drsg.models.service import RetryPolicy


@dataclass(frozen=True)
class ChatPreset:
    name: str
    base_url: str | None
    key_env: str | None  # None: the service takes no key
    model: str | None  # None: --model is required


#: the chat services of the one preset list (drsg.models.providers)
CHAT_PRESETS: dict[str, ChatPreset] = {
    p.name: ChatPreset(p.name, p.base_url, p.key_env, p.chat_model) for p in chat_presets()
}


def chat_identity(name: str | None = None, model: str | None = None, base_url: str | None = None) -> str:
    """``provider:model`` for a choice, without resolving its key (cache keys and previews need only this)."""
    preset, _url, chosen_model = _choose(name, model, base_url)
    return f"{preset.name}:{chosen_model}"


def chat_key(name: str | None = None, settings: Settings | None = None) -> tuple[str | None, bool]:
    """``(variable, whether it holds a key)`` for the chat provider ``name`` (``None`` → openai), found as
    :func:`get_chat` finds it (the environment, then ``[llm]``) but without failing: whether prose can
    be read at all (`drsg init`). ``(None, True)``: the service takes no key (ollama, a base URL) or the
    name is no preset's (then :func:`get_chat` says why)."""
    chosen, _url = provider_name(name, "openai", None)
    preset = CHAT_PRESETS.get(chosen)
    if preset is None or preset.key_env is None:
        return None, True
    return preset.key_env, secret(preset.key_env, settings) is not None


def check_chat_key(
    name: str | None = None,
    model: str | None = None,
    base_url: str | None = None,
    key_env: str | None = None,
    settings: Settings | None = None,
) -> None:
    """Refuse, as :func:`get_chat` would, a choice whose key is missing — without building a client:
    a surface checks before it spends time reading what the model is to be asked about."""
    preset, _url, _model = _choose(name, model, base_url)
    service_key(f"the {preset.name} chat model", key_env, preset.key_env, settings)


def _choose(name: str | None, model: str | None, base_url: str | None) -> tuple[ChatPreset, str, str]:
    chosen, base_url = provider_name(name, "openai", base_url)
    preset = CHAT_PRESETS.get(chosen)
    if preset is None:
        raise ConfigError(f"unknown chat provider {name!r}; choose one of {', '.join(CHAT_PRESETS)}, or a base URL")
    url = service_url(base_url or preset.base_url, "chat provider", "--chat-url")
    chosen_model = model or preset.model
    if not chosen_model:
        raise ConfigError(f"the {preset.name} chat provider needs a model name (--model)")
    return preset, url, chosen_model


def get_chat(
    name: str | None = None,
    model: str | None = None,
    base_url: str | None = None,
    key_env: str | None = None,
    settings: Settings | None = None,
    *,
    timeout: float = 300.0,
    retry: RetryPolicy | None = None,
) -> ChatModel:
    """The chat model called ``name`` (``None`` → openai); a bad choice is a one-line ConfigError."""
    preset, url, chosen_model = _choose(name, model, base_url)
    var, api_key = service_key(f"the {preset.name} chat model", key_env, preset.key_env, settings)
    return RemoteChatModel(preset.name, chosen_model, url, api_key, var, timeout=timeout, retry=retry)
