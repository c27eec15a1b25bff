"""Opening a database: an LMDB file, or a node of a Kafka log (``drsg.open``).

Above both kinds of :class:`~drsg.api.database.Database`, so that only a ``kafka://`` URL loads the
Kafka client.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Unpack

from drsg.api.database import Database, EmbeddedDatabase
from drsg.kernel.errors import ConfigError
from drsg.kernel.settings import Settings
from drsg.store.lmdb_log import LmdbOptions


def open_database(
    path: str | os.PathLike[str] = "graph.drsg",
    *,
    log: str | None = None,
    settings: Settings | Mapping[str, object] | None = None,
    timeout: float | None = None,
    **options: Unpack[LmdbOptions],
) -> Database:
    """Open (creating if needed) the database at ``path``. ``log="kafka://HOST:PORT/TOPIC"`` writes
    through that topic and keeps ``path`` as this node's copy of it. ``settings`` are the settings
    registry's, by name (``{"index.ef_search": 128}``), over drsg.toml and ``DRSG_*`` variables;
    ``options`` the LMDB file's (``create``, ``readonly``, ``map_size``, ``max_map_size``,
    ``group_max``; ``timeout`` for a Kafka log's broker)."""
    if log and log != "lmdb://":
        from drsg.api.kafka import KafkaDatabase
        from drsg.store.kafka.log import TIMEOUT

        return KafkaDatabase(path, log, settings, timeout=TIMEOUT if timeout is None else timeout, **options)
    if timeout is not None:
        raise ConfigError("timeout is how long a Kafka log waits for its broker; drop it for a database file")
    return EmbeddedDatabase(path, settings, **options)
