"""Start-up: `drsg serve` to its first accepted connection and answered /health, and one-shot CLI reads.

Each figure is the median wall time of N fresh processes (the real `drsg` entry point in the venv),
on a small database made once: one plane with two nodes, each with a 4-d vector under a declared
vector index. `serve` runs on an empty database (just created), as the issue's target says; its
clock starts at exec and stops when a TCP connect succeeds, then when GET /health answers 200.

    .venv/bin/python -m tests.bench.bench_startup                 # appends to RESULTS.md
    .venv/bin/python -m tests.bench.bench_startup --runs 3 --no-record
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from tests.bench import common

DRSG = str(Path(sys.executable).parent / "drsg")

READS: list[tuple[str, list[str]]] = [
    ("drsg get @a", ["get", "-p", "p", "@a"]),
    ("drsg cypher 'MATCH (n:Doc) RETURN n.name'", ["cypher", "-p", "p", "MATCH (n:Doc) RETURN n.name"]),
    ("drsg search '… NEAR [vector]'", ["search", "-p", "p", "SEARCH (d:Doc) ON v NEAR [1, 0, 0, 0] TOPK 1"]),
    ("drsg plane list", ["plane", "list"]),
]


def _drsg(db: Path, *args: str) -> None:
    subprocess.run([DRSG, "--db", str(db), *args], check=True, capture_output=True, timeout=120)


def make_database(root: Path) -> Path:
    db = root / "reads.drsg"
    _drsg(db, "plane", "create", "p")
    _drsg(db, "index", "ensure", "-p", "p", "Doc", "v")
    _drsg(db, "node", "put", "-p", "p", "-l", "Doc", "-P", "name=Ada", "-P", "v=[1,0,0,0]", "a")
    _drsg(db, "node", "put", "-p", "p", "-l", "Doc", "-P", "name=Bob", "-P", "v=[0,1,0,0]", "b")
    return db


def one_read(db: Path, args: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run([DRSG, "--db", str(db), *args], check=True, capture_output=True, timeout=120)
    return time.perf_counter() - started


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def one_serve(root: Path, n: int) -> tuple[float, float]:
    """Seconds from exec to the first accepted connection, and to the first answered /health."""
    db = root / f"serve-{n}.drsg"
    _drsg(db, "plane", "create", "p")  # an empty plane: the database exists, nothing to index
    port = _free_port()
    started = time.perf_counter()
    proc = subprocess.Popen(
        [DRSG, "serve", "--addr", f"127.0.0.1:{port}", "--db", str(db)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "DRSG_TOKEN": ""},
    )
    try:
        accepted = health = 0.0
        while time.perf_counter() - started < 60:
            if not accepted:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    accepted = time.perf_counter() - started
                except OSError:
                    time.sleep(0.005)
                    continue
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as answer:
                    if answer.status == 200:
                        health = time.perf_counter() - started
                        break
            except OSError:
                time.sleep(0.005)
        if not health:
            raise RuntimeError("drsg serve did not answer /health within 60 s")
        return accepted, health
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--no-record", action="store_true")
    opts = parser.parse_args()
    started = dt.datetime.now(dt.UTC)
    root = common.fresh_dir("startup")
    db = make_database(root)
    rows: list[str] = []
    accepts, healths = [], []
    for n in range(opts.runs):
        accepted, health = one_serve(root, n)
        accepts.append(accepted)
        healths.append(health)
    rows.append(f"| `drsg serve` → first accepted connection | {statistics.median(accepts):.3f} s | ≤ 1 s |")
    rows.append(f"| `drsg serve` → first answered `/health` | {statistics.median(healths):.3f} s | ≤ 1 s |")
    for name, args in READS:
        times = [one_read(db, args) for _ in range(opts.runs)]
        rows.append(f"| `{name}` | {statistics.median(times):.3f} s | ≤ 0.3 s |")
    lines = [
        f"Median of {opts.runs} fresh processes each (wall time from exec).",
        "",
        "| step | median | target |",
        "|---|---|---|",
        *rows,
    ]
    print(common.append_section("Start-up: drsg serve and one-shot CLI reads", started, lines, not opts.no_record))


if __name__ == "__main__":
    main()
