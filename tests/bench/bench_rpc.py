"""RPC throughput: `drsg serve` against a bare aiohttp handler doing the same database work.

Engine: the real `drsg serve` subprocess (token auth, JSON-RPC dispatch and param checks, JSON
access log to a file, reads in the read pool, writes through ``db.awrite``). Bare: a minimal
aiohttp app in a subprocess whose handlers parse the same request body and do the same work with
the same library calls — ``db.awrite(create_node)`` for ``node.create``, a snapshot read for
``node.get`` — with no auth, dispatch, checks or logging. The difference is the cost of the RPC
layer. Both are driven by the same aiohttp client (this process) with C concurrent connections;
payloads are lines of real prose (tests/bench/common.py).

    .venv/bin/python -m tests.bench.bench_rpc                  # appends to RESULTS.md
    .venv/bin/python -m tests.bench.bench_rpc --requests 2000 --no-record
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.bench import common

TOKEN = "bench-token-0123456789"
ROOT = Path(__file__).resolve().parents[2]


# --------------------------------------------------------------------------- the bare server


def bare_server(db_path: str) -> None:
    """The baseline: the same body parsing and database calls, nothing else."""
    from aiohttp import web

    import drsg
    from drsg.kernel.values import props_from_json

    db = drsg.open(db_path)

    async def rpc(request: web.Request) -> web.Response:
        body = json.loads(await request.read())
        p = body["params"]
        if body["method"] == "node.create":
            props = props_from_json(p.get("properties"))
            made = await db.awrite(
                lambda tx: tx.create_node(tx.plane(p["plane"]), p.get("key"), p.get("labels", []), props)
            )
            result: Any = made.value.to_json()
        else:
            with db.snapshot() as snap:
                node = snap.node_by_key(snap.plane(p["plane"]).id, p["key"])
                result = None if node is None else node.to_json()
        return web.Response(
            text=json.dumps({"jsonrpc": "2.0", "id": body["id"], "result": result}), content_type="application/json"
        )

    async def main() -> None:
        app = web.Application()
        app.add_routes([web.post("/rpc", rpc)])
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = next(int(a[1]) for a in runner.addresses)
        print(f"serving {db_path} on http://127.0.0.1:{port} (bare)", flush=True)
        await asyncio.Event().wait()

    asyncio.run(main())


# --------------------------------------------------------------------------- driving a server


def start(kind: str, db: Path, log: Path) -> tuple[subprocess.Popen[str], str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DRSG_")}
    if kind == "drsg":
        argv = [sys.executable, "-m", "drsg.surfaces.cli"]
        argv += ["--db", str(db), "serve", "--addr", "127.0.0.1:0"]
        env["DRSG_TOKEN"] = TOKEN
    else:
        argv = [sys.executable, "-m", "tests.bench.bench_rpc", "--bare-server", str(db)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=log.open("w"), text=True, env=env, cwd=ROOT)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if "serving" not in line:
        proc.kill()
        raise SystemExit(f"{kind} server did not start: {line!r}; see {log}")
    return proc, line.split("http://", 1)[1].split(" ", 1)[0]


async def drive(
    hostport: str, method: str, payloads: list[dict[str, Any]], concurrency: int, token: str | None
) -> tuple[float, list[float]]:
    """Send every payload as one JSON-RPC call from `concurrency` connections; (seconds, latencies)."""
    import aiohttp

    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    url = f"http://{hostport}/rpc"
    latencies: list[float] = []
    queue = list(reversed(payloads))

    async def worker(session: aiohttp.ClientSession) -> None:
        while queue:
            i, params = len(queue), queue.pop()
            body = json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params})
            started = time.perf_counter()
            async with session.post(url, data=body, headers=headers) as resp:
                answer = await resp.json()
            latencies.append(time.perf_counter() - started)
            if "result" not in answer:
                raise SystemExit(f"{method} failed: {answer}")

    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:
        started = time.perf_counter()
        await asyncio.gather(*(worker(session) for _ in range(concurrency)))
        return time.perf_counter() - started, latencies


def run_side(
    kind: str, work: Path, requests: int, levels: list[int]
) -> dict[tuple[str, int], tuple[float, list[float]]]:
    db = work / f"{kind}.drsg"
    proc, hostport = start(kind, db, work / f"{kind}.log")
    token = TOKEN if kind == "drsg" else None
    lines = common.text_lines(requests * len(levels))
    out: dict[tuple[str, int], tuple[float, list[float]]] = {}
    try:
        keys: list[str] = []
        for n, level in enumerate(levels):
            creates = [
                {
                    "plane": "startup",
                    "key": f"{kind}-{level}-{i}",
                    "labels": ["Doc"],
                    "properties": {"body": lines[(n * requests + i) % len(lines)], "n": i},
                }
                for i in range(requests)
            ]
            keys.extend(c["key"] for c in creates)
            out[("node.create", level)] = asyncio.run(drive(hostport, "node.create", creates, level, token))
        gets = [{"plane": "startup", "key": keys[(i * 7919) % len(keys)]} for i in range(requests)]
        for level in levels:
            out[("node.get", level)] = asyncio.run(drive(hostport, "node.get", gets, level, token))
    finally:
        proc.terminate()
        proc.wait(60)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=4000, help="calls per (method, concurrency) cell")
    parser.add_argument("--concurrency", default="1,16,64", help="comma-separated connection counts")
    parser.add_argument("--rounds", type=int, default=2, help="alternating rounds per side (best is kept)")
    parser.add_argument("--no-record", action="store_true", help="print only; do not append to RESULTS.md")
    parser.add_argument("--bare-server", metavar="DB", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.bare_server:
        bare_server(args.bare_server)
        return
    levels = [int(c) for c in args.concurrency.split(",")]
    best: dict[str, dict[tuple[str, int], tuple[float, list[float]]]] = {"drsg": {}, "bare": {}}
    for round_no in range(args.rounds):
        for kind in ("drsg", "bare") if round_no % 2 == 0 else ("bare", "drsg"):
            work = common.fresh_dir(f"rpc-{kind}")
            for cell, (secs, lat) in run_side(kind, work, args.requests, levels).items():
                if cell not in best[kind] or secs < best[kind][cell][0]:
                    best[kind][cell] = (secs, lat)
            print(f"round {round_no + 1}: {kind} done", flush=True)

    def figure(secs: float, lat: list[float]) -> str:
        ms = [x * 1000 for x in lat]
        return f"{args.requests / secs:,.0f}/s (p50 {common.pct(ms, 50):.2f} / p99 {common.pct(ms, 99):.2f} ms)"

    rows = []
    for method in ("node.create", "node.get"):
        for level in levels:
            mine, bare = best["drsg"][(method, level)], best["bare"][(method, level)]
            ratio = (args.requests / mine[0]) / (args.requests / bare[0])
            rows.append((f"{method}, {level} connection(s)", figure(*mine), figure(*bare), f"{ratio:.2f}×"))
    notes = [
        f"{args.requests:,} calls per cell, best of {args.rounds} alternating rounds per side; a fresh database "
        "per side and round; the client (aiohttp, this process) shares the 2 cores with the server.",
        "drsg: `drsg serve` with DRSG_TOKEN set, its JSON access log going to a file. Bare: aiohttp parsing the "
        "same body and calling db.awrite(create_node) / a snapshot read inline, without auth, dispatch, param "
        "checks, logging or the read pool.",
        "node.create is one durable commit per call (fsync), group-committed across concurrent calls on both sides.",
    ]
    when = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    text = "\n".join(
        [
            f"## JSON-RPC server vs bare aiohttp handler (same database work) — {when}",
            "",
            f"Machine: {common.machine()}. Command: `{' '.join([Path(sys.executable).name, *sys.argv])}`",
            "",
            "| measure | drsg serve (JSON-RPC) | bare aiohttp + same db calls | drsg / bare |",
            "|---|---|---|---|",
            *[f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows],
            "",
            *[f"- {n}" for n in notes],
            "",
        ]
    )
    print(text, flush=True)
    if not args.no_record and os.environ.get("DRSG_BENCH_NO_RECORD") != "1":
        with common.RESULTS.open("a") as fh:
            fh.write(text + "\n")


if __name__ == "__main__":
    main()
