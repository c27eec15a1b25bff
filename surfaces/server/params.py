"""What the method handlers share to read their checked params: time travel, lean records, bounded counts.

Its own module, below every handler module, so that methods.py, queries.py and the method modules
beside them import it rather than each other.
"""

from __future__ import annotations

from typing import Any

from drsg.kernel.asof import AsOf
from drsg.kernel.errors import INVALID_PARAMS, RpcError, UsageError
from drsg.plan.query import MAX_K  # results a search may ask for: one bound for plans and params

Params = dict[str, Any]
MAX_LIMIT = 100_000  # records a listing may ask for


def as_of(p: Params) -> AsOf | None:
    if p.get("as_of") is not None and p.get("as_of_ms") is not None:
        raise RpcError(INVALID_PARAMS, "give as_of (a commit seq) or as_of_ms (a time), not both")
    if p.get("as_of") is not None:
        return AsOf(seq=int(p["as_of"]))
    if p.get("as_of_ms") is not None:
        return AsOf(ms=int(p["as_of_ms"]))
    return None


def vectors(p: Params) -> bool | str:
    return "lean" if p.get("lean") else True


def embeddable(text: str | None) -> None:
    """A text query the server is to embed: never an empty one (a UsageError, as it always was)."""
    if text is not None and not text.strip():
        raise UsageError("the query text is empty")


def bounded(p: Params, name: str, default: int, ceiling: int = MAX_K) -> int:
    """An integer param in [1, ceiling]; -32602 naming it otherwise."""
    value = int(p.get(name, default))
    if not 1 <= value <= ceiling:
        raise RpcError(INVALID_PARAMS, f"param {name!r} must be between 1 and {ceiling}, not {value}")
    return value
