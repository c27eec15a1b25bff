"""IndexSet: every declared index of a database, consuming the log from its own checkpoint.

Embedded use is read-your-writes: :meth:`IndexSet.catch_up` applies every commit up to the head
before a query runs. A long-running process calls :meth:`start` to catch up in the background as
commits arrive (woken by the database's commit notification, never polling the head) and save
sidecars periodically, and reads :meth:`lag` to report how far behind the indexes are.

Queries run side by side: each holds :meth:`IndexSet.reading` (shared) while it reads the indexes,
and applying commits takes that gate alone, so no commit lands under a running query, and once one
waits to land, new queries wait behind it (a stream of queries cannot starve the indexer).

By default the set keeps every declared index, with its sidecars beside the database. The consumer
group of workers/index_group.py gives it a shared sidecar folder (``sidecars``), the planes its
member owns now (:meth:`IndexSet.keep`), and fenced saves: a save another worker has overtaken is
dropped from the set (the index is loaded again at the next catch-up, if it is still owned). A
server on such a node loads the group's sidecars and never saves (``saves=False``).

A ``lazy`` set (a process's reads: one-shot commands, the Python API) holds only the indexes reads
have asked for (``catch_up(head, plane, names)``: the indexes a read names, or a whole plane's): a
search never loads another plane's sidecars, nor its plane's other indexes when it names those it
searches, and an index once loaded is kept, and kept up, for the reads after it.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import structlog

from drsg.kernel.gcpause import collector_paused
from drsg.kernel.values import Json
from drsg.store.database import Database
from drsg.store.gate import Gate
from drsg.store.records import IndexDecl, indexes_json
from drsg.workers.base import DEFAULT_RECALL_TARGET, SLICE, IndexWorker
from drsg.workers.sidecar import SidecarFenced

log = structlog.get_logger("drsg.workers")
RETRY_AFTER = 1.0  # seconds the background catch-up pauses after a failure
REACH_WAIT = 10.0  # seconds a load waits for this copy to reach a sidecar saved from further on
DeclKey = tuple[int, str, str, str]  # plane, kind, label, property
IndexKey = tuple[str, str, str]  # kind, label, property: one index of a plane
IndexKeys = tuple[IndexKey, ...]  # the indexes of a plane one read searches


def worker_class(kind: str) -> type[IndexWorker]:
    if kind == "vector":
        from drsg.workers.vector import VectorIndex  # numpy and hnswlib load when a vector index exists

        return VectorIndex
    from drsg.workers.keyword import KeywordIndex  # tantivy loads only when a keyword index exists

    return KeywordIndex


def sidecar_roots(sidecars: str | os.PathLike[str]) -> list[Path]:
    """The folders an index set keeping its sidecars at ``sidecars`` saves them in, one per kind."""
    return [worker_class(kind).sidecar_root(sidecars) for kind in ("vector", "keyword")]


@dataclass(frozen=True)
class Lag:
    seqs: int  # commits the slowest index has not applied yet
    seconds: float  # age of the oldest commit not applied yet (0 when caught up)


def every_plane(plane: int) -> bool:
    return True


class IndexSet:
    def __init__(
        self,
        db: Database,
        *,
        ef_search: int = 64,
        recall_target: float = DEFAULT_RECALL_TARGET,
        sidecars: str | os.PathLike[str] | None = None,
        keeps: Callable[[int], bool] = every_plane,
        fenced: bool = False,
        saves: bool = True,
        lazy: bool = False,
    ) -> None:
        self.db = db
        self.ef_search = ef_search
        self.recall_target = recall_target
        self.sidecars = db.path if sidecars is None else sidecars  # each kind's folder is this + its suffix
        self.keeps = keeps  # which planes' indexes this set holds
        self.fenced = fenced
        self.saves = saves  # False: sidecars are loaded, and what is applied stays in memory
        self.lazy = lazy  # True: hold only what ``wanted`` names, what reads asked for
        self.wanted: set[int | DeclKey] = set()  # whole planes, and single indexes
        self.workers: dict[DeclKey, IndexWorker] = {}
        self.applied = 0  # the head the last catch-up reached
        self._lock = threading.RLock()  # one catch-up or save at a time
        self._gate = Gate()  # queries share it; applying commits takes it alone
        self._uuid = db.uuid
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()

    # ------------------------------------------------------------------ keeping up with the log

    def sidecar_folders(self) -> list[Path]:
        """The folders this set saves its sidecars in, one per kind (they may not exist yet)."""
        return sidecar_roots(self.sidecars)

    def catch_up(self, head: int | None = None, plane: int | None = None, names: IndexKeys | None = None) -> int:
        """Apply every commit up to ``head`` (default: the current head); returns it. ``plane``: the
        plane a read searches, and ``names`` the indexes of it it searches (None: any of them; ``()``:
        none), which a lazy set loads now if it does not hold them yet."""
        if head is not None and head == self.applied and (not self.lazy or self._holds(plane, names)):
            return head  # the common case on the query path: no transaction, no lock
        with self._lock:
            if self.lazy and plane is not None and not self._holds(plane, names):
                self.wanted.update((plane,) if names is None else [(plane, *key) for key in names])
                self.applied = 0  # the declarations are looked at again: what the read wants loads
            head = self.db.head() if head is None else head
            if head <= self.applied:
                return self.applied
            with self._gate.exclusive() as alone:
                if not alone:  # this thread is inside a query: its index reads would change under it
                    raise RuntimeError("IndexSet.catch_up() called inside reading() on the same thread")
                with collector_paused():  # a large catch-up's full collections would hold the GIL for 100+ ms
                    return self._apply(head)

    def _holds(self, plane: int | None, names: IndexKeys | None) -> bool:
        """Whether a lazy set holds what a read wants: no plane named, its plane, or each index it names."""
        if plane is None or plane in self.wanted:
            return True
        if names is None:
            return False
        return all((plane, kind, label, prop) in self.wanted for kind, label, prop in names)

    def _apply(self, head: int) -> int:
        """Bring every worker to ``head``, or past it to the checkpoint of a sidecar just loaded
        (the caller holds the gate alone); returns the head reached."""
        head = self._reconcile(head)
        behind = [w for w in self.workers.values() if w.seq < head]
        oldest = self.db.retained().oldest
        if any(w.seq + 1 < oldest for w in behind):  # its next commit was compacted away: from the graph
            with self.db.snapshot(head) as snap:
                for worker in behind:
                    if worker.seq + 1 < oldest:
                        worker.rebuild(snap)
                        log.info("index rebuilt: its commits are older than the retained history", seq=head)
            behind = [w for w in behind if w.seq < head]
        if behind:
            start, done = min(w.seq for w in behind) + 1, 0
            for commit in self.db.commits(start, head):
                for worker in behind:
                    worker.apply(commit.seq, commit.mutations)
                done += len(commit.mutations)
                if done >= SLICE:  # many small commits: offer the GIL as a large one does (IndexWorker.apply)
                    time.sleep(0)
                    done = 0
            for worker in behind:
                worker.seq = max(worker.seq, head)
                worker.flush()
        self.applied = head
        return head

    def _reconcile(self, head: int) -> int:
        """Start workers for new declarations, retire dropped ones, restart changed ones; returns
        ``head``, or the checkpoint of a sidecar loaded from past it (see :meth:`_reach`)."""
        with self.db.snapshot(head) as snap:
            declared: dict[DeclKey, IndexDecl] = {
                (d.plane, d.kind, d.label, d.prop): d
                for plane in snap.planes()
                if self.keeps(plane.id)
                for d in snap.indexes(plane.id)
                if not self.lazy or self._holds(d.plane, ((d.kind, d.label, d.prop),))
            }
            for key in list(self.workers):
                worker = self.workers[key]
                if key not in declared or declared[key] != worker.decl:
                    del self.workers[key]
                    if key not in declared and self.keeps(worker.decl.plane) and self.saves:
                        worker.sidecar.remove()  # (a read-only set leaves the group's files to the group)
            for key, decl in declared.items():
                if key in self.workers:
                    continue
                worker = self._new_worker(decl)
                if not worker.load(head, self._reach if self.db.follows_remote_log else None):
                    worker.rebuild(snap)
                    log.info("index built", index=worker.describe(), seq=head)
                self.workers[key] = worker
                head = max(head, worker.seq)
        return head

    def _reach(self, seq: int) -> bool:
        """Wait (up to REACH_WAIT) until this database's log holds commit ``seq``: a sidecar saved
        by another member of a Kafka log's group from a copy a little ahead of this one's."""
        deadline = time.monotonic() + REACH_WAIT
        head = self.db.head()
        while head < seq and (left := deadline - time.monotonic()) > 0:
            head = max(head, self.db.log.wait(head, min(left, 0.25)))
        return head >= seq

    def _new_worker(self, decl: IndexDecl) -> IndexWorker:
        cls = worker_class(decl.kind)
        if decl.kind == "vector":
            from drsg.workers.vector import VectorIndex

            return VectorIndex(
                decl, self.sidecars, self._uuid, ef_search=self.ef_search, recall_target=self.recall_target
            )
        return cls(decl, self.sidecars, self._uuid)

    def keep(self, keeps: Callable[[int], bool]) -> None:
        """Hold the indexes of the planes ``keeps`` accepts from now on: the others are let go at
        once (unsaved: save first what must be kept), new ones are loaded by the next catch-up."""
        with self._lock:
            self.keeps = keeps
            for key in [key for key, worker in self.workers.items() if not keeps(worker.decl.plane)]:
                del self.workers[key]
            self.applied = 0  # the next catch-up looks at the declarations again

    # ------------------------------------------------------------------ access

    def get(self, plane: int, kind: str, label: str, prop: str) -> IndexWorker | None:
        return self.workers.get((plane, kind, label, prop))

    def reading(self) -> AbstractContextManager[None]:
        """Hold while a query reads the indexes (shared with other queries; re-entrant): no
        commit is applied until it ends."""
        return self._gate.shared()

    def lag(self) -> Lag:
        head = self.db.head()
        with self._lock:
            oldest = min((w.seq for w in self.workers.values()), default=head)
        if oldest >= head:
            return Lag(0, 0.0)
        first = max(oldest + 1, self.db.retained().oldest)  # (what history compaction left)
        ts = next(iter(self.db.commits(first, first))).ts
        return Lag(head - oldest, max(0.0, time.time() - ts / 1000))

    # ------------------------------------------------------------------ persistence and background work

    def save(self) -> int:
        """Save every index with unsaved changes; returns how many were saved. Under fencing, an
        index another worker saved meanwhile is dropped instead (loaded again if still kept)."""
        if not self.saves:
            return 0
        with self._lock:
            saved = 0
            for key, worker in [(key, w) for key, w in self.workers.items() if w.dirty]:
                base = worker.sidecar.in_force_seq
                try:
                    worker.save(fenced=self.fenced)
                except SidecarFenced as exc:
                    log.warning("index_fenced", index=worker.describe(), seq=worker.seq, reason=str(exc))
                    del self.workers[key]
                    self.applied = 0
                    continue
                saved += 1
                name = worker.sidecar.dir.name
                log.info("index_saved", index=worker.describe(), base=base, seq=worker.seq, sidecar=name)
            return saved

    def start(self, save_every: float = 30.0) -> None:
        """Catch up in a background thread (for `serve`) each time the log moves — the database's
        commit notification wakes it, for this process's commits and other processes' alike — and
        save sidecars every ``save_every`` seconds."""
        if self._thread is not None:
            return
        self._stop.clear()
        self.db.on_close(self.stop)  # a database closed under this thread would crash the process

        def run() -> None:
            next_save = time.monotonic() + save_every
            while not self._stop.is_set():
                self.db.log.wait(self.applied, max(0.0, next_save - time.monotonic()))
                if self._stop.is_set():
                    return
                try:
                    self.catch_up()
                    if time.monotonic() >= next_save:
                        self.save()
                        next_save = time.monotonic() + save_every
                except Exception:  # keep indexing; retry after a pause (at once, it would likely fail again)
                    log.exception("index catch-up failed")
                    self._stop.wait(RETRY_AFTER)

        self._thread = threading.Thread(target=run, name="drsg-indexer", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        if self._thread is not None:
            self._stop.set()
            while self._thread.is_alive():  # again until it ends: it may only now start to wait
                self.db.log.interrupt()  # wake it from its wait for the next commit
                self._thread.join(0.05)
            self._thread = None

    def close(self) -> None:
        self.stop()
        self.save()

    def recall(self, decl: IndexDecl) -> dict[str, Any]:
        """A vector index's search breadth and the recall@10 measured at it (None: not measured, e.g.
        empty), for ``index list``; {} for any other index, or one this set does not hold."""
        from drsg.workers.vector import VectorIndex

        worker = self.get(decl.plane, decl.kind, decl.label, decl.prop)
        if not isinstance(worker, VectorIndex):
            return {}
        done = worker.calibration
        return {"ef": worker.ef, "recall": done.recall if done else None}

    def listing(self, decls: list[IndexDecl]) -> dict[str, Json]:
        """Upstream's ``plane.indexes`` shape, each vector index this set holds with its :meth:`recall`
        figures added (``index list --json``, ``plane.indexes``)."""
        listed = indexes_json(decls)
        vectors = [self.recall(d) for d in decls if d.kind == "vector"]
        entries = cast("list[dict[str, Json]]", listed["vector"])  # indexes_json: one object per vector index
        listed["vector"] = [{**entry, **f} for entry, f in zip(entries, vectors, strict=True)]
        return listed

    def describe(self) -> list[dict[str, Any]]:
        with self._lock:
            return [{**w.decl.to_json(), "plane": w.decl.plane, "seq": w.seq} for w in self.workers.values()]
