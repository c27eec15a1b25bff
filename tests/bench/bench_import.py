"""Bulk import of 1M nodes + 2M edges (JSONL): rate and peak memory, beside raw py-lmdb.

Generates (once; reused while its stamp matches) ``out/import/words.jsonl``: 1,000,000 node lines
``{"labels":["Word"],"external_key":"w123","properties":{"text": <a line of real prose>}}`` then
2,000,000 edge lines — a ``NEXT`` chain ``w{i} → w{i+1}`` and random ``SEE_ALSO`` links — in
upstream's import format. Each run is a fresh subprocess so ``ru_maxrss`` is its own:

* drsg: ``drsg.store.jsonl.import_jsonl(db, FILE, "startup")`` (and, with ``--cli``, the
  ``drsg --db X import FILE --plane startup`` command);
* a recording run of the same import, which writes down every put (table, key, value, append flag)
  of every LMDB transaction, in order — untimed;
* raw py-lmdb: replays those puts — exactly the engine's keys and values, pre-encoded, into the same
  tables, in the same transactions (each synced on commit) — timing only the puts and commits. What
  is left of the engine's time is everything drsg does beyond LMDB (JSON, validation, encoding, its
  reads). Target (#14): drsg ≥ 0.5× raw, with peak RSS ≤ 400 MiB.

``ru_maxrss`` counts the LMDB map's resident file pages (page cache) as well as the heap, and the
kernel keeps them mapped while memory is free; so the CLI and the raw replay also run under a hard
memory limit (``--memory-limit``, 400 MiB by default, page cache included; tests/bench/memory_cgroup.py)
where this process may make a memory cgroup: whether the import fits in that much memory, and how fast.

    .venv/bin/python -m tests.bench.bench_import [--nodes 1000000] [--edges 2000000] [--cli] [--memory-limit 400]
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

from tests.bench import common, memory_cgroup

# Peak anonymous memory (the heap, LMDB's dirty pages) and file-backed resident pages (the LMDB map:
# page cache the kernel may reclaim), sampled: ru_maxrss counts both.
SAMPLER = r"""
import threading, time
peak = {"RssAnon:": 0, "RssFile:": 0}
def _sample():
    while True:
        with open("/proc/self/status") as status:
            for line in status:
                field = line.split(None, 1)[0]
                if field in peak:
                    peak[field] = max(peak[field], int(line.split()[1]))
        time.sleep(0.02)
threading.Thread(target=_sample, daemon=True).start()
"""

ENGINE = (
    SAMPLER
    + r"""
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
                  "base_kb": base, "report": report.to_json(), "head": head, "anon_kb": peak["RssAnon:"],
                  "file_kb": peak["RssFile:"],
                  "nodes": stats.nodes, "edges": stats.edges}))
"""
)

# The same import, every write transaction wrapped to write down its puts when it commits.
RECORD = r"""
import json, pickle, sys
import drsg
from drsg.store import environment
from drsg.store.jsonl import import_jsonl

class Recording:
    def __init__(self, txn, names, out):
        self.txn, self.names, self.out, self.puts = txn, names, out, []
    def put(self, key, value, *, db=None, append=False):
        self.puts.append((self.names[id(db)], bytes(key), bytes(value), append))
        return self.txn.put(key, value, db=db, append=append)
    def delete(self, key, value=b"", db=None):
        self.puts.append((self.names[id(db)], bytes(key), None, False))
        return self.txn.delete(key, value, db=db)
    def get(self, key, default=None, db=None):
        return self.txn.get(key, default, db=db)
    def cursor(self, db=None):
        return self.txn.cursor(db=db)
    def commit(self):
        self.txn.commit()
        pickle.dump(self.puts, self.out, protocol=pickle.HIGHEST_PROTOCOL)
        self.counts[0] += 1
        self.counts[1] += len(self.puts)
    def abort(self):
        self.txn.abort()
Recording.counts = [0, 0]

db = drsg.open(sys.argv[1])
names = {id(handle): name for name, handle in db.env.dbs.items()}
out = open(sys.argv[3], "wb")
plain = environment.Environment.begin_write
environment.Environment.begin_write = lambda self: Recording(plain(self), names, out)
import_jsonl(db, sys.argv[2], "startup")
out.close()
db.close()
print(json.dumps({"txns": Recording.counts[0], "puts": Recording.counts[1]}))
"""

RAW = (
    SAMPLER
    + r"""
import json, pickle, resource, sys, time
import lmdb
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
env = lmdb.open(sys.argv[1], subdir=False, map_size=64 << 30, max_dbs=16, readahead=False)
dbs = {}
secs = 0.0
txns = puts = 0
with open(sys.argv[2], "rb") as fh:
    while True:
        try:
            recorded = pickle.load(fh)
        except EOFError:
            break
        for name, _, _, _ in recorded:
            if name not in dbs:
                dbs[name] = env.open_db(name.encode())
        batch = [(dbs[name], key, value, append) for name, key, value, append in recorded]
        del recorded
        start = time.perf_counter()
        txn = env.begin(write=True)
        put, delete = txn.put, txn.delete
        for db, key, value, append in batch:
            if value is None:
                delete(key, db=db)
            else:
                put(key, value, db=db, append=append)
        txn.commit()
        secs += time.perf_counter() - start
        txns += 1
        puts += len(batch)
env.close()
print(json.dumps({"secs": secs, "maxrss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                  "base_kb": base, "txns": txns, "puts": puts, "anon_kb": peak["RssAnon:"],
                  "file_kb": peak["RssFile:"]}))
"""
)

# The least any Python importer of this file must do, for scale: parse each line, look each key up
# (a new key must be free; an edge's ends must exist), encode the records and write the same puts
# (node, key, label; edge, out, in; one log record per 10,000 lines), with no validation, no
# objects, no tallies. What the engine spends beyond this is its own overhead in Python.
FLOOR = r"""
import json, resource, struct, sys, time
import lmdb, msgpack, msgspec
P, U64, U32, MAX = struct.Struct(">IQ"), struct.Struct(">Q"), struct.Struct(">I"), 2**64 - 1
env = lmdb.open(sys.argv[1], subdir=False, map_size=64 << 30, max_dbs=16, readahead=False)
dbs = {n: env.open_db(n.encode()) for n in ("log", "nodes", "keys", "labels", "edges", "out", "in")}
pack = msgpack.Packer(use_bin_type=True).pack
decode = msgspec.json.decode
start = time.perf_counter()
seq, node_id, edge_id, n = 2, 1, 1, 0
with open(sys.argv[2], "rb") as fh:
    while True:
        chunk = [fh.readline() for _ in range(10000)]
        chunk = [line for line in chunk if line]
        if not chunk:
            break
        inv = U64.pack(MAX - seq)
        txn = env.begin(write=True, buffers=False)
        keys, put, wires = txn.cursor(db=dbs["keys"]), txn.put, []
        for raw in chunk:
            obj = decode(raw)
            if "type" in obj:
                ends = []
                for end in ("src_key", "dst_key"):
                    group = U32.pack(0) + obj[end].encode() + b"\0"
                    if not (keys.set_range(group + inv) and keys.key().startswith(group)):
                        raise SystemExit(f"no node {obj[end]}")
                    ends.append(U64.unpack(keys.value())[0])
                kind, props = obj["type"], obj.get("properties") or {}
                put(P.pack(0, edge_id) + inv, pack([ends[0], ends[1], kind, props]), db=dbs["edges"])
                tail = kind.encode() + b"\0" + U64.pack(edge_id) + inv
                put(P.pack(0, ends[0]) + tail, U64.pack(ends[1]), db=dbs["out"])
                put(P.pack(0, ends[1]) + tail, U64.pack(ends[0]), db=dbs["in"])
                wires.append(["edge.put", 0, edge_id, ends[0], ends[1], kind, props])
                edge_id += 1
            else:
                key, labels, props = obj["external_key"], obj["labels"], obj["properties"]
                group = U32.pack(0) + key.encode() + b"\0"
                if keys.set_range(group + inv) and keys.key().startswith(group):
                    raise SystemExit(f"key {key} taken")
                put(P.pack(0, node_id) + inv, pack([key, labels, props]), db=dbs["nodes"])
                put(group + inv, U64.pack(node_id), db=dbs["keys"])
                for label in labels:
                    put(U32.pack(0) + label.encode() + b"\0" + U64.pack(node_id) + inv, b"\x01", db=dbs["labels"])
                wires.append(["node.put", 0, node_id, key, labels, props])
                node_id += 1
        put(U64.pack(seq), pack([{}, wires]), db=dbs["log"], append=True)
        txn.commit()
        seq += 1
        n += len(chunk)
secs = time.perf_counter() - start
env.close()
print(json.dumps({"secs": secs, "maxrss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, "lines": n}))
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


# A child's own peak RSS: ru_maxrss of RUSAGE_CHILDREN is the largest of every child this process
# has waited for, so a run under a limit gets a parent of its own.
CHILD_PEAK = r"""
import json, resource, subprocess, sys
out = subprocess.run(sys.argv[1:], capture_output=True, text=True)
sys.stderr.write(out.stderr)
print(json.dumps({"maxrss_kb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, "out": out.stdout}))
raise SystemExit(out.returncode)
"""


def last_json(stdout: str) -> dict:  # type: ignore[type-arg]
    """What a child script printed last: its figures, one JSON object."""
    return json.loads(stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def run(cmd: list[str]) -> dict:  # type: ignore[type-arg]
    os.sync()
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=common.REPO)
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:3])} … failed ({out.returncode}):\n{out.stderr[-4000:]}")
    return last_json(out.stdout)


def cli_import(db: Path, data: Path) -> list[str]:
    """``drsg import`` as a user runs it, behind CHILD_PEAK (which prints its own peak RSS)."""
    exe = shutil.which("drsg", path=str(Path(sys.executable).parent)) or "drsg"
    return [sys.executable, "-c", CHILD_PEAK, exe, "--db", str(db), "import", str(data), "--plane", "startup"]


def run_cli(db: Path, data: Path) -> dict:  # type: ignore[type-arg]
    """The CLI as a user runs it; wall time and its own peak RSS (not the largest of every child
    this process has run: RUSAGE_CHILDREN would count the engine and raw runs before it too)."""
    os.sync()
    start = time.perf_counter()
    out = subprocess.run(cli_import(db, data), capture_output=True, text=True)
    secs = time.perf_counter() - start
    if out.returncode != 0:
        raise SystemExit(f"drsg import failed ({out.returncode}):\n{out.stderr[-4000:]}")
    return {"secs": secs, **last_json(out.stdout)}


def limited_rows(work: Path, data: Path, puts_file: Path, lines: int, limit_mib: int) -> tuple[str, str, str, str]:
    """The CLI and the raw replay, each under a memory cgroup of ``limit_mib`` (page cache counted)."""
    title = f"under a {limit_mib} MiB memory cgroup (page cache counted): lines/s, ru_maxrss, major faults"
    why_not = memory_cgroup.unavailable()
    if why_not is not None:
        return (title, f"not measured: {why_not}", "", "")
    try:
        eng = memory_cgroup.run(cli_import(work / "limited.drsg", data), limit_mib, cwd=common.REPO)
        raw = memory_cgroup.run([sys.executable, "-c", RAW, str(work / "limited.lmdb"), str(puts_file)], limit_mib)
    except OSError as exc:  # the controller is there but will not take this cgroup (v2's rules, say)
        return (title, f"not measured: {exc}", "", "")
    eng_rss = last_json(eng.stdout)["maxrss_kb"]
    raw_out = last_json(raw.stdout)
    print(f"under {limit_mib} MiB: drsg {eng}, raw {raw_out}", flush=True)

    def shown(rate: float, secs: float, rss_kb: int, run: memory_cgroup.Limited) -> str:
        faults = "" if run.major_faults is None else f", {run.major_faults:,} major faults"
        peak = f"cgroup peak {run.peak_bytes / 2**20:,.0f} MiB"
        return f"{rate:,.0f} ({secs:.1f} s), {rss_kb / 1024:,.0f} MiB ({peak}){faults}"

    eng_rate, raw_rate = lines / eng.secs, lines / raw_out["secs"]
    return (
        title,
        "the CLI " + shown(eng_rate, eng.secs, eng_rss, eng),
        shown(raw_rate, raw_out["secs"], raw_out["maxrss_kb"], raw),
        f"{common.ratio(eng_rate, raw_rate):.3f}×",
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=1_000_000)
    ap.add_argument("--edges", type=int, default=2_000_000)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--cli", action="store_true", help="also time the drsg import command")
    ap.add_argument("--keep", action="store_true", help="keep the imported databases in out/import")
    ap.add_argument(
        "--memory-limit",
        type=int,
        default=400,
        metavar="MIB",
        help="also run the CLI and the raw replay under this memory limit, page cache included (0: not)",
    )
    args = ap.parse_args()
    work = common.OUT / "import"
    work.mkdir(parents=True, exist_ok=True)
    data = work / f"words-{args.nodes}-{args.edges}-{args.seed}.jsonl"
    if not data.exists():
        print(f"generating {data.name} …", flush=True)
        generate(data, args.nodes, args.edges, args.seed)
    lines = args.nodes + args.edges
    size_mib = data.stat().st_size / 2**20

    scratch = ("engine.drsg", "rec.drsg", "raw.lmdb", "floor.lmdb", "cli.drsg", "limited.drsg", "limited.lmdb")
    for name in scratch:
        for path in (work / name, work / f"{name}-lock"):
            path.unlink(missing_ok=True)
    puts_file = work / "puts.pickle"
    recorded = run([sys.executable, "-c", RECORD, str(work / "rec.drsg"), str(data), str(puts_file)])
    print(f"recorded: {recorded}", flush=True)
    raw = run([sys.executable, "-c", RAW, str(work / "raw.lmdb"), str(puts_file)])
    print(f"raw: {raw}", flush=True)
    eng = run([sys.executable, "-c", ENGINE, str(work / "engine.drsg"), str(data)])
    print(f"drsg: {eng}", flush=True)
    floor = run([sys.executable, "-c", FLOOR, str(work / "floor.lmdb"), str(data)])
    print(f"least Python importer: {floor}", flush=True)
    assert eng["nodes"] == args.nodes and eng["edges"] == args.edges, eng
    assert raw["puts"] == recorded["puts"], (raw, recorded)
    engine_size = (work / "engine.drsg").stat().st_size / 2**20
    raw_size = (work / "raw.lmdb").stat().st_size / 2**20

    def rate(r: dict) -> float:  # type: ignore[type-arg]
        return lines / r["secs"]

    rows = [
        (
            f"lines/s ({args.nodes:,} nodes + {args.edges:,} edges, {size_mib:,.0f} MiB JSONL)",
            f"{rate(eng):,.0f} ({eng['secs']:.1f} s; {eng['report']['commits']:,} commits)",
            f"{rate(raw):,.0f} ({raw['secs']:.1f} s; {raw['puts']:,} puts in {raw['txns']:,} transactions)",
            f"{common.ratio(rate(eng), rate(raw)):.3f}×",
        ),
        (
            "peak RSS (ru_maxrss of the importing process)",
            f"{eng['maxrss_kb'] / 1024:,.0f} MiB (at start {eng['base_kb'] / 1024:,.0f} MiB)",
            f"{raw['maxrss_kb'] / 1024:,.0f} MiB (holds one transaction's puts)",
            f"{eng['maxrss_kb'] / raw['maxrss_kb']:.2f}×",
        ),
        (
            "of which: anonymous (heap + LMDB's dirty pages) / file-backed (the LMDB map), peaks sampled every 20 ms",
            f"{eng['anon_kb'] / 1024:,.0f} / {eng['file_kb'] / 1024:,.0f} MiB",
            f"{raw['anon_kb'] / 1024:,.0f} / {raw['file_kb'] / 1024:,.0f} MiB",
            "",
        ),
        ("file size", f"{engine_size:,.0f} MiB", f"{raw_size:,.0f} MiB", ""),
        (
            "for scale: the least Python importer (parse, key lookups, encode, the same puts; FLOOR above)",
            f"drsg {rate(eng):,.0f} lines/s",
            f"{rate(floor):,.0f} lines/s ({floor['secs']:.1f} s) = {common.ratio(rate(floor), rate(raw)):.3f}× raw",
            f"{common.ratio(rate(eng), rate(floor)):.3f}× of it",
        ),
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
    if args.memory_limit:
        rows.append(limited_rows(work, data, puts_file, lines, args.memory_limit))
    common.record(
        f"(d) JSONL import, {args.nodes:,} nodes + {args.edges:,} edges",
        rows,
        [
            "drsg imports all or nothing, staged: a commit of 10,000 lines per LMDB transaction past the head, "
            "all made visible by one last transaction (store/staging.py). Raw replays the puts the engine made "
            "(recorded in a separate run): the same keys and values into the same tables, the same transactions.",
            "ru_maxrss counts resident pages of the LMDB memory map as well as the Python heap.",
        ],
    )
    if not args.keep:
        puts_file.unlink(missing_ok=True)
        for name in scratch:
            for path in (work / name, work / f"{name}-lock"):
                path.unlink(missing_ok=True)


if __name__ == "__main__":
    main()
