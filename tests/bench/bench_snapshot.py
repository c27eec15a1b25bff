"""Snapshot, restore and compact on a sizable database, beside what the raw libraries do alone.

Imports bench_import's generated graph (``--nodes`` Words with a line of prose each, ``--edges``
NEXT/SEE_ALSO edges) with ``drsg import``, declares a keyword index on ``text`` and builds its
sidecar (one ``drsg search``), then times, each a fresh ``drsg`` process as a user runs it:

* ``drsg snapshot OUT`` beside raw py-lmdb's ``Environment.copy(compact=True)`` of the same file (the
  LMDB work a snapshot is made of; the sidecar files and the framing and hashing are the rest);
* ``drsg restore OUT`` beside a plain copy of the snapshot file with an fsync (the I/O a restore
  cannot avoid; unpacking, hashing and the checks are the rest);
* ``drsg compact`` after an update pass that held a read open (pages freed and not reusable meanwhile):
  before and after sizes, and its time beside the raw compacting copy.

    .venv/bin/python -m tests.bench.bench_snapshot [--nodes 200000] [--edges 400000]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import lmdb

from tests.bench import common
from tests.bench.bench_import import generate

MiB = 1 << 20


def drsg(db: Path, *args: str) -> tuple[float, str]:
    """One ``drsg`` command in its own process: wall seconds and stdout."""
    os.sync()
    started = time.perf_counter()
    ran = subprocess.run(
        [sys.executable, "-m", "drsg.surfaces.cli", "--db", str(db), *args], capture_output=True, text=True
    )
    secs = time.perf_counter() - started
    if ran.returncode != 0:
        raise SystemExit(f"drsg {' '.join(args)} failed: {ran.stderr[-2000:]}")
    return secs, ran.stdout


def raw_compact_copy(db: Path, out: Path) -> float:
    os.sync()
    started = time.perf_counter()
    env = lmdb.open(str(db), subdir=False, readonly=True, lock=False, max_dbs=16)
    try:
        with out.open("wb") as fh:
            env.copyfd(fh.fileno(), compact=True)
            os.fsync(fh.fileno())
    finally:
        env.close()
    return time.perf_counter() - started


def plain_copy(source: Path, out: Path) -> float:
    os.sync()
    started = time.perf_counter()
    shutil.copyfile(source, out)
    with out.open("rb+") as fh:
        os.fsync(fh.fileno())
    return time.perf_counter() - started


def grow(db: Path, rounds: int) -> None:
    """Updates while a read is held: the pages they free cannot be reused until it ends."""
    import drsg as api

    with api.open(db) as handle, handle.snapshot():
        for r in range(rounds):
            handle.write(
                lambda tx, r=r: [
                    tx.update_node(tx.plane("startup"), f"@w{i}", {"r": r}) for i in range(r * 500, r * 500 + 500)
                ]
            )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=200_000)
    ap.add_argument("--edges", type=int, default=400_000)
    args = ap.parse_args()
    started = dt.datetime.now(dt.UTC)
    work = common.fresh_dir("snapshot")
    data = work / "words.jsonl"
    generate(data, args.nodes, args.edges, seed=5)
    db = work / "graph.drsg"
    drsg(db, "import", str(data), "--plane", "startup")
    drsg(db, "index", "keyword", "Word", "text")
    drsg(db, "search", 'SEARCH (w:Word) ON text MATCHING "graph" TOPK 3')
    size = db.stat().st_size

    snap_secs, out = drsg(db, "snapshot", str(work / "s.snap"), "--json")
    taken = json.loads(out)
    raw_copy = raw_compact_copy(db, work / "raw.copy")
    restore_secs, out = drsg(work / "restored.drsg", "restore", str(work / "s.snap"), "--json")
    restored = json.loads(out)
    floor = plain_copy(work / "s.snap", work / "plain.copy")

    grow(db, 40)
    before = db.stat().st_size
    raw_grown = raw_compact_copy(db, work / "raw2.copy")
    compact_secs, out = drsg(db, "compact", "--json")
    done = json.loads(out)

    mb, sidecars = taken["bytes"] / MiB, taken["bytes"] - taken["db_bytes"]
    rows = [
        f"Database: {args.nodes:,} nodes and {args.edges:,} edges imported, a keyword index on `text`: "
        f"file {size / MiB:.0f} MiB; the snapshot {mb:.0f} MiB (database {taken['db_bytes'] / MiB:.0f} MiB "
        f"after LMDB's compaction, sidecars {sidecars / MiB:.0f} MiB) at seq {taken['seq']}.",
        "",
        "| measure | drsg | raw | drsg / raw |",
        "|---|---|---|---|",
        f"| `drsg snapshot` vs py-lmdb `copyfd(compact=True)` | {taken['secs']:.2f} s ({mb / taken['secs']:.0f} MiB/s; "
        f"{snap_secs:.2f} s with the process's start) | {raw_copy:.2f} s | {taken['secs'] / raw_copy:.2f}× |",
        f"| `drsg restore` vs a plain copy of the snapshot file with fsync | {restored['secs']:.2f} s "
        f"({mb / restored['secs']:.0f} MiB/s; {restore_secs:.2f} s with the process's start) | {floor:.2f} s | "
        f"{restored['secs'] / floor:.2f}× |",
        f"| `drsg compact` after 40 updates of 500 nodes under a held read vs the raw compacting copy | "
        f"{compact_secs:.2f} s | {raw_grown:.2f} s | {compact_secs / raw_grown:.2f}× |",
        f"| file before → after compact | {before / MiB:.1f} → {done['after'] / MiB:.1f} MiB "
        f"({done['reclaimed'] / MiB:.1f} MiB reclaimed) | | |",
    ]
    common.append_section("(#40 items 1, 3) snapshot, restore and compact", started, rows, write=True)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
