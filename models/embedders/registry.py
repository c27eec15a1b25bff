"""Choosing an embedder by name (``--embed NAME``, ``--embed-model``, ``--embed-url``, ``--embed-key-env``).

Names: ``local`` (the default), ``openai``, ``qwen`` (DashScope compatible mode), ``ollama``, ``url``
(needs a base URL and a model), or a base URL itself. API keys come from the environment, else from
``[llm]`` in ``drsg.toml`` (``OPENAI_API_KEY = "…"``), never from a request: callers pass the *name*
of the variable (``key_env``), and drsg's own ``DRSG_*`` variables can never be named.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from drsg.kernel.errors import ConfigError
from drsg.kernel.settings import Settings, load
from drsg.models.embedders.base import Embedder
from drsg.models.embedders.local import ALIASES, MODEL_NAME, LocalEmbedder
from drsg.models.embedders.remote import RemoteEmbedder, RetryPolicy
from drsg.models.providers import LOCAL, PRESETS, EmbedderChoice, embedding_presets

__all__ = [  # EmbedderChoice lives with the presets (no model client to load): re-exported here
    "NAMES",
    "PROVIDERS",
    "EmbedderChoice",
    "Provider",
    "check_env_name",
    "get_embedder",
    "provider_name",
    "recorded_preset",
    "secret",
    "service_key",
    "service_url",
]


@dataclass(frozen=True)
class Provider:
    name: str
    base_url: str | None
    key_env: str | None  # None: the service takes no key
    model: str | None  # None: --embed-model is required
    batch_size: int


#: the embedding services of the one preset list (drsg.models.providers)
PROVIDERS: dict[str, Provider] = {
    p.name: Provider(p.name, p.base_url, p.key_env, p.embed_model, p.embed_batch) for p in embedding_presets()
}
NAMES = (LOCAL, *PROVIDERS)
_NO_EMBEDDINGS = {p.name: p.no_embeddings for p in PRESETS.values() if p.no_embeddings is not None}
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def get_embedder(
    name: str | None = None,
    model: str | None = None,
    base_url: str | None = None,
    key_env: str | None = None,
    settings: Settings | None = None,
    *,
    model_dir: Path | str | None = None,
    batch_size: int | None = None,
    timeout: float | None = None,
    dimensions: int | None = None,
    retry: RetryPolicy | None = None,
) -> Embedder:
    """The embedder called ``name`` (``None`` → local); a bad choice is a one-line :class:`ConfigError`."""
    chosen, base_url = provider_name(name, "local", base_url)
    if chosen in _NO_EMBEDDINGS:
        raise ConfigError(f"{_NO_EMBEDDINGS[chosen]}; choose --embed {', '.join(NAMES)}")
    if chosen == "local":
        return _local(model, base_url, model_dir, batch_size)
    provider = PROVIDERS.get(chosen)
    if provider is None:
        raise ConfigError(f"unknown embedder {name!r}; choose one of {', '.join(NAMES)}, or a base URL")
    url = service_url(base_url or provider.base_url, "embedder", "--embed-url")
    chosen_model = model or provider.model
    if not chosen_model:
        raise ConfigError(f"the {provider.name} embedder needs a model name (--embed-model)")
    var, api_key = service_key(f"the {provider.name} embedder", key_env, provider.key_env, settings)
    return RemoteEmbedder(
        provider.name,
        chosen_model,
        url,
        api_key,
        var,
        batch_size=batch_size or provider.batch_size,
        timeout=timeout if timeout is not None else 60.0,
        dimensions=dimensions,
        retry=retry,
    )


def recorded_preset(identity: str) -> tuple[str, str | None, int | None] | None:
    """``(name, model, dimensions)`` that rebuild, from its preset alone, the embedder whose
    :meth:`~Embedder.identity` was recorded with a plane's vectors (``name:model``, ``@N`` for
    N-dim vectors); None when a preset cannot (``url:…`` or an unknown name needs a base URL).
    The local embedder runs one model, so its model is None."""
    name, _, rest = identity.partition(":")
    model, _, dims = rest.partition("@")
    if name == "local":
        return name, None, None
    if name not in PROVIDERS or PROVIDERS[name].base_url is None:
        return None
    return name, model or None, int(dims) if dims.isdigit() else None


def _local(
    model: str | None, base_url: str | None, model_dir: Path | str | None, batch_size: int | None
) -> LocalEmbedder:
    if model is not None and model.lower() not in ALIASES:
        raise ConfigError(f"the local embedder runs only {MODEL_NAME}, not {model!r}; drop --embed-model")
    if base_url is not None:
        raise ConfigError("the local embedder takes no base URL; use --embed url for a remote service")
    return LocalEmbedder(model_dir=model_dir, batch_size=batch_size or 32)


def provider_name(name: str | None, default: str, base_url: str | None) -> tuple[str, str | None]:
    """(preset name, base URL) for a ``--embed``/``--chat`` value: a bare http(s) URL names the ``url``
    preset with that base URL (unless one was given separately); names are case-insensitive."""
    chosen = (name or default).strip()
    if chosen.lower().startswith(("http://", "https://")):
        return "url", base_url or chosen
    return chosen.lower(), base_url


def service_url(url: str | None, role: str, flag: str) -> str:
    """A service's base URL, checked: http(s) with a host (``role`` and ``flag`` name it in errors)."""
    if url is None:
        raise ConfigError(f"the url {role} needs a base URL ({flag}, e.g. http://127.0.0.1:8000/v1)")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"{role} base URL {url!r} is not an http(s) URL")
    return url


def service_key(
    who: str, key_env: str | None, preset_env: str | None, settings: Settings | None
) -> tuple[str | None, str | None]:
    """``(variable, API key)``: the variable the user named (checked), else the preset's; (None, None)
    when the service takes no key; a named variable without a value → a ConfigError naming it."""
    var = check_env_name(key_env) if key_env else preset_env
    if var is None:
        return None, None
    api_key = secret(var, settings)
    if not api_key:
        raise ConfigError(f"{who} needs {var}; export it or put it under [llm] in drsg.toml")
    return var, api_key


def check_env_name(var: str) -> str:
    if not _ENV_NAME.match(var):
        raise ConfigError(f"key variable {var!r} is not an environment variable name")
    if var.upper().startswith("DRSG_"):
        raise ConfigError(f"key variable {var} is one of drsg's own settings; name your API key variable")
    return var


def secret(var: str, settings: Settings | None = None) -> str | None:
    """The value of ``var``: the environment first, then ``[llm]`` of the loaded settings (without
    them, of the drsg.toml the loader finds: ``$DRSG_CONFIG``, else ``./drsg.toml``)."""
    value = os.environ.get(var)
    if value:
        return value
    found = (settings if settings is not None else load()).llm.get(var)
    return found or None
