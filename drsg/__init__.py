"""drsg — an AI-native graph store built as a streaming pipeline around one append-only log.

    >>> import drsg
    >>> db = drsg.open("graph.drsg")
    >>> db.write(lambda tx: tx.create_node(tx.plane("startup"), "ada", ["Person"], {"born": 1815}))

This package is the public API; each layer is a subpackage in a folder of its own at the root of
the repository (ARCHITECTURE.md): ``drsg.kernel``, ``drsg.plan``, ``drsg.models``, ``drsg.store``,
``drsg.workers``, ``drsg.pipeline``, ``drsg.feed`` and, at the top, ``drsg.surfaces``. ``open`` imports
the store lazily, so ``import drsg`` stays cheap.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

# the error tree, so users catch ``drsg.NotFound`` without knowing where it lives
from drsg.kernel.errors import (
    BadAsOf,
    BadValue,
    ChatError,
    ConfigError,
    Conflict,
    DatabaseUnavailable,
    DrsgError,
    EmbedderError,
    NotFound,
    StoreError,
    StoreFull,
    UsageError,
)

if TYPE_CHECKING:
    from drsg.store.database import Database

__version__ = "0.1.0"
__all__ = [
    "BadAsOf",
    "BadValue",
    "ChatError",
    "ConfigError",
    "Conflict",
    "DatabaseUnavailable",
    "DrsgError",
    "EmbedderError",
    "NotFound",
    "StoreError",
    "StoreFull",
    "UsageError",
    "open",
]


def open(path: str | os.PathLike[str] = "graph.drsg", *, log: str | None = None, **options: Any) -> Database:
    """Open (creating if needed) the database at ``path``. ``log="kafka://HOST:PORT/TOPIC"`` writes
    through that topic and keeps ``path`` as this node's copy of it (drsg.store.kafka_database)."""
    if log and log != "lmdb://":
        from drsg.store.kafka_database import KafkaDatabase

        return KafkaDatabase(path, log, **options)
    from drsg.store.database import Database

    return Database(path, **options)
