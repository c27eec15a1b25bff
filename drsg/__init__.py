"""drsg — an AI-native graph store built as a streaming pipeline around one append-only log.

    >>> import drsg
    >>> db = drsg.open("graph.drsg")
    >>> db.write(lambda tx: tx.create_node(tx.plane("startup"), "ada", ["Person"], {"born": 1815}))
    >>> db.plane("startup").get("ada").props["born"]
    1815

docs/python-api.md is the API's guide (a plane's reads and writes, search, hybrid, ask, the feed).

This package is the public API; each layer is a subpackage in a folder of its own at the root of
the repository (ARCHITECTURE.md): ``drsg.kernel``, ``drsg.plan``, ``drsg.models``, ``drsg.store``,
``drsg.workers``, ``drsg.pipeline``, ``drsg.feed`` and, at the top, ``drsg.surfaces``; the API's own
modules are ``drsg.api``. Every name but the errors is loaded on first use, so ``import drsg`` stays
cheap.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Unpack

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
    QueryError,
    QueryLimit,
    QuerySyntaxError,
    StoreError,
    StoreFull,
    UsageError,
)

if TYPE_CHECKING:
    from drsg.api.database import Database
    from drsg.api.feed import Feed
    from drsg.api.plane import Plane
    from drsg.api.results import (
        AskAnswer,
        Deleted,
        Digested,
        FeedMessage,
        Hit,
        Linked,
        Neighbour,
        PlaneSummary,
        Vectorized,
        Written,
    )
    from drsg.kernel.asof import AsOf
    from drsg.models.providers import ChatChoice, EmbedderChoice
    from drsg.pipeline.catalog.answer import Ambiguous, Found, MissingPredicate
    from drsg.pipeline.digest.report import DigestReport
    from drsg.store.diff import PlaneDiff
    from drsg.store.jsonl import ImportReport
    from drsg.store.lmdb_log import LmdbOptions
    from drsg.store.records import Edge, Node, Version
    from drsg.workers.cypher.result import CypherResult

__version__ = "0.1.0"
#: where each public name that is not an error lives, loaded on first use (``import drsg`` stays cheap)
_LAZY = {
    "Ambiguous": "drsg.pipeline.catalog.answer",
    "AsOf": "drsg.kernel.asof",
    "AskAnswer": "drsg.api.results",
    "ChatChoice": "drsg.models.providers",
    "CypherResult": "drsg.workers.cypher.result",
    "Database": "drsg.api.database",
    "Deleted": "drsg.api.results",
    "DigestReport": "drsg.pipeline.digest.report",
    "Digested": "drsg.api.results",
    "Edge": "drsg.store.records",
    "EmbedderChoice": "drsg.models.providers",
    "Feed": "drsg.api.feed",
    "Found": "drsg.pipeline.catalog.answer",
    "FeedMessage": "drsg.api.results",
    "Hit": "drsg.api.results",
    "ImportReport": "drsg.store.jsonl",
    "Linked": "drsg.api.results",
    "MissingPredicate": "drsg.pipeline.catalog.answer",
    "Neighbour": "drsg.api.results",
    "Node": "drsg.store.records",
    "Plane": "drsg.api.plane",
    "PlaneDiff": "drsg.store.diff",
    "PlaneSummary": "drsg.api.results",
    "Vectorized": "drsg.api.results",
    "Version": "drsg.store.records",
    "Written": "drsg.api.results",
}
__all__ = [
    "Ambiguous",
    "AsOf",
    "AskAnswer",
    "BadAsOf",
    "BadValue",
    "ChatChoice",
    "ChatError",
    "ConfigError",
    "Conflict",
    "CypherResult",
    "Database",
    "DatabaseUnavailable",
    "Deleted",
    "DigestReport",
    "Digested",
    "DrsgError",
    "Edge",
    "EmbedderChoice",
    "EmbedderError",
    "Feed",
    "FeedMessage",
    "Found",
    "Hit",
    "ImportReport",
    "Linked",
    "MissingPredicate",
    "Neighbour",
    "Node",
    "NotFound",
    "Plane",
    "PlaneDiff",
    "PlaneSummary",
    "QueryError",
    "QueryLimit",
    "QuerySyntaxError",
    "StoreError",
    "StoreFull",
    "UsageError",
    "Vectorized",
    "Version",
    "Written",
    "open",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'drsg' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # looked up once
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


def open(
    path: str | os.PathLike[str] = "graph.drsg",
    *,
    log: str | None = None,
    settings: Mapping[str, object] | None = None,
    timeout: float | None = None,
    **options: Unpack[LmdbOptions],
) -> Database:
    """Open (creating if needed) the database at ``path``: the store's database with the library's
    calls (drsg.api.database). ``log="kafka://HOST:PORT/TOPIC"`` writes through that topic and keeps
    ``path`` as this node's copy of it (``timeout``: how long to wait for its broker); ``settings``
    are the settings registry's, by name; ``options`` the LMDB file's (drsg.store.lmdb_log)."""
    from drsg.api.opening import open_database

    return open_database(path, log=log, settings=settings, timeout=timeout, **options)
