"""The C core of fusion (``drsg.workers._fusion``) against numpy, at sizes and ids the property test
(tests/property/test_fusion_reference.py, small channels) does not reach: big graph-sized channels,
ids that collide in a naive hash, negative and extreme ids, NaN shares; and its argument checks."""

from __future__ import annotations

import numpy as np
import pytest

from drsg.workers import _fusion
from drsg.workers.fusion import Channel, Ranking

Arrays = tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray], list[float]]


def numpy_rank(ids: list[np.ndarray], shares: list[np.ndarray], weights: list[float]) -> tuple[np.ndarray, np.ndarray]:
    """The fused order by numpy alone: totals accumulated channel by channel from 0.0, then total
    descending (NaN last), ties by ascending id."""
    every = np.concatenate(ids) if ids else np.empty(0, dtype=np.int64)
    nodes = np.unique(every)
    totals = np.zeros(len(nodes))
    for channel_ids, share, weight in zip(ids, shares, weights, strict=True):
        at = nodes.searchsorted(channel_ids)
        totals[at] += share if weight == 1.0 else weight * share
    order = np.lexsort((nodes, np.isnan(totals), -totals))
    return nodes[order], totals[order]


def run(ids: list[np.ndarray], shares: list[np.ndarray], weights: list[float]) -> tuple[np.ndarray, np.ndarray]:
    values = [s * 3.0 for s in shares]  # raw scores: anything, checked by gathering below
    nodes_b, totals_b, where_b, raw_b, share_b = _fusion.rank(ids, values, shares, weights)
    nodes, totals = np.frombuffer(nodes_b, np.int64), np.frombuffer(totals_b, np.float64)
    n = len(nodes)
    where = np.frombuffer(where_b, np.int64).reshape(len(ids), n)
    raw = np.frombuffer(raw_b, np.float64).reshape(len(ids), n)
    share = np.frombuffer(share_b, np.float64).reshape(len(ids), n)
    for c, channel_ids in enumerate(ids):  # every position points back at the node, raw and share
        seen = where[c] >= 0
        assert np.array_equal(channel_ids[where[c][seen]], nodes[seen])
        assert seen.sum() == len(channel_ids)
        assert np.array_equal(raw[c][seen], values[c][where[c][seen]], equal_nan=True)
        assert np.array_equal(share[c][seen], shares[c][where[c][seen]], equal_nan=True)
        assert np.isnan(raw[c][~seen]).all() and np.isnan(share[c][~seen]).all()
    return nodes, totals


@pytest.mark.parametrize(
    "make_ids",
    [
        lambda rng, n: rng.choice(10 * n, n, replace=False),  # a search pool: scattered ids
        lambda rng, n: np.arange(n) << 32,  # equal low bits: a naive modulo hash would put all in one bucket
        lambda rng, n: np.arange(n) * 4096,
        lambda rng, n: np.arange(-n // 2, n - n // 2) * 7,  # negative ids
        lambda rng, n: np.concatenate([[np.iinfo(np.int64).min, np.iinfo(np.int64).max], np.arange(n - 2)]),
    ],
)
def test_big_channels_match_numpy_bit_for_bit(make_ids) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(7)
    sizes = [50_000, 100, 3_000]  # a 2-hop graph channel, a vector pool, a keyword pool
    ids = [make_ids(rng, n).astype(np.int64) for n in sizes]
    ids[1] = ids[0][rng.choice(len(ids[0]), 100, replace=False)]  # overlaps: sums of several terms
    ids[2] = np.concatenate([ids[0][:1000], np.setdiff1d(ids[2], ids[0][:1000])[:2000]])  # ids once per channel
    shares = [rng.choice([0.0, 0.5, 1.0], len(i)) if c == 0 else rng.random(len(i)) for c, i in enumerate(ids)]
    weights = [0.5, 1.0, 0.3]
    nodes, totals = run(ids, shares, weights)
    want_nodes, want_totals = numpy_rank(ids, shares, weights)
    assert np.array_equal(nodes, want_nodes)
    assert totals.tobytes() == want_totals.tobytes()


def test_nan_shares_sort_last_and_ties_go_by_id() -> None:
    ids = [np.array([5, 3, 9, 1], dtype=np.int64)]
    shares = [np.array([np.nan, 0.5, 0.5, np.nan])]
    nodes, totals = run(ids, shares, [1.0])
    assert nodes.tolist() == [3, 9, 1, 5]
    assert totals[:2].tolist() == [0.5, 0.5] and np.isnan(totals[2:]).all()


def test_no_channels_and_empty_channels() -> None:
    assert _fusion.rank([], [], [], []) == (b"", b"", b"", b"", b"")
    empty = np.empty(0, dtype=np.int64), np.empty(0)
    nodes, _ = run([empty[0], np.array([4, 2], dtype=np.int64)], [empty[1], np.array([1.0, 1.0])], [1.0, 1.0])
    assert nodes.tolist() == [2, 4]


def test_entries_lead_names_and_slices() -> None:
    v = Channel("vector", (np.array([1, 2]), np.array([0.1, 0.3])), higher_is_better=False, best_first=True)
    k = Channel("keyword", (np.array([2, 3]), np.array([5.0, 1.0])), 0.5, best_first=True)
    ranking = Ranking([v, k])
    ranked = ranking._ranked
    rows = _fusion.entries(ranked, ("vector", "keyword"), ("graph", "vector", "keyword"), 0, 10)
    assert [(r[0], r[1]) for r in rows] == [(1, 1.0), (2, 0.5), (3, 0.0)]
    assert list(rows[0][2]) == ["graph", "vector", "keyword"]
    assert rows[0][2] == {"graph": None, "vector": 0.1, "keyword": None}
    assert rows[2][3] == {"graph": None, "vector": None, "keyword": 0.0}
    second = (2, 0.5, {"vector": 0.3, "keyword": 5.0}, {"vector": 0.0, "keyword": 1.0})
    assert _fusion.entries(ranked, ("vector", "keyword"), (), 1, 2) == [second]
    assert _fusion.entries(ranked, ("vector", "keyword"), (), 5, 9) == []


def test_bad_arguments_raise_not_crash() -> None:
    ids, scores = np.array([1, 2], dtype=np.int64), np.array([0.5, 1.0])
    with pytest.raises(TypeError, match="ids must be a 1-d array of 8-byte integers"):
        _fusion.rank([ids.astype(np.float64)], [scores], [scores], [1.0])
    with pytest.raises(TypeError, match="shares must be a 1-d array of 8-byte floats"):
        _fusion.rank([ids], [scores], [ids], [1.0])
    with pytest.raises(TypeError, match="values must be a 1-d array"):
        _fusion.rank([ids], [np.ones((2, 1))], [scores], [1.0])
    with pytest.raises(ValueError, match="as many values and shares as node ids"):
        _fusion.rank([ids], [scores[:1]], [scores], [1.0])
    with pytest.raises(ValueError, match="for every channel"):
        _fusion.rank([ids], [scores], [scores], [])
    with pytest.raises(TypeError):
        _fusion.rank([ids], [scores], [scores], ["heavy"])
    with pytest.raises(TypeError, match="four sequences"):
        _fusion.rank(ids, None, [scores], [1.0])
    assert _fusion.entries((b"", b"", b"", b"", b""), ("vector",), (), 0, 1) == []
    with pytest.raises(ValueError, match="rank\\(\\)'s result"):  # a node without its channel rows
        _fusion.entries((b"\0" * 8, b"\0" * 8, b"", b"", b""), ("vector",), (), 0, 1)


def test_channels_of_strided_views_rank_as_copies() -> None:
    ids, scores = np.arange(10, dtype=np.int64), np.linspace(0.0, 1.0, 10)
    view = Channel("keyword", (ids[::-2], scores[::-2]), best_first=True)  # a reversed, strided view
    copy = Channel("keyword", (ids[::-2].copy(), scores[::-2].copy()), best_first=True)
    assert list(Ranking([view]).entries()) == list(Ranking([copy]).entries())
    assert [node for node, *_ in Ranking([view]).entries()] == [9, 7, 5, 3, 1]
