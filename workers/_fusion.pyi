from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

def rank(
    ids: Sequence[NDArray[np.int64]],
    values: Sequence[NDArray[np.float64]],
    shares: Sequence[NDArray[np.float64]],
    weights: Sequence[float],
) -> tuple[bytes, bytes, bytes, bytes, bytes]: ...
def entries(
    ranked: tuple[bytes, bytes, bytes, bytes, bytes],
    names: tuple[str, ...],
    lead: tuple[str, ...],
    start: int,
    stop: int,
) -> list[tuple[int, float, dict[str, float | None], dict[str, float | None]]]: ...
