"""Vectorised fusion equals a plain reference implementation, bit for bit.

``drsg.workers.fusion`` fuses numpy arrays of candidates. The reference below is the scalar
definition — dicts, one float operation per node, Python's sort — as the module's docstring states
it (and as the module was written before it was vectorised). Hypothesis draws channels with shared
and disjoint nodes, tied and all-equal scores, single hits, empty channels, zero and negative
weights, fixed ranges, and every fusion; fused scores, per-channel raw and normalised scores,
contributions and explanation lines must match exactly (floats compared by their bits, so even a
-0.0 for a 0.0 would fail).

The keyword channel's top-k is held to a full tantivy ranking the same way: the engine fetches a
little past k until no hit ties with the k-th, so ties at the cut are broken by node id.
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import hypothesis.strategies as st
import numpy as np
import tantivy
from hypothesis import example, given, settings

from drsg.store.records import IndexDecl
from drsg.workers.analysis import analyze
from drsg.workers.fusion import (
    EPSILON,
    Channel,
    Fused,
    Ranking,
    distribution,
    explain,
    fixed_range,
    fuse,
    minmax,
    normalise,
    ranks,
)
from drsg.workers.keyword import KeywordIndex

# ---------------------------------------------------------------------- the reference


def ref_clip(x: float) -> float:
    return 0.0 if x < 0.0 else 1.0 if x > 1.0 else x


def ref_minmax(scores: Mapping[int, float], higher: bool) -> dict[int, float]:
    if not scores:
        return {}
    lo, hi = min(scores.values()) + 0.0, max(scores.values()) + 0.0  # an extreme of -0.0 counts as 0.0
    span = hi - lo
    if not span > EPSILON:
        return dict.fromkeys(scores, 1.0)
    if higher:
        return {n: ref_clip((s - lo) / span) for n, s in scores.items()}
    return {n: ref_clip((hi - s) / span) for n, s in scores.items()}


def ref_fixed(scores: Mapping[int, float], lo: float, hi: float, higher: bool) -> dict[int, float]:
    span = hi - lo
    if higher:
        return {n: ref_clip((s - lo) / span) for n, s in scores.items()}
    return {n: ref_clip((hi - s) / span) for n, s in scores.items()}


def ref_distribution(scores: Mapping[int, float], higher: bool) -> dict[int, float]:
    if not scores:
        return {}
    values = np.fromiter(scores.values(), dtype=np.float64, count=len(scores))
    mu, sigma = float(values.mean()), float(values.std())
    if not sigma > EPSILON:
        return dict.fromkeys(scores, 1.0)
    lo, span = mu - 3 * sigma, 6 * sigma
    if higher:
        return {n: ref_clip((s - lo) / span) for n, s in scores.items()}
    return {n: ref_clip((lo + span - s) / span) for n, s in scores.items()}


def ref_ranks(scores: Mapping[int, float], higher: bool) -> dict[int, int]:
    sign = -1.0 if higher else 1.0
    order = sorted(scores.items(), key=lambda item: (sign * item[1], item[0]))
    return {node: i for i, (node, _) in enumerate(order, start=1)}


Spec = tuple[str, dict[int, float], float, bool, tuple[float, float] | None]  # name, scores, weight, higher, bounds


def ref_shares(spec: Spec, method: str, rrf_k: int) -> dict[int, float]:
    _, scores, _, higher, bounds = spec
    if method == "rrf":
        return {n: 1.0 / (rrf_k + r) for n, r in ref_ranks(scores, higher).items()}
    if bounds is not None:
        return ref_fixed(scores, *bounds, higher)
    if method == "dbsf":
        return ref_distribution(scores, higher)
    return ref_minmax(scores, higher)


def ref_fuse(specs: Sequence[Spec], method: str, rrf_k: int) -> list[Fused]:
    shares = {name: ref_shares(s, method, rrf_k) for s in specs for name in [s[0]]}
    totals: dict[int, float] = {}
    for name, _, weight, _, _ in specs:
        for node, share in shares[name].items():
            totals[node] = totals.get(node, 0.0) + weight * share
    out = []
    for node in sorted(totals, key=lambda n: (-totals[n], n)):
        raw = {name: float(scores[node]) for name, scores, _, _, _ in specs if node in scores}
        norm = {name: shares[name][node] for name in raw}
        contrib = {name: weight * norm[name] for name, _, weight, _, _ in specs if name in norm}
        out.append(Fused(node, totals[node], raw, norm, contrib))
    return out


def ref_explain(hit: Fused, specs: Sequence[Spec], method: str) -> str:
    what = "rrf" if method == "rrf" else "norm"
    parts = []
    for name, _, weight, _, _ in specs:
        share = hit.normalised.get(name)
        parts.append(f"{weight:g}×{name[:1]}({what}) {'-' if share is None else f'{share:.3f}'}")
    return f"{hit.score:.4f} = " + " + ".join(parts)


# ---------------------------------------------------------------------- strategies

FEW = [0.0, 0.5, 1.0, 2.5, -1.0]  # drawn often, so ties and all-equal channels are common
score_st = st.one_of(
    st.sampled_from(FEW),
    st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False),
    st.floats(min_value=-1e-300, max_value=1e-300, allow_nan=False),
)
scores_st = st.one_of(
    st.dictionaries(st.integers(0, 40), score_st, max_size=30),
    st.dictionaries(st.integers(0, 40), st.just(0.25), min_size=1, max_size=6),  # all equal
    st.dictionaries(st.integers(0, 2**62), score_st, min_size=1, max_size=1),  # a single hit, a large id
)
weight_st = st.one_of(
    st.sampled_from([0.0, 1.0, 0.5, -0.0]),
    st.floats(min_value=-5.0, max_value=10.0, allow_nan=False, allow_infinity=False),
)
bounds_st = st.one_of(
    st.none(),
    st.just((0.0, 1.0)),
    st.tuples(st.floats(-10.0, 0.0), st.floats(0.001, 10.0)),
)


@st.composite
def channel_specs(draw: st.DrawFn) -> list[Spec]:
    names = draw(st.lists(st.sampled_from(["vector", "keyword", "graph"]), unique=True, max_size=3))
    if draw(st.booleans()):  # independent channels
        return [(n, draw(scores_st), draw(weight_st), draw(st.booleans()), draw(bounds_st)) for n in names]
    # the same nodes in every channel, so every node's sum has several terms (its order matters)
    nodes = draw(st.lists(st.integers(0, 40), unique=True, min_size=1, max_size=12))
    return [
        (n, {x: draw(score_st) for x in nodes}, draw(weight_st), draw(st.booleans()), draw(bounds_st)) for n in names
    ]


def best_first_order(specs: Sequence[Spec]) -> list[Spec]:
    """Each channel's scores reordered as a search pool is: best first, ties by node id. (Sums such
    as dbsf's mean depend on the order at the last bit, so the reference must see the same order.)"""
    out: list[Spec] = []
    for name, scores, weight, higher, bounds in specs:
        sign = -1.0 if higher else 1.0
        ordered = sorted(scores.items(), key=lambda item, sign=sign: (sign * item[1], item[0]))
        out.append((name, dict(ordered), weight, higher, bounds))
    return out


def build(specs: Sequence[Spec], arrays: bool, best_first: bool = False) -> list[Channel]:
    """Channels from specs: mappings, or arrays in the specs' order; ``best_first`` says that order
    is best first (see :func:`best_first_order`), so the extremes are read from the ends."""
    out = []
    for name, scores, weight, higher, bounds in specs:
        data: Any = scores
        if arrays:
            data = (np.array(list(scores), dtype=np.int64), np.array(list(scores.values()), dtype=np.float64))
        out.append(Channel(name, data, weight, higher_is_better=higher, bounds=bounds, best_first=best_first))
    return out


def bits(x: float | None) -> str | None:
    return None if x is None else float(x).hex()


def hexed(scores: Mapping[int, float]) -> dict[int, str | None]:
    return {n: bits(v) for n, v in scores.items()}


def exact(hits: Sequence[Fused]) -> list[tuple[Any, ...]]:
    """Every float by its bits, dict keys in order."""
    return [
        (
            h.node,
            bits(h.score),
            [(k, bits(v)) for k, v in h.raw.items()],
            [(k, bits(v)) for k, v in h.normalised.items()],
            [(k, bits(v)) for k, v in h.contributions.items()],
        )
        for h in hits
    ]


# ---------------------------------------------------------------------- properties


@given(channel_specs(), st.sampled_from(["minmax", "rrf", "dbsf"]), st.integers(0, 100), st.booleans(), st.booleans())
@settings(max_examples=400, deadline=None)
@example(  # dbsf's mean and deviation depend on the values' order at the last bit: the reference sees the pool's
    specs=[
        ("vector", dict.fromkeys(range(5), 0.0), 0.0, False, None),
        ("keyword", dict.fromkeys(range(5), 0.0), 0.0, False, None),
        ("graph", {0: 0.0, 1: 0.0, 2: 1.0, 3: 0.0, 4: 2.0}, 0.0, False, None),
    ],
    method="dbsf",
    rrf_k=0,
    arrays=True,
    best_first=True,
)
def test_fusion_equals_the_reference(
    specs: list[Spec], method: str, rrf_k: int, arrays: bool, best_first: bool
) -> None:
    if best_first and arrays:
        specs = best_first_order(specs)
    channels = build(specs, arrays, best_first and arrays)
    want = ref_fuse(specs, method, rrf_k)
    got = fuse(channels, method, rrf_k)
    assert exact(got) == exact(want)
    assert [explain(h, channels, method) for h in got] == [ref_explain(h, specs, method) for h in want]


@given(channel_specs(), st.sampled_from(["minmax", "rrf", "dbsf"]), st.integers(0, 30))
@settings(max_examples=200, deadline=None)
def test_top_k_and_named_entries_agree_with_the_full_ranking(specs: list[Spec], method: str, k: int) -> None:
    channels = build(specs, arrays=True)
    full = ref_fuse(specs, method, 60)
    assert exact(fuse(channels, method, k=k)) == exact(full[:k])
    names = ("vector", "keyword", "graph")
    entries = list(Ranking(channels, method).entries(names))
    for (node, score, raw, norm), ref in zip(entries, full, strict=True):
        assert (node, bits(score)) == (ref.node, bits(ref.score))
        assert list(raw) == list(norm) == list(names)  # every name, in that order; None when unseen
        assert {n: bits(v) for n, v in raw.items()} == {n: bits(ref.raw.get(n)) for n in names}
        assert {n: bits(v) for n, v in norm.items()} == {n: bits(ref.normalised.get(n)) for n in names}


@given(scores_st, st.booleans(), bounds_st.filter(lambda b: b is not None))
@settings(max_examples=300, deadline=None)
@example(scores={0: 0.0, 1: 0.5, 2: -0.0}, higher=True, bounds=(0.0, 1.0))  # numpy's min picked -0.0
def test_mapping_normalisations_equal_the_reference(
    scores: dict[int, float], higher: bool, bounds: tuple[float, float] | None
) -> None:
    assert bounds is not None
    assert hexed(minmax(scores, higher)) == hexed(ref_minmax(scores, higher))
    assert hexed(distribution(scores, higher)) == hexed(ref_distribution(scores, higher))
    assert hexed(fixed_range(scores, *bounds, higher)) == hexed(ref_fixed(scores, *bounds, higher))
    assert ranks(scores, higher) == ref_ranks(scores, higher)
    channel = Channel("graph", scores, higher_is_better=higher, bounds=bounds)
    assert hexed(normalise(channel)) == hexed(ref_fixed(scores, *bounds, higher))


def test_edge_cases_by_hand() -> None:
    """The shapes hypothesis may take a while to find, spelled out."""
    cases: list[list[Spec]] = [
        [],
        [("vector", {}, 1.0, False, None)],
        [("vector", {3: 0.2}, 1.0, False, None), ("keyword", {}, 1.0, True, None)],  # a single hit
        [("keyword", {1: 2.0, 2: 2.0, 3: 2.0}, 1.0, True, None)],  # all equal
        [("vector", {1: 0.1, 2: 0.9}, 0.0, False, None), ("keyword", {1: 1.0, 2: 5.0}, 1.0, True, None)],
        [("vector", {1: 0.5, 2: 0.5}, -0.0, False, None), ("graph", {1: 1.0, 9: 0.5}, 0.5, True, (0.0, 1.0))],
        [("keyword", {5: 1.0, 3: 1.0, 9: 1.0, 1: 0.0}, -1.0, True, None)],  # negative weight, ties
        # (0.1 + 0.2) + 0.3 != 0.1 + (0.2 + 0.3): a node's sum must run in channel order
        [
            ("vector", {1: 0.0}, 0.1, False, None),
            ("keyword", {1: 3.0}, 0.2, True, None),
            ("graph", {1: 1.0}, 0.3, True, None),
        ],
        [
            ("vector", {1: 0.0}, 0.3, False, None),
            ("keyword", {1: 3.0}, 0.2, True, None),
            ("graph", {1: 1.0}, 0.1, True, None),
        ],
    ]
    for specs in cases:
        for method in ("minmax", "rrf", "dbsf"):
            channels = build(specs, arrays=True)
            want = ref_fuse(specs, method, 60)
            assert exact(fuse(channels, method)) == exact(want)
            assert [explain(h, channels, method) for h in fuse(channels, method)] == [
                ref_explain(h, specs, method) for h in want
            ]


# ---------------------------------------------------------------------- the keyword channel's top k

WORDS = ["graph", "store", "vector", "index", "search", "node", "edge", "plane"]


@given(
    st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join), min_size=1, max_size=60),
    st.randoms(use_true_random=False),
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join),
    st.integers(1, 70),
)
@settings(max_examples=60, deadline=None)
def test_keyword_top_k_breaks_ties_at_the_cut_by_node_id(texts: list[str], rnd: Any, query: str, k: int) -> None:
    """Few words, short documents: scores tie a lot. A flush writes its documents in id order, so
    the documents go in over a few flushes of shuffled ids: tantivy's own order among ties (by
    segment, then document) is then not the id order."""
    ids = rnd.sample(range(1, 10_000), len(texts))
    with tempfile.TemporaryDirectory() as tmp:
        worker = KeywordIndex(IndexDecl(1, "keyword", "Doc", "body", {"language": "english"}), Path(tmp) / "g", "")
        for node_id, text in zip(ids, texts, strict=True):
            worker.upsert(node_id, text)
            if rnd.random() < 0.15:
                worker.flush()
        worker.flush()
        got = worker.search(query, k)
        searcher = worker._searcher
        terms = sorted(set(analyze(query, "english")))
        clauses = [(tantivy.Occur.Should, tantivy.Query.term_query(worker.schema, "body", t)) for t in terms]
        counts = {t: analyze(query, "english").count(t) for t in terms}
        clauses = [
            (occur, tantivy.Query.boost_query(q, float(counts[t])) if counts[t] > 1 else q)
            for (occur, q), t in zip(clauses, terms, strict=True)
        ]
        everything = searcher.search(tantivy.Query.boolean_query(clauses), searcher.num_docs, count=False).hits
        found = searcher.fast_field_values("id", [a for _, a in everything])
        want = sorted(
            ((int(i), float(s)) for (s, _), i in zip(everything, found, strict=True)), key=lambda h: (-h[1], h[0])
        )
    assert got == want[:k]
    assert all(math.isfinite(s) for _, s in got)
