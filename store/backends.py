"""Choosing a Log backend by URL: ``lmdb:///path/graph.drsg``, or a plain path, is the LMDB file.

A later backend (Kafka) adds its scheme to ``SCHEMES`` and a branch to :func:`open_log`; it can load
its module only when its scheme is asked for (the LMDB backend is always there: the graph lives in it).
"""

from __future__ import annotations

import os
import re
from typing import Unpack

from drsg.kernel.errors import ConfigError
from drsg.store.lmdb_log import LmdbLog, LmdbOptions
from drsg.store.logport import Log

SCHEMES = ("lmdb",)
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
        raise ConfigError(f"{text!r} names no file; write lmdb:///path/to/graph.drsg or a plain path")
    return scheme, location


def open_log(url: str | os.PathLike[str], **options: Unpack[LmdbOptions]) -> Log:
    """Open the log at ``url`` with its backend's ``options`` (LMDB: create, readonly, map_size, …)."""
    _scheme, location = split_url(url)  # the one scheme today: lmdb
    return LmdbLog(location, **options)
