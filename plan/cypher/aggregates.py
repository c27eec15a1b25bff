"""openCypher's aggregating functions as accumulators (pure): ``count``, ``count(*)``, ``sum``,
``avg``, ``min``, ``max``, ``collect``, ``stDev``, ``stDevP``.

The executor makes one accumulator per group and aggregate (:func:`make_aggregator`), feeds it each
row's argument value (``add``) and reads ``result()`` once the group is complete. Nulls are skipped
(``count(*)`` counts rows, nulls or not); ``DISTINCT`` keeps the first of each equivalence class.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable

from drsg.kernel.errors import QueryError
from drsg.plan.cypher.graph import CypherValue
from drsg.plan.cypher.values import arithmetic, group_key, is_number, order_key, type_name

#: the aggregating functions, lower-cased as the parser gives names (``count(*)`` is its own node)
AGGREGATES: frozenset[str] = frozenset({"count", "sum", "avg", "min", "max", "collect", "stdev", "stdevp"})


class Aggregator(ABC):
    """One group's running aggregate."""

    @abstractmethod
    def add(self, value: CypherValue) -> None: ...

    @abstractmethod
    def result(self) -> CypherValue: ...


class _CountRows(Aggregator):
    def __init__(self) -> None:
        self.rows = 0

    def add(self, value: CypherValue) -> None:
        self.rows += 1

    def result(self) -> CypherValue:
        return self.rows


class _Count(_CountRows):
    def add(self, value: CypherValue) -> None:
        if value is not None:
            self.rows += 1


def _number(name: str, value: CypherValue) -> int | float:
    if isinstance(value, int | float) and is_number(value):
        return value
    raise QueryError(f"{name}() needs numbers, got {type_name(value)}")


class _Sum(Aggregator):
    """Integers stay an integer (64-bit, checked as each is added); a float makes the sum a float."""

    def __init__(self) -> None:
        self.total: CypherValue = 0

    def add(self, value: CypherValue) -> None:
        if value is not None:
            self.total = arithmetic("+", self.total, _number("sum", value))

    def result(self) -> CypherValue:
        return self.total


class _Avg(Aggregator):
    def __init__(self) -> None:
        self.whole = 0  # integers summed exactly: an average of 64-bit integers cannot overflow
        self.floats: list[float] = []
        self.count = 0

    def add(self, value: CypherValue) -> None:
        if value is None:
            return
        number = _number("avg", value)
        if isinstance(number, int):
            self.whole += number
        else:
            self.floats.append(number)
        self.count += 1

    def result(self) -> CypherValue:
        if not self.count:
            return None
        if not self.floats:
            return self.whole / self.count
        return (self.whole + math.fsum(self.floats)) / self.count


class _Extreme(Aggregator):
    """``min``/``max`` by ORDER BY's order, so mixed types follow it (a number is above a string)."""

    def __init__(self, largest: bool) -> None:
        self.largest = largest
        self.best: CypherValue = None
        self.key: tuple[object, ...] | None = None

    def add(self, value: CypherValue) -> None:
        if value is None:
            return
        key = order_key(value)
        if self.key is None or (key > self.key if self.largest else key < self.key):
            self.best, self.key = value, key

    def result(self) -> CypherValue:
        return self.best


class _Collect(Aggregator):
    def __init__(self) -> None:
        self.items: list[CypherValue] = []

    def add(self, value: CypherValue) -> None:
        if value is not None:
            self.items.append(value)

    def result(self) -> CypherValue:
        return self.items


class _StDev(Aggregator):
    """Welford's running variance; ``stDev`` the sample's (n - 1), ``stDevP`` the population's."""

    def __init__(self, name: str, sample: bool) -> None:
        self.name, self.sample = name, sample
        self.count, self.mean, self.squares = 0, 0.0, 0.0

    def add(self, value: CypherValue) -> None:
        if value is None:
            return
        number = float(_number(self.name, value))
        self.count += 1
        delta = number - self.mean
        self.mean += delta / self.count
        self.squares += delta * (number - self.mean)

    def result(self) -> CypherValue:
        divisor = self.count - 1 if self.sample else self.count
        return math.sqrt(self.squares / divisor) if divisor > 0 else 0.0


class _Distinct(Aggregator):
    def __init__(self, inner: Aggregator) -> None:
        self.inner = inner
        self.seen: set[Hashable] = set()

    def add(self, value: CypherValue) -> None:
        if value is None:
            return
        key = group_key(value)
        if key not in self.seen:
            self.seen.add(key)
            self.inner.add(value)

    def result(self) -> CypherValue:
        return self.inner.result()


_MAKERS: dict[str, Callable[[], Aggregator]] = {
    "count": _Count,
    "count(*)": _CountRows,
    "sum": _Sum,
    "avg": _Avg,
    "min": lambda: _Extreme(largest=False),
    "max": lambda: _Extreme(largest=True),
    "collect": _Collect,
    "stdev": lambda: _StDev("stDev", sample=True),
    "stdevp": lambda: _StDev("stDevP", sample=False),
}


def make_aggregator(name: str, distinct: bool = False) -> Aggregator:
    """A fresh accumulator for ``name`` (lower-cased; ``"count(*)"`` counts rows), ``DISTINCT`` or not."""
    maker = _MAKERS.get(name.lower())
    if maker is None:
        raise QueryError(f"{name}() is not an aggregating function; use one of {', '.join(sorted(AGGREGATES))}")
    aggregator = maker()
    return _Distinct(aggregator) if distinct else aggregator
