"""How long to wait before trying again: exponential, with jitter, so that callers who failed
together (two nodes whose commits keep landing on each other, clients a server turned away at
once) spread out instead of colliding again in step."""

from __future__ import annotations

from collections.abc import Callable


def backoff(retry: int, first: float, ceiling: float, rng: Callable[[], float]) -> float:
    """Seconds before retry number ``retry`` (1-based): ``first`` doubled each retry up to
    ``ceiling``, then a random part of it in [50 %, 100 %] (``rng`` gives [0, 1))."""
    top = min(ceiling, first * 2.0 ** (retry - 1))
    return top * (0.5 + 0.5 * rng())
