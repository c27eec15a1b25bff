"""(#37 item 4) drsg's vector index build and top-10 beside raw hnswlib, and beside another tree's drsg.

bench_peers' two vector engines on its workload (SplitMix64, 128-d, cosine, k=10): ``drsg-vector``
(the writes, then ``IndexSet.catch_up()`` timed as the build — reading the nodes, adding them,
calibrating — then ``Searcher.vector`` per query, records included) and ``hnswlib`` (one
``add_items`` on all cores, then ``knn_query`` at each breadth drsg may choose). With ``--tree`` the
drsg engine also runs on the code in that folder (laid out as the package, as bench_startup's
``--tree``), so a change is measured before and after in one run. Every engine runs in a fresh
process per pass, passes interleaved and rotated; figures are medians of the passes, and the ratios
are per pass (drsg against raw hnswlib of the same pass), then their median.

    .venv/bin/python -m tests.bench.bench_vector_build --tree OLD --passes 5
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from tests.bench import bench_peers, common

_OTHER = """import runpy, sys
sys.meta_path[:] = [f for f in sys.meta_path if "__editable__" not in str(f)]
sys.path.insert(0, {tree!r})
sys.argv = ["bench_peers", "--child", "drsg-vector", "--dir", {out!r}, "--nodes", "0"]
runpy.run_module("tests.bench.bench_peers", run_name="__main__")
"""


def run(engine: str, out: Path, tree: str | None) -> dict[str, Any]:
    if tree is None:
        return bench_peers.run_child(engine, out, 0)
    cmd = [sys.executable, "-c", _OTHER.format(tree=tree, out=str(out))]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=common.REPO, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{engine} on {tree} failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def at_equal_recall(mine: dict[str, Any], raw: dict[str, Any]) -> tuple[float, int] | None:
    """drsg's top-10 over raw hnswlib's at the narrowest breadth reaching drsg's recall (less 0.005)."""
    fit = [s for s in raw["sweep"] if s["recall"] >= mine["recall"] - 0.005]
    return (mine["topk_us"] / fit[0]["topk_us"], int(fit[0]["ef"])) if fit else None


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--vectors", type=int, default=10_000)
    parser.add_argument("--vector-queries", type=int, default=500)
    parser.add_argument("--passes", type=int, default=5)
    parser.add_argument("--tree", help="a package tree whose drsg runs beside this checkout's (see the docstring)")
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args()
    started = dt.datetime.now(dt.UTC)
    out = common.fresh_dir("vector_build")
    # bench_peers' default draws (100,000 nodes' edges, then the vectors, 10,000 keys, the queries)
    np.savez(out / "workload.npz", **bench_peers.workload(100_000, args.vectors, 10_000, args.vector_queries))
    columns: dict[str, tuple[str, str | None]] = {"drsg": ("drsg-vector", None), "hnswlib": ("hnswlib", None)}
    if args.tree:
        columns["drsg --tree"] = ("drsg-vector", args.tree)
    names = list(columns)
    results: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
    for p in range(args.passes):
        for name in names[p % len(names) :] + names[: p % len(names)]:
            engine, tree = columns[name]
            t = time.perf_counter()
            results[name].append(run(engine, out / f"pass{p}-{name.replace(' ', '')}", tree))
            print(f"pass {p + 1}/{args.passes} {name}: {time.perf_counter() - t:.1f} s", file=sys.stderr, flush=True)
    raw = results["hnswlib"]
    lines = [
        f"Workload: bench_peers' vectors ({args.vectors:,} × 128-d, SplitMix64 seed {bench_peers.SEED}, the draws of "
        "its default sizes), "
        f"{args.vector_queries:,} queries, k={bench_peers.K}, cosine. {args.passes} passes, interleaved and "
        "rotated, each engine in a fresh process; figures are medians of the passes, ratios the median of "
        "each pass's ratio to raw hnswlib of the same pass.",
        "",
        "| engine | build | build vs raw hnswlib (≥ 1 is drsg ahead) | top-10 p50 | recall@10 | "
        "top-10 vs raw at equal recall (≤ 1 is drsg ahead) |",
        "|---|---|---|---|---|---|",
    ]
    for name in names:
        mine = results[name]
        build = statistics.median(r["build_per_s"] for r in mine)
        topk = statistics.median(r["topk_us"] for r in mine)
        recall = statistics.median(r["recall"] for r in mine)
        if name == "hnswlib":
            lines.append(
                f"| raw hnswlib | {bench_peers.rate(build)} | 1.00× | {bench_peers.micros(topk)} at ef 64 | "
                f"{recall:.3f} | per ef: "
                + ", ".join(
                    f"{s['ef']}: {bench_peers.micros(statistics.median(r['sweep'][i]['topk_us'] for r in raw))} "
                    f"({statistics.median(r['sweep'][i]['recall'] for r in raw):.3f})"
                    for i, s in enumerate(raw[0]["sweep"])
                )
                + " |"
            )
            continue
        builds = [m["build_per_s"] / r["build_per_s"] for m, r in zip(mine, raw, strict=True)]
        equal = [x for m, r in zip(mine, raw, strict=True) if (x := at_equal_recall(m, r))]
        same = (
            f"{statistics.median(x for x, _ in equal):.2f}× (per pass "
            + ", ".join(f"{x:.2f} at ef {ef}" for x, ef in equal)
            + ")"
            if equal
            else "— (no raw breadth reached drsg's recall)"
        )
        lines.append(
            f"| {name} | {bench_peers.rate(build)} | {statistics.median(builds):.2f}× (per pass "
            + ", ".join(f"{b:.2f}" for b in builds)
            + f") | {bench_peers.micros(topk)} | {recall:.3f} | {same} |"
        )
    lines.append("")
    from importlib.metadata import version

    lines.append(f"- `--tree`: {args.tree or '—'}. hnswlib {version('hnswlib')}, M=16, ef_construction=200.")
    common.append_section("(#37 item 4) vector build and top-10 beside raw hnswlib", started, lines, not args.no_record)


if __name__ == "__main__":
    main()
