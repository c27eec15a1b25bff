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

Everything reads one snapshot, so ``AS OF`` runs every channel on that commit. The query itself,
its defaults and its validation are the plan language's (:class:`drsg.plan.hybrid.HybridSpec`);
this module only runs it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from itertools import islice
from typing import Any

import numpy as np
import structlog
from numpy.typing import NDArray

from drsg.kernel.asof import AsOf
from drsg.kernel.errors import NotFound
from drsg.kernel.metrics import check_metric
from drsg.kernel.values import Vector
from drsg.plan.hybrid import CHANNELS, FusionProfile, HybridSpec
from drsg.store.records import FusionDecl
from drsg.store.snapshot import Snapshot
from drsg.workers.base import Pool
from drsg.workers.fusion import Channel, Ranking, explain_line
from drsg.workers.search import Hit, Searcher, TextEmbedder, embedded, hybrid_indexes

log = structlog.get_logger("drsg.hybrid")


@dataclass(slots=True)
class HybridHit(Hit):
    """A fused hit: ``score`` is the fused score; ``channels`` the raw score per channel (vector
    distance, BM25, decay^hops; None when the channel did not see the node), ``normalised`` the
    per-channel normalised score (or RRF share) that was weighted, ``explanation`` one line
    (formatted when read, with the ``ranking``'s channels and weights). ``hops``: with the graph
    channel on, how far the node is from the nearest seed (0: a seed; None: out of reach)."""

    channels: dict[str, float | None] = field(default_factory=dict)
    normalised: dict[str, float | None] = field(default_factory=dict)
    ranking: Ranking | None = field(default=None, repr=False, compare=False)
    profile: FusionDecl | None = field(default=None, repr=False, compare=False)  # the fusion profile used
    hops: int | None = field(default=None, compare=False)

    @property
    def explanation(self) -> str:
        score = 0.0 if self.score is None else self.score
        if self.ranking is None:
            return ""
        line = explain_line(score, self.normalised, self.ranking.legend)
        if self.hops is not None:  # a seed's graph score is the same as every seed's: say which it is
            line += "  (g: a seed)" if self.hops == 0 else f"  (g: {self.hops} hop{'s' * (self.hops > 1)} from a seed)"
        if self.profile is not None:
            line += f"  (fusion profile set at commit {self.profile.since})"
        return line

    def to_json(self, vectors: bool | str = "lean") -> dict[str, Any]:
        out = Hit.to_json(self, vectors)  # no bare super() in a slots dataclass (its class is rebuilt)
        out["channels"] = dict(self.channels)
        out["normalised"] = dict(self.normalised)
        return out


def distances_from_similarities(metric: str, similarities: NDArray[np.float64]) -> NDArray[np.float64]:
    """Upstream reports the vector channel as a distance: cosine 1 − cos, dot −dot, l2 ‖a − b‖ (the
    searches give similarities: cos, dot, −‖a − b‖)."""
    return 1.0 - similarities if metric == "cosine" else -similarities


def vector_similarity(metric: str, distance: float) -> float:
    """:func:`distances_from_similarities` undone for one score: what `search NEAR` prints."""
    return 1.0 - distance if metric == "cosine" else -distance


def expand(snap: Snapshot, plane: int, seeds: list[int], hops: int, decay: float) -> dict[int, float]:
    """Multi-source BFS from ``seeds`` over undirected edges of every type, up to ``hops``:
    node → ``decay^distance`` (a seed 1.0). Stops early when a level reaches nothing new."""
    return decayed(distances(snap, plane, seeds, hops), decay)


def decayed(dist: dict[int, int], decay: float) -> dict[int, float]:
    """The graph channel's raw score from :func:`distances`: ``decay^distance``."""
    return {node: decay**d for node, d in dist.items()}


def distances(snap: Snapshot, plane: int, seeds: list[int], hops: int) -> dict[int, int]:
    """:func:`expand`'s walk: node → its distance from the nearest seed, up to ``hops`` (the
    nodes within fewer hops are exactly those at distance ≤ that)."""
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
    return dist


def graph_seeds(spec: HybridSpec, pools: dict[str, Pool]) -> list[int]:
    """The graph channel's seeds: the top ``seeds`` of the vector pool, then of the keyword pool."""
    assert spec.graph is not None
    return [n for name in ("vector", "keyword") if name in pools for n in pools[name][0][: spec.graph.seeds].tolist()]


def channels_of(spec: HybridSpec, pools: dict[str, Pool], graph: dict[int, float] | None) -> list[Channel]:
    """The channels ``spec`` fuses, from its pools (``vector``: ids and similarities, ``keyword``:
    ids and BM25, each best first) and the graph channel's ``decay^hops`` (pure: what a query and
    ``hybrid-eval --fit`` both fuse)."""
    channels: list[Channel] = []
    if spec.vector is not None:
        ids, similarities = pools["vector"]
        distances_ = distances_from_similarities(check_metric(spec.vector.metric), similarities)
        channels.append(
            Channel("vector", (ids, distances_), spec.weight("vector"), higher_is_better=False, best_first=True)
        )
    if spec.keyword is not None:
        channels.append(Channel("keyword", pools["keyword"], spec.weight("keyword"), best_first=True))
    if spec.graph is not None:
        assert graph is not None
        bounds = (0.0, 1.0) if spec.graph_norm == "range" else None
        channels.append(Channel("graph", graph, spec.weight("graph"), bounds=bounds))
    return channels


def profiled(snap: Snapshot, plane: int, spec: HybridSpec) -> tuple[HybridSpec, FusionDecl | None]:
    """``spec`` with the plane's fusion profile applied when it asks for one and one is set at
    this snapshot for its (label, vector, keyword), with the profile's declaration; else as is."""
    if not (spec.use_profile and spec.label and spec.vector is not None and spec.keyword is not None):
        return spec, None
    decl = snap.fusion_profile(plane, spec.label, spec.vector.prop, spec.keyword.prop)
    if decl is None:
        return replace(spec, use_profile=False), None
    return FusionProfile.from_json(decl.profile).apply(spec), decl


def hybrid_on_snapshot(
    searcher: Searcher,
    snap: Snapshot,
    plane: int,
    spec: HybridSpec,
    current: bool,
    embed: TextEmbedder | None = None,
) -> list[HybridHit]:
    """Run ``spec`` on one open snapshot (the indexes already caught up when ``current``; the plan
    executor's entry, drsg.workers.plans)."""
    return _run(searcher, snap, plane, spec.check(), current, embed)


def _run(
    searcher: Searcher,
    snap: Snapshot,
    plane: int,
    spec: HybridSpec,
    current: bool,
    embed: TextEmbedder | None,
    strict: bool = False,
) -> list[HybridHit]:
    """:func:`hybrid_on_snapshot` for a checked ``spec``. ``strict``: a channel that cannot run (no
    keyword index, no vectors in the property) is a NotFound naming the fix, not an empty channel."""
    spec, profile = profiled(snap, plane, spec)
    pools: dict[str, Pool] = {}
    if spec.vector is not None:
        pools["vector"] = channel_vector_pool(searcher, snap, plane, spec, current, embed)
        if strict and not len(pools["vector"][0]):
            _has_vectors(snap, plane, spec)
    if spec.keyword is not None:
        pools["keyword"] = channel_keyword_pool(searcher, snap, plane, spec, current, strict)
    graph = dist = None
    if spec.graph is not None:
        dist = distances(snap, plane, graph_seeds(spec, pools), spec.graph.hops)
        graph = decayed(dist, spec.graph.decay)
    return _hits(snap, plane, spec, channels_of(spec, pools, graph), profile, dist)


def channel_vector_pool(
    searcher: Searcher, snap: Snapshot, plane: int, spec: HybridSpec, current: bool, embed: TextEmbedder | None
) -> Pool:
    """The vector channel's candidates, best first: (node ids, similarities)."""
    assert spec.vector is not None
    query, metric = embedded(spec.vector.query, embed), check_metric(spec.vector.metric)
    return searcher.vector_pool(snap, plane, spec.label, spec.vector.prop, query, metric, spec.candidates, current)


def holds_vectors(snap: Snapshot, plane: int, label: str | None, prop: str) -> bool:
    """Whether any node (of ``label``) holds a vector in ``prop``: why a vector search found nothing."""
    return any(isinstance(node.props.get(prop), Vector) for node in snap.nodes(plane, label))


def _has_vectors(snap: Snapshot, plane: int, spec: HybridSpec) -> None:
    """NotFound when no node (of the label) holds a vector in the vector channel's property."""
    assert spec.vector is not None
    prop = spec.vector.prop
    if not holds_vectors(snap, plane, spec.label, prop):
        whose = f"{spec.label} node" if spec.label else "node"
        raise NotFound(
            f"no {whose} holds a vector in {prop!r}; embed them (`drsg vectorize --from TEXT --into {prop}`) "
            "or name the property that holds them with --vector"
        )


def channel_keyword_pool(
    searcher: Searcher, snap: Snapshot, plane: int, spec: HybridSpec, current: bool, strict: bool = False
) -> Pool:
    """The keyword channel's candidates, best first: (node ids, BM25); empty without an index (as
    upstream), unless ``strict``."""
    assert spec.keyword is not None and spec.label is not None  # check() saw to it
    label, prop = spec.label, spec.keyword.prop
    try:
        return searcher.keyword_pool(snap, plane, label, prop, spec.keyword.text, spec.candidates, current)
    except NotFound:  # keyword_pool found no index declared (it looked the index up; no second look here)
        if strict:
            raise
        log.warning("no keyword index: the keyword channel is empty", label=label, prop=prop)
        return np.empty(0, dtype=np.int64), np.empty(0)


def _hits(
    snap: Snapshot,
    plane: int,
    spec: HybridSpec,
    channels: list[Channel],
    profile: FusionDecl | None,
    dist: dict[int, int] | None = None,
) -> list[HybridHit]:
    """The fused top ``k``, records loaded for those only (read together, as many as are missing:
    a node gone at this snapshot, an edge's far end, is skipped and the next one read); ``dist``:
    the graph channel's hops per node, for the explanation."""
    out: list[HybridHit] = []
    ranking = Ranking(channels, spec.fusion, spec.rrf_k, checked=True)  # spec.check() did
    entries = ranking.entries(CHANNELS)
    while len(out) < spec.k:
        # (never more than the ranking holds: k may be any size, islice takes at most sys.maxsize)
        batch = list(islice(entries, min(spec.k - len(out), len(ranking))))
        if not batch:
            break
        nodes = snap.nodes_at(plane, [entry[0] for entry in batch])
        for (_, score, raw, norm), node in zip(batch, nodes, strict=True):
            if node is not None:
                hops = None if dist is None else dist.get(node.id)
                out.append(
                    HybridHit(node, score, channels=raw, normalised=norm, ranking=ranking, profile=profile, hops=hops)
                )
    return out


def hybrid(
    searcher: Searcher,
    plane: str,
    spec: HybridSpec,
    embed: TextEmbedder | None = None,
    as_of: AsOf | None = None,
    strict: bool = False,
) -> list[HybridHit]:
    """Run a hybrid query at the head (read-your-writes) or ``as_of`` a commit; ``strict`` as :func:`_run`."""
    spec.check()  # before a snapshot is opened: a bad query costs no transaction
    with searcher.view(plane, as_of, names=hybrid_indexes(spec)) as (snap, plane_id, current):
        return _run(searcher, snap, plane_id, spec, current, embed, strict)
