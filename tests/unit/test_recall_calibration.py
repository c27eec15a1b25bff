"""The calibration's sequential sample (workers/recall.py): a breadth clearly short of the target is
tried on the first queries only, one near it on them all, and the breadth chosen is the one the
whole sample at every breadth chooses."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.typing import NDArray

from drsg.workers import recall
from drsg.workers.recall import FIRST, Calibration, calibrate, exact_top

STEPS = (96, 128, 192, 256, 384)
#: neighbours found of 10 at each breadth (192: 9 for most queries, 10 for the rest, ~0.93 in all)
FOUND = {64: 5, 96: 6, 128: 7, 256: 10, 384: 10}


def run(first: int) -> tuple[Calibration, dict[int, int]]:
    """A calibration over 2,000 random vectors with a search that finds FOUND[ef] of each query's true
    10 (the rest wrong); how many queries it searched at each breadth."""
    rng = np.random.default_rng(7)
    vectors = rng.normal(size=(2000, 16)).astype(np.float32)
    ids = np.arange(2000, dtype=np.int64)

    def fetch(block: NDArray[np.int64]) -> NDArray[np.float32]:
        return vectors[block]

    searched: dict[int, int] = {}

    def search(queries: NDArray[np.float32], k: int, ef: int) -> NDArray[np.uint64]:
        searched[ef] = searched.get(ef, 0) + len(queries)
        truth = exact_top(ids, fetch, queries, k, "l2")
        rows = [FOUND.get(ef, 9 + (n % 3 == 0)) for n in range(len(queries))]
        wrong = 10_000 + np.arange(k)  # ids no vector has
        found = np.array([[*t[:right], *wrong[right:]] for t, right in zip(truth.tolist(), rows, strict=True)])
        return found.astype(np.uint64)

    saved = recall.FIRST
    recall.FIRST = first
    try:
        chosen = calibrate(
            ids, fetch, search, "l2", target=0.95, steps=STEPS, floor=64, k=10, sample=200, seed=1
        )  # fmt: skip
    finally:
        recall.FIRST = saved
    return chosen, searched


def test_a_breadth_clearly_short_is_tried_on_the_first_queries_only() -> None:
    chosen, searched = run(FIRST)
    assert chosen.ef == 256 and chosen.recall == 1.0
    # 64-128 find 5-7 of 10: clearly short on the first queries; 192 (~0.93) is near: all of them
    assert searched == {64: FIRST, 96: FIRST, 128: FIRST, 192: 200, 256: 200}


@pytest.mark.parametrize("first", [FIRST, 10**9])
def test_the_breadth_chosen_is_the_whole_samples(first: int) -> None:
    """The same choice as trying every breadth on all queries (FIRST past the sample: the old rule)."""
    assert run(first)[0] == run(10**9)[0]


def test_a_short_sample_is_judged_by_its_spread() -> None:
    right = np.arange(10)[None, :].repeat(64, axis=0)
    nine = right.copy()
    nine[:, -1] = -1
    assert recall.clearly_short(nine, right, 0.95)  # every query 0.9: the floor spread still says short
    mixed = nine.copy()
    mixed[::2] = right[::2]  # half 0.9, half 1.0: 0.95 on average, not short
    assert not recall.clearly_short(mixed, right, 0.95)
