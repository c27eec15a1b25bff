"""Which embedder turns a plane's texts into vectors: the one rule every surface applies.

Precedence, for a vector property ``prop`` of a plane:

1. the embedder the flag or request names (``--embed…``, ``plane.vectorize``'s ``embed``);
2. else the one the plane recorded for ``prop`` (``_embedder:<prop>``, rebuilt from its preset; a
   ``url:…`` one, which no preset rebuilds, only through a configured one of the same identity);
3. else the caller's configured one (``serve --embed…``; ``[digest] embed_provider`` /
   ``embed_model`` / ``embed_key_env`` when set);
4. else the default, the local model.

A named embedder other than the recorded one is refused with a one-line UsageError saying how to
fix it: one property holds one vector space, whether the vectors are to be queried or written.
A key variable given alone (``--embed-key-env``) names no embedder; it goes with the one chosen.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import Literal

import structlog

from drsg.kernel.errors import UsageError
from drsg.kernel.settings import Settings
from drsg.models.embedders.base import Embedder
from drsg.models.embedders.registry import get_embedder, provider_name, recorded_preset
from drsg.models.providers import EmbedderChoice
from drsg.pipeline.vectorize import recorded_embedder
from drsg.store.database import Database

__all__ = [
    "EmbedderCache",
    "EmbedderChoice",
    "choose_embedder",
    "configured_choice",
    "named_embedder",
    "optional_embedder",
    "same_space",
]

Purpose = Literal["query", "write"]
log = structlog.get_logger("drsg.pipeline.embedder_choice")


class EmbedderCache:
    """Embedders already built, keyed by choice and dimensions (a server keeps one: a model is loaded
    and a client made once, however many threads ask)."""

    def __init__(self) -> None:
        self._made: dict[tuple[EmbedderChoice, int | None], Embedder] = {}
        self._lock = threading.Lock()

    def get(self, choice: EmbedderChoice, dimensions: int | None, settings: Settings | None) -> Embedder:
        key = (choice, dimensions)
        with self._lock:
            embedder = self._made.get(key)
            if embedder is None:
                embedder = _build(choice, dimensions, settings)
                self._made[key] = embedder
                log.info("embedder ready", embedder=embedder.identity())
            return embedder

    def __len__(self) -> int:
        with self._lock:
            return len(self._made)


def _make(
    choice: EmbedderChoice, dimensions: int | None, settings: Settings | None, cache: EmbedderCache | None
) -> Embedder:
    return cache.get(choice, dimensions, settings) if cache is not None else _build(choice, dimensions, settings)


def _build(choice: EmbedderChoice, dimensions: int | None, settings: Settings | None) -> Embedder:
    return get_embedder(choice.name, choice.model, choice.url, choice.key_env, settings, dimensions=dimensions)


def configured_choice(settings: Settings) -> EmbedderChoice | None:
    """The embedder the configuration names: `[digest]` ``embed_provider`` / ``embed_model`` /
    ``embed_key_env``, each only when set (at its default it means "the plane's recorded one");
    None when none is set."""

    def given(name: str) -> str | None:
        return (settings.text(name) or None) if settings.sources[name] != "default" else None

    choice = EmbedderChoice(
        given("digest.embed_provider"), given("digest.embed_model"), None, given("digest.embed_key_env")
    )
    return choice if choice.explicit else None


def named_embedder(
    named: EmbedderChoice | None, settings: Settings | None, *, cache: EmbedderCache | None = None
) -> Embedder:
    """Exactly the embedder ``named`` (the default when it names none), compared with no plane: for
    a caller that embeds texts only among themselves (``ask``'s tools)."""
    return _make(named or EmbedderChoice(), None, settings, cache)


def same_space(db: Database, plane: str, prop: str, embedder: Embedder) -> bool:
    """Whether ``prop``'s vectors in ``plane`` were recorded as made by ``embedder``."""
    return recorded_embedder(db, plane, prop) == embedder.identity()


def choose_embedder(
    db: Database,
    plane: str,
    prop: str,
    settings: Settings,
    *,
    named: EmbedderChoice | None = None,
    configured: EmbedderChoice | None = None,
    purpose: Literal["query", "write"] = "query",
    cache: EmbedderCache | None = None,
) -> Embedder:
    """The embedder for ``prop``'s vector space in ``plane`` by the module's precedence; a named one
    that is not the recorded one is a UsageError (``purpose`` words it), as is a recorded one that
    cannot be rebuilt and is not the configured one. A bad choice is the registry's ConfigError."""
    recorded = recorded_embedder(db, plane, prop)
    key_env = named.key_env if named is not None else None
    if named is not None and named.names_one:
        embedder = _make(named, None, settings, cache)
        if recorded is not None and embedder.identity() != recorded:
            raise _refused(plane, prop, recorded, embedder.identity(), purpose, "named")
        return embedder
    if configured is not None and not configured.explicit:
        configured = None
    if recorded is not None:
        return _recorded(plane, prop, recorded, settings, key_env, configured, purpose, cache)
    chosen = configured or EmbedderChoice()
    return _make(replace(chosen, key_env=key_env) if key_env else chosen, None, settings, cache)


def optional_embedder(
    db: Database,
    plane: str,
    prop: str,
    settings: Settings,
    *,
    named: EmbedderChoice | None = None,
    configured: EmbedderChoice | None = None,
    purpose: Literal["query", "write"] = "query",
    cache: EmbedderCache | None = None,
) -> Embedder | None:
    """:func:`choose_embedder`'s embedder when there are vectors to keep to — ``prop``'s are recorded —
    or, to write them, one is named or configured; else None: the caller goes without (keywords alone)."""
    if recorded_embedder(db, plane, prop) is None:
        given = (named is not None and named.names_one) or (configured is not None and configured.explicit)
        if purpose == "query" or not given:
            return None
    return choose_embedder(db, plane, prop, settings, named=named, configured=configured, purpose=purpose, cache=cache)


def _recorded(
    plane: str,
    prop: str,
    recorded: str,
    settings: Settings,
    key_env: str | None,
    configured: EmbedderChoice | None,
    purpose: Purpose,
    cache: EmbedderCache | None,
) -> Embedder:
    """The recorded embedder, rebuilt from its preset — with the configured key variable when the
    configuration names the same provider — else the configured one when it is the same."""
    preset = recorded_preset(recorded)
    if preset is not None:
        name, model, dims = preset
        if key_env is None and configured is not None and _provider(configured) == name:
            key_env = configured.key_env
        embedder = _make(EmbedderChoice(name, model, None, key_env), dims, settings, cache)
    elif configured is not None and configured.names_one:
        embedder = _make(replace(configured, key_env=key_env) if key_env else configured, None, settings, cache)
    else:
        raise _refused(plane, prop, recorded, None, purpose, "recorded")
    if embedder.identity() != recorded:
        raise _refused(plane, prop, recorded, embedder.identity(), purpose, "configured")
    return embedder


def _provider(choice: EmbedderChoice) -> str:
    return provider_name(choice.name, "local", choice.url)[0]


def _refused(plane: str, prop: str, recorded: str, used: str | None, purpose: Purpose, whose: str) -> UsageError:
    """The one-line refusal: what the property holds, what would have embedded, and the fix."""
    head = f"{prop!r} in plane {plane!r} holds vectors from {recorded}"
    if used is None:  # nothing rebuilds the recorded service: its URL must be given
        name = "name that service (--embed url --embed-url URL --embed-model MODEL; a server: `serve --embed-url`)"
        if purpose == "write":
            return UsageError(f"{head}; another embedder would mix two vector spaces — {name}, or use another property")
        return UsageError(f"{head}; {name} to embed text for it, or query with a vector")
    if whose == "configured":
        fix = "the configured one (`serve --embed…`, [digest] embed_provider) is another; name the one that wrote them"
    elif purpose == "write":
        fix = "use the same --embed/--embed-model (or none), or --into another property"
    else:
        fix = "Drop --embed, or pick the embedder that wrote them"
    if purpose == "write":
        return UsageError(f"{head}; embedding with {used} would mix two vector spaces — {fix}")
    return UsageError(f"{head}; the query would be embedded with {used} — another vector space. {fix}")
