"""The shape every index worker has: a consumer of the log with its own checkpoint.

A worker owns one declared index (plane, label, property). It applies the mutations of each commit
after its checkpoint; applying a commit twice is harmless (every change is an upsert or a delete by
node id). ``save`` persists data and checkpoint together (see sidecar.py); ``load`` trusts only a
verified sidecar; anything else is rebuilt from the projection, itself a pure function of the log.
"""

from __future__ import annotations

import os
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, TypeAlias

import structlog

from drsg.store.mutations import IndexDrop, Mutation, NodeDelete, NodePut, PlaneDrop
from drsg.store.records import IndexDecl, Node
from drsg.store.snapshot import Snapshot
from drsg.workers.sidecar import Loaded, Sidecar, SidecarInvalid, safe_name

if TYPE_CHECKING:  # numpy loads with the first search, not with every reader of this port (a Cypher MATCH)
    import numpy as np
    from numpy.typing import NDArray

log = structlog.get_logger("drsg.workers")
#: documents a large apply or rebuild handles between two offers of the GIL (~1-3 ms of Python)
SLICE = 256
#: the recall@10 a vector index widens its search breadth to reach, unless [index] recall_target says
#: otherwise (here, not in vector.py, so the index set's default loads no numpy or hnswlib)
DEFAULT_RECALL_TARGET = 0.95


#: Ranked candidates as arrays: node ids best first, and their scores (what the searches return).
Pool: TypeAlias = "tuple[NDArray[np.int64], NDArray[np.float64]]"


def pairs(pool: Pool) -> list[tuple[int, float]]:
    """A pool as ``(node id, score)`` pairs, best first."""
    ids, scores = pool
    return list(zip(ids.tolist(), scores.tolist(), strict=True))


def pool_of(ranked: list[tuple[int, float]]) -> Pool:
    """``(node id, score)`` pairs, best first, as a pool (the inverse of :func:`pairs`)."""
    import numpy as np  # loaded by the search that made ``ranked``: a dictionary look-up here

    # lists, not np.fromiter over generators: for the few pairs of a search, 1.7 µs against 2.8
    ids = np.array([node for node, _ in ranked], dtype=np.int64)
    return ids, np.array([score for _, score in ranked], dtype=np.float64)


class IndexWorker(ABC):
    """Keeps one index in step with the log; ``tests/contract/test_index_worker_contract.py`` holds
    what every backend must do."""

    kind: ClassVar[str]  # "vector" or "keyword"
    suffix: ClassVar[str]  # sidecar root beside the database: ".hnsw" or ".bm25"

    def __init__(self, decl: IndexDecl, db_path: str | os.PathLike[str], db_uuid: str) -> None:
        self.decl = decl
        self.seq = 0  # every commit <= seq has been applied
        self.dirty = False  # applied commits not yet saved
        self.sidecar = Sidecar(self.sidecar_root(db_path), safe_name(decl.plane, decl.label, decl.prop), db_uuid)

    @classmethod
    def sidecar_root(cls, db_path: str | os.PathLike[str]) -> Path:
        """The folder this kind's sidecars are saved in, for sidecars kept at ``db_path``."""
        return Path(f"{db_path}{cls.suffix}")

    # ------------------------------------------------------------------ what a backend implements

    @abstractmethod
    def reset(self) -> None:
        """Empty the index (in memory)."""

    @abstractmethod
    def upsert(self, node_id: int, value: Any) -> None:
        """Index ``value`` for a node (replacing what the node had)."""

    @abstractmethod
    def remove(self, node_id: int) -> None:
        """Forget a node; a no-op if it is not indexed."""

    @abstractmethod
    def search_arrays(self, query: Any, k: int) -> Pool:
        """The ``k`` best nodes for ``query`` (a vector, or text) as arrays: int64 node ids and
        float64 scores, higher is better, best first, equal scores by ascending node id."""

    @abstractmethod
    def node_ids(self) -> set[int]:
        """The nodes a search can return now (applied and flushed)."""

    @abstractmethod
    def __len__(self) -> int:
        """How many nodes a search can return now."""

    @abstractmethod
    def write_files(self, folder: Path) -> None:
        """Write the index's files into a fresh folder."""

    @abstractmethod
    def read_files(self, folder: Path) -> None:
        """Load the index from verified files."""

    def flush(self) -> None:  # noqa: B027 - optional hook
        """Make applied changes searchable (backends that buffer writes override this)."""

    # ------------------------------------------------------------------ shared behaviour

    def search(self, query: Any, k: int) -> list[tuple[int, float]]:
        """As :meth:`search_arrays`, as ``(node id, score)`` pairs."""
        return pairs(self.search_arrays(query, k))

    def __bool__(self) -> bool:
        return True  # an empty index is still an index (``if worker:`` must not mean "has documents")

    def accepts(self, value: Any) -> bool:
        """Whether a property value belongs in this index."""
        return value is not None

    def meta(self) -> dict[str, Any]:
        """What the sidecar is built for: what the index is (its declaration's options and the
        commit that began it), not when its declaration was last restated."""
        return {"kind": self.kind, **self.decl.to_json(), "plane": self.decl.plane, "born": self.decl.born}

    def built_for(self, saved: dict[str, Any]) -> bool:
        """Whether a sidecar saved for ``saved`` (its manifest's meta) is one of this index."""
        return saved == self.meta()

    def apply(self, seq: int, mutations: Iterable[Mutation]) -> None:
        """Apply one commit; idempotent, so replaying after a crash is harmless."""
        if seq <= self.seq:
            return
        plane = self.decl.plane
        for n, m in enumerate(mutations, 1):
            if not n % SLICE:
                time.sleep(0)  # a waiting thread (the server's event loop) gets the GIL now, not in 5 ms
            if isinstance(m, NodePut) and m.plane == plane:
                self._node(m.id, m.labels, m.props)
            elif isinstance(m, NodeDelete) and m.plane == plane:
                self.remove(m.id)
            elif (isinstance(m, PlaneDrop) and m.plane == plane) or self._is_my_drop(m):
                self.reset()
        self.seq = seq
        self.dirty = True

    def _is_my_drop(self, m: Mutation) -> bool:
        if not isinstance(m, IndexDrop):
            return False
        return (m.plane, m.kind, m.label, m.property) == (self.decl.plane, self.kind, self.decl.label, self.decl.prop)

    def _node(self, node_id: int, labels: list[str], props: dict[str, Any]) -> None:
        value = props.get(self.decl.prop)
        if self.decl.label in labels and self.accepts(value):
            self.upsert(node_id, value)
        else:
            self.remove(node_id)

    def rebuild(self, snap: Snapshot) -> None:
        """Build from the projection at ``snap.at`` (the same state a full log replay gives)."""
        self.reset()
        for n, node in enumerate(snap.nodes(self.decl.plane, self.decl.label), 1):
            self._load_node(node)
            if not n % SLICE:
                time.sleep(0)  # as in apply: offer the GIL between slices
        self.flush()
        self.seq = snap.at
        self.dirty = True
        self.sidecar.in_force_seq, self.sidecar.lineage = 0, []  # a state from the projection: a new lineage

    def _load_node(self, node: Node) -> None:
        value = node.props.get(self.decl.prop)
        if self.accepts(value):
            self.upsert(node.id, value)

    def save(self, *, fenced: bool = False) -> None:
        """Save data and checkpoint together; ``fenced``: see :meth:`Sidecar.save`."""
        self.flush()
        self.sidecar.save(self.seq, self.meta(), self.write_files, fenced=fenced)
        self.dirty = False

    def load(self, head: int, reach: Callable[[int], bool] | None = None) -> bool:
        """Load a verified sidecar no newer than ``head``, or newer if ``reach(seq)`` says the log has
        got there since (another process saved it from a copy a little ahead of this one's: waiting
        for this copy beats rebuilding from nothing); False (with a warning) means rebuild."""
        try:

            def read(loaded: Loaded) -> None:
                if loaded.seq > head and (reach is None or not reach(loaded.seq)):
                    raise SidecarInvalid(f"its checkpoint {loaded.seq} is ahead of the log head {head}")
                self.read_files(loaded.folder)

            loaded = self.sidecar.load(self.built_for, read)
        except SidecarInvalid as exc:
            if self.sidecar.dir.exists():
                log.warning("sidecar rejected; rebuilding from the log", index=self.describe(), reason=str(exc))
            return False
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:  # a verified file the library still refuses (pyo3 panics included)
            log.warning("sidecar unreadable; rebuilding from the log", index=self.describe(), reason=repr(exc))
            self.reset()
            return False
        self.seq = loaded.seq
        self.dirty = False
        return True

    def describe(self) -> str:
        return f"{self.kind} index on {self.decl.label}.{self.decl.prop} (plane {self.decl.plane})"
