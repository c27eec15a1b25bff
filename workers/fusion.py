"""Fusing ranked channels into one ranking (pure: no I/O, no store).

A *channel* is a mapping node id → raw score, with a direction (higher or lower is better) and a
weight. Three fusions:

``minmax`` (the default, upstream's)
    Each channel is min-max normalised to [0, 1], best = 1: ``(s − lo)/span`` when higher is
    better, ``(hi − s)/span`` for distances; a single hit or all-equal scores (span ≤ float32
    epsilon) all get 1.0. The fused score is the weighted sum; a node absent from a channel scores
    0 there.
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
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

#: Spans at or below this are "all equal" (upstream compares with f32::EPSILON).
EPSILON = float(np.finfo(np.float32).eps)
FUSIONS = ("minmax", "rrf", "dbsf")
DEFAULT_RRF_K = 60


@dataclass(frozen=True)
class Channel:
    """One channel's raw scores. ``bounds`` = a fixed (lo, hi) scale instead of the values' own."""

    name: str
    scores: Mapping[int, float]
    weight: float = 1.0
    higher_is_better: bool = True
    bounds: tuple[float, float] | None = None


@dataclass(frozen=True)
class Fused:
    """A fused hit: its score, and per channel the raw score, the normalised score (or RRF
    share) and the weighted contribution; a channel that did not see the node is absent."""

    node: int
    score: float
    raw: dict[str, float] = field(default_factory=dict)
    normalised: dict[str, float] = field(default_factory=dict)
    contributions: dict[str, float] = field(default_factory=dict)


# ---------------------------------------------------------------------- normalisations


def minmax(scores: Mapping[int, float], higher_is_better: bool = True) -> dict[int, float]:
    """Min-max to [0, 1], best = 1; a single hit or all-equal scores → 1.0 each."""
    if not scores:
        return {}
    lo, hi = min(scores.values()), max(scores.values())
    span = hi - lo
    if not span > EPSILON:  # also catches NaN spans
        return dict.fromkeys(scores, 1.0)
    if higher_is_better:
        return {n: _clip((s - lo) / span) for n, s in scores.items()}
    return {n: _clip((hi - s) / span) for n, s in scores.items()}


def fixed_range(scores: Mapping[int, float], lo: float, hi: float, higher_is_better: bool = True) -> dict[int, float]:
    """Normalise by a known scale [lo, hi] (clipped); the values' own spread plays no part."""
    span = hi - lo
    if not span > 0:
        raise ValueError(f"a fixed range needs lo < hi, not [{lo}, {hi}]")
    if higher_is_better:
        return {n: _clip((s - lo) / span) for n, s in scores.items()}
    return {n: _clip((hi - s) / span) for n, s in scores.items()}


def distribution(scores: Mapping[int, float], higher_is_better: bool = True) -> dict[int, float]:
    """Distribution-based normalisation: (s − (μ − 3σ)) / 6σ, clipped to [0, 1]; σ≈0 → 1.0."""
    if not scores:
        return {}
    values = np.fromiter(scores.values(), dtype=np.float64, count=len(scores))
    mu, sigma = float(values.mean()), float(values.std())
    if not sigma > EPSILON:
        return dict.fromkeys(scores, 1.0)
    lo, span = mu - 3 * sigma, 6 * sigma
    if higher_is_better:
        return {n: _clip((s - lo) / span) for n, s in scores.items()}
    return {n: _clip((lo + span - s) / span) for n, s in scores.items()}


def ranks(scores: Mapping[int, float], higher_is_better: bool = True) -> dict[int, int]:
    """1-based rank of each node within a channel: best first, ties by ascending node id."""
    sign = -1.0 if higher_is_better else 1.0
    order = sorted(scores.items(), key=lambda item: (sign * item[1], item[0]))
    return {node: i for i, (node, _) in enumerate(order, start=1)}


def normalise(channel: Channel, method: str = "minmax") -> dict[int, float]:
    """A channel's scores on [0, 1] for a score fusion (``minmax`` or ``dbsf``)."""
    if channel.bounds is not None:
        return fixed_range(channel.scores, *channel.bounds, higher_is_better=channel.higher_is_better)
    if method == "dbsf":
        return distribution(channel.scores, channel.higher_is_better)
    return minmax(channel.scores, channel.higher_is_better)


# ---------------------------------------------------------------------- fusion


def fuse(
    channels: Sequence[Channel], method: str = "minmax", rrf_k: int = DEFAULT_RRF_K, k: int | None = None
) -> list[Fused]:
    """The union of every channel's nodes, fused, best first (ties by node id), top ``k``."""
    ranked = iter_fused(channels, method, rrf_k)
    return list(ranked if k is None else itertools.islice(ranked, max(k, 0)))


def iter_fused(channels: Sequence[Channel], method: str = "minmax", rrf_k: int = DEFAULT_RRF_K) -> Iterator[Fused]:
    """As :func:`fuse`, lazily: totals for every node are cheap floats, but a node's explanation
    (raw, normalised and weighted share per channel) is only built when the caller reaches it."""
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
    shares: dict[str, dict[int, float]] = {}
    for c in channels:
        if method == "rrf":
            shares[c.name] = {n: 1.0 / (rrf_k + r) for n, r in ranks(c.scores, c.higher_is_better).items()}
        else:
            shares[c.name] = normalise(c, method)
    totals: dict[int, float] = {}
    for c in channels:  # channel order per node, so sums are the same whichever node comes first
        weight = c.weight
        for node, share in shares[c.name].items():
            totals[node] = totals.get(node, 0.0) + weight * share
    for node in sorted(totals, key=lambda n: (-totals[n], n)):
        raw = {c.name: float(c.scores[node]) for c in channels if node in c.scores}
        norm = {name: shares[name][node] for name in raw}
        contrib = {c.name: c.weight * norm[c.name] for c in channels if c.name in norm}
        yield Fused(node, totals[node], raw, norm, contrib)


def explain(hit: Fused, channels: Sequence[Channel], method: str = "minmax") -> str:
    """One line showing how a fused score was made: ``0.8750 = 1×v(norm) 0.750 + 1×k(norm) - + 0.5×g(norm) 0.250``."""
    what = "rrf" if method == "rrf" else "norm"
    parts = []
    for c in channels:
        share = hit.normalised.get(c.name)
        value = "-" if share is None else f"{share:.3f}"
        parts.append(f"{c.weight:g}×{c.name[:1]}({what}) {value}")
    return f"{hit.score:.4f} = " + " + ".join(parts)


def _clip(x: float) -> float:
    return 0.0 if x < 0.0 else 1.0 if x > 1.0 else x
