"""The process-wide counters and histograms (drsg.kernel.telemetry): counted without a lock yet
exact across threads, rendered in the text format Prometheus' own parser reads back to the same
values, and every metric name documented in docs/metrics.md."""

from __future__ import annotations

import re
import threading
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from drsg.kernel import telemetry
from drsg.kernel.telemetry import Counter, Family, Histogram

DOCS = Path(__file__).resolve().parents[2] / "docs" / "metrics.md"


def parsed(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_counts_from_many_threads_are_exact() -> None:
    counter = Counter(Family("t_calls_total", "counter", "calls", ("who",)))
    histogram = Histogram(Family("t_seconds", "histogram", "time", ("who",)), bounds=(0.5, 1.0))
    start = threading.Barrier(8)

    def work(n: int) -> None:
        start.wait()
        for i in range(5000):
            counter.inc((f"w{n % 2}",))
            histogram.observe(("all",), (i % 3) / 2)  # 0, 0.5, 1.0

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert counter.values() == {("w0",): 20000, ("w1",): 20000}
    samples = parsed(counter.text() + histogram.text())
    assert samples[("t_calls_total", (("who", "w0"),))] == 20000
    halves = [8 * sum(1 for i in range(5000) if i % 3 == n) for n in range(3)]  # how many 0, 0.5 and 1.0
    assert samples[("t_seconds_bucket", (("le", "0.5"), ("who", "all")))] == halves[0] + halves[1]  # le is inclusive
    assert samples[("t_seconds_bucket", (("le", "1.0"), ("who", "all")))] == 40000
    assert samples[("t_seconds_bucket", (("le", "+Inf"), ("who", "all")))] == 40000
    assert samples[("t_seconds_count", (("who", "all"),))] == 40000
    assert samples[("t_seconds_sum", (("who", "all"),))] == pytest.approx(halves[1] * 0.5 + halves[2] * 1.0)


def test_label_values_are_escaped_and_read_back() -> None:
    counter = Counter(Family("t_odd_total", "counter", "help with a \\ and\na newline", ("v",)))
    odd = 'a "quoted" \\ back\nslash'
    counter.inc((odd,), 2.5)
    assert parsed(counter.text()) == {("t_odd_total", (("v", odd),)): 2.5}


def test_a_gauge_block_and_numbers() -> None:
    text = telemetry.HEAD.text([((), 42)]) + telemetry.DISK_BYTES.text([(("file",), 1 << 40)])
    assert "drsg_head_seq 42\n" in text and 'drsg_disk_bytes{part="file"} 1099511627776\n' in text
    assert parsed(text)[("drsg_disk_bytes", (("part", "file"),))] == 1 << 40
    assert [telemetry.number(v) for v in (3, 0.25, float("inf"), float("nan"))] == ["3", "0.25", "+Inf", "NaN"]


def test_a_fetch_refusal_reason_comes_from_the_list() -> None:
    before = telemetry.FETCH_REFUSED.values().get(("resolved",), 0)
    telemetry.fetch_refused("resolved")
    assert telemetry.FETCH_REFUSED.values()[("resolved",)] == before + 1
    with pytest.raises(ValueError, match="unknown fetch refusal reason 'made-up'; use one of url, "):
        telemetry.fetch_refused("made-up")


def test_every_metric_is_documented_with_its_type_and_labels() -> None:
    text = DOCS.read_text()
    rows = {m[0]: m[1:] for m in re.findall(r"^\| `(drsg_\w+)` \| (\w+) \|([^|]*)\|", text, re.M)}
    assert set(rows) == set(telemetry.FAMILIES), "docs/metrics.md lists exactly the metrics drsg exposes"
    for name, family in telemetry.FAMILIES.items():
        kind, labels = rows[name]
        assert kind == family.kind, name
        assert re.findall(r"`(\w+)`", labels) == list(family.labels), name
