"""Fusing ranked channels into one ranking (pure: no I/O, no store).

A *channel* is a set of node ids with raw scores, with a direction (higher or lower is better) and a
weight. Three fusions:

``minmax`` (the default, upstream's)
    Each channel is min-max normalised to [0, 1], best = 1: ``(s − lo)/span`` when higher is
    better, ``(hi − s)/span`` for distances (an extreme of −0.0 counts as 0.0); a single hit or
    all-equal scores (span ≤ float32 epsilon) all get 1.0. The fused score is the weighted sum; a
    node absent from a channel scores 0 there.
``rrf``
    Reciprocal-rank fusion: ``Σ w / (rrf_k + rank)``, ranks from 1 within each channel (ties in a
    channel broken by node id), ``rrf_k`` 60 by default. Scales are ignored; only order counts.
``dbsf``
    Distribution-based score fusion: each channel is normalised by its own distribution,
    ``(s − (μ − 3σ)) / 6σ`` clipped to [0, 1] (flipped for distances), so an outlier cannot squash
    the rest of the channel the way min-max lets it. σ = 0 (one hit, all equal) → 1.0.

A channel may instead declare a *fixed range* (``bounds``): its raw scores are already on a known
scale and are normalised by that scale, not by the spread of the values seen. The graph channel
uses this: its raw score is ``decay^hops`` in [0, 1], so a one-hop neighbour keeps ``decay``
(0.5 by default) instead of upstream's min-max 0 (with one hop, raw scores are only {1, decay},
and min-max maps every neighbour to 0, so the graph channel could only ever re-boost the seeds).

Final order: fused score descending, ties by ascending node id.

Normalisations run on numpy arrays of a channel's ids and scores (a query fuses a few hundred
candidates; per-candidate Python would cost more than the searches); the union, totals and order
are one call into the C module ``_fusion`` (see :class:`Ranking`). Each element goes through the
same float64 operations, in the same order, as the scalar formulas above, so scores are exact, not
approximately equal. Explanations (:class:`Fused`) are built only for the hits a caller takes.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import cast

import numpy as np
from numpy.typing import ArrayLike, NDArray

from drsg.plan.hybrid import DEFAULT_RRF_K, FUSIONS  # the names are the plan language's; the maths is here
from drsg.workers import _fusion

#: Spans at or below this are "all equal" (upstream compares with f32::EPSILON).
EPSILON = float(np.finfo(np.float32).eps)

Ids = NDArray[np.int64]
Scores = NDArray[np.float64]


class Channel:
    """One channel's raw scores: a mapping node id → score, or a pair of arrays (node ids, each
    once; their scores), which the query path passes to skip building a dict. ``bounds`` = a fixed
    (lo, hi) scale instead of the values' own. ``best_first``: the arrays are already ordered best
    first (a search's pool), so the extremes are the ends and need no scan."""

    __slots__ = ("best_first", "bounds", "higher_is_better", "ids", "name", "values", "weight")

    def __init__(
        self,
        name: str,
        scores: Mapping[int, float] | tuple[ArrayLike, ArrayLike],
        weight: float = 1.0,
        higher_is_better: bool = True,
        bounds: tuple[float, float] | None = None,
        best_first: bool = False,
    ) -> None:
        if isinstance(scores, tuple):
            # contiguous: the C ranking reads them as plain buffers (a pool's arrays already are: no copy)
            ids = np.ascontiguousarray(scores[0], dtype=np.int64)
            values = np.ascontiguousarray(scores[1], dtype=np.float64)
        else:
            ids = np.fromiter(scores.keys(), dtype=np.int64, count=len(scores))
            values = np.fromiter(scores.values(), dtype=np.float64, count=len(scores))
        if ids.ndim != 1 or ids.shape != values.shape:
            raise ValueError(f"the {name} channel needs as many scores as node ids")
        self.name = name
        self.ids: Ids = ids
        self.values: Scores = values
        self.weight = weight
        self.higher_is_better = higher_is_better
        self.bounds = bounds
        self.best_first = best_first and isinstance(scores, tuple)

    @property
    def scores(self) -> dict[int, float]:
        """node id → raw score."""
        return dict(zip(self.ids.tolist(), self.values.tolist(), strict=True))

    def __len__(self) -> int:
        return len(self.ids)

    def __repr__(self) -> str:
        return f"Channel({self.name!r}, {len(self)} nodes, weight={self.weight})"


@dataclass(frozen=True)
class Fused:
    """A fused hit: its score, and per channel the raw score, the normalised score (or RRF
    share) and the weighted contribution; a channel that did not see the node is absent."""

    node: int
    score: float
    raw: dict[str, float] = field(default_factory=dict)
    normalised: dict[str, float] = field(default_factory=dict)
    contributions: dict[str, float] = field(default_factory=dict)


# ---------------------------------------------------------------------- normalisations (arrays)


def minmax_array(values: Scores, higher_is_better: bool = True, best_first: bool = False) -> Scores:
    """Min-max to [0, 1], best = 1; a single hit or all-equal scores → 1.0 each. ``best_first``:
    ``values`` are ordered best first, so the extremes are at the ends."""
    if values.size == 0:
        return np.empty(0)
    if best_first:  # Python floats: the same doubles, without numpy's scalar machinery
        lo, hi = (values.item(-1), values.item(0)) if higher_is_better else (values.item(0), values.item(-1))
    else:
        lo, hi = float(values.min()), float(values.max())
    # Which of 0.0 and -0.0 is "the" extreme is unspecified (numpy's min may pick either), and it
    # decides the sign of a zero share: extremes are taken as 0.0, so every way of finding them agrees.
    lo, hi = lo + 0.0, hi + 0.0
    span = hi - lo
    if not span > EPSILON:  # also catches NaN spans
        return np.ones(values.shape)
    # No clip needed: lo ≤ s ≤ hi, and rounding is monotone, so every result is in [0, 1].
    return (values - lo) / span if higher_is_better else (hi - values) / span


def fixed_range_array(values: Scores, lo: float, hi: float, higher_is_better: bool = True) -> Scores:
    """Normalise by a known scale [lo, hi] (clipped); the values' own spread plays no part."""
    span = hi - lo
    if not span > 0:
        raise ValueError(f"a fixed range needs lo < hi, not [{lo}, {hi}]")
    return _clip((values - lo) / span if higher_is_better else (hi - values) / span)


def distribution_array(values: Scores, higher_is_better: bool = True) -> Scores:
    """Distribution-based normalisation: (s − (μ − 3σ)) / 6σ, clipped to [0, 1]; σ≈0 → 1.0."""
    if values.size == 0:
        return np.empty(0)
    mu, sigma = float(values.mean()), float(values.std())
    if not sigma > EPSILON:
        return np.ones(values.shape)
    lo, span = mu - 3 * sigma, 6 * sigma
    return _clip((values - lo) / span if higher_is_better else (lo + span - values) / span)


def ranks_array(ids: Ids, values: Scores, higher_is_better: bool = True) -> NDArray[np.int64]:
    """1-based rank of each node within a channel: best first, ties by ascending node id."""
    order = np.lexsort((ids, -values if higher_is_better else values))
    out = np.empty(len(ids), dtype=np.int64)
    out[order] = np.arange(1, len(ids) + 1)
    return out


def shares(channel: Channel, method: str = "minmax", rrf_k: int = DEFAULT_RRF_K) -> Scores:
    """Each node's share of ``channel`` before weighting (aligned with ``channel.ids``): the
    normalised score for a score fusion, ``1 / (rrf_k + rank)`` for RRF."""
    if method == "rrf":
        return 1.0 / (rrf_k + ranks_array(channel.ids, channel.values, channel.higher_is_better)).astype(np.float64)
    if channel.bounds is not None:
        return fixed_range_array(channel.values, *channel.bounds, higher_is_better=channel.higher_is_better)
    if method == "dbsf":
        return distribution_array(channel.values, channel.higher_is_better)
    return minmax_array(channel.values, channel.higher_is_better, channel.best_first)


# ---------------------------------------------------------------------- normalisations (mappings)


def minmax(scores: Mapping[int, float], higher_is_better: bool = True) -> dict[int, float]:
    """:func:`minmax_array` over a mapping node id → score."""
    return _on_mapping(scores, lambda v: minmax_array(v, higher_is_better))


def fixed_range(scores: Mapping[int, float], lo: float, hi: float, higher_is_better: bool = True) -> dict[int, float]:
    """:func:`fixed_range_array` over a mapping node id → score."""
    return _on_mapping(scores, lambda v: fixed_range_array(v, lo, hi, higher_is_better))


def distribution(scores: Mapping[int, float], higher_is_better: bool = True) -> dict[int, float]:
    """:func:`distribution_array` over a mapping node id → score."""
    return _on_mapping(scores, lambda v: distribution_array(v, higher_is_better))


def ranks(scores: Mapping[int, float], higher_is_better: bool = True) -> dict[int, int]:
    """1-based rank of each node within a channel: best first, ties by ascending node id."""
    c = Channel("", scores)
    return dict(zip(c.ids.tolist(), ranks_array(c.ids, c.values, higher_is_better).tolist(), strict=True))


def normalise(channel: Channel, method: str = "minmax") -> dict[int, float]:
    """A channel's scores on [0, 1] for a score fusion (``minmax`` or ``dbsf``)."""
    return dict(zip(channel.ids.tolist(), shares(channel, method).tolist(), strict=True))


# ---------------------------------------------------------------------- fusion


def fuse(
    channels: Sequence[Channel], method: str = "minmax", rrf_k: int = DEFAULT_RRF_K, k: int | None = None
) -> list[Fused]:
    """The union of every channel's nodes, fused, best first (ties by node id), top ``k``."""
    ranked = iter_fused(channels, method, rrf_k)
    return list(ranked if k is None else itertools.islice(ranked, max(k, 0)))


def iter_fused(channels: Sequence[Channel], method: str = "minmax", rrf_k: int = DEFAULT_RRF_K) -> Iterator[Fused]:
    """As :func:`fuse`, lazily: the fused order over every node is computed at once on arrays,
    but a node's explanation (raw, normalised and weighted share per channel) is only built when
    the caller reaches it. Raises on a bad argument here, not at the first ``next``."""
    return _fused(Ranking(channels, method, rrf_k))


def _fused(ranking: Ranking) -> Iterator[Fused]:
    weights = {c.name: c.weight for c in ranking.channels}
    for node, score, raw, norm in ranking.entries():  # no names asked for: no None in the dicts
        normalised = cast(dict[str, float], norm)
        contributions = {name: weights[name] * share for name, share in normalised.items()}
        yield Fused(node, score, cast(dict[str, float], raw), normalised, contributions)


class Ranking:
    """The fused order of every node the channels saw.

    Each channel's shares come from numpy (:func:`shares`); the union, the totals and the order are
    one call into ``_fusion`` (C). A node's total is 0.0 plus each channel's weighted share in
    channel order (a weight of 1 is not multiplied: 1.0 × x is x exactly) — the float64 operations
    of the scalar formulas, in their order, so the totals are exact. Why C: a query fuses a few
    hundred candidates between two searches that evict numpy's code and data from the caches, so
    each numpy call there costs several microseconds; the ~35 calls this took cost ~50 µs a query.
    """

    def __init__(
        self, channels: Sequence[Channel], method: str = "minmax", rrf_k: int = DEFAULT_RRF_K, checked: bool = False
    ) -> None:
        if not checked:  # ``checked``: the caller has validated method, rrf_k, names and weights
            _check(channels, method, rrf_k)
        self.channels = list(channels)
        self.method = method
        parts = [shares(c, method, rrf_k) for c in channels]
        ids, values, weights = [c.ids for c in channels], [c.values for c in channels], [c.weight for c in channels]
        # bytes, each in fused order: nodes, totals, then per channel (one row each) positions, raw, shares
        self._ranked = _fusion.rank(ids, values, parts, weights)
        self._names = tuple(c.name for c in channels)

    def __len__(self) -> int:
        """How many distinct nodes the channels saw."""
        return len(self._ranked[0]) // 8

    def top(self, n: int) -> list[int]:
        """The first ``n`` nodes of the fused order, without their detail (what an evaluation ranks by)."""
        nodes: list[int] = np.frombuffer(self._ranked[0], dtype=np.int64, count=min(n, len(self))).tolist()
        return nodes

    @cached_property
    def legend(self) -> Legend:
        """The channels' parts of an explanation line (formatted once, when a hit is first explained)."""
        return legend(self.channels, self.method)

    def entries(
        self, names: Sequence[str] = ()
    ) -> Iterator[tuple[int, float, dict[str, float | None], dict[str, float | None]]]:
        """``(node, fused score, raw score per channel, share per channel)``, best first. A channel
        that did not see the node is absent from both dicts, or None when listed in ``names``
        (which then lead the dicts, in that order). The detail is read for the nodes taken only."""
        lead = tuple(names)
        for start, stop in _chunks(len(self)):  # callers usually take ~10: convert a chunk at a time
            yield from _fusion.entries(self._ranked, self._names, lead, start, stop)


def _chunks(n: int, size: int = 16) -> Iterator[tuple[int, int]]:
    """``(start, stop)`` over ``range(n)`` in slices of ``size``, then doubling."""
    start = 0
    while start < n:
        yield start, min(start + size, n)
        start += size
        size *= 2


def _check(channels: Sequence[Channel], method: str, rrf_k: int) -> None:
    if method not in FUSIONS:
        raise ValueError(f"unknown fusion {method!r}; use one of {', '.join(FUSIONS)}")
    if rrf_k < 0:
        raise ValueError("rrf_k must be ≥ 0")
    names = [c.name for c in channels]
    if len(set(names)) != len(names):
        raise ValueError(f"channel names must differ: {names}")
    for c in channels:
        if not math.isfinite(c.weight):
            raise ValueError(f"the {c.name} weight must be a finite number")


#: Each channel's part of an explanation line before its share, e.g. ``("vector", "1×v(norm) ")``.
Legend = tuple[tuple[str, str], ...]


def explain(hit: Fused, channels: Sequence[Channel], method: str = "minmax") -> str:
    """One line showing how a fused score was made: ``0.8750 = 1×v(norm) 0.750 + 1×k(norm) - + 0.5×g(norm) 0.250``."""
    return explain_line(hit.score, hit.normalised, legend(channels, method))


def legend(channels: Sequence[Channel], method: str = "minmax") -> Legend:
    """The channels' parts of :func:`explain`'s line, formatted once for all the hits of a fusion."""
    what = "rrf" if method == "rrf" else "norm"
    return tuple((c.name, f"{c.weight:g}×{c.name[:1]}({what}) ") for c in channels)


def explain_line(score: float, normalised: Mapping[str, float | None], parts: Legend) -> str:
    """:func:`explain` from a fused score and its shares per channel (None or absent: ``-``)."""
    shown = [label + ("-" if (x := normalised.get(name)) is None else f"{x:.3f}") for name, label in parts]
    return f"{score:.4f} = " + " + ".join(shown)


def _on_mapping(scores: Mapping[int, float], normalise_values: Callable[[Scores], Scores]) -> dict[int, float]:
    values = np.fromiter(scores.values(), dtype=np.float64, count=len(scores))
    return dict(zip(scores.keys(), normalise_values(values).tolist(), strict=True))


def _clip(x: Scores) -> Scores:
    """Clip to [0, 1]; NaN passes through (it is neither below 0 nor above 1)."""
    return np.where(x < 0.0, 0.0, np.where(x > 1.0, 1.0, x))
