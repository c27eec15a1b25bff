"""The public ``Database`` on a Kafka log: the store's Kafka node with the library's calls mixed in.

A module of its own so that only a ``kafka://`` URL loads the Kafka client (``import drsg`` and an
embedded database never do).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Unpack

from drsg.api.database import Database, loaded_settings
from drsg.api.operations import API_OPS
from drsg.kernel.settings import Settings
from drsg.store.kafka.database import KafkaDatabase as StoreKafkaDatabase
from drsg.store.kafka.database import KafkaStats
from drsg.store.kafka.log import TIMEOUT
from drsg.store.lmdb_log import LmdbOptions


class KafkaDatabase(Database, StoreKafkaDatabase):
    """A database on a Kafka log, materialised in the LMDB file ``path`` (drsg.store.kafka.database)."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        log_url: str,
        settings: Settings | Mapping[str, object] | None = None,
        *,
        timeout: float = TIMEOUT,
        began: float | None = None,
        **options: Unpack[LmdbOptions],
    ) -> None:
        loaded = loaded_settings(settings)  # before the broker: the producer's client is one of them
        client = loaded.text("log.kafka_client")
        StoreKafkaDatabase.__init__(
            self, path, log_url, timeout=timeout, began=began, client=client, ops=API_OPS, **options
        )
        try:
            self._start_api(loaded)
        except BaseException:
            StoreKafkaDatabase.close(self)
            raise

    def stats(self) -> KafkaStats:  # the node's figures (the mixin declares the store's plainer ones)
        return StoreKafkaDatabase.stats(self)
