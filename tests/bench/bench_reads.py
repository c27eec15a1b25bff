"""Point lookups and 1-/2-hop reads beside SQLite, same run (issue #37, item 3).

Upstream's shape: 100,000 nodes keyed ``n{i}``, 500,000 uniform random edges, loaded into drsg with
``import_jsonl`` and into SQLite with upstream's schema (WAL, synchronous=NORMAL, a TEXT primary key
for nodes, edges indexed by source). Then, for the same random keys and ids, medians over passes:

- lookup by key, a snapshot each (``plane.get(key)``) and inside one open snapshot;
- 1-hop with edge records (``snap.neighbors``, a snapshot each, and inside one open snapshot) vs
  SQLite's edge rows of a source, by the C walk and by the Python walk forced, interleaved;
- 2-hop reachable set (``neighbor_ids`` twice, a snapshot each, and inside one) vs SQLite's CTE;
- as-of lookup (``plane.get(key, as_of=seq)``), and the same with an AsOf made per read (as the API did
  before it kept one per seq), each beside the current lookup of the same pass.

    .venv/bin/python -m tests.bench.bench_reads [--nodes 100000] [--edges 500000] [--samples 10000]
"""

from __future__ import annotations

import argparse
import functools
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
from drsg.kernel.asof import parse_as_of
from drsg.store import native
from drsg.store.records import Neighbor
from drsg.store.snapshot import Snapshot
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
        found = [snap.node_id_by_key(pid, f"n{i}") for i in range(args.nodes)]
        ids = [nid for nid in found if nid is not None]
        assert len(ids) == args.nodes
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

    def lookup(s: Snapshot, i: int) -> object:
        return s.node_by_key(pid, f"n{i}")

    def hop(s: Snapshot, i: int) -> list[Neighbor]:
        return list(s.neighbors(pid, ids[i], "out"))

    def two_hop(s: Snapshot, i: int) -> set[int]:
        first = set(s.neighbor_ids(pid, ids[i], "out"))
        seen = set(first)
        for n in first:
            seen.update(s.neighbor_ids(pid, n, "out"))
        return seen

    def drsg_hop(i: int) -> list[Neighbor]:
        with db.snapshot() as s:
            return hop(s, i)

    def drsg_2hop(i: int) -> set[int]:
        with db.snapshot() as s:
            return two_hop(s, i)

    def drsg_asof(i: int) -> object:
        return plane.get(f"n{i}", as_of=old)

    def drsg_asof_parsed(i: int) -> object:  # the API before: an AsOf parsed from the seq on every read
        return plane.get(f"n{i}", as_of=parse_as_of(old))

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

    # Each drsg read as a user makes it and as SQLite's autocommit makes its own (a read transaction
    # per statement): a snapshot each; the same read inside one open snapshot beside it. The 2-hop
    # reachable set is read from the adjacency alone (`neighbor_ids`), as SQLite's CTE reads no edge
    # properties. Each read runs twice, interleaved: by the C walk and lookup (store/_walk.c) and by
    # the Python path forced (`native.use_native(False)`), the reference they replace.
    ops: list[tuple[str, Callable[[int], object], Callable[[Snapshot, int], object], Any, int, int | None]] = [
        ("lookup by key, a snapshot each (`plane.get`)", drsg_get, lookup, sql_get_, args.samples, None),
        ("1-hop with edge records (`snap.neighbors`, a snapshot each)", drsg_hop, hop, sql_hop_, args.samples, None),
        (
            "2-hop reachable set (`neighbor_ids` twice, a snapshot each)",
            drsg_2hop,
            two_hop,
            sql_2hop_,
            args.samples // 10,
            None,
        ),
        ("as-of lookup (`plane.get(key, as_of=seq)`)", drsg_asof, lookup, None, args.samples, old),
    ]
    paths = ((True, ""), (False, ", the Python path (before)"))
    times: dict[str, list[float]] = {}
    for p in range(args.passes):
        picks = [random.Random(p).randrange(args.nodes) for _ in range(args.samples)]
        for name, mine_fn, open_fn, peer_fn, count, at in ops:
            for in_c, path in paths:
                native.use_native(in_c)
                times.setdefault(name + path, []).append(per_call(mine_fn, picks[:count]))
                with db.snapshot(at) as snap:
                    spent = per_call(functools.partial(open_fn, snap), picks[:count])
                    times.setdefault(name + path + " open", []).append(spent)
            if peer_fn is not None:
                times.setdefault(name + " peer", []).append(per_call(peer_fn, picks[:count]))
        native.use_native(True)
    rows = []
    for name, _mine, _open, peer_fn, _count, _at in ops:
        for _in_c, path in paths:
            mine_us, open_us = statistics.median(times[name + path]), statistics.median(times[name + path + " open"])
            shown = f"{mine_us:.1f} µs ({open_us:.1f} µs in an open snapshot)"
            if peer_fn is None:
                rows.append((name + path, shown, "—", "—"))
                continue
            peer_us = statistics.median(times[name + " peer"])
            ratio = f"{common.ratio(mine_us, peer_us):.2f}× ({common.ratio(open_us, peer_us):.2f}× open)"
            rows.append((name + path, shown, f"{peer_us:.1f} µs", ratio))
    # The as-of target is a ratio to the current lookup, smaller than the swings between the rows
    # above: the three reads run on the same block of keys, in rotating order, block after block.
    pairs: dict[str, list[float]] = {"current": [], "as-of": [], "as-of, an AsOf parsed per read (before)": []}
    fns = (drsg_get, drsg_asof, drsg_asof_parsed)
    for b in range(args.passes * 40):
        block = [random.Random(1000 + b).randrange(args.nodes) for _ in range(500)]
        spent = {fn: per_call(fn, block) for fn in fns[b % 3 :] + fns[: b % 3]}
        for name, fn in zip(pairs, fns, strict=True):
            pairs[name].append(spent[fn] / spent[drsg_get])
    ratios = "; ".join(f"{name} {statistics.median(each):.2f}×" for name, each in list(pairs.items())[1:])
    notes = [
        f"lookup by key, a snapshot each, over the current one (median of {len(pairs['current'])} blocks of "
        f"500 keys, the three reads interleaved on each block): {ratios}",
        f"{args.nodes:,} nodes, {args.edges:,} uniform random edges (seed 37), {args.passes} passes of "
        f"{args.samples:,} random keys (2-hop: a tenth), medians of the passes; same graph cross-checked.",
    ]
    if args.no_record:
        os.environ["DRSG_BENCH_NO_RECORD"] = "1"
    common.record("Point lookups and 1-/2-hop reads beside SQLite", rows, notes, raw="SQLite")
    db.close()


if __name__ == "__main__":
    main()
