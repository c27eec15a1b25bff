"""How much of a graph load a writer thread could overlap (#37): the import's own work and LMDB's
puts of its entries, each alone and both at once in two threads of one process.

- ``puts``: tests/bench/load_floor.py's ``commit-runs`` writes — a finished import's entries as each
  commit's sorted runs, written from C (store/_bulkrun.c's ``run_write``, the GIL released), the
  log records after them — in one transaction, in a thread;
- ``import``: ``import_jsonl`` of the same file on one thread (no commit made ahead,
  store/importahead.py off) with every table's runs sorted but not written, the keys' excepted
  (bench_load's ``--no-puts``), in a thread;
- ``both``: the two threads at once, into two files: what a writer thread fed sorted runs would
  cost if the importer's work and LMDB's never waited for each other but for the GIL.

The process's CPU seconds beside the wall seconds say whether the two ran in parallel. Needs
bench_load's files (run it once first). Each load in a fresh process, loads interleaved:

    .venv/bin/python -m tests.bench.bench_load_overlap [--passes 3] [--nodes 100000] [--degree 5]
"""

from __future__ import annotations

import datetime as dt
import json
import statistics
import subprocess
import sys

from tests.bench import common
from tests.bench.bench_load import graph_dir, graph_parser

ONE = r"""
import json, sys, threading, time
from pathlib import Path
import drsg
from drsg.store import bulkwrite, importahead
from drsg.store.environment import DB_NAMES
from drsg.store.jsonl import import_jsonl
from tests.bench import load_floor

ref, jsonl, work, mode, txn_commits = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3]), sys.argv[4], int(sys.argv[5])
batches = load_floor._commit_batches(load_floor.import_order(load_floor.read_tables(ref)), txn_commits, set())
env = load_floor._open(work / "raw.lmdb", readonly=False)
dbs = {name: env.open_db(name.encode()) for name in DB_NAMES}
db = drsg.open(work / "g.drsg", map_size=4 << 30)
write_runs = bulkwrite.write_runs
importahead.use_ahead(False)  # (the import on one thread: the overlap this measures is its own)

def unwritten(txn, dbs, runs):  # the import's runs sorted, not written; the keys' written (its seeks read them)
    for run in runs.values():
        run.sort()
    write_runs(txn, dbs, {name: run for name, run in runs.items() if name == "keys"})

bulkwrite.write_runs = unwritten
took = {}

def puts():
    started = time.perf_counter()
    txn, *_ = load_floor._write_batches(env, env.begin(write=True), dbs, batches, 0)
    txn.commit()
    took["puts"] = time.perf_counter() - started

def load():
    started = time.perf_counter()
    import_jsonl(db, jsonl, "startup")
    took["import"] = time.perf_counter() - started

chosen = {"puts": [puts], "import": [load]}.get(mode, [puts, load])
threads = [threading.Thread(target=f, name=f.__name__) for f in chosen]
start, cpu = time.perf_counter(), time.process_time()
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
print(json.dumps({"secs": time.perf_counter() - start, "cpu": time.process_time() - cpu, **took}))
"""

MODES = ("puts", "import", "both")


def main() -> None:
    ap = graph_parser(__doc__)
    ap.add_argument("--txn-commits", type=int, default=15, help="commits an LMDB transaction holds (as bench_load)")
    args = ap.parse_args()
    started = dt.datetime.now(dt.UTC)
    ref, jsonl = graph_dir(args) / "ref.drsg", graph_dir(args) / "graph.jsonl"
    if not ref.exists():
        raise SystemExit(f"{ref} is missing: run `python -m tests.bench.bench_load` once first")
    runs: dict[str, list[dict[str, float]]] = {mode: [] for mode in MODES}
    for n in range(args.passes):
        for mode in MODES if n % 2 == 0 else MODES[::-1]:
            argv = [sys.executable, "-c", ONE, str(ref), str(jsonl), str(common.fresh_dir("overlap")), mode]
            out = subprocess.run([*argv, str(args.txn_commits)], capture_output=True, text=True, cwd=common.REPO)
            if out.returncode != 0:
                raise SystemExit(f"{mode} failed:\n{out.stderr[-3000:]}")
            runs[mode].append(json.loads(out.stdout.strip().splitlines()[-1]))
        print("pass: " + ", ".join(f"{mode} {r[-1]['secs']:.2f} s" for mode, r in runs.items()), flush=True)
    median = {mode: statistics.median(r["secs"] for r in runs[mode]) for mode in MODES}
    each = {mode: ", ".join(f"{r['secs']:.2f}/{r['cpu']:.2f}" for r in runs[mode]) for mode in MODES}
    lines = [
        f"{args.nodes:,} nodes + {args.nodes * args.degree:,} edges, {args.passes} interleaved passes, medians; "
        "each load a fresh process.",
        "",
        "| load | seconds (median) | each pass: wall / CPU seconds |",
        "|---|---|---|",
        *(f"| {mode} | {median[mode]:.2f} | {each[mode]} |" for mode in MODES),
        "",
        f"both at once / one after the other (wall, medians): "
        f"{common.ratio(median['both'], median['puts'] + median['import']):.2f}×",
    ]
    common.append_section("Graph load: what a writer thread could overlap (#37)", started, lines, write=True)


if __name__ == "__main__":
    main()
