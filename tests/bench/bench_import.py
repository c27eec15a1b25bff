"""Bulk import of 1M nodes + 2M edges (JSONL): rate and peak memory, beside raw py-lmdb.

Generates (once; reused while its stamp matches) ``out/import/words.jsonl``: 1,000,000 node lines
``{"labels":["Word"],"external_key":"w123","properties":{"text": <a line of real prose>}}`` then
2,000,000 edge lines — a ``NEXT`` chain ``w{i} → w{i+1}`` and random ``SEE_ALSO`` links — in
upstream's import format. Each importer runs in a fresh subprocess so ``ru_maxrss`` is its own:

* drsg: ``drsg.store.jsonl.import_jsonl(db, FILE, "startup")`` (and, with ``--cli``, the
  ``drsg --db X import FILE --plane startup`` command);
* raw py-lmdb: parse each line, map keys to ids with a dict, msgpack the record and append it,
  10,000 lines per synced transaction — what any importer must at least do, without a projection.

    .venv/bin/python -m tests.bench.bench_import [--nodes 1000000] [--edges 2000000] [--cli]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

from tests.bench import common

ENGINE = r"""
import json, resource, sys, time
import drsg
from drsg.store.jsonl import import_jsonl
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
db = drsg.open(sys.argv[1])
start = time.perf_counter()
report = import_jsonl(db, sys.argv[2], "startup")
secs = time.perf_counter() - start
head = db.head()
stats = db.stats()
db.close()
print(json.dumps({"secs": secs, "maxrss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                  "base_kb": base, "report": report.to_json(), "head": head,
                  "nodes": stats.nodes, "edges": stats.edges}))
"""

RAW = r"""
import json, resource, sys, time
import lmdb, msgpack
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
env = lmdb.open(sys.argv[1], subdir=False, map_size=16 << 30, max_dbs=4, readahead=False)
recs = env.open_db(b"records")
start = time.perf_counter()
ids = {}
n = 0
txn = env.begin(write=True)
with open(sys.argv[2], "rb") as fh:
    for n, line in enumerate(fh, 1):
        obj = json.loads(line)
        if "type" in obj:
            value = [ids[obj["src_key"]], ids[obj["dst_key"]], obj["type"], obj.get("properties", {})]
        else:
            ids[obj["external_key"]] = n
            value = [obj["external_key"], obj["labels"], obj["properties"]]
        txn.put(n.to_bytes(8, "big"), msgpack.packb(value), db=recs, append=True)
        if n % 10000 == 0:
            txn.commit()
            txn = env.begin(write=True)
txn.commit()
secs = time.perf_counter() - start
env.close()
print(json.dumps({"secs": secs, "maxrss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                  "base_kb": base, "lines": n}))
"""


def generate(path: Path, nodes: int, edges: int, seed: int) -> None:
    lines = common.text_lines()
    rng = random.Random(seed)
    tmp = path.with_suffix(".tmp")
    with tmp.open("w") as fh:
        for i in range(nodes):
            text = lines[(i * 7919) % len(lines)]
            fh.write(json.dumps({"labels": ["Word"], "external_key": f"w{i}", "properties": {"text": text}}) + "\n")
        chain = min(nodes - 1, edges)
        for i in range(chain):
            fh.write(json.dumps({"src_key": f"w{i}", "dst_key": f"w{i + 1}", "type": "NEXT"}) + "\n")
        for _ in range(edges - chain):
            a, b = rng.randrange(nodes), rng.randrange(nodes)
            fh.write(json.dumps({"src_key": f"w{a}", "dst_key": f"w{b}", "type": "SEE_ALSO"}) + "\n")
    tmp.rename(path)


def run(cmd: list[str]) -> dict:  # type: ignore[type-arg]
    os.sync()
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=common.REPO)
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:3])} … failed ({out.returncode}):\n{out.stderr[-4000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def run_cli(db: Path, data: Path) -> dict:  # type: ignore[type-arg]
    """The CLI as a user runs it; wall time and the child's peak RSS."""
    import resource

    exe = shutil.which("drsg", path=str(Path(sys.executable).parent)) or "drsg"
    os.sync()
    start = time.perf_counter()
    out = subprocess.run(
        [exe, "--db", str(db), "import", str(data), "--plane", "startup"], capture_output=True, text=True
    )
    secs = time.perf_counter() - start
    if out.returncode != 0:
        raise SystemExit(f"drsg import failed ({out.returncode}):\n{out.stderr[-4000:]}")
    return {"secs": secs, "maxrss_kb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, "out": out.stdout}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=1_000_000)
    ap.add_argument("--edges", type=int, default=2_000_000)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--cli", action="store_true", help="also time the drsg import command")
    ap.add_argument("--keep", action="store_true", help="keep the imported databases in out/import")
    args = ap.parse_args()
    work = common.OUT / "import"
    work.mkdir(parents=True, exist_ok=True)
    data = work / f"words-{args.nodes}-{args.edges}-{args.seed}.jsonl"
    if not data.exists():
        print(f"generating {data.name} …", flush=True)
        generate(data, args.nodes, args.edges, args.seed)
    lines = args.nodes + args.edges
    size_mib = data.stat().st_size / 2**20

    for name in ("engine.drsg", "engine.drsg-lock", "raw.lmdb", "raw.lmdb-lock", "cli.drsg", "cli.drsg-lock"):
        (work / name).unlink(missing_ok=True)
    raw = run([sys.executable, "-c", RAW, str(work / "raw.lmdb"), str(data)])
    print(f"raw: {raw}", flush=True)
    eng = run([sys.executable, "-c", ENGINE, str(work / "engine.drsg"), str(data)])
    print(f"drsg: {eng}", flush=True)
    assert eng["nodes"] == args.nodes and eng["edges"] == args.edges, eng
    engine_size = (work / "engine.drsg").stat().st_size / 2**20
    raw_size = (work / "raw.lmdb").stat().st_size / 2**20

    def rate(r: dict) -> float:  # type: ignore[type-arg]
        return lines / r["secs"]

    rows = [
        (
            f"lines/s ({args.nodes:,} nodes + {args.edges:,} edges, {size_mib:,.0f} MiB JSONL)",
            f"{rate(eng):,.0f} ({eng['secs']:.1f} s; {eng['report']['commits']:,} commits)",
            f"{rate(raw):,.0f} ({raw['secs']:.1f} s)",
            f"{common.ratio(rate(eng), rate(raw)):.3f}×",
        ),
        (
            "peak RSS (ru_maxrss of the importing process)",
            f"{eng['maxrss_kb'] / 1024:,.0f} MiB (at start {eng['base_kb'] / 1024:,.0f} MiB)",
            f"{raw['maxrss_kb'] / 1024:,.0f} MiB (at start {raw['base_kb'] / 1024:,.0f} MiB)",
            f"{eng['maxrss_kb'] / raw['maxrss_kb']:.2f}×",
        ),
        ("file size", f"{engine_size:,.0f} MiB", f"{raw_size:,.0f} MiB (records only)", ""),
    ]
    if args.cli:
        cli = run_cli(work / "cli.drsg", data)
        rows.append(
            (
                "`drsg import` CLI: lines/s, peak RSS",
                f"{lines / cli['secs']:,.0f} ({cli['secs']:.1f} s), {cli['maxrss_kb'] / 1024:,.0f} MiB",
                "",
                "",
            )
        )
    common.record(
        f"(d) JSONL import, {args.nodes:,} nodes + {args.edges:,} edges",
        rows,
        [
            "drsg imports all or nothing: one LMDB transaction, a commit every 10,000 lines "
            "(commit_point), the versioned projection written as it goes. Raw keeps a key→id dict and appends "
            "msgpack records 10,000 per synced transaction, with no projection.",
            "ru_maxrss counts resident pages of the LMDB memory map as well as the Python heap.",
        ],
    )
    if not args.keep:
        for name in ("engine.drsg", "engine.drsg-lock", "raw.lmdb", "raw.lmdb-lock", "cli.drsg", "cli.drsg-lock"):
            (work / name).unlink(missing_ok=True)


if __name__ == "__main__":
    main()
