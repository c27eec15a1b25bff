"""What the library's calls need from the database and the plane they run on, as protocols.

:class:`~drsg.api.database.Database` makes planes, and a plane's calls (``retrieval``, ``catalog``,
``digest``, ``feed``) run on its database: typed against these protocols, those modules sit below
both classes instead of importing them back.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    from drsg.api.points import AsOfLike
    from drsg.kernel.asof import AsOf
    from drsg.kernel.settings import Settings
    from drsg.kernel.values import Json
    from drsg.models.providers import EmbedderChoice
    from drsg.pipeline.embedder_choice import EmbedderCache
    from drsg.store.database import Database as StoreDatabase
    from drsg.store.diff import PlaneDiff
    from drsg.store.intents import Intent
    from drsg.store.jsonl import ImportReport
    from drsg.store.snapshot import Snapshot
    from drsg.store.transaction import WriteTx
    from drsg.store.writer import CommitResult
    from drsg.workers.search import Searcher

T = TypeVar("T")


class Host(Protocol):
    """The database a plane's calls run on (:class:`drsg.api.database.Database` is the one)."""

    path: str
    origin: dict[str, Json]

    @property
    def settings(self) -> Settings: ...
    @property
    def searcher(self) -> Searcher: ...
    @property
    def embedders(self) -> EmbedderCache: ...
    @property
    def configured_embedder(self) -> EmbedderChoice | None: ...
    @property
    def store(self) -> StoreDatabase: ...
    def write(self, fn: Callable[[WriteTx], T], origin: dict[str, Json] | None = None) -> CommitResult[T]: ...
    def submit(self, intent: Intent, origin: dict[str, Json] | None = None) -> CommitResult[Json]: ...
    def snapshot(self, as_of: AsOf | str | int | None = None) -> AbstractContextManager[Snapshot]: ...
    def diff(self, plane: str, from_: AsOfLike, to: AsOfLike | None = None) -> PlaneDiff: ...
    def import_jsonl(
        self,
        plane: str,
        path: str | os.PathLike[str],
        *,
        on_conflict: str = "error",
        create_plane: bool = False,
        progress: Callable[[int], None] | None = None,
    ) -> ImportReport: ...
    def import_records(
        self,
        plane: str,
        records: Iterable[Mapping[str, Any]],
        *,
        on_conflict: str = "error",
        create_plane: bool = False,
        progress: Callable[[int], None] | None = None,
    ) -> ImportReport: ...


class HostedPlane(Protocol):
    """A plane bound to its database (:class:`drsg.api.plane.Plane` is the one)."""

    @property
    def db(self) -> Host: ...
    @property
    def id(self) -> int: ...
    @property
    def name(self) -> str: ...
