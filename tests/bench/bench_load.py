"""Graph load on upstream's workload: ``import_jsonl`` beside Kùzu's ``COPY`` and the floors under
it, raw LMDB writing drsg's own entries (tests/bench/load_floor.py: in import order, as each commit's
sorted runs — what a streamed import cannot avoid — in one transaction and in the import's bounded
transactions, and all sorted and appended), in the same run.

The graph is bench_cypher's (upstream's BENCHMARKS.md shape): N nodes keyed ``n{i}`` (label ``L``,
``x`` and ``g``), N × degree uniform random ``E`` edges, written once as JSONL (drsg) and CSV (Kùzu).
Each pass loads into a fresh database in a fresh subprocess; passes run every load in turn (the
order reversed every other pass) and the median is reported as records (nodes + edges) per second.
``--before`` adds the import as it was before its bulk path (store/bulkwrite.py: every record through
WriteTx and the projection, ``use_bulk(False)``); ``--no-loop`` the bulk path with each line read in
Python (store/_bulklines.c's loop off, ``use_lines(False)``); ``--no-puts`` the import with every
table's runs sorted but not written, but the keys' (its seeks read them): the import's own work;
``--in-txn`` the import with each transaction's commits made in it on one thread, as before
store/importahead.py made them ahead and wrote them on a thread of their own; ``--records`` the
Python API's bulk path, ``import_records`` of the file's records parsed into a list first;
``--txn-mib 1,4,64`` adds it at those transaction sizes (``store.import_txn_bytes``); ``--tree OLD``
the import as another checkout's code does it (a folder laid out as the package, as bench_startup's
``--tree``: ``OLD/drsg/`` holding ``drsg/*`` and the layer folders, its C modules built in place).
``--profile FILE`` instead runs one drsg import under cProfile and writes its stats to FILE
(``python -m pstats FILE``).

    .venv/bin/python -m tests.bench.bench_load [--nodes 100000] [--degree 5] [--passes 3] [--no-kuzu]
        [--no-floor] [--before] [--no-loop] [--no-puts] [--in-txn] [--records] [--txn-mib LIST]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import statistics
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from drsg.store.jsonl import TXN_BYTES
from tests.bench import common
from tests.bench.bench_cypher import make_files
from tests.bench.load_floor import COMMIT_LINES

DRSG = r"""
import json, os, sys, time
if os.environ.get("DRSG_TREE"):  # (--tree: that checkout's code, not the installed one)
    sys.meta_path[:] = [f for f in sys.meta_path if "__editable__" not in str(f)]
    sys.path.insert(0, os.environ["DRSG_TREE"])
import drsg
from drsg.store import bulkwrite, importahead
from drsg.store.jsonl import import_jsonl, import_records
bulkwrite.use_bulk(sys.argv[5] != "reference")
# "bulk-no-loop": each line in Python
bulkwrite.use_lines(sys.argv[5] in ("bulk", "bulk-no-puts", "bulk-in-txn", "records"))
importahead.use_ahead(sys.argv[5] != "bulk-in-txn")
db = drsg.open(sys.argv[1], map_size=4 << 30)
if sys.argv[5] == "bulk-no-puts":  # the import's own work: its runs sorted, only the keys' written (seeks read them)
    write_runs = bulkwrite.write_runs
    def sorted_only(txn, dbs, runs):
        for run in runs.values():
            run.sort()
        write_runs(txn, dbs, {name: run for name, run in runs.items() if name == "keys"})
    bulkwrite.write_runs = sorted_only
sizes = {"txn_bytes": int(sys.argv[3])} if sys.argv[3] else {}
if sys.argv[5] == "records":  # the Python API's bulk path: the file's records in memory, read before the clock
    import msgspec
    with open(sys.argv[2], "rb") as fh:
        records = [msgspec.json.decode(line) for line in fh]
start, cpu = time.perf_counter(), time.process_time()
if sys.argv[5] == "records":
    import_records(db, records, "startup")
elif sys.argv[4]:
    import cProfile
    cProfile.run("import_jsonl(db, sys.argv[2], 'startup', **sizes)", sys.argv[4])
else:
    import_jsonl(db, sys.argv[2], "startup", **sizes)
secs, cpu = time.perf_counter() - start, time.process_time() - cpu
stats = db.stats()
db.close()
print(json.dumps({"secs": secs, "cpu": cpu, "nodes": stats.nodes, "edges": stats.edges}))
"""

KUZU = r"""
import json, sys, time
from pathlib import Path
from tests.bench.bench_cypher import load_kuzu
conn, secs = load_kuzu(Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]))
print(json.dumps({"secs": secs}))
"""


def _run(args: list[str], tree: str = "") -> dict[str, float]:
    """A load in a fresh process: ``args`` after the interpreter (``-c CODE …`` or ``-m MODULE …``);
    ``tree``: drsg's code from that package tree."""
    env = {**os.environ, "DRSG_TREE": tree}
    out = subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=common.REPO, env=env)
    if out.returncode != 0:
        raise SystemExit(f"a load failed ({out.returncode}):\n{out.stderr[-4000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def graph_parser(doc: str | None) -> argparse.ArgumentParser:
    """A bench's arguments naming upstream's graph as this bench writes it (see graph_dir), and passes."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=100_000)
    ap.add_argument("--degree", type=int, default=5)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--passes", type=int, default=3)
    return ap


def graph_dir(args: argparse.Namespace) -> Path:
    """Where this bench keeps the graph's files (and ref.drsg, the import the floors read)."""
    return common.OUT / f"load-{args.nodes}-{args.degree}-{args.seed}"


def main() -> None:
    ap = graph_parser(__doc__)
    ap.add_argument("--no-kuzu", action="store_true", help="no Kùzu row")
    ap.add_argument("--no-floor", action="store_true", help="no raw py-lmdb rows")
    ap.add_argument("--before", action="store_true", help="also the import without its bulk path (WriteTx)")
    ap.add_argument("--no-loop", action="store_true", help="also the bulk path without its C line loop")
    ap.add_argument("--txn-mib", default="", help="also the import at these MiB per LMDB transaction (1,4,64)")
    ap.add_argument("--no-puts", action="store_true", help="also the import with its entries sorted, not written")
    ap.add_argument("--in-txn", action="store_true", help="also the import with no commit made ahead (one thread)")
    ap.add_argument("--records", action="store_true", help="also import_records of the file's records in memory")
    ap.add_argument("--tree", help="also the import as the package tree OLD's code does it (see the docstring)")
    ap.add_argument("--profile", metavar="FILE", help="one drsg import under cProfile, stats to FILE")
    args = ap.parse_args()
    started = dt.datetime.now(dt.UTC)
    data = graph_dir(args)
    if not (data / "edges.csv").exists():
        data.mkdir(parents=True, exist_ok=True)
        make_files(data, args.nodes, args.degree, args.seed)
    jsonl, nodes_csv, edges_csv = data / "graph.jsonl", data / "nodes.csv", data / "edges.csv"
    records = args.nodes * (1 + args.degree)
    if args.profile:
        work = common.fresh_dir("load-run")
        print(_run(["-c", DRSG, str(work / "g.drsg"), str(jsonl), "", args.profile, "bulk"]))
        return
    ref = data / "ref.drsg"  # the entries the floor writes: an import of the same file, made once
    if not args.no_floor and not ref.exists():
        _run(["-c", DRSG, str(ref), str(jsonl), "", "", "bulk"])

    def drsg_load(txn_bytes: str, path: str = "bulk", tree: str = "") -> Callable[[Path], dict[str, float]]:
        def load(work: Path) -> dict[str, float]:
            got = _run(["-c", DRSG, str(work / "g.drsg"), str(jsonl), txn_bytes, "", path], tree)
            assert (got["nodes"], got["edges"]) == (args.nodes, args.nodes * args.degree), got
            return got

        return load

    # the commits an import's LMDB transaction holds: it ends once TXN_BYTES of the file are read
    txn_commits = str(math.ceil(TXN_BYTES / (jsonl.stat().st_size / math.ceil(records / COMMIT_LINES))))

    def floor(mode: str) -> Callable[[Path], dict[str, float]]:
        return lambda work: _run(["-m", "tests.bench.load_floor", str(ref), str(work / "raw.lmdb"), mode, txn_commits])

    loads: dict[str, Callable[[Path], dict[str, float]]] = {"drsg `import_jsonl`": drsg_load("")}
    if args.before:
        loads["drsg `import_jsonl`, every record through WriteTx (before)"] = drsg_load("", "reference")
    if args.no_loop:
        loads[NO_LOOP] = drsg_load("", "bulk-no-loop")
    if args.no_puts:
        loads[NO_PUTS] = drsg_load("", "bulk-no-puts")
    if args.in_txn:
        loads[IN_TXN] = drsg_load("", "bulk-in-txn")
    if args.records:
        loads[RECORDS] = drsg_load("", "records")
    if args.tree:
        loads[TREE] = drsg_load("", tree=args.tree)
    for mib in filter(None, args.txn_mib.split(",")):
        loads[f"drsg `import_jsonl`, {mib} MiB per LMDB transaction"] = drsg_load(str(int(float(mib) * (1 << 20))))
    if not args.no_floor:
        loads[RAW_ORDER] = floor("import-order")
        loads[RAW_RUNS] = floor("commit-runs")
        loads[RAW_TXNS] = floor("txn-runs")
        loads[RAW_SORTED] = floor("sorted")
    if not args.no_kuzu:
        loads[KUZU_ROW] = lambda work: _run(["-c", KUZU, str(work), str(nodes_csv), str(edges_csv)])
    secs: dict[str, list[float]] = {name: [] for name in loads}
    parts: dict[str, list[dict[str, float]]] = {name: [] for name in loads}
    for n in range(args.passes):
        for name in list(loads) if n % 2 == 0 else list(loads)[::-1]:
            parts[name].append(loads[name](common.fresh_dir("load-run")))
            secs[name].append(parts[name][-1]["secs"])
        print("pass: " + ", ".join(f"{name} {s[-1]:.2f} s" for name, s in secs.items()), flush=True)
    rate = {name: records / statistics.median(s) for name, s in secs.items()}
    lines = [
        f"{args.nodes:,} nodes + {args.nodes * args.degree:,} edges, {args.passes} interleaved passes, medians, "
        "each load a fresh database in a fresh process.",
        "",
        "| load | records/s | seconds (each pass) | CPU seconds of this process (each pass) |",
        "|---|---|---|---|",
        *(
            f"| {name} | {rate[name]:,.0f} | {_each(secs[name])} | {_each([p.get('cpu') for p in parts[name]])} |"
            for name in loads
        ),
        "",
    ]
    drsg = rate["drsg `import_jsonl`"]
    floors = (
        ("raw import order", RAW_ORDER),
        ("raw commit runs", RAW_RUNS),
        ("raw transactions of commit runs", RAW_TXNS),
        ("raw sorted", RAW_SORTED),
    )
    ratios = [(label, row) for label, row in floors if row in rate]
    ratios += [("Kùzu", KUZU_ROW)] if KUZU_ROW in rate else []
    lines += [f"drsg / {label} (records/s): {common.ratio(drsg, rate[row]):.2f}×" for label, row in ratios]
    if KUZU_ROW in rate:
        lines += [f"{label} / Kùzu: {common.ratio(rate[row], rate[KUZU_ROW]):.2f}×" for label, row in ratios[:-1]]
    for label, row in floors:
        if row in parts:  # the import's CPU over the floor's: what drsg adds to LMDB's own work
            cpu = [statistics.median(p["cpu"] for p in parts[name]) for name in ("drsg `import_jsonl`", row)]
            lines.append(f"drsg CPU seconds / {label} CPU seconds (medians): {common.ratio(*cpu):.2f}×")
    for label, row in floors:
        if row in parts:
            sort, commit = (statistics.median(p[part] for p in parts[row]) for part in ("sort_secs", "commit_secs"))
            puts = statistics.median(p["secs"] - p["sort_secs"] - p["commit_secs"] for p in parts[row])
            lines.append(f"{label}, its parts (medians): puts {puts:.2f} s, sort {sort:.2f} s, commit {commit:.2f} s")
    before = [name for name in loads if name.endswith("(before)")]
    if before:
        lines.append(f"drsg after / before (records/s, > 1 is faster): {common.ratio(drsg, rate[before[0]]):.2f}×")
        cpu = [statistics.median(p["cpu"] for p in parts[name]) for name in (before[0], "drsg `import_jsonl`")]
        lines.append(f"drsg CPU seconds, before / after: {common.ratio(*cpu):.2f}×")
    if args.tree:
        mine = parts["drsg `import_jsonl`"]
        cpu = [statistics.median(p["cpu"] for p in runs) for runs in (parts[TREE], mine)]
        paired = _each([common.ratio(a["cpu"], b["cpu"]) for a, b in zip(parts[TREE], mine, strict=True)])
        lines.append(f"drsg CPU seconds, --tree / this checkout: {common.ratio(*cpu):.2f}× (each pass: {paired})")
    if args.no_puts:  # what a writer thread fed sorted runs could overlap: the puts' share of the import
        alone, whole = (statistics.median(secs[name]) for name in (NO_PUTS, "drsg `import_jsonl`"))
        lines.append(f"drsg without its puts / with (seconds, medians): {common.ratio(alone, whole):.2f}×")
    if args.in_txn:
        lines.append(f"drsg made ahead / in its transactions (records/s): {common.ratio(drsg, rate[IN_TXN]):.2f}×")
        if KUZU_ROW in rate:
            lines.append(
                f"drsg in its transactions / Kùzu (records/s): {common.ratio(rate[IN_TXN], rate[KUZU_ROW]):.2f}×"
            )
    if args.records:
        lines.append(f"drsg import_records / import_jsonl (records/s): {common.ratio(rate[RECORDS], drsg):.2f}×")
        if KUZU_ROW in rate:
            lines.append(f"drsg import_records / Kùzu (records/s): {common.ratio(rate[RECORDS], rate[KUZU_ROW]):.2f}×")
    if args.no_loop:
        cpu = [statistics.median(p["cpu"] for p in parts[name]) for name in (NO_LOOP, "drsg `import_jsonl`")]
        lines.append(f"drsg with the C line loop / without (records/s): {common.ratio(drsg, rate[NO_LOOP]):.2f}×")
        lines.append(f"drsg CPU seconds, without the C line loop / with: {common.ratio(*cpu):.2f}×")
    common.append_section("Graph load, upstream's workload", started, lines, write=True)


def _each(values: list[float] | list[float | None]) -> str:
    return ", ".join("—" if x is None else f"{x:.2f}" for x in values)


NO_LOOP = "drsg `import_jsonl`, bulk path without the C line loop"
IN_TXN = "drsg `import_jsonl`, each transaction's commits made in it (no writer thread)"
RECORDS = "drsg `import_records`, the file's records in memory (read before the clock)"
TREE = "drsg `import_jsonl`, --tree's code"
NO_PUTS = "drsg `import_jsonl`, its entries sorted but not written (the keys' excepted)"
RAW_ORDER = "raw py-lmdb, drsg's entries, import order, one transaction"
RAW_RUNS = "raw LMDB, drsg's entries, each commit's sorted runs (adjacency: a transaction's) written from C"
RAW_TXNS = "raw LMDB, the same, committed a transaction at a time as the import's (bounded memory)"
RAW_SORTED = "raw py-lmdb, drsg's entries, sorted, `putmulti(append=True)`, one transaction"
KUZU_ROW = "Kùzu `COPY` (CSV)"


if __name__ == "__main__":
    main()
