"""Hybrid retrieval: vector, keyword and graph channels over one snapshot, fused into one ranking.

Upstream's algorithm (``compute/hybrid.rs``), with one deliberate fix:

1. Channels each fetch ``candidates`` hits (default 100): vector similarity over ``label``'s nodes
   (raw score reported as a *distance*, as upstream: cosine ``1 − cos``, dot ``−dot``, l2 the
   Euclidean distance — lower is better), BM25 over a keyword index (needs a label; no declared
   index ⇒ an empty channel, as upstream), and the graph channel: seeds = the top ``seeds``
   (default 10) vector hits then keyword hits, deduplicated; a multi-source BFS over undirected
   edges of every type, with no label filter, up to ``hops``; raw score ``decay^hops`` (seed 1.0).
2. Normalisation per channel, fusion and order: see :mod:`drsg.workers.fusion` (min-max weighted
   sum by default, weights vector 1 / keyword 1 / graph 0.5; score desc, node id asc; top ``k``).

The fix: the graph channel is normalised by its theoretical range [0, 1] (``graph_norm="range"``,
the default), not min-max. Raw ``decay^h`` already lies in [0, 1]; min-max over {1, decay} (one
hop) would score every one-hop neighbour 0, so the graph channel could never lift a neighbour.
With the range, a one-hop neighbour scores ``decay``, a two-hop one ``decay²``. Upstream's
behaviour stays available as ``graph_norm="minmax"``.

Everything reads one snapshot, so ``AS OF`` runs every channel on that commit.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import structlog
from numpy.typing import NDArray

from drsg.kernel.asof import AsOf
from drsg.kernel.errors import NotFound, UsageError
from drsg.kernel.values import Vector
from drsg.store.snapshot import Snapshot
from drsg.workers.base import Pool
from drsg.workers.fusion import DEFAULT_RRF_K, FUSIONS, Channel, Ranking, explain_line
from drsg.workers.search import Hit, Searcher
from drsg.workers.vector import check_metric

log = structlog.get_logger("drsg.hybrid")

DEFAULT_CANDIDATES = 100
DEFAULT_K = 10
DEFAULT_SEEDS = 10
DEFAULT_DECAY = 0.5
DEFAULT_WEIGHTS = {"vector": 1.0, "keyword": 1.0, "graph": 0.5}
GRAPH_NORMS = ("range", "minmax")
CHANNELS = ("vector", "keyword", "graph")
_METRIC_TO_PLAN = {"cosine": "Cosine", "dot": "Dot", "l2": "L2"}

TextEmbedder = Callable[[str], Vector]


@dataclass(frozen=True)
class VectorPart:
    prop: str
    query: Vector | str  # a string is embedded by the caller's embedder
    metric: str = "cosine"


@dataclass(frozen=True)
class KeywordPart:
    prop: str
    text: str


@dataclass(frozen=True)
class GraphPart:
    hops: int
    decay: float = DEFAULT_DECAY
    seeds: int = DEFAULT_SEEDS


@dataclass(frozen=True)
class HybridSpec:
    """One hybrid query; ``Hybrid`` plan-source JSON in and out (upstream's shape, plus
    ``fusion``, ``rrf_k`` and ``graph_norm``, and ``query_text`` for a text vector query)."""

    label: str | None = None
    vector: VectorPart | None = None
    keyword: KeywordPart | None = None
    graph: GraphPart | None = None
    weights: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_WEIGHTS))
    candidates: int = DEFAULT_CANDIDATES
    k: int = DEFAULT_K
    fusion: str = "minmax"
    rrf_k: int = DEFAULT_RRF_K
    graph_norm: str = "range"

    def check(self) -> HybridSpec:
        """Raise a one-line UsageError for a query that cannot run."""
        if self.vector is None and self.keyword is None:
            raise UsageError("hybrid needs a vector or a keyword channel: name --vector PROP and/or --keyword PROP")
        if self.keyword is not None and not self.label:
            raise UsageError("the keyword channel needs a label (--label L): a BM25 index is declared per label")
        if self.vector is not None:
            check_metric(self.vector.metric)
        if self.graph is not None:
            if self.graph.hops < 0:
                raise UsageError("graph hops must be ≥ 0")
            if not 0.0 <= self.graph.decay <= 1.0:
                raise UsageError(f"graph decay must be in [0, 1], not {self.graph.decay}")
            if self.graph.seeds < 1:
                raise UsageError("graph seeds must be ≥ 1")
        if self.candidates < 1:
            raise UsageError("candidates must be ≥ 1")
        if self.k < 0:
            raise UsageError("k must be ≥ 0")
        if self.fusion not in FUSIONS:
            raise UsageError(f"unknown fusion {self.fusion!r}; use one of {', '.join(FUSIONS)}")
        if self.graph_norm not in GRAPH_NORMS:
            raise UsageError(f"unknown graph normalisation {self.graph_norm!r}; use range or minmax")
        if self.rrf_k < 0:
            raise UsageError("rrf k must be ≥ 0")
        for name in CHANNELS:
            w = self.weights.get(name, DEFAULT_WEIGHTS[name])
            if not isinstance(w, (int, float)) or w != w or w in (float("inf"), float("-inf")):
                raise UsageError(f"the {name} weight must be a finite number")
        return self

    def weight(self, name: str) -> float:
        return float(self.weights.get(name, DEFAULT_WEIGHTS[name]))

    def to_plan_json(self) -> dict[str, Any]:
        vector: dict[str, Any] | None = None
        if self.vector is not None:
            vector = {"property": self.vector.prop, "metric": _METRIC_TO_PLAN[check_metric(self.vector.metric)]}
            if isinstance(self.vector.query, Vector):
                vector["query"] = self.vector.query.tolist()
            else:
                vector["query_text"] = self.vector.query
        body: dict[str, Any] = {
            "label": self.label,
            "vector": vector,
            "keyword": None if self.keyword is None else {"property": self.keyword.prop, "query": self.keyword.text},
            "graph": None
            if self.graph is None
            else {"hops": self.graph.hops, "decay": self.graph.decay, "seeds": self.graph.seeds},
            "weights": {name: self.weight(name) for name in CHANNELS},
            "candidates": self.candidates,
            "k": self.k,
        }
        if self.fusion != "minmax":
            body["fusion"] = self.fusion
            if self.fusion == "rrf":
                body["rrf_k"] = self.rrf_k
        if self.graph_norm != "range":
            body["graph_norm"] = self.graph_norm
        return {"Hybrid": body}

    @classmethod
    def from_plan_json(cls, body: dict[str, Any]) -> HybridSpec:
        """Read a ``Hybrid`` source body (the value under ``"Hybrid"``)."""
        if not isinstance(body, dict):
            raise UsageError("a Hybrid source is an object with vector, keyword, graph, weights, candidates, k")
        try:
            v, kw, g = body.get("vector"), body.get("keyword"), body.get("graph")
            vector = None
            if v is not None:
                if "query" in v:
                    query: Vector | str = Vector.of(v["query"])
                elif "query_text" in v:
                    query = str(v["query_text"])
                else:
                    raise UsageError('the Hybrid vector channel needs "query" (numbers) or "query_text"')
                vector = VectorPart(str(v.get("property", "embedding")), query, str(v.get("metric", "Cosine")).lower())
            keyword = None if kw is None else KeywordPart(str(kw["property"]), str(kw["query"]))
            graph = None
            if g is not None:
                graph = GraphPart(
                    int(g["hops"]), float(g.get("decay", DEFAULT_DECAY)), int(g.get("seeds", DEFAULT_SEEDS))
                )
            weights = dict(DEFAULT_WEIGHTS)
            weights.update({str(n): float(w) for n, w in (body.get("weights") or {}).items()})
            spec = cls(
                label=body.get("label"),
                vector=vector,
                keyword=keyword,
                graph=graph,
                weights=weights,
                candidates=int(body.get("candidates", DEFAULT_CANDIDATES)),
                k=int(body.get("k", DEFAULT_K)),
                fusion=str(body.get("fusion", "minmax")),
                rrf_k=int(body.get("rrf_k", DEFAULT_RRF_K)),
                graph_norm=str(body.get("graph_norm", "range")),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise UsageError(f"bad Hybrid source ({exc.__class__.__name__}: {exc})") from None
        return spec.check()


@dataclass(slots=True)
class HybridHit(Hit):
    """A fused hit: ``score`` is the fused score; ``channels`` the raw score per channel (vector
    distance, BM25, decay^hops; None when the channel did not see the node), ``normalised`` the
    per-channel normalised score (or RRF share) that was weighted, ``explanation`` one line
    (formatted when read, with the ``ranking``'s channels and weights)."""

    channels: dict[str, float | None] = field(default_factory=dict)
    normalised: dict[str, float | None] = field(default_factory=dict)
    ranking: Ranking | None = field(default=None, repr=False, compare=False)

    @property
    def explanation(self) -> str:
        score = 0.0 if self.score is None else self.score
        return "" if self.ranking is None else explain_line(score, self.normalised, self.ranking.legend)

    def to_json(self, vectors: bool | str = "lean") -> dict[str, Any]:
        out = Hit.to_json(self, vectors)  # no bare super() in a slots dataclass (its class is rebuilt)
        out["channels"] = dict(self.channels)
        out["normalised"] = dict(self.normalised)
        return out


def distance_from_similarity(metric: str, similarity: float) -> float:
    """Upstream reports the vector channel as a distance: cosine 1 − cos, dot −dot, l2 ‖a − b‖."""
    return 1.0 - similarity if metric == "cosine" else -similarity


def distances_from_similarities(metric: str, similarities: NDArray[np.float64]) -> NDArray[np.float64]:
    """:func:`distance_from_similarity` over an array (the same float operation per element)."""
    return 1.0 - similarities if metric == "cosine" else -similarities


def expand(snap: Snapshot, plane: int, seeds: list[int], hops: int, decay: float) -> dict[int, float]:
    """Multi-source BFS from ``seeds`` over undirected edges of every type, up to ``hops``:
    node → ``decay^distance`` (a seed 1.0). Stops early when a level reaches nothing new."""
    dist: dict[int, int] = {}
    frontier: list[int] = []
    for s in seeds:
        if s not in dist:
            dist[s] = 0
            frontier.append(s)
    level = 0
    while frontier and level < hops:
        level += 1
        nxt: list[int] = []
        for node in frontier:
            for other in snap.neighbor_ids(plane, node, "both"):
                if other not in dist:
                    dist[other] = level
                    nxt.append(other)
        frontier = nxt
    return {node: decay**d for node, d in dist.items()}


def hybrid_on_snapshot(
    searcher: Searcher,
    snap: Snapshot,
    plane: int,
    spec: HybridSpec,
    current: bool,
    embed: TextEmbedder | None = None,
) -> list[HybridHit]:
    """Run ``spec`` on one open snapshot (the indexes already caught up, as in Searcher._source)."""
    return _run(searcher, snap, plane, spec.check(), current, embed)


def _run(
    searcher: Searcher, snap: Snapshot, plane: int, spec: HybridSpec, current: bool, embed: TextEmbedder | None
) -> list[HybridHit]:
    """:func:`hybrid_on_snapshot` for a checked ``spec``."""
    channels: list[Channel] = []
    best_first: dict[str, Pool] = {}
    if spec.vector is not None:
        ids, similarities = best_first["vector"] = _vector_pool(searcher, snap, plane, spec, current, embed)
        distances = distances_from_similarities(check_metric(spec.vector.metric), similarities)
        vector = Channel("vector", (ids, distances), spec.weight("vector"), higher_is_better=False, best_first=True)
        channels.append(vector)
    if spec.keyword is not None:
        best_first["keyword"] = _keyword_pool(searcher, snap, plane, spec, current)
        channels.append(Channel("keyword", best_first["keyword"], spec.weight("keyword"), best_first=True))
    if spec.graph is not None:
        seeds = [n for pool in best_first.values() for n in pool[0][: spec.graph.seeds].tolist()]
        graph = expand(snap, plane, seeds, spec.graph.hops, spec.graph.decay)
        bounds = (0.0, 1.0) if spec.graph_norm == "range" else None
        channels.append(Channel("graph", graph, spec.weight("graph"), bounds=bounds))
    return _hits(snap, plane, spec, channels)


def _vector_pool(
    searcher: Searcher, snap: Snapshot, plane: int, spec: HybridSpec, current: bool, embed: TextEmbedder | None
) -> Pool:
    """The vector channel's candidates, best first: (node ids, similarities)."""
    assert spec.vector is not None
    query = spec.vector.query
    if isinstance(query, str):
        if embed is None:
            raise UsageError("this hybrid query has a text vector query: it needs an embedder (--embed)")
        query = embed(query)
    metric = check_metric(spec.vector.metric)
    return searcher.vector_pool(snap, plane, spec.label, spec.vector.prop, query, metric, spec.candidates, current)


def _keyword_pool(searcher: Searcher, snap: Snapshot, plane: int, spec: HybridSpec, current: bool) -> Pool:
    """The keyword channel's candidates, best first: (node ids, BM25); empty without an index."""
    assert spec.keyword is not None and spec.label is not None  # check() saw to it
    label, prop = spec.label, spec.keyword.prop
    try:
        return searcher.keyword_pool(snap, plane, label, prop, spec.keyword.text, spec.candidates, current)
    except NotFound:  # keyword_pool found no index declared (it looked the index up; no second look here)
        log.warning("no keyword index: the keyword channel is empty", label=label, prop=prop)
        return np.empty(0, dtype=np.int64), np.empty(0)


def _hits(snap: Snapshot, plane: int, spec: HybridSpec, channels: list[Channel]) -> list[HybridHit]:
    """The fused top ``k``, records loaded for those only."""
    out: list[HybridHit] = []
    ranking = Ranking(channels, spec.fusion, spec.rrf_k, checked=True)  # spec.check() did
    for node_id, score, raw, norm in ranking.entries(CHANNELS):
        if len(out) >= spec.k:
            break
        node = snap.node(plane, node_id)
        if node is None:  # an edge's far end that is gone at this snapshot
            continue
        out.append(HybridHit(node, score, channels=raw, normalised=norm, ranking=ranking))
    return out


def hybrid(
    searcher: Searcher,
    plane: str,
    spec: HybridSpec,
    embed: TextEmbedder | None = None,
    as_of: AsOf | None = None,
) -> list[HybridHit]:
    """Run a hybrid query at the head (read-your-writes) or ``as_of`` a commit."""
    spec.check()  # before a snapshot is opened: a bad query costs no transaction
    with searcher._snapshot(as_of) as snap:
        return _run(searcher, snap, searcher.plane_id(snap, plane), spec, snap.at == snap.head, embed)
