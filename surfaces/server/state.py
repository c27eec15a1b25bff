"""What every RPC method shares: the database, its indexes, a read pool, writes with a deadline, embedders.

The database is the public API's (drsg.api): the methods call its planes' search, query, hybrid …,
and the searcher and the embedders those use are the ones this state opens and keeps.

Reads run in a small thread pool (an LMDB read transaction belongs to its thread, and a long scan
must not stall the event loop); writes go through :meth:`Database.awrite`, the group-commit writer,
so the event loop never waits on an fsync. The indexes catch up in a background thread and are
saved when the server stops.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import structlog

from drsg.api.database import Database
from drsg.api.plane import Plane
from drsg.api.retrieval import plane_embedder
from drsg.kernel.asof import AsOf
from drsg.kernel.errors import UNAUTHORIZED, QueryTimeout, RpcError, WriteTimeout
from drsg.kernel.values import Json
from drsg.models.embedders.base import Embedder
from drsg.store.history_keeper import HistoryKeeper
from drsg.store.intents import Intent
from drsg.store.transaction import WriteTx
from drsg.store.writer import CommitResult
from drsg.surfaces.server.config import ServerConfig

T = TypeVar("T")
log = structlog.get_logger("drsg.surfaces.server")
READ_THREADS = 8


def group_sidecars(db: Database, index_dir: str) -> tuple[Path | None, bool]:
    """Where a node of a Kafka log finds its indexes when a `drsg workers` group keeps them: their
    shared folder, read only (a save of the server's would break the group's fenced chain); else
    (None, True): beside the database, saved."""
    if not index_dir:
        return None, True
    from drsg.store.kafka.database import KafkaDatabase  # loads kafka-python: only for a Kafka log

    if not isinstance(db, KafkaDatabase):
        return None, True
    return Path(index_dir) / db.kafka.topic, False


#: a read-only server's one-line refusal: what was refused and the setting that allows writes
READ_ONLY = (
    "this server is read-only (--read-only or [server] read_only = true); nothing was written — restart it "
    "without --read-only and with read_only = false (DRSG_SERVER_READ_ONLY=0) to allow writes"
)


def rpc_origin(method: str, origin: dict[str, Any] | None = None) -> dict[str, Any]:
    """What a JSON-RPC write's commit says made it (`drsg log` shows ``via``): the method's own
    details, then ``via`` and ``method``, which they cannot override."""
    return {**(origin or {}), "via": "rpc", "method": method}


class ServerState:
    def __init__(self, db: Database, config: ServerConfig) -> None:
        self.api = db  # the public API's: ``plane(…)`` below, its one embedder rule
        self.db = db.store  # the same database, as the store's layers take it
        self.config = config
        sidecars, saves = group_sidecars(db, config.group_index_dir)
        # the database's calls (plane.search, hybrid, …) search through this searcher and embed with
        # the operator's embedder: one set of indexes and embedders, not one here and one there
        self.searcher = db.open_searcher(
            max_queries=config.max_queries, ef_search=config.ef_search, sidecars=sidecars, saves=saves
        )
        self.indexes = self.searcher.indexes
        db.use_embedder(config.embed)
        self.reads = ThreadPoolExecutor(max_workers=READ_THREADS, thread_name_prefix="drsg-read")
        self.reading = 0  # reads running in the pool, those a timeout gave up on included
        self._reading_lock = threading.Lock()
        self.stopping = False
        self.in_flight = 0  # HTTP requests being handled (the access log keeps it)
        self.started_at = time.time()
        self._writes: set[asyncio.Task[Any]] = set()
        # [log] retain_commits / retain_days: history compacted in the background (a server that
        # writes, on its own file: a Kafka node's history is its topic's)
        self.history = HistoryKeeper(self.db, db.retention(), db.settings.integer("log.compact_every_secs"))

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        from drsg.kernel.errors import DrsgError
        from drsg.pipeline.catalog.connections import Connections

        try:
            catalogs = bool(Connections(self.db.path).load())
        except DrsgError:  # a damaged connections file is the catalog calls' error to report, not startup's
            catalogs = False
        if catalogs:
            # A catalog's keyword index is Chinese: jieba's import and dictionary load hold the GIL for
            # ~60 + ~100 ms in single calls. Pay that here, before serving, not during a catalog.index.
            from drsg.workers.analysis import analyze

            analyze("用户", "chinese")
        self.indexes.start()
        if not (self.config.read_only or self.db.readonly or self.db.follows_remote_log):
            self.history.start()

    def close(self) -> None:
        """Stop indexing, save the sidecars, stop the read pool. The database stays open. Reads still
        running belong to calls already answered or cut off (see :attr:`reading`): not waited for."""
        self.history.stop()
        self.indexes.stop()
        try:
            saved = self.indexes.save()
            log.info("index sidecars saved", indexes=saved)
        except OSError as exc:
            log.warning("could not save index sidecars; the next start catches up from the log", reason=str(exc))
        self.reads.shutdown(wait=False, cancel_futures=True)

    # ------------------------------------------------------------------ reading and writing

    async def read(self, fn: Callable[..., T], *args: Any, limited: bool = True) -> T:
        """Run ``fn`` in the read pool, answering -32000 once it passes ``query_timeout_secs``
        (unless not ``limited``: building an index must finish, however long it takes)."""
        loop = asyncio.get_running_loop()
        future = loop.run_in_executor(self.reads, self._counted, fn, *args)
        timeout = self.config.query_timeout
        if timeout is None or not limited:
            return await future
        expired = False

        def expire() -> None:
            nonlocal expired
            expired = True
            future.cancel()  # the thread runs on to its end; nobody waits for it any more

        timer = loop.call_later(timeout, expire)
        try:
            return await future
        except asyncio.CancelledError:
            if not expired:
                raise
            raise QueryTimeout(
                f"the read ran longer than query_timeout_secs ({timeout:g} s); narrow it (a label, a smaller k)"
            ) from None
        finally:
            timer.cancel()

    def _counted(self, fn: Callable[..., T], *args: Any) -> T:
        with self._reading_lock:
            self.reading += 1
        try:
            return fn(*args)
        finally:
            with self._reading_lock:
                self.reading -= 1

    def read_inline(self, fn: Callable[[], T]) -> T:
        """Run a tiny read (a few key seeks) on the event loop itself: cheaper than a thread hop."""
        return fn()

    def check_writable(self) -> None:
        """Refuse a write on a read-only server (-32001, before anything runs); every write the server
        makes comes through here (:meth:`write`, :meth:`submit`; catalog.index, plane.vectorize and
        plugin.install/remove, which write through the store or the plugin folder, call it first)."""
        if self.config.read_only:
            raise RpcError(UNAUTHORIZED, READ_ONLY)

    async def write(
        self, fn: Callable[[WriteTx], T], method: str, origin: dict[str, Any] | None = None
    ) -> CommitResult[T]:
        """One commit through the group-commit writer. A write that cannot start within
        ``write_timeout_secs`` is abandoned before it runs (-32002: nothing was written); one that
        has started is waited for, whatever it takes."""
        self.check_writable()
        origin = rpc_origin(method, origin)
        timeout = self.config.write_timeout
        if timeout is None:
            return await self.db.awrite(fn, origin)
        loop = asyncio.get_running_loop()
        gate = threading.Lock()
        started = abandoned = False
        outcome: asyncio.Future[CommitResult[T]] = loop.create_future()

        def guarded(tx: WriteTx) -> T:
            nonlocal started
            with gate:
                if abandoned:
                    raise WriteTimeout("abandoned")
                started = True
            return fn(tx)

        def expire() -> None:
            nonlocal abandoned
            with gate:
                if started:
                    return  # it is running: its outcome is the answer
                abandoned = True
            if not outcome.done():
                outcome.set_exception(
                    WriteTimeout(
                        f"the write waited {timeout:g} s for the writer (another writer holds it, e.g. a long "
                        f"import); nothing was written — retry"
                    )
                )

        def settle(task: asyncio.Task[CommitResult[T]]) -> None:
            self._writes.discard(task)
            timer.cancel()
            if task.cancelled():
                if not outcome.done():
                    outcome.cancel()
                return
            error = task.exception()  # also marks it retrieved when the answer has already gone out
            if outcome.done():
                return
            if error is not None:
                outcome.set_exception(error)
            else:
                outcome.set_result(task.result())

        timer = loop.call_later(timeout, expire)
        task = loop.create_task(self.db.awrite(guarded, origin))
        self._writes.add(task)  # the loop keeps only weak references to tasks
        task.add_done_callback(settle)
        return await outcome

    async def submit(self, intent: Intent, method: str, origin: dict[str, Any] | None = None) -> CommitResult[Json]:
        """One intent (store/intents.py). Through the group-commit writer it is a commit function
        and :meth:`write`'s deadline holds; a Kafka node produces it at once (no writer to wait
        for) and waits only for its own outcome."""
        self.check_writable()
        if self.db.writes.queued:
            return await self.write(self.db.ops.commit_function(intent), method, origin)
        return await self.db.asubmit(intent, rpc_origin(method, origin))

    # ------------------------------------------------------------------ the API's planes, the embedder rule

    def plane(self, name: str, at: AsOf | None = None) -> Plane:
        """The public API's plane called ``name`` as of ``at`` (a plane dropped or renamed since is
        still searched as it was then). Runs in a read thread."""
        with self.db.snapshot(at) as snap:
            return Plane(self.api, snap.plane(name))

    def embedder_for(self, plane: str, prop: str) -> Embedder:
        """The embedder for ``prop``'s vector space in ``plane`` (the API's one rule; a request never
        names one here): the one the plane recorded for ``prop`` (rebuilt from its preset; keys from
        the server's environment), else the operator's (`serve --embed`, `[digest] embed_provider`),
        else the local model."""
        return plane_embedder(self.api, plane, prop, None, "query")
