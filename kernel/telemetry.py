"""Process-wide counters and histograms any layer bumps with one line, and the Prometheus text
format (0.0.4) a scrape reads them in.

The kernel imports nothing of drsg, so the model clients (``models/``), the fetch guard
(``pipeline/fetch``) and the JSON-RPC dispatcher (``surfaces/server``) all count here without
importing the server; ``surfaces/server/metrics_route.py`` renders them at ``GET /metrics`` beside
the gauges it reads at scrape time (the head, the disk, the indexes' and the feeds' lag).

:data:`FAMILIES` is the one table of metric names: docs/metrics.md documents every one of them
(``tests/unit/test_telemetry.py`` holds that).

An increment takes no lock: each thread counts into its own shard (a dict only that thread
writes), and a scrape adds the shards up, copying each in one C-level call (atomic under the GIL).
"""

from __future__ import annotations

import bisect
import math
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

Labels = tuple[str, ...]
V = TypeVar("V")

#: latency buckets (seconds): 1 ms … 60 s, about three per decade
SECONDS_BUCKETS: tuple[float, ...] = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)


@dataclass(frozen=True)
class Family:
    """One metric: its name (``drsg_…``), its type (counter, gauge, histogram), what it means and
    its label names."""

    name: str
    kind: str
    help: str
    labels: tuple[str, ...] = ()

    def header(self) -> str:
        help_text = self.help.replace("\\", "\\\\").replace("\n", "\\n")
        return f"# HELP {self.name} {help_text}\n# TYPE {self.name} {self.kind}\n"

    def sample(self, labels: Labels, value: float, suffix: str = "", extra: str = "") -> str:
        """One sample line; ``extra`` is a label already written (a histogram's ``le``)."""
        pairs = [f'{name}="{_escape(value_)}"' for name, value_ in zip(self.labels, labels, strict=True)]
        if extra:
            pairs.append(extra)
        shown = "{" + ",".join(pairs) + "}" if pairs else ""
        return f"{self.name}{suffix}{shown} {number(value)}\n"

    def text(self, samples: Iterable[tuple[Labels, float]]) -> str:
        """A counter's or a gauge's block: the header, then one line per labelled value."""
        return self.header() + "".join(self.sample(labels, value) for labels, value in samples)


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def number(value: float) -> str:
    """A sample value as the text format writes it (whole numbers without a fraction)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if float(value).is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(float(value))


class _Shards(Generic[V]):
    """Per-thread dicts: a thread writes only its own, so counting needs no lock."""

    def __init__(self) -> None:
        self._local = threading.local()
        self._all: list[dict[Labels, V]] = []
        self._lock = threading.Lock()  # taken once per thread, when it first counts

    def mine(self) -> dict[Labels, V]:
        try:
            return self._local.shard  # type: ignore[no-any-return]  # threading.local holds what mine() put
        except AttributeError:
            shard: dict[Labels, V] = {}
            with self._lock:
                self._all.append(shard)
            self._local.shard = shard
            return shard

    def copies(self) -> list[dict[Labels, V]]:
        with self._lock:
            shards = list(self._all)
        return [shard.copy() for shard in shards]

    def clear(self) -> None:
        with self._lock:
            for shard in self._all:
                shard.clear()


class Counter:
    """A monotonic count per label values."""

    def __init__(self, family: Family) -> None:
        self.family = family
        self._shards: _Shards[float] = _Shards()

    def inc(self, labels: Labels = (), amount: float = 1) -> None:
        shard = self._shards.mine()
        shard[labels] = shard.get(labels, 0) + amount

    def values(self) -> dict[Labels, float]:
        total: dict[Labels, float] = {}
        for shard in self._shards.copies():
            for labels, value in shard.items():
                total[labels] = total.get(labels, 0) + value
        return total

    def text(self) -> str:
        return self.family.text(sorted(self.values().items()))


class Histogram:
    """Observations per label values in fixed buckets: each shard keeps, per labels, one count per
    bucket (the last is +Inf, not cumulative) and the sum."""

    def __init__(self, family: Family, bounds: Sequence[float] = SECONDS_BUCKETS) -> None:
        self.family = family
        self.bounds = tuple(bounds)
        self._shards: _Shards[list[float]] = _Shards()

    def observe(self, labels: Labels, value: float) -> None:
        shard = self._shards.mine()
        cells = shard.get(labels)
        if cells is None:
            cells = shard[labels] = [0.0] * (len(self.bounds) + 2)
        cells[bisect.bisect_left(self.bounds, value)] += 1  # the first bucket whose bound is >= value
        cells[-1] += value

    def values(self) -> dict[Labels, list[float]]:
        total: dict[Labels, list[float]] = {}
        for shard in self._shards.copies():
            for labels, cells in shard.items():
                cells = list(cells)
                into = total.setdefault(labels, [0.0] * len(cells))
                total[labels] = [a + b for a, b in zip(into, cells, strict=True)]
        return total

    def text(self) -> str:
        family, lines = self.family, [self.family.header()]
        for labels, cells in sorted(self.values().items()):
            running = 0.0
            for bound, count in zip((*self.bounds, math.inf), cells, strict=False):
                running += count
                le = "+Inf" if math.isinf(bound) else repr(float(bound))  # "1.0", as Prometheus' clients write it
                lines.append(family.sample(labels, running, "_bucket", f'le="{le}"'))
            lines.append(family.sample(labels, cells[-1], "_sum"))
            lines.append(family.sample(labels, running, "_count"))
        return "".join(lines)


def _counter(name: str, help_text: str, *labels: str) -> Counter:
    return Counter(Family(name, "counter", help_text, labels))


def _gauge(name: str, help_text: str, *labels: str) -> Family:
    return Family(name, "gauge", help_text, labels)


# --------------------------------------------------------------------------- what the process counts

RPC_CALLS = _counter("drsg_rpc_calls_total", "JSON-RPC calls answered, by method and outcome", "method", "outcome")
RPC_SECONDS = Histogram(
    Family("drsg_rpc_call_seconds", "histogram", "time to answer a JSON-RPC call, by method", ("method",))
)
HTTP_REQUESTS = _counter("drsg_http_requests_total", "HTTP requests answered, by route and status", "route", "status")
HTTP_SECONDS = Histogram(
    Family("drsg_http_request_seconds", "histogram", "time to answer an HTTP request, by route", ("route",))
)
MODEL_CALLS = _counter("drsg_model_calls_total", "answers from a chat or embedding model", "kind", "provider")
MODEL_TOKENS = _counter(
    "drsg_model_tokens_total", "tokens the model services reported using", "kind", "provider", "direction"
)
FETCH_REFUSED = _counter("drsg_fetch_refused_total", "fetches the fetch guard refused, by reason", "reason")

# --------------------------------------------------------------------------- what a scrape reads (the server)

COMMITS = Family("drsg_commits_total", "counter", "commits in the log (the head seq)")
HEAD = _gauge("drsg_head_seq", "the seq of the last commit")
DISK_BYTES = _gauge("drsg_disk_bytes", "bytes on disk: the database file and the index sidecars", "part")
INDEX_LAG = _gauge("drsg_index_lag_commits", "commits an index has not applied yet", "plane", "kind", "label", "prop")
FEED_SUBSCRIBERS = _gauge("drsg_feed_subscribers", "open change-feed subscriptions", "transport")
FEED_LAG = _gauge("drsg_feed_lag_max_commits", "commits the furthest-behind subscriber has yet to receive", "transport")
START_TIME = _gauge("drsg_process_start_time_seconds", "when this drsg serve started (Unix time)")

#: every metric drsg exposes, by name
FAMILIES: dict[str, Family] = {
    f.name: f
    for f in (
        COMMITS,
        HEAD,
        DISK_BYTES,
        INDEX_LAG,
        FEED_SUBSCRIBERS,
        FEED_LAG,
        START_TIME,
        *(m.family for m in (RPC_CALLS, RPC_SECONDS, HTTP_REQUESTS, HTTP_SECONDS, MODEL_CALLS, MODEL_TOKENS)),
        FETCH_REFUSED.family,
    )
}
#: the families counted in-process, in the order a scrape shows them
COUNTED: tuple[Counter | Histogram, ...] = (
    RPC_CALLS,
    RPC_SECONDS,
    HTTP_REQUESTS,
    HTTP_SECONDS,
    MODEL_CALLS,
    MODEL_TOKENS,
    FETCH_REFUSED,
)


def model_call(kind: str, provider: str) -> None:
    """One answer from a model (``kind`` chat or embed; ``provider`` its preset's name, never a URL)."""
    MODEL_CALLS.inc((kind, provider))


def model_tokens(kind: str, provider: str, prompt_tokens: int, completion_tokens: int = 0) -> None:
    """The tokens a model service reported for one answer."""
    if prompt_tokens:
        MODEL_TOKENS.inc((kind, provider, "prompt"), prompt_tokens)
    if completion_tokens:
        MODEL_TOKENS.inc((kind, provider, "completion"), completion_tokens)


#: why the fetch guard refused (the ``reason`` label): a URL it does not fetch (not http(s), malformed,
#: a look-alike host), a loopback name, an address literal it refuses, a name resolving only to
#: refused addresses, an address refused as the socket connects
FETCH_REASONS = ("url", "loopback_name", "address", "resolved", "connect")


def fetch_refused(reason: str) -> None:
    """One fetch the guard refused; ``reason`` is one of :data:`FETCH_REASONS`."""
    if reason not in FETCH_REASONS:
        raise ValueError(f"unknown fetch refusal reason {reason!r}; use one of {', '.join(FETCH_REASONS)}")
    FETCH_REFUSED.inc((reason,))
