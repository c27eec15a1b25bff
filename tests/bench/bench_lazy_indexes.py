"""A one-shot search on a small plane of a database that also holds a large vector index on another
plane: a read loads only the indexes of the plane it searches (workers/manager.py's lazy set).

The database: plane ``small`` (two 4-d vectors under a vector index) and plane ``big`` (N random
D-d vectors under a vector index), every sidecar saved as ``drsg index ensure`` leaves them. Each
figure is the median of fresh ``drsg search`` processes (wall time from exec, and the CPU time its
processes used), byte-compiled as installed (bench_startup's way); ``--tree OLD`` times another
checkout's code beside this one, same run, passes interleaved.

    .venv/bin/python -m tests.bench.bench_lazy_indexes --tree OLD            # appends to RESULTS.md
    .venv/bin/python -m tests.bench.bench_lazy_indexes --n 5000 --runs 3 --no-record
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import statistics
from pathlib import Path

from tests.bench import common
from tests.bench.bench_startup import DRSG, ENV, one_read, other

SMALL = ["search", "-p", "small", "SEARCH (d:Doc) ON v NEAR [1, 0, 0, 0] TOPK 1"]


def make_database(root: Path, n: int, dims: int) -> Path:
    import numpy as np

    import drsg
    from drsg.kernel.values import Vector
    from drsg.store.database import Database
    from drsg.store.transaction import WriteTx
    from drsg.workers.manager import IndexSet

    path = root / "planes.drsg"
    db = drsg.open(path)
    assert isinstance(db, Database)
    for name in ("small", "big"):
        db.write(lambda tx, p=name: tx.declare_index(tx.ensure_plane(p), "vector", "Doc", "v", {}))
    for key, v in (("a", [1.0, 0.0, 0.0, 0.0]), ("b", [0.0, 1.0, 0.0, 0.0])):
        db.write(lambda tx, k=key, x=v: tx.create_node(tx.ensure_plane("small"), k, ["Doc"], {"v": Vector.of(x)}))
    rows = np.random.default_rng(7).standard_normal((n, dims)).astype(np.float32).tolist()
    for start in range(0, n, 5000):

        def chunk(tx: WriteTx, s: int = start) -> None:
            plane = tx.ensure_plane("big")
            for i, row in enumerate(rows[s : s + 5000], s):
                tx.create_node(plane, f"n{i}", ["Doc"], {"v": Vector.of(row)})

        db.write(chunk)
    indexes = IndexSet(db)  # every index built and saved, as `drsg index ensure` leaves them
    indexes.catch_up()
    indexes.close()
    db.close()
    return path


def _size(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=50_000, help="vectors on plane big")
    parser.add_argument("--dims", type=int, default=128)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--tree", help="a package tree to time beside this checkout (bench_startup's --tree)")
    parser.add_argument("--no-record", action="store_true")
    opts = parser.parse_args()
    started = dt.datetime.now(dt.UTC)
    root = common.fresh_dir("lazy_indexes")
    ENV.pop("PYTHONDONTWRITEBYTECODE", None)
    ENV["PYTHONPYCACHEPREFIX"] = str(root / "pycache")
    db = make_database(root, opts.n, opts.dims)
    big_vector = "[" + ", ".join("0.5" for _ in range(opts.dims)) + "]"
    reads = [
        ("`drsg search` on plane small", SMALL),
        (
            "`drsg search` on plane big (both load its index)",
            ["search", "-p", "big", f"SEARCH (d:Doc) ON v NEAR {big_vector} TOPK 1"],
        ),
    ]
    cmds = [DRSG, *([other(opts.tree)] if opts.tree else [])]
    for cmd in cmds:  # untimed: fills the bytecode cache and the page cache alike for every column
        for _name, args in reads:
            one_read(cmd, db, args)
    wall: dict[tuple[str, int], list[float]] = {(name, i): [] for name, _ in reads for i in range(len(cmds))}
    cpu: dict[tuple[str, int], list[float]] = {(name, i): [] for name, _ in reads for i in range(len(cmds))}
    loads = []
    for _ in range(opts.runs):  # passes interleaved: the machine's load falls on every column alike
        loads.append(os.getloadavg()[0])
        for i, cmd in enumerate(cmds):
            for name, args in reads:
                spent, used = one_read(cmd, db, args)
                wall[(name, i)].append(spent)
                cpu[(name, i)].append(used)
    head = "| read | this checkout (wall / CPU) |" + (" --tree (wall / CPU) | paired wall ratio |" if opts.tree else "")
    rows = [head, "|---|---|" + ("---|---|" if opts.tree else "")]
    for name, _ in reads:
        cells = [
            f"{statistics.median(wall[(name, i)]):.3f} s / {statistics.median(cpu[(name, i)]):.3f} s"
            for i in range(len(cmds))
        ]
        if opts.tree:
            ratio = statistics.median(a / b for a, b in zip(wall[(name, 0)], wall[(name, 1)], strict=True))
            cells.append(f"{ratio:.2f}×")
        rows.append(f"| {name} | {' | '.join(cells)} |")
    sidecars = _size(Path(f"{db}.hnsw")) / 1e6
    lines = [
        f"Plane big: {opts.n:,} × {opts.dims}-d vectors, its sidecars {sidecars:.0f} MB; plane small: 2 × 4-d. "
        f"Median of {opts.runs} fresh processes each; 1-min load average at each pass: "
        + ", ".join(f"{x:.2f}" for x in loads)
        + ".",
        "",
        *rows,
    ]
    print(common.append_section("A one-shot search loads only its plane's indexes", started, lines, not opts.no_record))


if __name__ == "__main__":
    main()
