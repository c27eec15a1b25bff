"""Point lookups and 1-/2-hop reads beside SQLite, same run (issue #37, item 3).

Upstream's shape: 100,000 nodes keyed ``n{i}``, 500,000 uniform random edges, loaded into drsg with
``import_jsonl`` and into SQLite with upstream's schema (WAL, synchronous=NORMAL, a TEXT primary key
for nodes, edges indexed by source). Then, for the same random keys and ids, medians over passes:

- lookup by key, a snapshot each (``plane.get(key)``) and inside one open snapshot;
- 1-hop with edge records (``snap.neighbors``, a snapshot each) vs SQLite's edge rows of a source;
- 2-hop reachable set (``neighbor_ids`` twice) vs SQLite's recursive CTE;
- as-of lookup (``plane.get(key, as_of=seq)``).

    .venv/bin/python -m tests.bench.bench_reads [--nodes 100000] [--edges 500000] [--samples 10000]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sqlite3
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import drsg
from drsg.store.records import Neighbor
from tests.bench import common


def build(out: Path, n_nodes: int, n_edges: int, seed: int) -> tuple[Path, Path]:
    """The drsg and SQLite files of one graph, reused while their stamp matches."""
    stamp = out / "stamp.json"
    want = {"nodes": n_nodes, "edges": n_edges, "seed": seed, "v": 1}
    db_path, sql_path = out / "drsg.lmdb", out / "peer.sqlite"
    if stamp.exists() and json.loads(stamp.read_text()) == want:
        return db_path, sql_path
    out = common.fresh_dir(out.name)
    rng = random.Random(seed)
    edges = [(rng.randrange(n_nodes), rng.randrange(n_nodes)) for _ in range(n_edges)]
    jsonl = out / "graph.jsonl"
    with jsonl.open("w") as fh:
        for i in range(n_nodes):
            fh.write(json.dumps({"labels": ["N"], "external_key": f"n{i}", "properties": {"i": i}}) + "\n")
        for s, d in edges:
            fh.write(json.dumps({"src_key": f"n{s}", "dst_key": f"n{d}", "type": "E", "properties": {"w": 1}}) + "\n")
    started = time.perf_counter()
    with drsg.open(db_path, map_size=4 << 30) as db:
        db.create_plane("g")
        db.plane("g").import_jsonl(jsonl)
    print(f"drsg import_jsonl: {time.perf_counter() - started:.1f} s", flush=True)
    con = sqlite3.connect(sql_path)
    con.executescript(
        "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
        "CREATE TABLE nodes(key TEXT PRIMARY KEY, id INTEGER UNIQUE, labels TEXT, props TEXT);"
        "CREATE TABLE edges(id INTEGER PRIMARY KEY, src INTEGER, dst INTEGER, type TEXT, props TEXT);"
    )
    con.executemany(
        "INSERT INTO nodes VALUES (?,?,?,?)", ((f"n{i}", i, '["N"]', json.dumps({"i": i})) for i in range(n_nodes))
    )
    con.executemany(
        "INSERT INTO edges(src,dst,type,props) VALUES (?,?,?,?)", ((s, d, "E", '{"w": 1}') for s, d in edges)
    )
    con.executescript("CREATE INDEX edges_src ON edges(src);")
    con.commit()
    con.close()
    jsonl.unlink()
    stamp.write_text(json.dumps(want))
    return db_path, sql_path


def per_call(fn: Callable[[int], object], picks: list[int]) -> float:
    """µs per call of ``fn`` over ``picks``."""
    started = time.perf_counter()
    for i in picks:
        fn(i)
    return (time.perf_counter() - started) / len(picks) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=100_000)
    parser.add_argument("--edges", type=int, default=500_000)
    parser.add_argument("--samples", type=int, default=10_000)
    parser.add_argument("--passes", type=int, default=5)
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args()
    db_path, sql_path = build(common.OUT / "reads", args.nodes, args.edges, 37)
    db = drsg.open(db_path, map_size=4 << 30)
    plane = db.plane("g")
    pid = plane.id
    with db.snapshot() as snap:  # the file's node ids, by key (import numbers them from its own counter)
        ids = [snap.node_id_by_key(pid, f"n{i}") for i in range(args.nodes)]
        old = snap.at
    node_of = {nid: i for i, nid in enumerate(ids)}
    con = sqlite3.connect(sql_path)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA synchronous=NORMAL")
    sql_get = "SELECT id, labels, props FROM nodes WHERE key = ?"
    sql_hop = "SELECT id, src, dst, type, props FROM edges WHERE src = ?"
    sql_2hop = (
        "WITH RECURSIVE r(n, d) AS (SELECT ?, 0 UNION SELECT e.dst, r.d + 1 FROM edges e JOIN r ON e.src = r.n "
        "WHERE r.d < 2) SELECT DISTINCT n FROM r WHERE d > 0"
    )

    def drsg_get(i: int) -> object:
        return plane.get(f"n{i}")

    def drsg_hop(i: int) -> list[Neighbor]:
        with db.snapshot() as s:
            return list(s.neighbors(pid, ids[i], "out"))

    def drsg_2hop(i: int) -> set[int]:
        with db.snapshot() as s:
            first = set(s.neighbor_ids(pid, ids[i], "out"))
            seen = set(first)
            for n in first:
                seen.update(s.neighbor_ids(pid, n, "out"))
            return seen

    def drsg_asof(i: int) -> object:
        return plane.get(f"n{i}", as_of=old)

    def sql_get_(i: int) -> object:
        return con.execute(sql_get, (f"n{i}",)).fetchone()

    def sql_hop_(i: int) -> list[Any]:
        return con.execute(sql_hop, (i,)).fetchall()

    def sql_2hop_(i: int) -> list[Any]:
        return con.execute(sql_2hop, (i,)).fetchall()

    # Cross-check: the same graph in both.
    rng = random.Random(1)
    for i in rng.sample(range(args.nodes), 200):
        mine = sorted(node_of[n.node] for n in drsg_hop(i))
        theirs = sorted(row[2] for row in sql_hop_(i))
        assert mine == theirs, (i, mine, theirs)
        assert {node_of[n] for n in drsg_2hop(i)} == {row[0] for row in sql_2hop_(i)}

    ops: list[tuple[str, Callable[[int], object], Callable[[int], object] | None, int]] = [
        ("lookup by key, a snapshot each (`plane.get`)", drsg_get, sql_get_, args.samples),
        ("1-hop with edge records (`snap.neighbors`, a snapshot each)", drsg_hop, sql_hop_, args.samples),
        ("2-hop reachable set (`neighbor_ids` twice)", drsg_2hop, sql_2hop_, args.samples // 10),
        ("as-of lookup (`plane.get(key, as_of=seq)`)", drsg_asof, None, args.samples),
    ]
    inside: list[float] = []
    times: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name, *_ in ops}
    for p in range(args.passes):
        picks = [random.Random(p).randrange(args.nodes) for _ in range(args.samples)]
        for name, mine_fn, peer_fn, count in ops:
            times[name][0].append(per_call(mine_fn, picks[:count]))
            if peer_fn is not None:
                times[name][1].append(per_call(peer_fn, picks[:count]))
        with db.snapshot() as open_snapshot:
            inside.append(per_call(lambda i: open_snapshot.node_by_key(pid, f"n{i}"), picks))
    rows = []
    for name, _mine, peer_fn, _count in ops:
        mine_us = statistics.median(times[name][0])
        if peer_fn is None:
            rows.append((name, f"{mine_us:.1f} µs", "—", "—"))
        else:
            peer_us = statistics.median(times[name][1])
            rows.append((name, f"{mine_us:.1f} µs", f"{peer_us:.1f} µs", f"{common.ratio(mine_us, peer_us):.2f}×"))
    rows.insert(
        1,
        (
            "lookup by key inside one open snapshot (`snap.node_by_key`)",
            f"{statistics.median(inside):.1f} µs",
            "—",
            "—",
        ),
    )
    notes = [
        f"{args.nodes:,} nodes, {args.edges:,} uniform random edges (seed 37), {args.passes} passes of "
        f"{args.samples:,} random keys (2-hop: a tenth), medians of the passes; same graph cross-checked.",
    ]
    if args.no_record:
        os.environ["DRSG_BENCH_NO_RECORD"] = "1"
    common.record("Point lookups and 1-/2-hop reads beside SQLite", rows, notes, raw="SQLite")
    db.close()


if __name__ == "__main__":
    main()
