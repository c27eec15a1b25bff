"""The vector index: hnswlib HNSW per (plane, label, property), kept from the log.

Scores are similarities, higher is better, as upstream's score channel: cosine similarity, dot
product, or negative Euclidean distance. hnswlib reports distances (``1 - cos``, ``1 - dot``,
squared L2), converted here.
"""

from __future__ import annotations

import math
import operator
import threading
from pathlib import Path
from typing import Any

import hnswlib
import msgpack
import numpy as np

from drsg.kernel.cpus import cores
from drsg.kernel.errors import BadValue
from drsg.kernel.metrics import check_metric
from drsg.kernel.values import Vector
from drsg.workers import exact
from drsg.workers.base import DEFAULT_RECALL_TARGET, IndexWorker, Pool
from drsg.workers.recall import HOLD, Calibration, Fetch, calibrate

_SPACE = {"cosine": "cosine", "dot": "ip", "l2": "l2"}
#: the sidecar's layout, in its meta: bump it when what the files hold changes. Layout 1 could hold
#: one node in two slots (see upsert); its sidecars no longer match, so they are rebuilt once.
LAYOUT = 2
M = 16
EF_CONSTRUCTION = 200
DEFAULT_EF_SEARCH = 64
#: calibration (workers/recall.py): recall@K_CAL of SAMPLE of the index's own vectors as queries,
#: seeded, against exact search; breadths from ef_search up to EF_CAP; again once the index doubles
K_CAL = 10
SAMPLE = 200
SEED = 37
EF_CAP = 4096
EF_STEPS = (96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, EF_CAP)
_FEW = 32  # scores checked in Python below this many, in numpy above
#: upserts buffered before they go to hnswlib in one add_items call on every core (one by one, an
#: insert is single-threaded and pays the binding's per-call cost: a build ran at half raw hnswlib's rate)
CHUNK = 4096


class _EfShare:
    """hnswlib keeps one ``ef`` per index, set before a search. Searches needing the same ef run side
    by side (hnswlib searches are thread-safe); one needing another ef claims the next switch and
    waits for the running searches to end, while newcomers wait behind the claim, so a steady
    stream of searches at one ef cannot starve another. One claim at a time: a third ef claims
    once the first is served. Enter with :meth:`at`."""

    __slots__ = ("_cond", "_lock", "claim", "ef", "index", "users", "waiting")

    def __init__(self, index: hnswlib.Index, ef: int) -> None:
        self.index = index
        self.ef = ef
        index.set_ef(ef)
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self.users = 0  # searches running at self.ef
        self.waiting = 0  # searches waiting on the condition (leaving wakes them only when there are some)
        self.claim: int | None = None  # the ef a waiting search needs next

    def at(self, ef: int) -> _EfHold:
        return _EfHold(self, ef)


class _EfHold:
    """One search's hold on an :class:`_EfShare` (a class, not a generator: every search takes one)."""

    __slots__ = ("ef", "share")

    def __init__(self, share: _EfShare, ef: int) -> None:
        self.share, self.ef = share, ef

    def __enter__(self) -> None:
        share, want = self.share, self.ef
        with share._lock:
            claimed = False
            while True:
                if not share.users and share.claim in (None, want):  # nobody searching: set this ef
                    if share.ef != want:
                        share.index.set_ef(want)
                        share.ef = want
                        share._cond.notify_all()  # others waiting for this ef may now join
                    if share.claim == want:
                        share.claim = None
                    break
                if share.ef == want and share.claim is None:
                    break
                if share.claim is None:
                    share.claim, claimed = want, True
                share.waiting += 1
                try:
                    share._cond.wait()
                except BaseException:  # interrupted while waiting: leave no claim nobody will serve
                    if claimed and share.claim == want:
                        share.claim = None
                        share._cond.notify_all()
                    raise
                finally:
                    share.waiting -= 1
            share.users += 1

    def __exit__(self, *exc: object) -> None:
        share = self.share
        with share._lock:
            share.users -= 1
            if not share.users and share.waiting:
                share._cond.notify_all()


def similarity_from_distance(metric: str, distances: np.ndarray) -> np.ndarray:
    """Similarities in float64 from hnswlib's float32 distances (widened first, then converted)."""
    similar: np.ndarray  # numpy's ufuncs are typed Any; this says what they give
    if metric == "l2":
        similar = -np.sqrt(np.maximum(distances, 0.0, dtype=np.float64))
    else:
        similar = np.subtract(1.0, distances, dtype=np.float64)
    return similar


def similarities(metric: str, distances: list[float]) -> list[float]:
    """:func:`similarity_from_distance` on Python floats (hnswlib's float32 distances as ``tolist``
    gives them: the same float64 values, so the same results; tests/unit/test_vector_lists.py)."""
    if metric == "l2":
        return [-math.sqrt(d) if d > 0.0 else -0.0 for d in distances]
    return [1.0 - d for d in distances]


def _best_first(pair: tuple[float, int]) -> tuple[float, int]:
    return -pair[0], pair[1]


class VectorIndex(IndexWorker):
    kind = "vector"
    suffix = ".hnsw"

    def __init__(
        self,
        *args: Any,
        ef_search: int = DEFAULT_EF_SEARCH,
        recall_target: float = DEFAULT_RECALL_TARGET,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.metric = check_metric(self.decl.metric)
        self.ef_search = ef_search
        self.recall_target = recall_target
        self._clear()  # the hnswlib index is made by the first add, or read by a load (a one-shot search)

    def accepts(self, value: Any) -> bool:
        return isinstance(value, Vector) and value.dims == self.decl.dims

    def meta(self) -> dict[str, Any]:
        return {**super().meta(), "layout": LAYOUT}

    def built_for(self, saved: dict[str, Any]) -> bool:
        # saved before the first vector restated the declaration with its dims: an empty index (it
        # accepts no vector without dims), the same one
        return super().built_for({**saved, "dims": self.decl.dims} if saved.get("dims", 0) is None else saved)

    def reset(self) -> None:
        self._clear()
        if self.decl.dims:
            self._use_empty()

    def _use_empty(self) -> None:
        index = hnswlib.Index(space=_SPACE[self.metric], dim=self.decl.dims)
        index.init_index(max_elements=1024, ef_construction=EF_CONSTRUCTION, M=M, allow_replace_deleted=True)
        self._use(index)

    def _clear(self) -> None:
        """Empty, with no hnswlib index yet (:meth:`reset` or the first add makes an empty one; a load
        reads one)."""
        self.live: set[int] = set()
        self.deleted: set[int] = set()
        self.pending: dict[int, bytes] = {}  # node id -> its vector's bytes, upserted, not yet added
        # what was added since the index was empty, until its first calibration, which reads the
        # vectors from here rather than back from hnswlib (None: too large to keep, or measured)
        self._added: list[tuple[np.ndarray, np.ndarray]] | None = []
        self.index: hnswlib.Index | None = None
        self._ef_share: _EfShare | None = None
        self.calibration: Calibration | None = None  # None: not measured at this size yet

    def _use(self, index: hnswlib.Index) -> None:
        self.index = index
        self._ef_share = _EfShare(index, self.ef_search)

    def upsert(self, node_id: int, value: Any) -> None:
        self.pending[node_id] = value.data  # the last value wins; added at the next flush or full chunk
        if len(self.pending) >= CHUNK:
            self._add_pending()

    def _add_pending(self) -> None:
        """Add the buffered upserts: nodes the index holds in two add_items calls on every core."""
        pending, self.pending = self.pending, {}
        if pending and self.index is None and self.decl.dims:  # the first add to a new worker
            self._use_empty()
        index = self.index
        if not pending or index is None:
            return
        # A node the index holds (live, or removed with its slot intact) is updated in place; any
        # other takes a removed node's slot. (Taking one while it still held its own slot would
        # index it twice: hnswlib does not check that the label already has a slot.) Unmarking
        # first keeps those slots from the new nodes added after.
        in_place: list[int] = []
        fresh: list[int] = []
        for node_id in pending:
            if node_id in self.deleted:
                self.deleted.discard(node_id)
                try:
                    index.unmark_deleted(node_id)
                except RuntimeError:  # its slot was reused by another node: it is added afresh
                    fresh.append(node_id)
                    continue
                in_place.append(node_id)
            elif node_id in self.live:
                in_place.append(node_id)
            else:
                fresh.append(node_id)
        capacity = index.get_max_elements()
        if index.element_count + len(fresh) > capacity:
            while index.element_count + len(fresh) > capacity:
                capacity *= 2
            index.resize_index(capacity)
        for ids, replace in ((in_place, False), (fresh, True)):
            if ids:
                data = np.frombuffer(b"".join([pending[i] for i in ids]), dtype="<f4").reshape(len(ids), -1)
                labels = np.array(ids, dtype=np.int64)
                index.add_items(data, labels.view(np.uint64), num_threads=cores(), replace_deleted=replace)
                self._keep_added(labels, data)
        self.live.update(pending)

    def _keep_added(self, labels: np.ndarray, data: np.ndarray) -> None:
        if self._added is None:
            return
        if (sum(d.nbytes for _, d in self._added) + data.nbytes) > HOLD:
            self._added = None
        else:
            self._added.append((labels, data))

    def _added_vectors(self, ids: np.ndarray) -> Fetch | None:
        """A fetch over ``ids`` (ascending) from the vectors kept as they were added (the last
        added wins), or None when those are not exactly every live node's."""
        if not self._added:
            return None
        labels = np.concatenate([labels for labels, _ in self._added])
        data = np.concatenate([data for _, data in self._added])
        if not (labels[1:] > labels[:-1]).all():  # (a build adds each node once, in id order: as they are)
            last = len(labels) - 1 - np.unique(labels[::-1], return_index=True)[1]  # ascending labels, last added
            labels, data = labels[last], data[last]
        if not np.array_equal(labels, ids):
            return None

        def fetch(block: np.ndarray) -> np.ndarray:
            found: np.ndarray = data[np.searchsorted(labels, block)]
            return found

        return fetch

    def flush(self) -> None:
        """Calibrate the search breadth when the index is new, has doubled since, or the target moved."""
        self._add_pending()
        done = self.calibration
        if self.index is None or not self.live:
            return
        if done is None or len(self.live) >= 2 * done.size or done.target != self.recall_target:
            self.calibration = self._calibrate()
        self._added = None  # measured: later calibrations read the vectors back from hnswlib

    def _calibrate(self) -> Calibration:
        index = self.index
        assert index is not None

        def fetch(ids: np.ndarray) -> np.ndarray:
            found: np.ndarray = index.get_items(ids.astype(np.uint64), return_type="numpy")
            return found

        def search(queries: np.ndarray, k: int, ef: int) -> np.ndarray:
            return self._knn(queries, k, ef)[0]

        ids = np.fromiter(self.live, dtype=np.int64, count=len(self.live))
        ids.sort()
        return calibrate(
            ids, self._added_vectors(ids) or fetch, search, self.metric, target=self.recall_target, steps=EF_STEPS,
            floor=self.ef_search, k=K_CAL, sample=SAMPLE, seed=SEED,
        )  # fmt: skip

    @property
    def ef(self) -> int:
        """The search breadth every search uses (at least ef_search; the calibrated one once measured)."""
        return max(self.ef_search, self.calibration.ef if self.calibration else 0)

    def remove(self, node_id: int) -> None:
        self.pending.pop(node_id, None)
        if node_id in self.live and self.index is not None:
            self.index.mark_deleted(node_id)
            self.live.discard(node_id)
            self.deleted.add(node_id)

    def __len__(self) -> int:
        return len(self.live)

    def node_ids(self) -> set[int]:
        return set(self.live)

    def search_arrays(self, query: Vector | np.ndarray, k: int, ef: int | None = None) -> Pool:
        """The ``k`` nearest nodes as arrays (node ids, similarities), best first, ties by ascending
        node id. ``ef`` replaces the calibrated breadth (:attr:`ef`) for this search (never below ``2 k``)."""
        found = self._nearest(query, k, ef)
        if found is None:
            return np.empty(0, dtype=np.int64), np.empty(0)
        labels, distances, k = found
        ids = labels.view(np.int64)  # node ids are below 2**63
        scores = similarity_from_distance(self.metric, distances)
        if len(scores) <= _FEW:
            ranked = scores.tolist()
            ordered = all(map(operator.gt, ranked, ranked[1:]))
        else:
            ordered = bool((scores[:-1] > scores[1:]).all())
        if not ordered:  # hnswlib orders by distance; break ties by id
            order = np.lexsort((ids, -scores))
            ids, scores = ids[order], scores[order]
        return ids[:k], scores[:k]

    def search_lists(self, query: Vector, k: int) -> tuple[list[int], list[float]]:
        """:meth:`search_arrays`' answer as lists, for a search's few hits: the same ids and scores,
        computed on Python floats (at a dozen numbers numpy's per-call cost was ~10 µs of a top-10)."""
        found = self._nearest(query, k, None)
        if found is None:
            return [], []
        labels, distances, k = found
        ids: list[int] = labels.tolist()
        scores = similarities(self.metric, distances.tolist())
        if not all(map(operator.gt, scores, scores[1:])):  # hnswlib orders by distance; break ties by id
            ranked = sorted(zip(scores, ids, strict=True), key=_best_first)
            scores, ids = [score for score, _ in ranked], [node for _, node in ranked]
        return ids[:k], scores[:k]

    def _nearest(self, query: Vector | np.ndarray, k: int, ef: int | None) -> tuple[np.ndarray, np.ndarray, int] | None:
        """hnswlib's nearest (labels, distances) past the ``k``-th and any tie with it, and ``k``
        (at most the live nodes); None when there is nothing to search."""
        live = len(self.live)
        if self.index is None or not live or k <= 0:
            return None
        q = query if isinstance(query, np.ndarray) else np.frombuffer(query.data, dtype="<f4")
        dims = self.index.dim
        if q.shape[-1] != dims:
            raise BadValue(
                f"the query vector has {q.shape[-1]} dims; the index on {self.decl.label}.{self.decl.prop} "
                f"holds {dims}-dim vectors"
            )
        k = min(k, live)
        q = q.reshape(1, -1) if q.dtype == np.float32 else q.reshape(1, -1).astype(np.float32)
        ef = max(ef or self.ef, 2 * k)
        # hnswlib cuts ties at the k-th hit arbitrarily: one hit more shows whether nodes tied with
        # the k-th lie past the cut, and the search goes on through the tie (duplicate vectors,
        # rare), so the cut keeps the lowest node ids. (A dozen numbers compare as Python floats at
        # a fraction of numpy's per-call cost.)
        fetch = min(k + 1, live)
        while True:
            labels, distances = self._knn(q, fetch, ef)
            listed = distances[0].tolist()
            if fetch == live or listed[-1] > listed[k - 1]:
                break
            fetch = min(2 * fetch, live)
        return labels[0], distances[0], k

    def _knn(self, q: np.ndarray, count: int, ef: int) -> tuple[np.ndarray, np.ndarray]:
        """hnswlib's ``count`` nearest (labels, distances), searched at ``ef``."""
        index, share = self.index, self._ef_share
        assert index is not None and share is not None  # made together
        found: tuple[np.ndarray, np.ndarray]  # hnswlib is untyped
        try:
            with share.at(ef):
                found = index.knn_query(q, k=count)
        except RuntimeError:  # too few reachable live elements for count: search them all
            try:
                with share.at(max(len(self.live), ef)):
                    found = index.knn_query(q, k=count)
            except RuntimeError:  # deletions and slot reuse left live elements the graph cannot reach
                found = self._exact(q, count)
        return found

    def _exact(self, q: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
        """Every live node's distance to each query: its similarity as the exact search measures it
        (workers/exact.py), stated as hnswlib states distances; the ``count`` nearest, ties by
        ascending id."""
        index = self.index
        assert index is not None
        labels = np.fromiter(self.live, dtype=np.uint64, count=len(self.live))
        labels.sort()
        data = np.asarray(index.get_items(labels, return_type="numpy"), dtype=np.float32)
        similar = np.stack([exact.similarities(self.metric, data, row) for row in q.reshape(-1, data.shape[1])])
        distances = np.square(similar) if self.metric == "l2" else 1.0 - similar  # similarity_from_distance's inverse
        nearest = np.argsort(distances, axis=1, kind="stable")[:, :count]  # stable: labels ascend
        return labels[nearest], np.take_along_axis(distances, nearest, axis=1).astype(np.float32)

    # ------------------------------------------------------------------ persistence

    def write_files(self, folder: Path) -> None:
        state: dict[str, Any] = {"live": sorted(self.live), "deleted": sorted(self.deleted), "metric": self.metric}
        if self.index is not None:
            self.index.save_index(str(folder / "index.hnsw"))
            state["capacity"] = self.index.get_max_elements()
        if self.calibration is not None:
            state["calibration"] = self.calibration.to_json()
        (folder / "state.msgpack").write_bytes(msgpack.packb(state))

    def read_files(self, folder: Path) -> None:
        state = msgpack.unpackb((folder / "state.msgpack").read_bytes())
        if not ((folder / "index.hnsw").exists() and self.decl.dims):
            self.reset()
        else:  # (not an empty index first: a one-shot search loads one, ~1.5 ms to make)
            self._clear()
            index = hnswlib.Index(space=_SPACE[self.metric], dim=self.decl.dims)
            index.load_index(
                str(folder / "index.hnsw"), max_elements=int(state["capacity"]), allow_replace_deleted=True
            )
            self._use(index)
        self.live = set(state["live"])
        self.deleted = set(state["deleted"])
        self.calibration = Calibration.from_json(state.get("calibration"))
        self.flush()  # a sidecar from before calibration, or for another target, is measured now
