"""Vector search at the breadth calibrated to `[index] recall_target`, beside raw hnswlib (#37 item 4).

For each set — uniform random 128-d vectors (upstream's benchmark data) and GloVe 6B 50-d word
vectors — a vector index worker (workers/vector.py) is filled with N vectors (one bulk
``add_items`` into its hnswlib index, M 16, ef_construction 200), then calibrates (``flush``: the
measurement a build runs). On Q fresh queries (vectors never indexed, not the calibration's):
recall@10 against exact numpy search and single-query latency of the worker's search at its chosen
ef, beside raw ``hnswlib.knn_query`` on the same graph at the same ef in the same run, and the
recall the old fixed ef 64 gave.

    python -m tests.bench.bench_recall [--n 50000] [--queries 1000] [--target 0.95] [--no-record]
"""

from __future__ import annotations

import argparse
import datetime as dt
import tempfile
import time

import numpy as np

from drsg.store.records import IndexDecl
from drsg.workers.recall import exact_top, recall_at
from drsg.workers.vector import VectorIndex
from tests.bench import common
from tests.support.glove import rows

K = 10


def run_set(name: str, data: np.ndarray, n: int, target: float, folder: str) -> list[str]:
    decl = IndexDecl(1, "vector", "V", "embedding", {"metric": "cosine", "dims": int(data.shape[1])})
    worker = VectorIndex(decl, f"{folder}/{name}", "bench", recall_target=target)
    index = worker.index
    assert index is not None
    began = time.perf_counter()
    index.resize_index(n)
    index.add_items(data[:n], np.arange(n))
    worker.live = set(range(n))
    built = time.perf_counter() - began
    began = time.perf_counter()
    worker.flush()
    calibrated = time.perf_counter() - began
    done = worker.calibration
    assert done is not None
    fresh = np.ascontiguousarray(data[n:], dtype=np.float32)
    ids = np.arange(n, dtype=np.int64)
    truth = exact_top(ids, lambda b: data[b], fresh, K, "cosine")

    def timed(search: object) -> tuple[np.ndarray, list[float]]:
        found, took = [], []
        for q in fresh:
            t = time.perf_counter()
            found.append(search(q))  # type: ignore[operator]  # a closure over one of two searches
            took.append((time.perf_counter() - t) * 1e6)
        return np.stack(found), took

    mine, mine_us = timed(lambda q: worker.search_arrays(q, K)[0])
    index.set_ef(worker.ef)
    raw, raw_us = timed(lambda q: index.knn_query(q.reshape(1, -1), k=K)[0][0].astype(np.int64))
    old, _ = timed(lambda q: worker.search_arrays(q, K, ef=64)[0])
    p50, raw50 = common.pct(mine_us, 50), common.pct(raw_us, 50)
    return [
        f"| {name} | {n:,} × {data.shape[1]} | {target} | {done.ef} | {done.recall:.3f} | "
        f"{recall_at(mine, truth):.3f} | {recall_at(raw, truth):.3f} | {recall_at(old, truth):.3f} | "
        f"{p50:.0f} / {common.pct(mine_us, 99):.0f} µs | {raw50:.0f} / {common.pct(raw_us, 99):.0f} µs | "
        f"{common.ratio(p50, raw50):.2f}× | {built:.1f} s | {calibrated:.2f} s |"
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=50_000, help="vectors indexed per set")
    parser.add_argument("--queries", type=int, default=1000, help="fresh queries per set")
    parser.add_argument("--target", type=float, default=0.95)
    parser.add_argument("--no-record", action="store_true", help="print only; leave RESULTS.md alone")
    args = parser.parse_args()
    started = dt.datetime.now(dt.UTC)
    total = args.n + args.queries
    sets = {
        "uniform random": np.random.default_rng(37).random((total, 128), dtype=np.float32),
        "GloVe 6B 50-d": rows(0, total),
    }
    lines = [
        "| set | vectors | target | chosen ef | calibration recall@10 | recall@10 fresh (drsg) | "
        "recall@10 fresh (raw hnswlib, same ef) | recall@10 fresh at old ef 64 | drsg p50 / p99 | "
        "raw p50 / p99 | drsg / raw p50 | build | calibration |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    with tempfile.TemporaryDirectory() as folder:
        for name, data in sets.items():
            lines += run_set(name, data, args.n, args.target, folder)
    lines += [
        "",
        f"- {args.queries} fresh queries per set (vectors never indexed), cosine, k = {K}; exact = numpy "
        "brute force. Raw hnswlib searches the same graph at the worker's chosen ef; build is one bulk "
        "add_items (all cores); calibration is the worker's flush (200 queries, exact search over "
        "every vector, breadths 64, 96, 128, … until the target).",
    ]
    common.append_section("(#37 item 4) vector recall target: calibrated ef", started, lines, not args.no_record)


if __name__ == "__main__":
    main()
