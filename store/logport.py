"""The Log port: the append-only, seq-ordered commit log that everything else in drsg is derived from.

What its users need of it, and nothing more:

- the writer appends commits: seq = head + 1, no gaps, a timestamp that never decreases;
- the change feed and the index workers read commits from any seq, learn the head, and wait for
  the next commit (this process's or another's) instead of polling for it;
- whoever closes it and opens it again by its URL finds every commit as it was, and a damaged
  record is refused (CorruptRecord), never handed out.

A backend is chosen by URL (store/backends.py): ``lmdb:///path/graph.drsg``, or a plain path, is
the LMDB file (store/lmdb_log.py); ``kafka://HOST:PORT/TOPIC`` is a topic on a Kafka-protocol
broker (store/kafka/log.py).
``tests/contract/test_log_contract.py`` is the contract every backend passes.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence

from drsg.kernel.values import Json
from drsg.store.log import Commit
from drsg.store.mutations import Mutation


class Log(ABC):
    """A commit log. Thread-safe; open one per process and share it."""

    @property
    @abstractmethod
    def url(self) -> str:
        """The URL that opens this log again (``open_log(log.url)``)."""

    @abstractmethod
    def head(self) -> int:
        """The seq of the newest commit; 0 while there is none."""

    @abstractmethod
    def append(self, mutations: Sequence[Mutation], origin: Mapping[str, Json] | None = None) -> Commit:
        """Append one commit of resolved mutations, durable on return: its seq is the head + 1, its
        timestamp no earlier than the previous commit's."""

    @abstractmethod
    def read(self, from_seq: int = 1, to_seq: int | None = None) -> Iterator[Commit]:
        """Commits with ``from_seq <= seq <= to_seq`` (default: to the head), in seq order. A
        missing or damaged record raises CorruptRecord, after every intact commit before it."""

    @abstractmethod
    def wait(self, after: int, timeout: float) -> int:
        """Block until a commit past ``after`` exists, :meth:`interrupt` is called or ``timeout``
        seconds pass; returns the head known then (``<= after`` when nothing came)."""

    @abstractmethod
    async def wait_async(self, after: int, timeout: float) -> int:
        """As :meth:`wait`, in an event loop, without holding a thread."""

    @abstractmethod
    def await_waiters(self, count: int, timeout: float) -> bool:
        """Block until at least ``count`` callers are inside :meth:`wait` or :meth:`wait_async`, so
        that a commit from now on wakes them, or ``timeout`` seconds pass; whether they are. A test
        orders its threads by this, never by a sleep."""

    @abstractmethod
    def interrupt(self) -> None:
        """End every wait now; each waiter looks again at why it waits."""

    @abstractmethod
    def close(self) -> None:
        """Release the log; waits end, and later calls fail with DatabaseUnavailable."""
