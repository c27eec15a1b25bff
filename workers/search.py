"""The two searches (vector, keyword) over a database and its indexes.

Every query first catches the indexes up with the log (read-your-writes), then reads nodes from a
snapshot at exactly the seq the indexes reached, so results and records always agree. ``AS OF`` an
earlier commit searches that snapshot exactly: a brute-force vector scan, or a keyword index built
in memory over the snapshot. Logical plans run in :mod:`drsg.workers.plans`, hybrid queries in
:mod:`drsg.workers.hybrid`; both build on :class:`Searcher`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any

from drsg.kernel.asof import AsOf, parse_as_of
from drsg.kernel.cpus import cores
from drsg.kernel.errors import NotFound, UsageError
from drsg.kernel.metrics import check_metric
from drsg.kernel.values import Vector
from drsg.store.database import Database
from drsg.store.gate import Gate
from drsg.store.records import Node
from drsg.store.snapshot import Snapshot
from drsg.workers.manager import IndexKeys, IndexSet, worker_class

if TYPE_CHECKING:  # numpy and hnswlib load with the first search, not with every Searcher (a Cypher MATCH)
    from drsg.plan.hybrid import HybridSpec
    from drsg.workers.base import IndexWorker, Pool
    from drsg.workers.vector import VectorIndex

#: Turns query text into a vector for a (plane, label, property); supplied by the surface.
TextEmbedder = Callable[[str], Vector]
#: the largest top-k whose hits are ranked in lists (VectorIndex.search_lists); above, in arrays
SMALL_K = 32


@dataclass(slots=True)
class Hit:
    node: Node
    score: float | None = None

    def to_json(self, vectors: bool | str = "lean") -> dict[str, Any]:
        out = self.node.to_json(vectors=vectors)
        out["key"] = self.node.key  # short for external_key, as search users expect
        if self.score is not None:
            out["score"] = self.score
        return out


class Searcher:
    """Runs queries; from many threads at once, at most ``max_queries`` (default: one per CPU core)
    run at a time and the rest wait their turn. The searches release the GIL, so queries on two
    cores run side by side, but more of them than cores only thrash on the GIL (2 cores, 8 threads
    issuing hybrid queries: ~1.9k queries/s with none held back, ~2.3k/s at two at a time; 1.7k/s
    when every query was serialised, tests/bench/RESULTS.md)."""

    def __init__(self, db: Database, indexes: IndexSet | None = None, *, max_queries: int | None = None) -> None:
        self.db = db
        self.indexes = indexes or IndexSet(db)
        self._running = Gate(max_queries or cores())  # shared by the queries running, up to the limit
        # The two holds every query takes, looked up once (each gate has one shared hold).
        self._query_hold = self._running.shared()
        self._index_hold = self.indexes.reading()
        self._planes: dict[str, tuple[int, int]] = {}  # plane name -> (seq, plane id) last looked up

    def plane_id(self, snap: Snapshot, name: str) -> int:
        """``snap.plane(name).id``, remembered per name while queries keep reading the same seq (the
        graph at a seq never changes, so the answer cannot go stale; a new commit is a new seq)."""
        seen = self._planes.get(name)
        if seen is not None and seen[0] == snap.at:
            return seen[1]
        plane_id = snap.plane(name).id
        self._planes[name] = (snap.at, plane_id)
        return plane_id

    def view(
        self, plane: str, as_of: AsOf | None, *, indexes: bool = True, names: IndexKeys | None = None
    ) -> QueryView:
        """What one query on ``plane`` reads, for a ``with`` block: its snapshot, the plane's id, and
        whether the snapshot is the head (where the indexes serve it; an earlier commit is searched
        exactly).

        One read transaction per query. At the head, the indexes are caught up to it and hold still
        (``reading``) while the query runs, so index hits and node records agree. An earlier commit
        reads the snapshot alone (never the indexes): it neither waits for them nor holds them up,
        however long its exact scan takes. So does a read that searches nothing (``indexes``
        False: a Cypher MATCH), at the head too. ``names``: the indexes the query searches, when it
        names them (a lazy index set loads those alone; None: the plane's)."""
        return QueryView(self, plane, as_of, indexes, names)

    # ------------------------------------------------------------------ the two searches

    def vector(
        self,
        plane: str,
        label: str | None,
        prop: str,
        query: Vector,
        metric: str = "cosine",
        k: int = 10,
        as_of: AsOf | str | int | None = None,
    ) -> list[Hit]:
        metric = check_metric(metric)
        with self.view(plane, _as_of(as_of), names=vector_indexes(label, prop)) as (snap, plane_id, current):
            return self.vector_hits(snap, plane_id, label, prop, query, metric, k, current)

    def keyword(
        self, plane: str, label: str, prop: str, text: str, k: int = 10, as_of: AsOf | str | int | None = None
    ) -> list[Hit]:
        with self.view(plane, _as_of(as_of), names=(("keyword", label, prop),)) as (snap, plane_id, current):
            return hydrate(snap, plane_id, self._keyword_index(snap, plane_id, label, prop, current).search(text, k))

    # ------------------------------------------------------------------ ranked ids; callers load records
    # (hybrid retrieval combines candidate pools and loads only the winners)

    def vector_hits(
        self,
        snap: Snapshot,
        plane: int,
        label: str | None,
        prop: str,
        query: Vector,
        metric: str,
        k: int,
        current: bool,
    ) -> list[Hit]:
        """:meth:`vector_pool`'s top-k with their records (a top-k's few hits ranked in lists: no
        arrays made to be read back)."""
        worker = self._vector_index(plane, label, prop, metric, current)
        if worker is not None and k <= SMALL_K:
            return hits_of(snap, plane, *worker.search_lists(query, k))
        return hydrate_pool(snap, plane, self.vector_pool(snap, plane, label, prop, query, metric, k, current))

    def vector_pool(
        self,
        snap: Snapshot,
        plane: int,
        label: str | None,
        prop: str,
        query: Vector,
        metric: str,
        k: int,
        current: bool,
    ) -> Pool:
        """Top-k (node ids, similarities), best first: from the index when it serves this query, else exactly."""
        worker = self._vector_index(plane, label, prop, metric, current)
        if worker is not None:
            return worker.search_arrays(query, k)
        from drsg.workers.base import pool_of
        from drsg.workers.exact import exact_vector_search

        return pool_of(exact_vector_search(snap, plane, label, prop, query, metric, k))

    def _vector_index(self, plane: int, label: str | None, prop: str, metric: str, current: bool) -> VectorIndex | None:
        """The vector index serving a search at the head on (label, prop) with ``metric``, if any
        (a size mismatch is an error there); else the search is exact."""
        from drsg.workers.vector import VectorIndex  # loaded already by then: a dictionary look-up

        worker = self.indexes.get(plane, "vector", label, prop) if (label and current) else None
        return worker if isinstance(worker, VectorIndex) and worker.metric == metric else None

    def keyword_pool(self, snap: Snapshot, plane: int, label: str, prop: str, text: str, k: int, current: bool) -> Pool:
        """Top-k (node ids, BM25 scores), best first; AS OF an earlier commit, over that snapshot's
        documents exactly. NotFound when no keyword index is declared on (label, prop)."""
        return self._keyword_index(snap, plane, label, prop, current).search_arrays(text, k)

    def _keyword_index(self, snap: Snapshot, plane: int, label: str, prop: str, current: bool) -> IndexWorker:
        """The keyword index a query on (label, prop) searches: the worker's at the head, else one
        built in memory over the snapshot's documents. NotFound when none is declared."""
        worker = self.indexes.get(plane, "keyword", label, prop) if current else None
        if worker is None:
            decl = snap.index(plane, "keyword", label, prop)
            if decl is None:
                since = snap.index_declared_after(plane, "keyword", label, prop)
                if since is not None:  # as of a commit before the declaration: declaring it is no fix
                    raise NotFound(
                        f"no keyword index on {label}.{prop} at seq {snap.at}: it was declared at seq {since}; "
                        f"search as of seq {since} or later"
                    )
                raise NotFound(
                    f"no keyword index on {label}.{prop}; declare one with "
                    f"`drsg index keyword {label} {prop} --plane {snap.plane_by_id(plane).name}`"  # type: ignore[union-attr]
                )
            worker = worker_class("keyword")(decl, self.db.path, "")
            worker.rebuild(snap)
        return worker


class QueryView:
    """:meth:`Searcher.view`'s hold. A class rather than a generator: every query takes one, and a
    generator-based context manager cost a query more than a microsecond."""

    __slots__ = ("as_of", "current", "hold", "indexes", "names", "plane", "searcher")

    def __init__(
        self, searcher: Searcher, plane: str, as_of: AsOf | None, indexes: bool = True, names: IndexKeys | None = None
    ) -> None:
        self.searcher = searcher
        self.plane = plane
        self.as_of = as_of
        self.indexes = indexes
        self.names = names

    def __enter__(self) -> tuple[Snapshot, int, bool]:
        searcher = self.searcher
        self.current = False
        searcher._query_hold.__enter__()
        self.hold = None
        try:
            hold = searcher.db.snapshot(self.as_of)
            snap = hold.__enter__()  # leaves nothing held when it raises
            self.hold = hold
            plane_id = searcher.plane_id(snap, self.plane)
            if snap.at == snap.head and self.indexes:
                searcher.indexes.catch_up(snap.head, plane_id, self.names)  # (a lazy set loads what it names)
                searcher._index_hold.__enter__()
                self.current = True
            return snap, plane_id, self.current
        except BaseException as exc:
            self.__exit__(type(exc), exc, exc.__traceback__)
            raise

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        searcher = self.searcher
        try:
            if self.current:
                self.current = False
                searcher._index_hold.__exit__(kind, exc, tb)
            if self.hold is not None:
                hold, self.hold = self.hold, None
                hold.__exit__(kind, exc, tb)  # raises damage met while reading as DamagedDatabase
        finally:
            searcher._query_hold.__exit__(kind, exc, tb)


def vector_indexes(label: str | None, prop: str) -> IndexKeys:
    """The index a vector search names (what a lazy index set loads for it): its label's; none
    without a label (that search is exact)."""
    return (("vector", label, prop),) if label else ()


def hybrid_indexes(spec: HybridSpec) -> IndexKeys:
    """The indexes a hybrid query searches: its vector channel's and its keyword channel's, on its
    label (without one the vector channel is exact, and there is no keyword channel)."""
    if spec.label is None:
        return ()
    vector = vector_indexes(spec.label, spec.vector.prop) if spec.vector is not None else ()
    return vector + ((("keyword", spec.label, spec.keyword.prop),) if spec.keyword is not None else ())


def _as_of(as_of: AsOf | str | int | None) -> AsOf | None:
    if as_of is None or isinstance(as_of, AsOf):
        return as_of
    return parse_as_of(as_of)


def embedded(query: Vector | str, embed: TextEmbedder | None) -> Vector:
    """A query vector: given, or the query text embedded by ``embed``."""
    if isinstance(query, Vector):
        return query
    if embed is None:
        raise UsageError('this query has a text to embed (NEAR "text"): it needs an embedder (--embed)')
    return embed(query)


def hydrate(snap: Snapshot, plane: int, ranked: list[tuple[int, float]]) -> list[Hit]:
    """Ranked ``(node id, score)`` pairs as hits with their records (a node gone at this snapshot is left out)."""
    nodes = snap.nodes_at(plane, [node_id for node_id, _ in ranked])
    return [Hit(node, score) for node, (_, score) in zip(nodes, ranked, strict=True) if node is not None]


def hydrate_pool(snap: Snapshot, plane: int, pool: Pool) -> list[Hit]:
    """:func:`hydrate` for a search's arrays (node ids best first, scores)."""
    ids, scores = pool
    return hits_of(snap, plane, ids.tolist(), scores.tolist())


def hits_of(snap: Snapshot, plane: int, ids: list[int], scores: list[float]) -> list[Hit]:
    """:func:`hydrate` for ranked lists (node ids best first, their scores)."""
    nodes = snap.nodes_at(plane, ids)
    return [Hit(node, score) for node, score in zip(nodes, scores, strict=True) if node is not None]
