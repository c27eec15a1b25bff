"""The public ``Database``: the store's database with the library's reads and writes on top.

``drsg.open`` returns one. It *is* the store's database (an embedded LMDB file, or a Kafka log's
node with its LMDB copy) with :class:`Database` mixed in first, so everything the store's offers
stays as it is (``db.write(lambda tx: …)``, ``db.read()``, ``db.snapshot()``, ``db.head()``,
``close()``, ``with``) and code below the surfaces that takes the store's database takes this one.
What the mixin adds: ``db.plane(name)`` is a :class:`~drsg.api.plane.Plane` with the library's calls,
the settings a call needs (an embedder, a chat model) are the same registry the CLI reads, and the
search indexes are opened once, on first use, and saved on close.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self, TypeVar, Unpack, cast

import structlog

from drsg.kernel.errors import ConfigError
from drsg.kernel.settings import REGISTRY, Settings, load
from drsg.store.database import Database as StoreDatabase
from drsg.store.lmdb_log import LmdbOptions
from drsg.store.retention import Retention

if TYPE_CHECKING:
    from drsg.api.feed import Feed
    from drsg.api.plane import Plane
    from drsg.api.points import AsOfLike
    from drsg.api.results import Digested
    from drsg.kernel.asof import AsOf
    from drsg.kernel.values import Json
    from drsg.models.chat.base import ChatModel
    from drsg.models.providers import ChatChoice, EmbedderChoice
    from drsg.pipeline.digest.run import Progress
    from drsg.pipeline.digest.sources import Document
    from drsg.pipeline.embedder_choice import EmbedderCache
    from drsg.store.database import Stats, _ReadHold
    from drsg.store.diff import PlaneDiff
    from drsg.store.intents import Intent
    from drsg.store.jsonl import ImportReport
    from drsg.store.log import Commit
    from drsg.store.reader import Reader
    from drsg.store.readers import Pins
    from drsg.store.retention import HistoryCompacted, Retained
    from drsg.store.snapshot import Snapshot
    from drsg.store.transaction import WriteTx
    from drsg.store.writer import CommitResult
    from drsg.workers.search import Searcher

T = TypeVar("T")


log = structlog.get_logger("drsg.api")
_SETTING_NAMES = frozenset(setting.name for setting in REGISTRY)


def _overrides(settings: Mapping[str, object] | None) -> dict[str, object]:
    """``open``'s settings by name, each naming a setting of the registry."""
    unknown = sorted(set(settings or {}) - _SETTING_NAMES)
    if unknown:
        raise ConfigError(f"unknown setting {unknown[0]!r}; `drsg config` lists every setting by name")
    return dict(settings or {})


def loaded_settings(settings: Settings | Mapping[str, object] | None) -> Settings:
    """``open``'s settings loaded now (a database that needs one at its opening: a Kafka node's
    producer client): as they are, or drsg.toml and ``DRSG_*`` variables with these on top."""
    return settings if isinstance(settings, Settings) else load(flags=_overrides(settings))


class Database:
    """The library's calls on a database; :func:`open` returns one (see the module's docstring)."""

    if TYPE_CHECKING:  # the store's database supplies these (the concrete classes below)
        path: str
        pins: Pins

        def write(self, fn: Callable[[WriteTx], T], origin: dict[str, Json] | None = None) -> CommitResult[T]: ...
        async def awrite(
            self, fn: Callable[[WriteTx], T], origin: dict[str, Json] | None = None
        ) -> CommitResult[T]: ...
        def submit(self, intent: Intent, origin: dict[str, Json] | None = None) -> CommitResult[Json]: ...
        def read(self) -> _ReadHold[Reader]: ...
        def snapshot(self, as_of: AsOf | str | int | None = None) -> AbstractContextManager[Snapshot]: ...
        def head(self) -> int: ...
        def commits(self, from_seq: int = 1, to_seq: int | None = None) -> Iterator[Commit]: ...
        def stats(self) -> Stats: ...
        def retained(self) -> Retained: ...
        def compact_history(self, retention: Retention) -> HistoryCompacted: ...
        def on_close(self, stop: Callable[[], None]) -> None: ...
        def close(self) -> None: ...
        def __exit__(self, *exc: object) -> None: ...

    _settings_given: Mapping[str, object]
    _settings: Settings | None
    _searcher: Searcher | None
    _embedders: EmbedderCache | None
    _lazy: threading.Lock  # the searcher and the embedders are made once, whichever thread asks first
    _configured_embed: EmbedderChoice | None = None  # use_embedder's
    #: what a write's commit says made it (``drsg log`` shows ``via``); a surface sets its own
    origin: dict[str, Json]

    def _start_api(self, settings: Settings | Mapping[str, object] | None) -> None:
        """The concrete classes' constructors call this once the store's part is open. ``settings``:
        loaded ones as they are (a surface's, its flags applied), or overrides by name."""
        if isinstance(settings, Settings):
            self._settings_given, self._settings = {}, settings
        else:
            self._settings_given, self._settings = _overrides(settings), None
        self._lazy = threading.Lock()
        self.origin = {"via": "api"}
        self._searcher = None
        self._embedders = None
        self.pins.lease_secs = lambda: float(self.settings.integer("log.reader_lease_secs"))  # (store/readers.py)

    def __enter__(self) -> Self:
        return self

    # ------------------------------------------------------------------ planes

    def plane(self, name: str, *, as_of: AsOfLike | None = None) -> Plane:
        """The plane called ``name``, with the library's reads and writes (NotFound if none is);
        ``as_of``: the plane so called then (a dropped or renamed plane's history stays readable)."""
        from drsg.api.plane import Plane
        from drsg.api.points import as_of_of

        with self.snapshot(as_of_of(as_of)) as snap:
            return Plane(self, snap.plane(name))

    def planes(self, *, as_of: AsOfLike | None = None) -> list[Plane]:
        """Every plane, as of the head or of ``as_of``."""
        from drsg.api.plane import Plane
        from drsg.api.points import as_of_of

        with self.snapshot(as_of_of(as_of)) as snap:
            return [Plane(self, record) for record in snap.planes()]

    def create_plane(self, name: str, props: Mapping[str, Any] | None = None) -> Plane:
        """A new plane (Conflict if the name is taken)."""
        from drsg.api.plane import written_plane
        from drsg.kernel.values import props_to_json
        from drsg.store.intents import Intent

        intent = Intent("plane.create", {"name": name, "properties": props_to_json(props or {})})
        return written_plane(self, self.submit(intent, self.origin))

    def diff(self, plane: str, from_: AsOfLike, to: AsOfLike | None = None) -> PlaneDiff:
        """What changed in the plane called ``plane`` between two commits (seq 0: before the first;
        ``to``: the head); the plane need only exist at one end (a dropped plane's last changes)."""
        from drsg.api.points import seq_of
        from drsg.store.diff import diff_plane

        with self.read() as reader:
            ends = [reader.head if end is None else seq_of(reader, end) for end in (from_, to)]
            return diff_plane(reader, plane, ends[0], ends[1])

    def import_jsonl(
        self,
        plane: str,
        path: str | os.PathLike[str],
        *,
        on_conflict: str = "error",
        create_plane: bool = False,
        progress: Callable[[int], None] | None = None,
    ) -> ImportReport:
        """Import a JSONL file (``drsg import``'s format) into the plane called ``plane`` (made
        first with ``create_plane``), all or nothing, ``store.import_commit_lines`` lines a commit and
        ``store.import_txn_bytes`` of the file an LMDB transaction staged at a time; ``on_conflict``:
        "error", "skip" or "update"; ``progress(bytes_read)`` after each commit."""
        from drsg.store.jsonl import import_jsonl

        lines = self.settings.integer("store.import_commit_lines")
        if self.store.follows_remote_log:  # a Kafka node: its lines as intents, decided where they land
            from drsg.api.imports import produce_import

            return produce_import(self.store, os.fspath(path), plane, on_conflict, create_plane, lines, progress)
        return import_jsonl(
            self.store,
            os.fspath(path),
            plane,
            on_conflict,
            commit_lines=lines,
            txn_bytes=self.settings.integer("store.import_txn_bytes"),
            progress=progress,
            create_plane=create_plane,
        )

    def import_records(
        self,
        plane: str,
        records: Iterable[Mapping[str, Any]],
        *,
        on_conflict: str = "error",
        create_plane: bool = False,
        progress: Callable[[int], None] | None = None,
    ) -> ImportReport:
        """:meth:`import_jsonl` of records in memory — the Python API's bulk path: each record what a
        line of the file parses to (``{"external_key": "n1", "labels": ["N"], "properties": {...}}``;
        an edge ``{"src_key": ..., "dst_key": ..., "type": ..., "properties"?}``), its properties
        values of the data model or the JSON dialect. Read once from any iterable (a generator
        too) and kept a transaction's worth at a time; all or nothing; ``progress(records_read)``
        after each commit. A record is read when its commit is made: do not change it until the
        import returns."""
        from drsg.store.jsonl import import_records

        lines = self.settings.integer("store.import_commit_lines")
        if self.store.follows_remote_log:  # a Kafka node: as import_jsonl's, its records sent as lines
            from drsg.api.imports import produce_records

            return produce_records(self.store, records, plane, on_conflict, create_plane, lines, progress)
        return import_records(
            self.store, records, plane, on_conflict, commit_lines=lines, progress=progress, create_plane=create_plane
        )

    def digest(
        self,
        source: str | os.PathLike[str],
        *,
        plane: str,
        apply: bool = False,
        chat: ChatModel | ChatChoice | None = None,
        embed: EmbedderChoice | None = None,
        mode: str | None = None,
        chunk_chars: int | None = None,
        concurrency: int | None = None,
        embed_entities: bool = True,
        link: bool = True,
        cache: bool = True,
        ignore_files: str | None = None,
        tracked_only: bool | None = None,
        code_only: bool | None = None,
        handler: str | None = None,
        document: Document | None = None,
        on_read: Callable[[Document], None] | None = None,
        read_progress: Progress | None = None,
        progress: Progress | None = None,
        key_hint: str = "",
    ) -> Digested:
        """Read a document, a folder or a tree of code into the plane called ``plane``, which the
        apply makes if there is none (``created``): a preview (saved, nothing written) unless
        ``apply``, which writes the matching saved preview (no model call) or a new digest in one
        commit. Prose needs a chat model (``chat``: a model, or one named; else the
        ``digest.chat``/``digest.model`` settings'); code needs none. ``mode``, ``chunk_chars``,
        ``concurrency``: the ``[digest]`` settings' unless given; ``embed_entities=False`` and
        ``link=False`` skip embedding the entities and offering the model similar existing ones
        (both off: no embedder is loaded). A tree is walked as the ``digest.ignore_files``,
        ``tracked_only`` and ``code_only`` settings say unless given; ``handler`` forces one handler
        for its code. ``document``: a source already read (a crawl's pages); ``on_read`` sees the
        document before any model call; ``read_progress`` and ``progress`` get (phase, done, total)
        while reading and digesting; ``key_hint`` ends the error a chat model with no key raises
        when a tree's prose needs it (another way the caller has)."""
        from drsg.api import digest

        return digest.digest(
            self,
            plane,
            os.fspath(source),
            apply=apply,
            chat=chat,
            embed=embed,
            mode=mode,
            chunk_chars=chunk_chars,
            concurrency=concurrency,
            embed_entities=embed_entities,
            link=link,
            cache=cache,
            ignore_files=ignore_files,
            tracked_only=tracked_only,
            code_only=code_only,
            handler=handler,
            document=document,
            on_read=on_read,
            read_progress=read_progress,
            progress=progress,
            key_hint=key_hint,
        )

    # ------------------------------------------------------------------ the change feed

    def feed(self, from_seq: int | None = None, *, plane: str | None = None, **options: Any) -> Feed:
        """Every plane's changes (or the plane called ``plane``'s, though dropped since ``from_seq``)
        from ``from_seq`` (default: the next commit) on: iterate it, in a thread (``for``) or in
        asyncio (``async for``); see :class:`~drsg.api.feed.Feed`."""
        from drsg.api.feed import Feed

        return Feed(self, plane, from_seq, **options)

    # ------------------------------------------------------------------ what calls share

    def retention(self) -> Retention:
        """How much history ``[log] retain_commits`` and ``retain_days`` keep (store/retention.py)."""
        return Retention(self.settings.integer("log.retain_commits"), self.settings.integer("log.retain_days"))

    def compact_retained(self) -> HistoryCompacted:
        """Remove the history the retention settings no longer keep (nothing when they keep it all)."""
        return self.compact_history(self.retention())

    @property
    def settings(self) -> Settings:
        """The settings registry's values (drsg.toml, ``DRSG_*`` variables, then what ``open``
        was given), read on first use."""
        if self._settings is None:
            self._settings = load(flags=self._settings_given)
        return self._settings

    @property
    def searcher(self) -> Searcher:
        """The search indexes, opened (and caught up) on first use and saved on close."""
        with self._lazy:
            if self._searcher is None:
                from drsg.workers.manager import IndexSet
                from drsg.workers.search import Searcher

                store = self.store
                indexes = IndexSet(
                    store,
                    ef_search=self.settings.integer("index.ef_search"),
                    recall_target=self.settings.number("index.recall_target"),
                    lazy=True,  # a read loads the indexes of the plane it searches, not every plane's
                )
                self._searcher = Searcher(store, indexes)
                self.on_close(lambda: _save(indexes.save))
            return self._searcher

    @property
    def embedders(self) -> EmbedderCache:
        """The embedders this database's calls built, each made once (a model loads once)."""
        with self._lazy:
            if self._embedders is None:
                from drsg.pipeline.embedder_choice import EmbedderCache

                self._embedders = EmbedderCache()
            return self._embedders

    def open_searcher(
        self,
        *,
        max_queries: int | None = None,
        ef_search: int | None = None,
        sidecars: Path | None = None,
        saves: bool = True,
    ) -> Searcher:
        """Open the search indexes with a server's options — how many searches run at once, a shared
        folder of sidecars (read only with ``saves=False``) — as the searcher this database's calls
        use from now on. The caller starts, stops and saves its indexes (``searcher.indexes``)."""
        from drsg.workers.manager import IndexSet
        from drsg.workers.search import Searcher

        store = self.store
        ef = self.settings.integer("index.ef_search") if ef_search is None else ef_search
        target = self.settings.number("index.recall_target")
        indexes = IndexSet(store, ef_search=ef, recall_target=target, sidecars=sidecars, saves=saves)
        with self._lazy:
            self._searcher = Searcher(store, indexes, max_queries=max_queries)
            return self._searcher

    def use_embedder(self, choice: EmbedderChoice | None) -> None:
        """The embedder this database's calls use when neither the call nor the plane names one (a
        server's ``serve --embed…``); None: the settings' ``[digest] embed_provider``, if set."""
        self._configured_embed = choice

    @property
    def configured_embedder(self) -> EmbedderChoice | None:
        """The third step of the one embedder rule: :meth:`use_embedder`'s, else the settings'."""
        if self._configured_embed is not None:
            return self._configured_embed
        from drsg.pipeline.embedder_choice import configured_choice

        return configured_choice(self.settings)

    @property
    def store(self) -> StoreDatabase:
        """This database as the store's layers take it. A Kafka node offers the same methods."""
        return cast(StoreDatabase, self)


def _save(save: Callable[[], object]) -> None:
    try:
        save()  # sidecars live beside the database: a read saves them too, so the next open starts warm
    except OSError as exc:
        log.warning("could not save index sidecars; the next open will catch up again", reason=str(exc))


class EmbeddedDatabase(Database, StoreDatabase):
    """A database in one LMDB file (a path, or an ``lmdb://`` URL)."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        settings: Settings | Mapping[str, object] | None = None,
        **options: Unpack[LmdbOptions],
    ) -> None:
        from drsg.api.operations import API_OPS

        StoreDatabase.__init__(self, path, ops=API_OPS, **options)
        try:
            self._start_api(settings)
        except BaseException:
            StoreDatabase.close(self)
            raise
