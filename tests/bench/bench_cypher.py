"""Cypher reads: drsg's Cypher beside the same reads through drsg's Python API and beside Kùzu's Cypher.

The graph is upstream's BENCHMARKS.md workload (its figures: reference/upstream-drsg.md §9): N nodes
with string keys ``n{i}`` (label ``L``, an integer ``x`` in 0..999 and a group ``g`` of ten), N × 5
uniform random ``E`` relationships — written as one file each way: JSONL imported by drsg
(``import_jsonl``), CSV copied by Kùzu (``COPY … FROM``), both on local disk in the same run. Then,
per read, the median µs over the same random keys or thresholds:

* key lookup    ``MATCH (n) WHERE key(n) = $k RETURN n``              (API: ``plane.get(k)``)
* 1-hop         ``MATCH (n)-[:E]->(m) WHERE key(n) = $k RETURN m``    (API: ``plane.neighbours(k)``)
* 2-hop         ``… -[:E]->()-[:E]->(m) … RETURN DISTINCT m``         (API: neighbours of neighbours)
* label scan    ``MATCH (n:L) WHERE n.x > $v RETURN count(*)``        (API: ``plane.nodes("L")`` filtered)
* aggregation   ``MATCH (n:L) RETURN n.g AS g, count(*) AS c``        (API: ``plane.nodes("L")`` counted)

drsg's statements are parameterised, so each runs the cached compiled statement; Kùzu's are the
same text with ``n:L``/``n.key`` for ``key(n)`` through ``Connection.execute(text, params)``. Each
answer's size is checked equal across the three before timing. Also: what compiling a statement
costs the first time and when cached. Results are appended to RESULTS.md.

    .venv/bin/python -m tests.bench.bench_cypher [--nodes 100000] [--degree 5] [--lookups 2000] [--scans 5]

Kùzu is a benchmark-only dependency: ``pip install -e '.[bench]'`` (tests/bench/run_all.sh does).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import statistics
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import drsg
from tests.bench import common

PLANE = "bench"
GROUPS = 10


@dataclass(frozen=True)
class Case:
    name: str
    drsg: str  # drsg's statement
    kuzu: str  # Kùzu's
    api: Callable[[drsg.Plane, Mapping[str, Any]], int]  # the same read through the Python API: its size
    param: Callable[[random.Random, int], dict[str, Any]]  # a draw of the statement's parameters
    point: bool  # a point read (many samples) or a scan (a few)


def _key(rng: random.Random, n: int) -> dict[str, Any]:
    return {"k": f"n{rng.randrange(n)}"}


def _threshold(rng: random.Random, n: int) -> dict[str, Any]:
    return {"v": rng.randrange(1000)}


def _nothing(rng: random.Random, n: int) -> dict[str, Any]:
    return {}


def _two_hop(plane: drsg.Plane, p: Mapping[str, Any]) -> int:
    ends = set()
    for hop in plane.neighbours(p["k"], direction="out", type="E"):
        ends.update(h.node.id for h in plane.neighbours(hop.node.id, direction="out", type="E"))
    return len(ends)


def _groups(plane: drsg.Plane, p: Mapping[str, Any]) -> int:
    counts: dict[object, int] = {}
    for node in plane.nodes("L"):
        counts[node.props.get("g")] = counts.get(node.props.get("g"), 0) + 1
    return len(counts)


CASES = (
    Case(
        "key lookup",
        "MATCH (n) WHERE key(n) = $k RETURN n",
        "MATCH (n:L) WHERE n.key = $k RETURN n",
        lambda plane, p: len([plane.get(p["k"])]),
        _key,
        True,
    ),
    Case(
        "1-hop",
        "MATCH (n)-[:E]->(m) WHERE key(n) = $k RETURN m",
        "MATCH (n:L)-[:E]->(m:L) WHERE n.key = $k RETURN m",
        lambda plane, p: len(plane.neighbours(p["k"], direction="out", type="E")),
        _key,
        True,
    ),
    Case(
        "2-hop (distinct ends)",
        "MATCH (n)-[:E]->()-[:E]->(m) WHERE key(n) = $k RETURN DISTINCT m",
        "MATCH (n:L)-[:E]->(:L)-[:E]->(m:L) WHERE n.key = $k RETURN DISTINCT m",
        _two_hop,
        _key,
        True,
    ),
    Case(
        "filtered label scan (count)",
        "MATCH (n:L) WHERE n.x > $v RETURN count(*) AS c",
        "MATCH (n:L) WHERE n.x > $v RETURN count(*) AS c",
        lambda plane, p: sum(1 for node in plane.nodes("L") if node.props["x"] > p["v"]),  # type: ignore[operator]
        _threshold,
        False,
    ),
    Case(
        "aggregation (group count)",
        "MATCH (n:L) RETURN n.g AS g, count(*) AS c",
        "MATCH (n:L) RETURN n.g AS g, count(*) AS c",
        _groups,
        _nothing,
        False,
    ),
)


# ---------------------------------------------------------------------- the graph, both ways


def make_files(out: Path, n: int, degree: int, seed: int) -> tuple[Path, Path, Path]:
    rng = random.Random(seed)
    jsonl, nodes_csv, edges_csv = out / "graph.jsonl", out / "nodes.csv", out / "edges.csv"
    xs = [rng.randrange(1000) for _ in range(n)]
    edges = [(rng.randrange(n), rng.randrange(n)) for _ in range(n * degree)]
    with jsonl.open("w") as fh, nodes_csv.open("w") as nodes:
        nodes.write("key,x,g\n")
        for i, x in enumerate(xs):
            props = {"x": x, "g": f"g{i % GROUPS}"}
            fh.write(json.dumps({"labels": ["L"], "external_key": f"n{i}", "properties": props}) + "\n")
            nodes.write(f"n{i},{x},g{i % GROUPS}\n")
        with edges_csv.open("w") as rels:
            rels.write("from,to\n")
            for a, b in edges:
                fh.write(json.dumps({"src_key": f"n{a}", "dst_key": f"n{b}", "type": "E"}) + "\n")
                rels.write(f"n{a},n{b}\n")
    return jsonl, nodes_csv, edges_csv


def load_drsg(out: Path, jsonl: Path) -> tuple[drsg.Database, float]:
    db = drsg.open(out / "graph.drsg", map_size=4 << 30)
    db.create_plane(PLANE)
    started = time.perf_counter()
    db.plane(PLANE).import_jsonl(jsonl)
    return db, time.perf_counter() - started


def load_kuzu(out: Path, nodes_csv: Path, edges_csv: Path) -> tuple[Any, float]:
    try:
        import kuzu
    except ImportError:
        raise SystemExit("Kùzu is not installed: pip install -e '.[bench]'") from None
    conn = kuzu.Connection(kuzu.Database(str(out / "graph.kuzu")))
    started = time.perf_counter()
    conn.execute("CREATE NODE TABLE L(key STRING, x INT64, g STRING, PRIMARY KEY(key))")
    conn.execute("CREATE REL TABLE E(FROM L TO L)")
    conn.execute(f'COPY L FROM "{nodes_csv}" (header=true)')
    conn.execute(f'COPY E FROM "{edges_csv}" (header=true)')
    return conn, time.perf_counter() - started


# ---------------------------------------------------------------------- timing


def _micros(fn: Callable[[dict[str, Any]], object], draws: list[dict[str, Any]]) -> float:
    times = []
    for params in draws:
        started = time.perf_counter()
        fn(params)
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1e6


def _size(rows: list[list[Any]]) -> int:
    """An answer's size as the API counts it: its rows, or the one count a count(*) answers."""
    if len(rows) == 1 and len(rows[0]) == 1 and isinstance(rows[0][0], int):
        return int(rows[0][0])
    return len(rows)


def compile_costs(plane: drsg.Plane, rounds: int) -> tuple[float, float]:
    """µs to compile a statement the first time (a new text each round) and again (cached)."""
    from drsg.plan.cypher.statement import prepare

    base = CASES[2].drsg
    first = _micros(lambda p: prepare(f"{base} AS m{p['i']}"), [{"i": i} for i in range(rounds)])
    prepare(base)
    again = _micros(lambda p: prepare(base), [{} for _ in range(rounds)])
    return first, again


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=100_000)
    parser.add_argument("--degree", type=int, default=5)
    parser.add_argument("--lookups", type=int, default=2000, help="samples per point read")
    parser.add_argument("--scans", type=int, default=5, help="samples per scan")
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args()
    started_at = dt.datetime.now(dt.UTC)
    out = common.fresh_dir("cypher")
    jsonl, nodes_csv, edges_csv = make_files(out, args.nodes, args.degree, seed=36)
    db, drsg_load = load_drsg(out, jsonl)
    conn, kuzu_load = load_kuzu(out, nodes_csv, edges_csv)
    plane = db.plane(PLANE)
    records = args.nodes * (1 + args.degree)
    rows = [
        f"Graph: {args.nodes:,} nodes, {args.nodes * args.degree:,} relationships (uniform random). Load: drsg "
        f"import_jsonl {records / drsg_load:,.0f} records/s ({drsg_load:.1f} s), Kùzu COPY "
        f"{records / kuzu_load:,.0f} records/s ({kuzu_load:.1f} s).",
        "",
        "| read (median µs) | drsg Cypher | drsg Python API | Kùzu Cypher | drsg Cypher / Kùzu | Cypher / API | rows |",
        "|---|---|---|---|---|---|---|",
    ]
    notes = []
    for case in CASES:
        rng = random.Random(case.name)
        draws = [case.param(rng, args.nodes) for _ in range(args.lookups if case.point else args.scans)]
        check = draws[0]
        ours = plane.cypher(case.drsg, check)
        theirs = conn.execute(case.kuzu, check).get_all()
        sizes = {_size([list(r) for r in ours.rows]), case.api(plane, check), _size(theirs)}
        if len(sizes) != 1:
            notes.append(f"{case.name}: the answers' sizes differ for {check}: {sorted(sizes)}")
        cypher_us = _micros(lambda p, c=case: plane.cypher(c.drsg, p), draws)
        api_us = _micros(lambda p, c=case: c.api(plane, p), draws)
        kuzu_us = _micros(lambda p, c=case: conn.execute(c.kuzu, p).get_all(), draws)
        rows.append(
            f"| {case.name} | {cypher_us:,.1f} | {api_us:,.1f} | {kuzu_us:,.1f} | "
            f"{common.ratio(cypher_us, kuzu_us):.2f}× | {common.ratio(cypher_us, api_us):.2f}× | {min(sizes)} |"
        )
        print(rows[-1], flush=True)
    first, again = compile_costs(plane, 200)
    rows += [
        "",
        f"Compiling a statement (`prepare`, the 2-hop read): {first:,.1f} µs the first time, {again:,.2f} µs cached.",
        "",
        f"Samples: {args.lookups} random keys per point read, {args.scans} thresholds per scan; the same draws "
        "for all three. drsg's file and Kùzu's directory on the same disk, both warm (loaded in this run).",
        *[f"- {note}" for note in notes],
    ]
    title = "(#36) Cypher reads: drsg beside its Python API and Kùzu"
    common.append_section(title, started_at, rows, not args.no_record)
    db.close()


if __name__ == "__main__":
    main()
