"""``Feed``: a database's or a plane's change feed as typed messages, in a thread or in asyncio.

It is the change feed subscription (drsg.feed.subscription) the WebSocket and SSE feeds serve: read
straight from the log, resumable from any seq, never dropping a message. Each message is a
:class:`~drsg.api.results.FeedMessage`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Any

from drsg.api.results import FeedMessage

if TYPE_CHECKING:
    from drsg.api.host import Host


class Feed:
    """``for message in feed`` blocks for the next commit; ``async for`` awaits it. ``options`` are
    the subscription's: ``labels``, ``ops``, ``include_before``, ``include_vectors``, ``include_hidden``,
    ``resolved_every`` (seconds between ``resolved`` watermarks; None: none), ``to_seq`` and
    ``follow`` (False: stop at the head)."""

    def __init__(self, db: Host, plane: str | None, from_seq: int | None, **options: Any) -> None:
        from drsg.feed.subscription import subscribe

        self.subscription = subscribe(db.store, plane, from_seq, **options)

    @property
    def position(self) -> int:
        """The next seq the feed will read (before the first message: where it starts); resume a
        later feed from here."""
        return self.subscription.position

    def stop(self) -> None:
        """End the feed: an iteration in progress finishes."""
        self.subscription.stop()

    def __iter__(self) -> Iterator[FeedMessage]:
        for message in self.subscription:
            yield FeedMessage.of(message)

    async def __aiter__(self) -> AsyncIterator[FeedMessage]:
        async for message in self.subscription:
            yield FeedMessage.of(message)
