"""Graph load on upstream's workload: ``import_jsonl`` beside Kùzu's ``COPY``, in the same run.

The graph is bench_cypher's (upstream's BENCHMARKS.md shape): N nodes keyed ``n{i}`` (label ``L``,
``x`` and ``g``), N × degree uniform random ``E`` edges, written once as JSONL (drsg) and CSV (Kùzu).
Each pass loads into a fresh database in a fresh subprocess; passes alternate drsg / Kùzu and the
median is reported as records (nodes + edges) per second. ``--profile FILE`` instead runs one drsg
import under cProfile and writes its stats to FILE (``python -m pstats FILE``).

    .venv/bin/python -m tests.bench.bench_load [--nodes 100000] [--degree 5] [--passes 3] [--no-kuzu]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import shutil
import statistics
import subprocess
import sys

from tests.bench import common
from tests.bench.bench_cypher import make_files

DRSG = r"""
import json, sys, time
import drsg
from drsg.store.jsonl import import_jsonl
db = drsg.open(sys.argv[1], map_size=4 << 30)
start = time.perf_counter()
if len(sys.argv) > 3:
    import cProfile
    cProfile.run("import_jsonl(db, sys.argv[2], 'startup')", sys.argv[3])
else:
    import_jsonl(db, sys.argv[2], "startup")
secs = time.perf_counter() - start
stats = db.stats()
db.close()
print(json.dumps({"secs": secs, "nodes": stats.nodes, "edges": stats.edges}))
"""

KUZU = r"""
import json, sys, time
from pathlib import Path
from tests.bench.bench_cypher import load_kuzu
conn, secs = load_kuzu(Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]))
print(json.dumps({"secs": secs}))
"""


def _run(args: list[str]) -> dict[str, float]:
    out = subprocess.run([sys.executable, "-c", *args], capture_output=True, text=True, cwd=common.REPO)
    if out.returncode != 0:
        raise SystemExit(f"a load failed ({out.returncode}):\n{out.stderr[-4000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=100_000)
    ap.add_argument("--degree", type=int, default=5)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--passes", type=int, default=3)
    ap.add_argument("--no-kuzu", action="store_true", help="time drsg alone")
    ap.add_argument("--profile", metavar="FILE", help="one drsg import under cProfile, stats to FILE")
    args = ap.parse_args()
    started = dt.datetime.now(dt.UTC)
    data = common.OUT / f"load-{args.nodes}-{args.degree}-{args.seed}"
    if not (data / "edges.csv").exists():
        data.mkdir(parents=True, exist_ok=True)
        make_files(data, args.nodes, args.degree, args.seed)
    jsonl, nodes_csv, edges_csv = data / "graph.jsonl", data / "nodes.csv", data / "edges.csv"
    records = args.nodes * (1 + args.degree)
    if args.profile:
        work = common.fresh_dir("load-run")
        print(_run([DRSG, str(work / "g.drsg"), str(jsonl), args.profile]))
        return
    drsg_secs: list[float] = []
    kuzu_secs: list[float] = []
    for _ in range(args.passes):
        work = common.fresh_dir("load-run")
        got = _run([DRSG, str(work / "g.drsg"), str(jsonl)])
        assert (got["nodes"], got["edges"]) == (args.nodes, args.nodes * args.degree), got
        drsg_secs.append(got["secs"])
        if not args.no_kuzu:
            shutil.rmtree(work, ignore_errors=True)
            work.mkdir(parents=True)
            kuzu_secs.append(_run([KUZU, str(work), str(nodes_csv), str(edges_csv)])["secs"])
        print(f"pass: drsg {drsg_secs[-1]:.2f} s, Kùzu {kuzu_secs[-1] if kuzu_secs else float('nan'):.2f} s")
    drsg_rate = records / statistics.median(drsg_secs)
    lines = [
        f"{args.nodes:,} nodes + {args.nodes * args.degree:,} edges, {args.passes} interleaved passes, medians, "
        "each load a fresh database in a fresh process.",
        "",
        "| load | records/s | seconds (each pass) |",
        "|---|---|---|",
        f"| drsg `import_jsonl` | {drsg_rate:,.0f} | {', '.join(f'{s:.2f}' for s in drsg_secs)} |",
    ]
    if kuzu_secs:
        kuzu_rate = records / statistics.median(kuzu_secs)
        lines.append(f"| Kùzu `COPY` (CSV) | {kuzu_rate:,.0f} | {', '.join(f'{s:.2f}' for s in kuzu_secs)} |")
        lines += ["", f"drsg / Kùzu: {common.ratio(drsg_rate, kuzu_rate):.2f}×"]
    common.append_section("Graph load, upstream's workload", started, lines, write=True)


if __name__ == "__main__":
    main()
