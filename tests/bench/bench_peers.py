"""Upstream's benchmark (BENCHMARKS.md; reference/upstream-drsg.md §9): drsg beside the databases a user
would pick instead — Kùzu, SQLite, LanceDB, Chroma and raw hnswlib — on the same generated workload.

Workload (upstream's sizes by default): N nodes with string key ``n{i}``, 5 × N uniform random
directed edges ``E``, V 128-d vectors, 10,000 lookup/expand keys, 1,000 vector queries, k=10. The
generator is SplitMix64 (seed 42). §9 does not give upstream's draw order; this one is assumed and
fixed: draw i of the stream is ``mix(seed + (i + 1) · 0x9E3779B97F4A7C15)``; edges first (for each
edge: source, then target, each ``draw % N``), then the node vectors (row by row, 128 draws each,
``(draw >> 11) · 2⁻⁵³ · 2 − 1``), then the lookup keys (``draw % N``), then the query vectors.

Each engine runs in a fresh process on a fresh database per pass; passes are interleaved with the
engine order rotated; every figure is the median of the passes (each pass's figure the median over
its queries). Every lookup / 1-hop / 2-hop answer's size is cross-checked between the graph engines
and the run fails loudly if any differ.

    .venv/bin/python -m tests.bench.bench_peers                 # upstream's sizes (vectors 25,000)
    .venv/bin/python -m tests.bench.bench_peers --quick         # a smoke run in a few minutes
    .venv/bin/python -m tests.bench.bench_peers --nodes 20000 --vectors 5000 --passes 3 --no-record

The peers are a benchmark-only extra: ``pip install -e '.[bench]'``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from tests.bench import common

SEED = 42
DIM = 128
K = 10
DEGREE = 5
GAMMA = np.uint64(0x9E3779B97F4A7C15)
GRAPH_ENGINES = ("drsg-import", "drsg-records", "drsg-write", "kuzu", "sqlite")
VECTOR_ENGINES = ("drsg-vector", "hnswlib", "lancedb", "chroma", "kuzu-vector")
PLANE = "bench"


# ---------------------------------------------------------------------- the generator


def splitmix64(first: int, count: int, seed: int = SEED) -> np.ndarray:
    """Draws ``first`` .. ``first + count - 1`` of SplitMix64's stream (counter form: draw i mixes
    ``seed + (i + 1) · γ``), vectorised; uint64 arithmetic wraps as the reference's does."""
    with np.errstate(over="ignore"):
        z = np.uint64(seed) + (np.arange(first, first + count, dtype=np.uint64) + np.uint64(1)) * GAMMA
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def _unit(draws: np.ndarray) -> np.ndarray:
    return ((draws >> np.uint64(11)).astype(np.float64) * 2.0**-53 * 2.0 - 1.0).astype(np.float32)


def workload(nodes: int, vectors: int, lookups: int, vqueries: int) -> dict[str, np.ndarray]:
    edges = nodes * DEGREE
    at = 0
    ends = (splitmix64(at, 2 * edges) % np.uint64(nodes)).astype(np.int64).reshape(edges, 2)
    at += 2 * edges
    vecs = _unit(splitmix64(at, vectors * DIM)).reshape(vectors, DIM)
    at += vectors * DIM
    keys = (splitmix64(at, lookups) % np.uint64(nodes)).astype(np.int64)
    at += lookups
    queries = _unit(splitmix64(at, vqueries * DIM)).reshape(vqueries, DIM)
    return {"edges": ends, "vectors": vecs, "keys": keys, "queries": queries}


def write_files(out: Path, nodes: int, w: dict[str, np.ndarray]) -> None:
    """The same graph as drsg's JSONL (``drsg import``'s format) and Kùzu's CSVs, plus the arrays."""
    np.savez(out / "workload.npz", **w)
    with (out / "graph.jsonl").open("w") as fh, (out / "nodes.csv").open("w") as nc:
        nc.write("key\n")
        for i in range(nodes):
            fh.write(json.dumps({"labels": ["N"], "external_key": f"n{i}"}) + "\n")
            nc.write(f"n{i}\n")
        with (out / "edges.csv").open("w") as ec:
            ec.write("from,to\n")
            for a, b in w["edges"].tolist():
                fh.write(json.dumps({"src_key": f"n{a}", "dst_key": f"n{b}", "type": "E"}) + "\n")
                ec.write(f"n{a},n{b}\n")


# ---------------------------------------------------------------------- timing helpers


def per_call(fn: Callable[[Any], object], args: list[Any]) -> tuple[float, list[int]]:
    """Median µs of ``fn(a)`` over ``args`` and each answer's size."""
    times, sizes = [], []
    for a in args:
        t = time.perf_counter()
        got = fn(a)
        times.append(time.perf_counter() - t)
        sizes.append(int(got) if isinstance(got, int) else (0 if got is None else 1))
    return statistics.median(times) * 1e6, sizes


def exact_top(matrix: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """Row numbers of the K most cosine-similar rows per query: numpy brute force in float64."""
    m = matrix.astype(np.float64)
    m /= np.linalg.norm(m, axis=1, keepdims=True)
    q = queries.astype(np.float64)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    sims = q @ m.T
    part = np.argpartition(-sims, K, axis=1)[:, :K]
    return part


def recall(found: list[list[int]], exact: np.ndarray) -> float:
    return sum(len(set(f) & set(e.tolist())) for f, e in zip(found, exact, strict=True)) / exact.size


def vector_result(
    build_s: float, n: int, lat: list[float], found: list[list[int]], w: dict[str, Any]
) -> dict[str, Any]:
    return {
        "build_per_s": n / build_s,
        "topk_us": statistics.median(lat) * 1e6,
        "recall": recall(found, exact_top(w["vectors"], w["queries"])),
    }


def timed_queries(fn: Callable[[np.ndarray], list[int]], queries: np.ndarray) -> tuple[list[float], list[list[int]]]:
    lat, found = [], []
    for q in queries:
        t = time.perf_counter()
        found.append(fn(q))
        lat.append(time.perf_counter() - t)
    return lat, found


# ---------------------------------------------------------------------- graph engines (one per child)


def graph_drsg(out: Path, w: dict[str, Any], nodes: int, how: str) -> dict[str, Any]:
    import drsg

    edges: list[list[int]] = w["edges"].tolist()
    db = drsg.open(out / "g.drsg", map_size=8 << 30)
    db.write(lambda tx: tx.create_plane(PLANE))
    plane = db.plane(PLANE)
    if how == "records":  # the Python API's bulk path: a graph in memory, made before (as the peers' files)
        records = [{"labels": ["N"], "external_key": f"n{i}"} for i in range(nodes)]
        records += [{"src_key": f"n{a}", "dst_key": f"n{b}", "type": "E"} for a, b in edges]
    started = time.perf_counter()
    if how == "import":
        plane.import_jsonl(out.parent / "graph.jsonl")
    elif how == "records":
        plane.import_records(records)
    else:

        def load(tx: Any) -> None:
            p = tx.plane(PLANE)
            for i in range(nodes):
                tx.create_node(p, f"n{i}", ["N"], {})
                if i % 10_000 == 9_999:
                    tx.commit_point()
            for j, (a, b) in enumerate(edges):
                tx.create_edge(p, f"@n{a}", f"@n{b}", "E")
                if j % 10_000 == 9_999:
                    tx.commit_point()

        db.write(load)
    load_s = time.perf_counter() - started
    keys = [f"n{k}" for k in w["keys"].tolist()]
    with db.snapshot() as snap:
        pid = snap.plane(PLANE).id
    res: dict[str, Any] = {"load_per_s": (nodes + len(edges)) / load_s}

    def lookup_each(key: str) -> object:
        with db.snapshot() as s:
            return s.node_by_key(pid, key)

    res["lookup_us"], res["lookup_sizes"] = per_call(lookup_each, keys)

    # Read as SQLite's autocommit reads (a read transaction per statement): a snapshot each; the same
    # reads inside one open snapshot beside them. 2-hop is the reachable set from the adjacency alone
    # (`neighbor_ids`), as SQLite's recursive CTE reads no edge properties either.
    def hop1(s: Any, key: str) -> int:
        nid = s.node_id_by_key(pid, key)
        return len(list(s.neighbors(pid, nid, "out")))

    def hop2(s: Any, key: str) -> int:
        nid = s.node_id_by_key(pid, key)
        first = set(s.neighbor_ids(pid, nid, "out"))
        seen = set(first)
        for m in first:
            seen.update(s.neighbor_ids(pid, m, "out"))
        return len(seen)

    for name, read in (("hop1", hop1), ("hop2", hop2)):

        def each(key: str, read: Callable[[Any, str], int] = read) -> int:
            with db.snapshot() as s:
                return read(s, key)

        res[f"{name}_us"], res[f"{name}_sizes"] = per_call(each, keys)
    with db.snapshot() as snap:
        res["lookup_open_us"], _ = per_call(lambda k: snap.node_by_key(pid, k), keys)
        res["hop1_open_us"], _ = per_call(lambda k: hop1(snap, k), keys)
        res["hop2_open_us"], _ = per_call(lambda k: hop2(snap, k), keys)
        head = snap.at
    # as-of: one more commit after the load, then the same keys read as of the load's head
    db.write(lambda tx: tx.create_node(tx.plane(PLANE), "later", ["N"], {}))

    def asof(key: str) -> object:
        with db.snapshot(head) as s:
            return s.node_by_key(pid, key)

    res["asof_us"], _ = per_call(asof, keys[:2000])
    db.close()
    return res


def graph_kuzu(out: Path, w: dict[str, Any], nodes: int) -> dict[str, Any]:
    import kuzu

    conn = kuzu.Connection(kuzu.Database(str(out / "g.kuzu")))
    started = time.perf_counter()
    conn.execute("CREATE NODE TABLE N(key STRING, PRIMARY KEY(key))")
    conn.execute("CREATE REL TABLE E(FROM N TO N)")
    conn.execute(f'COPY N FROM "{out.parent / "nodes.csv"}" (header=true)')
    conn.execute(f'COPY E FROM "{out.parent / "edges.csv"}" (header=true)')
    res: dict[str, Any] = {"load_per_s": (nodes + len(w["edges"])) / (time.perf_counter() - started)}
    keys = [f"n{k}" for k in w["keys"].tolist()]

    def rows(q: str, key: str) -> list[Any]:
        r = conn.execute(q, {"k": key})
        return r.get_all()  # type: ignore[union-attr]

    res["lookup_us"], res["lookup_sizes"] = per_call(
        lambda k: len(rows("MATCH (n:N) WHERE n.key = $k RETURN n", k)) or None, keys
    )
    res["hop1_us"], res["hop1_sizes"] = per_call(
        lambda k: len(rows("MATCH (n:N)-[e:E]->(m:N) WHERE n.key = $k RETURN e, m.key", k)), keys
    )
    res["hop2_us"], res["hop2_sizes"] = per_call(
        lambda k: int(rows("MATCH (n:N)-[:E*1..2]->(m:N) WHERE n.key = $k RETURN count(DISTINCT m.key)", k)[0][0]), keys
    )
    return res


def graph_sqlite(out: Path, w: dict[str, Any], nodes: int) -> dict[str, Any]:
    con = sqlite3.connect(out / "g.sqlite", isolation_level=None)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA synchronous=NORMAL")
    con.execute("CREATE TABLE nodes(id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE, labels TEXT, props TEXT)")
    con.execute(
        "CREATE TABLE edges(id INTEGER PRIMARY KEY, src INTEGER NOT NULL, dst INTEGER NOT NULL, type TEXT, props TEXT)"
    )
    con.execute("CREATE INDEX edges_src ON edges(src)")
    con.execute("CREATE INDEX edges_dst ON edges(dst)")
    edges: list[list[int]] = w["edges"].tolist()
    started = time.perf_counter()
    con.execute("BEGIN")
    con.executemany("INSERT INTO nodes VALUES (?, ?, 'N', '{}')", ((i, f"n{i}") for i in range(nodes)))
    con.executemany("INSERT INTO edges(src, dst, type, props) VALUES (?, ?, 'E', '{}')", edges)
    con.execute("COMMIT")
    res: dict[str, Any] = {"load_per_s": (nodes + len(edges)) / (time.perf_counter() - started)}
    keys = [f"n{k}" for k in w["keys"].tolist()]
    look = "SELECT id, key, labels, props FROM nodes WHERE key = ?"
    hop1 = (
        "SELECT e.id, e.type, e.props, m.key FROM nodes n JOIN edges e ON e.src = n.id "
        "JOIN nodes m ON m.id = e.dst WHERE n.key = ?"
    )
    hop2 = (
        "WITH RECURSIVE r(n, d) AS (SELECT id, 0 FROM nodes WHERE key = ? UNION ALL "
        "SELECT e.dst, r.d + 1 FROM r JOIN edges e ON e.src = r.n WHERE r.d < 2) "
        "SELECT count(DISTINCT n) FROM r WHERE d > 0"
    )
    res["lookup_us"], res["lookup_sizes"] = per_call(lambda k: con.execute(look, (k,)).fetchone(), keys)
    res["hop1_us"], res["hop1_sizes"] = per_call(lambda k: len(con.execute(hop1, (k,)).fetchall()), keys)
    res["hop2_us"], res["hop2_sizes"] = per_call(lambda k: int(con.execute(hop2, (k,)).fetchone()[0]), keys)
    return res


# ---------------------------------------------------------------------- vector engines


def vec_drsg(out: Path, w: dict[str, Any]) -> dict[str, Any]:
    import drsg
    from drsg.kernel.values import Vector
    from drsg.workers.manager import IndexSet
    from drsg.workers.search import Searcher

    vecs = w["vectors"]
    db = drsg.open(out / "v.drsg", map_size=8 << 30)
    db.write(lambda tx: tx.create_plane(PLANE))
    plane = db.plane(PLANE)
    db.write(lambda tx: tx.declare_index(plane, "vector", "V", "embedding", {"metric": "cosine"}))

    def load(tx: Any) -> None:
        p = tx.plane(PLANE)
        for i, v in enumerate(vecs):
            tx.create_node(p, f"n{i}", ["V"], {"embedding": Vector.of(v)})
            if i % 1000 == 999:
                tx.commit_point()

    db.write(load)
    indexes = IndexSet(db)
    searcher = Searcher(db, indexes)
    t = time.perf_counter()
    indexes.catch_up()
    build_s = time.perf_counter() - t
    qs = [Vector.of(q) for q in w["queries"]]
    lat, found = [], []
    for q in qs:
        t = time.perf_counter()
        hits = searcher.vector(PLANE, "V", "embedding", q, "cosine", K)
        lat.append(time.perf_counter() - t)
        found.append([int(h.node.key[1:]) for h in hits])
    res = vector_result(build_s, len(vecs), lat, found, w)
    db.close()
    return res


def vec_hnswlib(out: Path, w: dict[str, Any]) -> dict[str, Any]:
    import hnswlib

    vecs = w["vectors"]
    idx = hnswlib.Index(space="cosine", dim=DIM)
    t = time.perf_counter()
    idx.init_index(max_elements=len(vecs), ef_construction=200, M=16)
    idx.add_items(vecs, np.arange(len(vecs)))  # all cores, hnswlib's default
    build_s = time.perf_counter() - t
    # ef 64 (hnswlib's usual) first, then the breadths drsg's calibration may choose (workers/vector.py's
    # EF_STEPS up to 1024): the row at drsg's recall is picked from these
    sweep = []
    for ef in (64, 96, 128, 192, 256, 384, 512, 768, 1024):
        idx.set_ef(ef)
        lat, found = timed_queries(lambda q: idx.knn_query(q.reshape(1, -1), k=K)[0][0].tolist(), w["queries"])
        sweep.append({"ef": ef, **vector_result(build_s, len(vecs), lat, found, w)})
    return {**sweep[0], "sweep": sweep}


def vec_lancedb(out: Path, w: dict[str, Any]) -> dict[str, Any]:
    import lancedb
    import pyarrow as pa

    vecs = w["vectors"]
    n = len(vecs)
    db = lancedb.connect(str(out / "v.lance"))
    keys = [f"n{i}" for i in range(n)]
    table = pa.table({"key": keys, "vector": pa.FixedSizeListArray.from_arrays(pa.array(vecs.reshape(-1)), DIM)})
    t = time.perf_counter()
    tbl = db.create_table("v", table)
    tbl.create_index(metric="cosine", vector_column_name="vector", num_partitions=max(1, int(n**0.5) // 4))
    build_s = time.perf_counter() - t
    lat, found = timed_queries(
        lambda q: [int(r["key"][1:]) for r in tbl.search(q).metric("cosine").limit(K).select(["key"]).to_list()],
        w["queries"],
    )
    res = vector_result(build_s, n, lat, found, w)
    version = tbl.version
    tbl.add(pa.table({"key": ["later"], "vector": pa.FixedSizeListArray.from_arrays(pa.array(vecs[0]), DIM)}))
    lookups = [f"n{k % n}" for k in w["keys"].tolist()[:200]]

    def asof(key: str) -> object:
        old = db.open_table("v")
        old.checkout(version)
        return old.search().where(f"key = '{key}'").limit(1).to_list()

    res["asof_us"], _ = per_call(asof, lookups)
    return res


def vec_chroma(out: Path, w: dict[str, Any]) -> dict[str, Any]:
    import chromadb

    vecs = w["vectors"]
    client = chromadb.PersistentClient(path=str(out / "v.chroma"))
    col = client.create_collection("vectors", metadata={"hnsw:space": "cosine"}, embedding_function=None)
    t = time.perf_counter()
    step = 5_000
    for i in range(0, len(vecs), step):
        col.add(ids=[f"n{j}" for j in range(i, min(i + step, len(vecs)))], embeddings=vecs[i : i + step])
    build_s = time.perf_counter() - t
    lat, found = timed_queries(
        lambda q: [int(x[1:]) for x in col.query(query_embeddings=[q], n_results=K, include=[])["ids"][0]],
        w["queries"],
    )
    return vector_result(build_s, len(vecs), lat, found, w)


def vec_kuzu(out: Path, w: dict[str, Any]) -> dict[str, Any]:
    import kuzu

    vecs = w["vectors"]
    conn = kuzu.Connection(kuzu.Database(str(out / "v.kuzu")))
    conn.execute("LOAD vector")
    conn.execute(f"CREATE NODE TABLE V(id INT64, vec FLOAT[{DIM}], PRIMARY KEY(id))")
    csv = out / "vectors.csv"
    with csv.open("w") as fh:
        for i, v in enumerate(vecs.tolist()):
            fh.write(f'{i},"[{",".join(map(repr, v))}]"\n')
    conn.execute(f'COPY V FROM "{csv}" (header=false)')
    t = time.perf_counter()
    conn.execute("CALL CREATE_VECTOR_INDEX('V', 'vidx', 'vec', metric := 'cosine')")
    build_s = time.perf_counter() - t
    q = "CALL QUERY_VECTOR_INDEX('V', 'vidx', $q, 10) RETURN node.id ORDER BY distance"
    lat, found = timed_queries(
        lambda v: [int(r[0]) for r in conn.execute(q, {"q": v.tolist()}).get_all()],  # type: ignore[union-attr]
        w["queries"],
    )
    return vector_result(build_s, len(vecs), lat, found, w)


def child(engine: str, out: Path, nodes: int) -> dict[str, Any]:
    w = dict(np.load(out.parent / "workload.npz"))
    out.mkdir(parents=True)
    if engine == "drsg-import":
        return graph_drsg(out, w, nodes, "import")
    if engine == "drsg-write":
        return graph_drsg(out, w, nodes, "write")
    if engine == "drsg-records":
        return graph_drsg(out, w, nodes, "records")
    runs: dict[str, Callable[[Path, dict[str, Any]], dict[str, Any]]] = {
        "drsg-vector": vec_drsg,
        "hnswlib": vec_hnswlib,
        "lancedb": vec_lancedb,
        "chroma": vec_chroma,
        "kuzu-vector": vec_kuzu,
    }
    if engine == "kuzu":
        return graph_kuzu(out, w, nodes)
    if engine == "sqlite":
        return graph_sqlite(out, w, nodes)
    return runs[engine](out, w)


# ---------------------------------------------------------------------- the parent: passes, checks, table


def run_child(engine: str, out: Path, nodes: int) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "tests.bench.bench_peers", "--child", engine, "--dir", str(out), "--nodes", str(nodes)]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=common.REPO, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{engine} failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def cross_check(passes: list[dict[str, dict[str, Any]]]) -> None:
    """Every graph engine's answer to every lookup / 1-hop / 2-hop the same size as the others'."""
    for results in passes:
        engines = [e for e in GRAPH_ENGINES if e in results]
        if len(engines) < 2:
            continue
        for op in ("lookup_sizes", "hop1_sizes", "hop2_sizes"):
            base = results[engines[0]][op]
            for e in engines[1:]:
                bad = [i for i, (a, b) in enumerate(zip(base, results[e][op], strict=True)) if a != b]
                if bad:
                    i = bad[0]
                    raise SystemExit(
                        f"row counts differ: {op} of query {i}: {engines[0]} {base[i]}, {e} {results[e][op][i]} "
                        f"({len(bad)} queries differ)"
                    )


def med(passes: list[dict[str, dict[str, Any]]], engine: str, field: str) -> float | None:
    got = [p[engine][field] for p in passes if engine in p and field in p[engine]]
    return statistics.median(got) if got else None


def rate(v: float | None) -> str:
    if v is None:
        return "—"
    return f"{v / 1e6:.2f}M/s" if v >= 1e6 else f"{v / 1e3:.1f}k/s" if v >= 1e3 else f"{v:.0f}/s"


def micros(v: float | None) -> str:
    if v is None:
        return "—"
    return f"{v / 1000:.2f} ms" if v >= 1000 else f"{v:.1f} µs"


def table(passes: list[dict[str, dict[str, Any]]]) -> list[str]:
    def m(e: str, f: str) -> float | None:
        return med(passes, e, f)

    def vs_time(mine: float | None, best: float | None) -> str:
        return "—" if mine is None or best is None else f"{mine / best:.2f}× (≤ 1 is drsg ahead)"

    def vs_rate(mine: float | None, best: float | None) -> str:
        return "—" if mine is None or best is None else f"{mine / best:.2f}× (≥ 1 is drsg ahead)"

    def vrow(e: str) -> str:
        b, t, r = m(e, "build_per_s"), m(e, "topk_us"), m(e, "recall")
        return "—" if t is None else f"build {rate(b)}, top-10 {micros(t)} at recall {r:.3f}"

    load_best = max((x for x in (m("kuzu", "load_per_s"), m("sqlite", "load_per_s")) if x), default=None)
    lines = [
        "| operation | drsg | Kùzu | SQLite | drsg vs best peer |",
        "|---|---|---|---|---|",
        f"| graph load, nodes + edges | `import_jsonl` {rate(m('drsg-import', 'load_per_s'))}; "
        f"`import_records` of a list {rate(m('drsg-records', 'load_per_s'))}; "
        f"`db.write` (commit every 10k) {rate(m('drsg-write', 'load_per_s'))} "
        f"| COPY {rate(m('kuzu', 'load_per_s'))} | executemany {rate(m('sqlite', 'load_per_s'))} | "
        f"import {vs_rate(m('drsg-import', 'load_per_s'), load_best)}; "
        f"records {vs_rate(m('drsg-records', 'load_per_s'), load_best)}; "
        f"write {vs_rate(m('drsg-write', 'load_per_s'), load_best)} |",
    ]
    for label, f, extra in (
        ("point lookup by key (a snapshot each)", "lookup_us", "lookup_open_us"),
        ("1-hop out, with edge records (a snapshot each)", "hop1_us", "hop1_open_us"),
        ("2-hop reachable set, adjacency only (a snapshot each)", "hop2_us", "hop2_open_us"),
    ):
        mine = m("drsg-import", f)
        shown = micros(mine) + (f" ({micros(m('drsg-import', extra))} in an open snapshot)" if extra else "")
        best = min((x for x in (m("kuzu", f), m("sqlite", f)) if x), default=None)
        lines.append(
            f"| {label} | {shown} | {micros(m('kuzu', f))} | {micros(m('sqlite', f))} | {vs_time(mine, best)} |"
        )
    lines += [
        "",
        "| vector engine | index build, top-10 p50, recall@10 vs exact | top-10 vs raw hnswlib |",
        "|---|---|---|",
    ]
    raw_t = m("hnswlib", "topk_us")
    for e in VECTOR_ENGINES:
        t = m(e, "topk_us")
        lines.append(f"| {e} | {vrow(e)} | {'—' if t is None or raw_t is None else f'{t / raw_t:.2f}×'} |")
    lines.append(same_recall(passes))
    a, lance = m("drsg-import", "asof_us"), m("lancedb", "asof_us")
    lines += [
        "",
        f"As-of lookup by key: drsg {micros(a)} (`db.snapshot(head)` + `node_by_key`); LanceDB checkout + "
        f"lookup {micros(lance)}" + (f" — drsg {lance / a:.0f}× faster." if a and lance else "."),
    ]
    return lines


def same_recall(passes: list[dict[str, dict[str, Any]]]) -> str:
    """drsg's top-10 beside raw hnswlib's at the narrowest ef whose recall reaches drsg's (per pass, medians)."""
    pairs = []
    for p in passes:
        if "drsg-vector" in p and "hnswlib" in p:
            mine = p["drsg-vector"]
            fit = [s for s in p["hnswlib"]["sweep"] if s["recall"] >= mine["recall"] - 0.005]
            if fit:
                pairs.append((mine["topk_us"], fit[0]["topk_us"], fit[0]["ef"], fit[0]["recall"]))
    if not pairs:
        return "| drsg vs raw hnswlib at equal recall | — (raw hnswlib reached drsg's recall at no ef ≤ 1024) | — |"
    mine, raw = statistics.median(p[0] for p in pairs), statistics.median(p[1] for p in pairs)
    efs = sorted({p[2] for p in pairs})
    return (
        f"| drsg vs raw hnswlib at equal recall | drsg {micros(mine)}; raw hnswlib at ef {efs} "
        f"(recall {pairs[0][3]:.3f}) {micros(raw)} | {mine / raw:.2f}× |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=100_000)
    parser.add_argument("--vectors", type=int, default=25_000)
    parser.add_argument("--lookups", type=int, default=10_000)
    parser.add_argument("--vector-queries", type=int, default=1_000)
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--engines", default=",".join(GRAPH_ENGINES + VECTOR_ENGINES))
    parser.add_argument("--quick", action="store_true", help="10k nodes, 2,000 vectors, 1,000 lookups, 200 queries")
    parser.add_argument("--no-record", action="store_true")
    parser.add_argument("--no-verdicts", action="store_true", help="skip the store issue's four guards")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--dir", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        res = child(args.child, Path(args.dir), args.nodes)
        print(json.dumps(res))
        return
    if args.quick:
        args.nodes, args.vectors, args.lookups, args.vector_queries = 10_000, 2_000, 1_000, 200
    started = dt.datetime.now(dt.UTC)
    out = common.fresh_dir("peers")
    w = workload(args.nodes, args.vectors, args.lookups, args.vector_queries)
    write_files(out, args.nodes, w)
    engines = args.engines.split(",")
    passes: list[dict[str, dict[str, Any]]] = []
    for p in range(args.passes):
        order = engines[p % len(engines) :] + engines[: p % len(engines)]  # rotated each pass
        results: dict[str, dict[str, Any]] = {}
        for e in order:
            t = time.perf_counter()
            results[e] = run_child(e, out / f"pass{p}-{e}", args.nodes)
            print(f"pass {p + 1}/{args.passes} {e}: {time.perf_counter() - t:.1f} s", file=sys.stderr, flush=True)
        passes.append(results)
    cross_check(passes)
    lines = [
        f"Workload: {args.nodes:,} nodes, {args.nodes * DEGREE:,} uniform random edges, {args.vectors:,} "
        f"128-d vectors, {args.lookups:,} lookup/expand keys, {args.vector_queries:,} vector queries, k={K}; "
        f"SplitMix64 seed {SEED} (draw order in the module docstring). Medians of {args.passes} interleaved passes, "
        f"each engine in a fresh process and database. Row counts of every lookup, 1-hop and 2-hop answer "
        f"checked equal across drsg (both loads), Kùzu and SQLite.",
        "",
        *table(passes),
        "",
        f"- Peers: {peer_versions()}. hnswlib M=16, ef_construction=200, built on all cores, queried at ef "
        "64, 96, 128, 192, 256, 384, 512, 768 and 1024 (its row: ef 64; the equal-recall row: the narrowest ef "
        "reaching drsg's recall); LanceDB IVF_PQ (`create_index`, cosine) with its default search; "
        "Chroma's default HNSW "
        "(cosine); Kùzu's `CREATE_VECTOR_INDEX` (cosine) on a table COPYed first (build = the index call).",
        "- SQLite: nodes(id, key UNIQUE, labels, props), edges(id, src, dst, type, props) with indexes on "
        "src and dst (§9 names no columns; assumed), WAL, synchronous=NORMAL, one transaction of executemany; "
        "lookups by `key`, 1-hop joins the edge records, 2-hop a recursive CTE (`count(DISTINCT n)`).",
        f"- Load averages at the end: {os.getloadavg()[0]:.2f} (1 min).",
    ]
    if not args.no_verdicts:
        from tests.bench import peers_verdicts

        lines += ["", "Verdicts (issue #37 item 6; tests/bench/peers_verdicts.py):", ""]
        lines += peers_verdicts.verdicts(quick=args.quick)
    common.append_section("Peers (upstream's benchmark)", started, lines, not args.no_record)


def peer_versions() -> str:
    from importlib.metadata import PackageNotFoundError, version

    got = []
    for name in ("kuzu", "lancedb", "chromadb", "hnswlib"):
        try:
            got.append(f"{name} {version(name)}")
        except PackageNotFoundError:
            got.append(f"{name} (not installed)")
    return ", ".join(got) + f", SQLite {sqlite3.sqlite_version}"


if __name__ == "__main__":
    main()
