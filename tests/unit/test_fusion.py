"""Fusion (pure): normalisations, weighted sum, RRF, distribution-based fusion, explanations."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from drsg.workers.fusion import (
    EPSILON,
    Channel,
    distribution,
    explain,
    fixed_range,
    fuse,
    minmax,
    normalise,
    ranks,
)

scores_st = st.dictionaries(
    st.integers(min_value=0, max_value=500),
    st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False),
    max_size=40,
)
weight_st = st.floats(min_value=0.0, max_value=10.0, allow_nan=False)


# ---------------------------------------------------------------------- normalisation edge cases


def test_minmax_best_is_one_and_distances_flip() -> None:
    assert minmax({1: 2.0, 2: 4.0, 3: 3.0}) == {1: 0.0, 2: 1.0, 3: 0.5}
    assert minmax({1: 2.0, 2: 4.0, 3: 3.0}, higher_is_better=False) == {1: 1.0, 2: 0.0, 3: 0.5}


def test_minmax_single_hit_and_all_equal_are_one() -> None:
    assert minmax({7: 0.25}) == {7: 1.0}
    assert minmax({7: -3.0}, higher_is_better=False) == {7: 1.0}
    assert minmax({1: 0.5, 2: 0.5, 3: 0.5}) == {1: 1.0, 2: 1.0, 3: 1.0}
    assert minmax({1: 0.5, 2: 0.5 + EPSILON / 2}) == {1: 1.0, 2: 1.0}  # within f32 epsilon: equal
    assert minmax({}) == {}


def test_fixed_range_keeps_the_scale() -> None:
    # The graph channel at one hop: seeds 1.0, neighbours decay. Min-max zeroes the neighbours
    # (upstream); the fixed range [0, 1] keeps them at decay.
    graph = {1: 1.0, 2: 0.5, 3: 0.5}
    assert minmax(graph) == {1: 1.0, 2: 0.0, 3: 0.0}
    assert fixed_range(graph, 0.0, 1.0) == graph
    assert fixed_range({1: 2.0, 2: -1.0}, 0.0, 1.0) == {1: 1.0, 2: 0.0}  # clipped
    with pytest.raises(ValueError):
        fixed_range(graph, 1.0, 1.0)
    assert normalise(Channel("graph", graph, bounds=(0.0, 1.0))) == graph
    assert normalise(Channel("graph", graph)) == {1: 1.0, 2: 0.0, 3: 0.0}


def test_distribution_normalisation() -> None:
    assert distribution({1: 3.0}) == {1: 1.0}
    assert distribution({1: 3.0, 2: 3.0}) == {1: 1.0, 2: 1.0}
    got = distribution({1: 0.0, 2: 1.0})  # μ 0.5, σ 0.5 → range [-1, 2]
    assert got[1] == pytest.approx(1 / 3) and got[2] == pytest.approx(2 / 3)
    flipped = distribution({1: 0.0, 2: 1.0}, higher_is_better=False)
    assert flipped[1] == pytest.approx(2 / 3) and flipped[2] == pytest.approx(1 / 3)
    # An outlier does not squash the rest to ~0 as min-max does.
    values = {i: float(i % 5) for i in range(50)} | {99: 1000.0}
    assert minmax(values)[4] < 0.01 < distribution(values)[4]


def test_ranks_break_ties_by_node_id() -> None:
    assert ranks({5: 1.0, 3: 1.0, 9: 2.0}) == {9: 1, 3: 2, 5: 3}
    assert ranks({5: 1.0, 3: 1.0, 9: 2.0}, higher_is_better=False) == {3: 1, 5: 2, 9: 3}


# ---------------------------------------------------------------------- fusions


def test_weighted_sum_union_and_missing_channels() -> None:
    v = Channel("vector", {1: 0.1, 2: 0.3, 3: 0.5}, 1.0, higher_is_better=False)  # distances
    k = Channel("keyword", {2: 8.0, 4: 2.0}, 1.0)
    g = Channel("graph", {2: 1.0, 5: 0.5}, 0.5, bounds=(0.0, 1.0))
    out = fuse([v, k, g])
    by = {f.node: f for f in out}
    assert set(by) == {1, 2, 3, 4, 5}
    assert by[2].score == pytest.approx(0.5 + 1.0 + 0.5)
    assert by[1].score == pytest.approx(1.0)
    assert by[5].score == pytest.approx(0.25)  # a graph-only node still enters the union
    assert by[4].score == 0.0 and by[3].score == 0.0
    assert by[4].raw == {"keyword": 2.0} and "vector" not in by[4].normalised
    assert [f.node for f in out] == [2, 1, 5, 3, 4]  # 3 and 4 tie at 0: node id ascending
    assert by[2].contributions == {"vector": 0.5, "keyword": 1.0, "graph": 0.5}


def test_no_channels_and_empty_channels() -> None:
    assert fuse([]) == []
    assert fuse([Channel("vector", {}), Channel("keyword", {})]) == []
    only = fuse([Channel("vector", {}), Channel("keyword", {4: 1.5})])
    assert [(f.node, f.score) for f in only] == [(4, 1.0)]


def test_ties_break_by_node_id_and_k_truncates() -> None:
    c = Channel("keyword", {9: 1.0, 2: 1.0, 5: 1.0, 1: 0.0})
    assert [f.node for f in fuse([c])] == [2, 5, 9, 1]
    assert [f.node for f in fuse([c], k=2)] == [2, 5]
    assert fuse([c], k=0) == []


def test_rrf() -> None:
    v = Channel("vector", {1: 0.1, 2: 0.2, 3: 0.3}, higher_is_better=False)
    k = Channel("keyword", {3: 9.0, 1: 1.0})
    out = {f.node: f.score for f in fuse([v, k], "rrf")}
    assert out[1] == pytest.approx(1 / 61 + 1 / 62)
    assert out[2] == pytest.approx(1 / 62)
    assert out[3] == pytest.approx(1 / 63 + 1 / 61)
    tuned = {f.node: f.score for f in fuse([v, k], "rrf", rrf_k=0)}
    assert tuned[1] == pytest.approx(1 + 1 / 2)
    # Only order counts: rescaling a channel changes nothing.
    scaled = Channel("keyword", {3: 9000.0, 1: 1.0})
    assert [f.node for f in fuse([v, scaled], "rrf")] == [f.node for f in fuse([v, k], "rrf")]
    with pytest.raises(ValueError):
        fuse([v], "rrf", rrf_k=-1)


def test_dbsf_and_unknown_fusion() -> None:
    v = Channel("vector", {1: 0.1, 2: 0.2, 3: 0.9}, higher_is_better=False)
    out = fuse([v], "dbsf")
    assert [f.node for f in out] == [1, 2, 3] and all(0.0 <= f.score <= 1.0 for f in out)
    g = Channel("graph", {1: 0.5}, 0.5, bounds=(0.0, 1.0))
    assert {f.node: f.normalised.get("graph") for f in fuse([v, g], "dbsf")}[1] == 0.5  # range still applies
    with pytest.raises(ValueError, match="unknown fusion"):
        fuse([v], "borda")
    with pytest.raises(ValueError, match="names must differ"):
        fuse([v, v])
    with pytest.raises(ValueError, match="finite"):
        fuse([Channel("vector", {1: 1.0}, math.nan)])


def test_zero_weights_silence_a_channel() -> None:
    v = Channel("vector", {1: 0.1, 2: 0.9}, 0.0, higher_is_better=False)
    k = Channel("keyword", {1: 1.0, 2: 5.0})
    out = fuse([v, k])
    assert [f.node for f in out] == [2, 1] and out[0].score == 1.0
    assert out[1].normalised["vector"] == 1.0 and out[1].contributions["vector"] == 0.0


def test_explain_lists_every_channel() -> None:
    v = Channel("vector", {1: 0.1, 2: 0.3}, higher_is_better=False)
    g = Channel("graph", {1: 1.0}, 0.5, bounds=(0.0, 1.0))
    top = fuse([v, g])[0]
    assert explain(top, [v, g]) == "1.5000 = 1×v(norm) 1.000 + 0.5×g(norm) 1.000"
    low = fuse([v, g])[1]
    assert explain(low, [v, g]) == "0.0000 = 1×v(norm) 0.000 + 0.5×g(norm) -"
    assert "×v(rrf)" in explain(fuse([v], "rrf")[0], [v], "rrf")


# ---------------------------------------------------------------------- properties


@given(scores_st, st.booleans())
def test_minmax_in_unit_interval_with_a_best_of_one(scores: dict[int, float], higher: bool) -> None:
    norm = minmax(scores, higher)
    assert set(norm) == set(scores)
    assert all(0.0 <= x <= 1.0 for x in norm.values())
    if scores:
        assert max(norm.values()) == 1.0
        best = max(scores.values()) if higher else min(scores.values())
        assert all(norm[n] == 1.0 for n, s in scores.items() if s == best)


@given(scores_st, st.booleans())
def test_normalisations_keep_the_channel_order(scores: dict[int, float], higher: bool) -> None:
    for norm in (minmax(scores, higher), distribution(scores, higher)):
        for a, sa in scores.items():
            for b, sb in scores.items():
                if (sa > sb) == higher and sa != sb:
                    assert norm[a] >= norm[b]


@given(scores_st, scores_st, weight_st, weight_st, st.sampled_from(["minmax", "rrf", "dbsf"]))
@settings(max_examples=150)
def test_fusion_is_sorted_deterministic_and_covers_the_union(
    a: dict[int, float], b: dict[int, float], wa: float, wb: float, method: str
) -> None:
    channels = [Channel("vector", a, wa, higher_is_better=False), Channel("keyword", b, wb)]
    out = fuse(channels, method)
    assert {f.node for f in out} == set(a) | set(b)
    assert [(f.score, f.node) for f in out] == sorted(((f.score, f.node) for f in out), key=lambda t: (-t[0], t[1]))
    assert out == fuse(list(reversed(channels)), method) or [f.node for f in out] == [
        f.node for f in fuse(list(reversed(channels)), method)
    ]
    for f in out:
        assert f.score == pytest.approx(sum(f.contributions.values()))
        assert 0.0 <= f.score <= wa + wb + 1e-9


@given(scores_st, weight_st)
def test_zero_weight_channel_changes_no_score(scores: dict[int, float], w: float) -> None:
    base = Channel("keyword", scores, w)
    noise = Channel("vector", {n: float(n) for n in scores}, 0.0)
    with_noise = {f.node: f.score for f in fuse([base, noise])}
    alone = {f.node: f.score for f in fuse([base])}
    assert with_noise == pytest.approx(alone)


@given(scores_st.filter(lambda s: len(s) >= 2), st.floats(min_value=0.0, max_value=1e3, allow_nan=False))
def test_raising_a_raw_score_never_lowers_that_node(scores: dict[int, float], bump: float) -> None:
    """Monotonicity: a better raw score in one channel never lowers the node's fused score."""
    other = Channel("vector", {n: float(n % 7) for n in scores}, 1.0, higher_is_better=False)
    node = min(scores)
    before = {f.node: f.score for f in fuse([Channel("keyword", scores), other])}[node]
    raised = dict(scores)
    raised[node] = scores[node] + bump
    after = {f.node: f.score for f in fuse([Channel("keyword", raised), other])}[node]
    assert after >= before - 1e-12
    rrf_before = {f.node: f.score for f in fuse([Channel("keyword", scores), other], "rrf")}[node]
    rrf_after = {f.node: f.score for f in fuse([Channel("keyword", raised), other], "rrf")}[node]
    assert rrf_after >= rrf_before - 1e-12


@given(st.integers(min_value=0, max_value=6), st.floats(min_value=0.0, max_value=1.0))
def test_graph_range_normalisation_keeps_decay_powers(hops: int, decay: float) -> None:
    raw = {h: decay**h for h in range(hops + 1)}
    assert normalise(Channel("graph", raw, bounds=(0.0, 1.0))) == raw
