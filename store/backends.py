"""Choosing a Log backend by URL: ``lmdb:///path/graph.drsg``, or a plain path, is the LMDB file;
``kafka://HOST:PORT/TOPIC`` is partition 0 of a topic on a Kafka-protocol broker (store/kafka/log.py).

The Kafka backend's module (and kafka-python with it) is loaded only when its scheme is asked for;
the LMDB backend is always there: the graph lives in it.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Unpack, cast

from drsg.kernel.errors import ConfigError
from drsg.store.lmdb_log import LmdbLog, LmdbOptions
from drsg.store.logport import Log

if TYPE_CHECKING:
    from drsg.store.kafka.log import KafkaOptions

    class LogOptions(LmdbOptions, KafkaOptions, total=False):
        """Every backend's options; each backend refuses the ones that are not its own."""


SCHEMES = ("lmdb", "kafka")
_EXAMPLES = {"lmdb": "lmdb:///path/to/graph.drsg or a plain path", "kafka": "kafka://HOST:PORT/TOPIC"}
_OWN_OPTIONS = {
    "lmdb": LmdbOptions.__required_keys__ | LmdbOptions.__optional_keys__,
    "kafka": frozenset({"clock", "timeout", "began", "client"}),  # KafkaOptions' (not imported: it loads kafka)
}
_URL = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://(.*)", re.DOTALL)


def split_url(url: str | os.PathLike[str]) -> tuple[str, str]:
    """``(scheme, location)`` of a log URL; a plain path is an LMDB file."""
    text = os.fspath(url)
    match = _URL.fullmatch(text)
    if match is None:
        return "lmdb", text
    scheme, location = match.group(1).lower(), match.group(2)
    if scheme not in SCHEMES:
        known = ", ".join(f"{s}://" for s in SCHEMES)
        raise ConfigError(f"unknown log URL scheme {scheme!r} in {text!r}; use {known} or a plain path")
    if not location:
        raise ConfigError(f"{text!r} names no {'file' if scheme == 'lmdb' else 'broker'}; write {_EXAMPLES[scheme]}")
    return scheme, location


def open_log(url: str | os.PathLike[str], **options: Unpack[LogOptions]) -> Log:
    """Open the log at ``url`` with its backend's ``options`` (LMDB: create, readonly, map_size, …;
    Kafka: clock, timeout, client — the producer's, as the setting log.kafka_client)."""
    scheme, location = split_url(url)
    foreign = sorted(set(options) - _OWN_OPTIONS[scheme])
    if foreign:
        raise ConfigError(f"{os.fspath(url)}: the {scheme} log takes no option {', '.join(foreign)}")
    if scheme == "kafka":
        from drsg.store.kafka.log import KafkaLog  # loaded only when asked for

        return KafkaLog(location, **cast("KafkaOptions", options)).start()
    return LmdbLog(location, **cast(LmdbOptions, options))
