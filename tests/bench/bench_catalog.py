"""The catalog index at the seed's size: 500 tables / 10,000 columns, beside dsh-plugin-dbgraph's
figures (its Rust writer: 218 ms write, 33.6 ms longest event-loop block; its JavaScript writer:
1,992 ms for both).

The catalog is an SQLite file: 500 tables of 20 columns each (ids, foreign keys to the previous
table, text columns with comments, a few rows so the L2 enum samples have something to read).
Measured in this process: the L1 run (introspection + one commit) and the full run (L1, then L2:
comments, keys, indexes, estimates, samples, a second commit) on a fresh database, each split into
the database's part and the plane write; then a re-index that finds no drift. Then a real
``drsg serve`` subprocess is asked for ``catalog.index`` over JSON-RPC while a client on loopback
asks ``/health`` back to back: the longest ``/health`` answer during the run and the 4 s after it
(the index workers catch up), beside the same probe's longest answer on an idle server, bounds
how long the server's event loop was blocked.

    .venv/bin/python -m tests.bench.bench_catalog              # appends to RESULTS.md
    .venv/bin/python -m tests.bench.bench_catalog --no-record
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import http.client
import os
import sqlite3
import threading
import time
from pathlib import Path

from drsg.pipeline.catalog import service
from drsg.pipeline.catalog.backends import backend_for
from drsg.pipeline.catalog.connections import Connection, Connections
from drsg.pipeline.catalog.plane import write_catalog
from drsg.store.database import Database
from tests.bench.common import fresh_dir, pct, record

TABLES, COLUMNS = 500, 20


def make_catalog(path: Path, tables: int = TABLES) -> Path:
    db = sqlite3.connect(path)
    for t in range(tables):
        cols = ["  id INTEGER PRIMARY KEY, -- 主键"]
        if t:
            cols.append(f"  parent_id INTEGER REFERENCES t{t - 1:03d}_orderItem(id), -- 上级")
        while len(cols) < COLUMNS - 1:
            i = len(cols)
            kind = ("VARCHAR(32)", "INTEGER", "DECIMAL(10,2)", "TIMESTAMP")[i % 4]
            cols.append(f"  c{i:02d}_{'statusCode' if i % 4 == 0 else 'fieldValue'} {kind}, -- 字段{i} 用户订单")
        cols.append("  note TEXT -- 备注")
        db.execute(f"CREATE TABLE t{t:03d}_orderItem ( -- 表{t} 订单明细\n" + "\n".join(cols) + "\n)")
        db.execute(f"CREATE INDEX ix_{t:03d} ON t{t:03d}_orderItem(c02_fieldValue)")
        db.executemany(
            f"INSERT INTO t{t:03d}_orderItem (id, c04_statusCode, note) VALUES (?, ?, ?)",
            [(r, ("paid", "unpaid", "void")[r % 3], f"row {r}") for r in range(1, 4)],
        )
    db.commit()
    db.close()
    return path


def timed_index(db_path: Path, conn: Connection, level: str) -> dict[str, float]:
    """One fresh index at ``level``: the database's part and the plane's commit, separately."""
    backend = backend_for(conn)
    out: dict[str, float] = {}
    with Database(db_path, create=True) as db:
        t0 = time.perf_counter()
        l1 = backend.introspect("l1", 20, ())
        t1 = time.perf_counter()
        write_catalog(db, conn.plane, l1, conn.name, [], l2_run=False)
        t2 = time.perf_counter()
        out["l1_introspect"], out["l1_write"] = t1 - t0, t2 - t1
        if level == "full":
            l2 = backend.introspect("l2", 20, ())
            t3 = time.perf_counter()
            l2.level = "full"
            write_catalog(db, conn.plane, l2, conn.name, [], l2_run=True)
            t4 = time.perf_counter()
            out["l2_introspect"], out["l2_write"] = t3 - t2, t4 - t3
        t5 = time.perf_counter()
        service.index(db, conn, "full", 20, [])
        out["reindex_no_drift"] = time.perf_counter() - t5
    return out


def loop_block(work: Path, conn: Connection, with_indexes: bool) -> float:
    """The longest block of an asyncio loop in this process (a 1 ms sleep's overshoot) while a
    worker thread runs a full index, with or without the index workers `drsg serve` runs."""
    from drsg.workers.manager import IndexSet

    async def run() -> float:
        db = Database(work / f"loop-{int(with_indexes)}.drsg", create=True)
        indexes = IndexSet(db) if with_indexes else None
        if indexes is not None:
            indexes.start()
        worst, done = 0.0, False

        async def monitor() -> None:
            nonlocal worst
            while not done:
                t0 = time.perf_counter()
                await asyncio.sleep(0.001)
                worst = max(worst, time.perf_counter() - t0 - 0.001)

        watching = asyncio.create_task(monitor())
        await asyncio.get_running_loop().run_in_executor(None, lambda: service.index(db, conn, "full", 20, []))
        await asyncio.sleep(3)  # the index workers catch up after the commits
        done = True
        await watching
        if indexes is not None:
            indexes.stop()
        db.close()
        return worst

    return asyncio.run(run())


def probe(port: int, stop: threading.Event, latencies: list[float]) -> None:
    client = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    while not stop.is_set():
        t0 = time.perf_counter()
        client.request("GET", "/health")
        client.getresponse().read()
        latencies.append(time.perf_counter() - t0)


def served(work: Path, catalog: Path) -> dict[str, float]:
    """The probe's own process must not pause either: its full collections (this process holds the
    whole drsg import and the catalog) once added 100 ms to a /health answer. Frozen and off here."""
    gc.collect()
    gc.freeze()
    gc.disable()
    try:
        return _served(work, catalog)
    finally:
        gc.enable()
        gc.unfreeze()


def _served(work: Path, catalog: Path) -> dict[str, float]:
    from tests.support.server import start_server

    db_path = work / "served.drsg"
    Connections(db_path).add(Connection("bench", str(catalog), "sqlite"))
    server = start_server(db_path, work, token=None)
    try:
        idle: list[float] = []
        stop = threading.Event()
        thread = threading.Thread(target=probe, args=(server.port, stop, idle))
        thread.start()
        time.sleep(3)
        stop.set()
        thread.join()
        busy: list[float] = []
        stop = threading.Event()
        thread = threading.Thread(target=probe, args=(server.port, stop, busy))
        thread.start()
        t0 = time.perf_counter()
        reports = server.call("catalog.index", {"connection": "bench", "level": "full"})
        took = time.perf_counter() - t0
        time.sleep(4)  # the index workers index the second commit's 10,000 updates after it lands
        stop.set()
        thread.join()
        assert reports[0]["created"] > 10_000, reports
    finally:
        server.stop()
    return {
        "rpc_full": took,
        "idle_max": max(idle),
        "idle_p99": pct(idle, 99),
        "busy_max": max(busy),
        "busy_p50": pct(busy, 50),
        "busy_p99": pct(busy, 99),
        "probes": float(len(busy)),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args()
    if args.no_record:
        os.environ["DRSG_BENCH_NO_RECORD"] = "1"
    work = fresh_dir("catalog")
    catalog = make_catalog(work / "catalog.db")
    conn = Connection("bench", str(catalog), "sqlite")
    l1 = timed_index(work / "l1.drsg", conn, "l1")
    full = timed_index(work / "full.drsg", conn, "full")
    rpc = served(work, catalog)
    bare, with_workers = loop_block(work, conn, False), loop_block(work, conn, True)
    ms = lambda s: f"{s * 1000:,.0f} ms"  # noqa: E731
    rows = [
        (
            "L1 index (names, types): introspection + one commit",
            f"{ms(l1['l1_introspect'])} + {ms(l1['l1_write'])}",
            "",
            "",
        ),
        (
            "full index (L1, then L2: comments, keys, indexes, estimates, 10,000 sampled columns)",
            f"{ms(sum(v for k, v in full.items() if k != 'reindex_no_drift'))} "
            f"(L1 {ms(full['l1_introspect'])} + {ms(full['l1_write'])}, L2 {ms(full['l2_introspect'])} + "
            f"{ms(full['l2_write'])})",
            "",
            "",
        ),
        (
            'the plane write of 10,000 columns (the seed\'s "write")',
            f"L1 {ms(full['l1_write'])}, L2 {ms(full['l2_write'])}",
            "218 ms (Rust) / 1,992 ms (JavaScript)",
            f"{full['l1_write'] * 1000 / 218:.1f}× / {full['l1_write'] * 1000 / 1992:.2f}× (L1)",
        ),
        ("re-index, no drift (nothing written)", ms(full["reindex_no_drift"]), "", ""),
        ("`catalog.index` full over JSON-RPC on `drsg serve`", ms(rpc["rpc_full"]), "", ""),
        (
            "longest event-loop block while it indexes (longest `/health` answer; idle server's in brackets)",
            f"{rpc['busy_max'] * 1000:.1f} ms (idle {rpc['idle_max'] * 1000:.1f} ms); "
            f"p50 {rpc['busy_p50'] * 1000:.1f} ms, p99 {rpc['busy_p99'] * 1000:.1f} ms "
            f"over {rpc['probes']:,.0f} probes",
            "33.6 ms (Rust, AsyncTask) / 1,992 ms (JavaScript)",
            f"{rpc['busy_max'] * 1000 / 33.6:.2f}× / {rpc['busy_max'] * 1000 / 1992:.3f}×",
        ),
        (
            "in-process asyncio loop, the same full index in a worker thread: longest block without / with the "
            "index workers `drsg serve` runs",
            f"{bare * 1000:.1f} ms / {with_workers * 1000:.1f} ms",
            "33.6 ms / 1,992 ms",
            f"{bare * 1000 / 33.6:.2f}× / {with_workers * 1000 / 1992:.3f}×",
        ),
    ]
    notes = [
        "500 tables × 20 columns in an SQLite file (a foreign key per table, one index each, Chinese comments, 3 rows "
        "each); the plane gets 10,500 Table/Column/Index nodes and ~21,000 edges.",
        "The seed's figures are its own machine's, for its writer alone (normalise, terms, the SQLite write); drsg's "
        "plane write is one commit on the log with its projection, terms included.",
        "The longest `/health` answer is an upper bound on the event loop's longest block (it includes the probe's "
        "own round-trip; the probing process runs with its collector frozen and off). catalog.index runs in the read "
        "pool. Profiled (a sampler thread in the server, gc callbacks): the long blocks were full garbage collections "
        "(100-180 ms each, ~230k tracked objects, GIL held, in whichever thread allocated — the loop's too), jieba's "
        "import and dictionary load in the index worker (~60 + ~100 ms), and one msgpack decode of the 3.4 MB commit "
        "(20-70 ms); now the index run and the workers' catch-up pause the collector, serve freezes what startup "
        "built and loads the Chinese analyser before serving when catalogs are configured, and a large commit is "
        "decoded a mutation at a time. What is left is threads sharing the GIL on 2 cores (and the machine's load).",
    ]
    record("(#20) catalog index, 500 tables / 10,000 columns", rows, notes, raw="seed dsh-plugin-dbgraph")


if __name__ == "__main__":
    main()
