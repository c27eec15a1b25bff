"""The IndexWorker port's contract (workers/base.py), held by every backend.

``IndexWorkerContract`` is the abstract suite; it runs against the vector index (hnswlib) on real
GloVe word vectors and the keyword index (tantivy) on real sentences of the Dr Strange manual and
the dbgraph README. Each test writes one real history to a real database — nodes created in several
commits, updated, deleted, relabelled away and back, given a value the index does not take, twins
with one value, nodes of another label — and checks the worker against what the log says.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache, partial
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

import drsg
from drsg.kernel.values import Vector
from drsg.store.database import Database
from drsg.store.records import IndexDecl
from drsg.store.transaction import WriteTx
from drsg.workers.analysis import analyze
from drsg.workers.base import IndexWorker, pairs
from drsg.workers.keyword import KeywordIndex
from drsg.workers.vector import VectorIndex
from tests.support.glove import rows

DATA = Path(__file__).resolve().parents[1] / "data"
LABEL, PROP = "Doc", "body"


@dataclass
class History:
    """What the log says the index must hold at its head."""

    decl: IndexDecl
    live: dict[int, Any]  # node id -> the value the index holds for it
    gone: set[int]  # nodes indexed once, not any more (deleted, relabelled, property removed or refused)
    dormant: list[int]  # gone nodes that still exist, so they can be indexed again
    twins: list[int]  # five live nodes sharing one value, ascending
    head: int


class IndexWorkerContract(ABC):
    """What every IndexWorker does; a subclass names its backend and supplies real values."""

    kind: ClassVar[str]
    options: ClassVar[dict[str, Any]]
    #: how close the scores of two indexes built differently from one log must be
    rtol: ClassVar[float] = 1e-6

    @abstractmethod
    def pool(self) -> list[Any]:
        """At least 110 distinct real values the index takes, each findable by :meth:`query`."""

    @abstractmethod
    def worker(self, decl: IndexDecl, db: Database) -> IndexWorker:
        """A fresh worker for ``decl`` over ``db``."""

    @abstractmethod
    def query(self, value: Any) -> Any:
        """A query whose best hits are exactly the nodes holding ``value``."""

    @abstractmethod
    def refused(self) -> Any:
        """A property value the index does not take (the node is then not indexed)."""

    # ------------------------------------------------------------------ the history every test uses

    @pytest.fixture
    def db(self, tmp_path: Path) -> Iterator[Database]:
        database = drsg.open(tmp_path / "g.drsg")
        yield database
        database.close()

    @pytest.fixture
    def history(self, db: Database) -> History:
        values = self.pool()

        def declare(tx: WriteTx) -> IndexDecl:
            return tx.declare_index(tx.plane("startup"), self.kind, LABEL, PROP, self.options)

        decl = db.write(declare).value
        ids: list[int] = []
        for start in range(0, 80, 20):  # several commits
            ids += db.write(partial(self._create, values=values[start : start + 20])).value
        db.write(lambda tx: self._create(tx, values[80:85], label="Other"))  # another label: never indexed

        def edit(tx: WriteTx) -> None:
            plane = tx.plane("startup")
            for node_id, value in zip(ids[:10], values[85:95], strict=True):
                tx.update_node(plane, node_id, {PROP: value})
            for node_id in ids[10:20]:
                tx.delete_node(plane, node_id)
            tx.update_node(plane, ids[20], labels=["Other"])
            tx.update_node(plane, ids[21], unset=[PROP])
            tx.update_node(plane, ids[22], {PROP: self.refused()})

        db.write(edit)
        db.write(lambda tx: tx.update_node(tx.plane("startup"), ids[20], labels=[LABEL]))  # back again
        fresh = db.write(lambda tx: self._create(tx, values[95:105])).value  # after removals: slots reused
        twins = db.write(lambda tx: self._create(tx, [values[105]] * 5)).value
        live = {node_id: values[i] for i, node_id in enumerate(ids)}
        live.update({node_id: values[85 + i] for i, node_id in enumerate(ids[:10])})
        gone = set(ids[10:20]) | {ids[21], ids[22]}
        for node_id in gone:
            del live[node_id]
        live.update({node_id: values[95 + i] for i, node_id in enumerate(fresh)})
        live.update({node_id: values[105] for node_id in twins})
        return History(decl, live, gone, [ids[21], ids[22]], sorted(twins), db.head())

    @staticmethod
    def _create(tx: WriteTx, values: list[Any], label: str = LABEL) -> list[int]:
        plane = tx.plane("startup")
        return [tx.create_node(plane, None, [label], {PROP: value}).id for value in values]

    def caught_up(self, worker: IndexWorker, db: Database, upto: int | None = None) -> IndexWorker:
        """Apply every commit after the worker's checkpoint (up to ``upto``) and flush each, as an
        IndexSet does when it catches up commit by commit (the most flushes a history can have)."""
        for commit in db.commits(worker.seq + 1, upto if upto is not None else db.head()):
            worker.apply(commit.seq, commit.mutations)
            worker.flush()
        return worker

    def results(self, worker: IndexWorker, k: int = 10) -> list[list[tuple[int, float]]]:
        return [worker.search(self.query(value), k) for value in self.pool()[::3]]

    def assert_same(self, a: IndexWorker, b: IndexWorker, exact: bool = False) -> None:
        assert a.node_ids() == b.node_ids() and len(a) == len(b)
        for ours, theirs in zip(self.results(a), self.results(b), strict=True):
            assert [node for node, _ in ours] == [node for node, _ in theirs]
            scores, others = np.array([s for _, s in ours]), np.array([s for _, s in theirs])
            assert np.array_equal(scores, others) if exact else np.allclose(scores, others, rtol=self.rtol, atol=0)

    # ------------------------------------------------------------------ the contract

    def test_an_empty_index_finds_nothing(self, db: Database) -> None:
        decl = db.write(lambda tx: tx.declare_index(tx.plane("startup"), self.kind, LABEL, PROP, self.options)).value
        worker = self.caught_up(self.worker(decl, db), db)
        assert len(worker) == 0 and worker.node_ids() == set() and bool(worker)
        ids, scores = worker.search_arrays(self.query(self.pool()[0]), 10)
        assert ids.dtype == np.int64 and scores.dtype == np.float64 and len(ids) == len(scores) == 0
        worker.save()
        loaded = self.worker(decl, db)
        assert loaded.load(db.head()) and len(loaded) == 0 and loaded.search(self.query(self.pool()[0]), 10) == []

    def test_applying_the_log_indexes_exactly_the_live_nodes(self, db: Database, history: History) -> None:
        worker = self.caught_up(self.worker(history.decl, db), db)
        assert worker.node_ids() == set(history.live) and len(worker) == len(history.live)
        assert worker.seq == history.head and worker.dirty
        for node_id, value in history.live.items():  # updated values included
            ids = worker.search_arrays(self.query(value), len(history.live))[0].tolist()
            assert node_id in ids[: len(history.twins) if node_id in history.twins else 1]
            assert len(set(ids)) == len(ids) and set(ids) <= worker.node_ids()

    def test_applying_a_commit_twice_is_harmless(self, db: Database, history: History) -> None:
        once = self.caught_up(self.worker(history.decl, db), db)
        twice = self.caught_up(self.worker(history.decl, db), db)
        self.caught_up(twice, db)  # nothing after the checkpoint: nothing applied
        twice.seq = 0  # a checkpoint older than the data (a crash between the two): every commit again
        self.caught_up(twice, db)
        self.assert_same(once, twice)

    def test_a_removed_node_is_never_found(self, db: Database, history: History) -> None:
        worker = self.caught_up(self.worker(history.decl, db), db)
        everything = len(self.pool())
        assert not history.gone & worker.node_ids()
        for value in self.pool()[10:23]:  # the values the gone nodes held
            assert not history.gone & {node for node, _ in worker.search(self.query(value), everything)}
        node_id, value = next(iter(history.live.items()))
        before = worker.node_ids()
        worker.remove(10**9)  # never indexed: nothing happens
        worker.remove(node_id)
        worker.remove(node_id)
        worker.flush()
        assert worker.node_ids() == before - {node_id}
        assert node_id not in {node for node, _ in worker.search(self.query(value), everything)}
        worker.upsert(node_id, value)  # and back: found again
        worker.flush()
        assert worker.node_ids() == before and worker.search(self.query(value), 1)[0][0] == node_id

    def test_rebuilding_from_a_snapshot_equals_applying_the_log(self, db: Database, history: History) -> None:
        incremental = self.caught_up(self.worker(history.decl, db), db)
        rebuilt = self.worker(history.decl, db)
        with db.snapshot() as snap:
            rebuilt.rebuild(snap)
        assert rebuilt.seq == history.head
        self.assert_same(incremental, rebuilt)
        earlier = history.head - 3  # as of an earlier commit: the same state the log gives up to it
        then = self.caught_up(self.worker(history.decl, db), db, upto=earlier)
        with db.snapshot(earlier) as snap:
            rebuilt.rebuild(snap)
        assert rebuilt.seq == then.seq == earlier
        self.assert_same(then, rebuilt)

    def test_save_then_load_is_identical(self, db: Database, history: History) -> None:
        saved = self.caught_up(self.worker(history.decl, db), db)
        saved.save()
        assert not saved.dirty
        loaded = self.worker(history.decl, db)
        assert loaded.load(db.head()) and loaded.seq == saved.seq and not loaded.dirty
        self.assert_same(saved, loaded, exact=True)

        def carry_on(tx: WriteTx) -> None:  # new nodes, and removed ones back (their slots may be vacant)
            self._create(tx, self.pool()[106:108])
            for node_id, value in zip(history.dormant, self.pool()[108:110], strict=True):
                tx.update_node(tx.plane("startup"), node_id, {PROP: value})

        db.write(carry_on)
        self.assert_same(self.caught_up(saved, db), self.caught_up(loaded, db), exact=True)
        assert set(history.dormant) <= loaded.node_ids()

    def test_a_damaged_sidecar_is_refused_and_rebuilt(self, db: Database, history: History) -> None:
        saved = self.caught_up(self.worker(history.decl, db), db)
        saved.save()
        current = saved.sidecar.dir / "CURRENT"
        files = [current, *sorted((saved.sidecar.dir / current.read_text().strip()).iterdir())]
        assert len(files) >= 3  # CURRENT, the manifest and at least one file of the index
        for path in files:
            original = path.read_bytes()
            damaged = bytearray(original)
            damaged[len(damaged) // 2] ^= 0x10
            path.write_bytes(bytes(damaged))
            worker = self.worker(history.decl, db)
            assert not worker.load(db.head()), f"a flipped bit in {path.name} was trusted"
            with db.snapshot() as snap:
                worker.rebuild(snap)
            self.assert_same(saved, worker)
            path.write_bytes(original)
            assert self.worker(history.decl, db).load(db.head())  # the flip, nothing else, was refused
        assert not self.worker(history.decl, db).load(saved.seq - 1)  # a checkpoint ahead of the log

    def test_search_arrays_ranks_best_first_with_the_right_types(self, db: Database, history: History) -> None:
        worker = self.caught_up(self.worker(history.decl, db), db)
        for node_id, value in list(history.live.items())[::5]:
            if node_id in history.twins:
                continue  # the best of three equals: the next test
            query = self.query(value)
            ids, scores = worker.search_arrays(query, 10)
            assert ids.dtype == np.int64 and scores.dtype == np.float64 and ids.ndim == scores.ndim == 1
            assert 0 < len(ids) == len(scores) <= 10 and len(set(ids.tolist())) == len(ids)
            assert set(ids.tolist()) <= worker.node_ids() and np.isfinite(scores).all()
            assert (scores[:-1] >= scores[1:]).all() and ids[0] == node_id
            assert worker.search(query, 10) == pairs((ids, scores))
            longer = worker.search(query, 40)
            for k in (1, 3, 10):  # the best k are the first k of a longer list
                assert worker.search(query, k) == longer[:k]
        query = self.query(self.pool()[0])
        assert len(worker.search_arrays(query, 0)[0]) == 0
        assert len(worker.search_arrays(query, 10**6)[0]) <= len(worker)

    def test_equal_scores_are_ordered_by_node_id(self, db: Database, history: History) -> None:
        worker = self.caught_up(self.worker(history.decl, db), db)
        query = self.query(self.pool()[105])
        for k in (1, 2, 3, 4, 5, 10):  # ties inside the best k, and across the cut
            top = worker.search(query, k)
            assert [node for node, _ in top[:5]] == history.twins[:k]
            assert len({score for _, score in top[:5]}) == 1

    def test_dropping_the_index_empties_it(self, db: Database, history: History) -> None:
        worker = self.caught_up(self.worker(history.decl, db), db)
        db.write(lambda tx: tx.drop_index(tx.plane("startup"), self.kind, LABEL, PROP))
        self.caught_up(worker, db)
        assert len(worker) == 0 and worker.node_ids() == set()
        assert worker.search(self.query(self.pool()[0]), 10) == []


# --------------------------------------------------------------------------- the backends


@cache
def glove_vectors() -> list[Vector]:
    distinct = {row.tobytes(): Vector.of(row) for row in rows(3000, 140)}  # the data repeats a few vectors
    return list(distinct.values())[:110]


class TestVectorIndex(IndexWorkerContract):
    kind = "vector"
    options: ClassVar[dict[str, Any]] = {"metric": "cosine", "dims": 50}

    def pool(self) -> list[Any]:
        return list(glove_vectors())

    def worker(self, decl: IndexDecl, db: Database) -> IndexWorker:
        # ef above the node count: the HNSW search is exact, so two indexes can be compared by results
        return VectorIndex(decl, db.path, db.uuid, ef_search=256)

    def query(self, value: Any) -> Any:
        return value

    def refused(self) -> Any:
        return "a string, not a vector"


@cache
def sentences() -> tuple[list[str], dict[str, str]]:
    """Real sentences, each with a word whose terms no other sentence has (its query)."""
    text = (DATA / "ai_native_en.txt").read_text() + "\n" + (DATA / "dbgraph_readme.txt").read_text()
    found = [" ".join(s.split()) for s in re.split(r"(?<=[.!?:])\s+|\n\s*\n", text)]
    distinct = list(dict.fromkeys(s for s in found if len(s.split()) >= 5))
    frequency = Counter(term for s in distinct for term in set(analyze(s, "english")))
    query: dict[str, str] = {}
    for s in distinct:
        own = [w for w in s.split() if (terms := analyze(w, "english")) and all(frequency[t] == 1 for t in terms)]
        if own:
            query[s] = own[0]
    chosen = list(query)[:110]
    return chosen, {s: query[s] for s in chosen}


class TestKeywordIndex(IndexWorkerContract):
    kind = "keyword"
    options: ClassVar[dict[str, Any]] = {"language": "english"}
    rtol = 1e-5  # BM25 sums in float32

    def pool(self) -> list[Any]:
        return list(sentences()[0])

    def worker(self, decl: IndexDecl, db: Database) -> IndexWorker:
        return KeywordIndex(decl, db.path, db.uuid)

    def query(self, value: Any) -> Any:
        return sentences()[1][value]

    def refused(self) -> Any:
        return 42
