"""Commit-to-delivery latency of the change feed at a steady 1k and 10k commits/s.

Two modes (``--mode all`` runs both; target for issue #4: p99 < 10 ms at 10k commits/s):

**inproc** — writers are asyncio tasks committing one node each on an open-loop schedule (commit i
is due at t0 + i/rate, so group commit absorbs the fsyncs); one subscriber (``drsg.feed.Subscription``,
async) reads the plane's feed in the same process. Latency = the moment the subscriber holds the
change minus the moment ``awrite`` returned to its writer (the commit was durable by then), so a
change that reaches the subscriber before the writer's own task resumes counts as 0.

**ws** — three processes on loopback: a real ``drsg serve`` subprocess; a writer process committing
through the Python API (``db.awrite``, the same open-loop schedule, so the server learns of the
commits from another process, as it does of CLI writes); and this process as a WebSocket client
(``plane.watch``). Latency = the client's receipt of the ``plane.change`` frame minus the moment the
writer's ``awrite`` returned (CLOCK_MONOTONIC, shared by the processes). Raw baseline from the same
run: a bare aiohttp WebSocket server process pushing frames of the same shape and size at the same
rate to the same client; its latency = receipt minus the moment just before its ``send_str``.

Real text payloads (tests/data). Run: ``python -m tests.bench.bench_feed [--mode ws] [--quick]``
(``DRSG_BENCH_NO_RECORD=1``: print only, do not append to RESULTS.md).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

import drsg
from drsg.feed import Subscription
from tests.bench import common

RATES = (1_000, 10_000)
TOKEN = "bench-token"


def _summary(latencies: list[float]) -> dict[str, float]:
    return {
        "p50": common.pct(latencies, 50) * 1000,
        "p99": common.pct(latencies, 99) * 1000,
        "max": max(latencies) * 1000,
    }


async def _open_loop(
    db: Any, plane: Any, rate: int, total: int, writers: int, t0: float, clock: Any
) -> dict[str, float]:
    """Commit node ``n{i}`` at t0 + i/rate from ``writers`` tasks; → key: when its awrite returned."""
    lines = common.text_lines()
    acked: dict[str, float] = {}
    next_index = 0

    async def writer() -> None:
        nonlocal next_index
        while next_index < total:
            i = next_index
            next_index += 1
            delay = t0 + i / rate - clock()
            if delay > 0:
                await asyncio.sleep(delay)
            key = f"n{i}"
            await db.awrite(
                lambda tx, key=key, i=i: tx.create_node(plane, key, ["Line"], {"text": lines[i % len(lines)]})
            )
            acked[key] = clock()

    await asyncio.gather(*(writer() for _ in range(writers)))
    return acked


# --------------------------------------------------------------------------- inproc


async def _run(rate: int, seconds: float, writers: int) -> dict[str, float]:
    db = drsg.open(common.fresh_dir(f"feed_{rate}") / "g.drsg", map_size=1 << 30)
    plane = db.write(lambda tx: tx.create_plane("feed")).value
    total = int(rate * seconds)
    delivered: dict[str, float] = {}
    sub = Subscription(db, "feed", None, resolved_every=None)
    t0 = time.perf_counter() + 0.2

    async def subscriber() -> None:
        async for message in sub:
            now = time.perf_counter()
            for change in message.get("changes", []):
                key = (change.get("record") or {}).get("external_key")
                if key is not None:
                    delivered[key] = now
            if len(delivered) >= total:
                return

    reader = asyncio.create_task(subscriber())
    acked = await _open_loop(db, plane, rate, total, writers, t0, time.perf_counter)
    await asyncio.wait_for(reader, timeout=60)
    elapsed = max(acked.values()) - t0
    latencies = [max(0.0, delivered[k] - acked[k]) for k in acked]
    db.close()
    return {"rate": total / elapsed, **_summary(latencies), "groups": db.writer.groups_committed, "total": total}


def inproc(seconds: float, writers: int) -> None:
    rows = []
    notes = []
    for rate in RATES:
        r = asyncio.run(_run(rate, seconds, writers))
        verdict = "" if rate != 10_000 else (" — PASS" if r["p99"] < 10 else " — FAIL (target p99 < 10 ms)")
        rows.append(
            (
                f"{rate:,} commits/s target, {r['total']:,} commits",
                f"achieved {r['rate']:,.0f}/s; delivery p50 {r['p50']:.2f} ms, p99 {r['p99']:.2f} ms, "
                f"max {r['max']:.1f} ms{verdict}",
                "—",
                "—",
            )
        )
        notes.append(f"{rate:,}/s: {r['groups']:,} group commits for {r['total']:,} commits")
    notes.append(
        "One in-process async subscriber on the plane; writers are asyncio tasks on an open-loop schedule "
        "(`db.awrite`); same-process commits wake the subscriber through the database's commit signal."
    )
    common.record("Change feed: commit-to-delivery latency", rows, notes)


# --------------------------------------------------------------------------- ws: the child processes


def writer_process(db_path: str, rate: int, total: int, writers: int, t0: float) -> None:
    """``--role writer``: commit on the schedule, then print {key: ack time} as one JSON line."""

    async def go() -> dict[str, float]:
        db = drsg.open(db_path)
        try:
            return await _open_loop(db, db.plane("feed"), rate, total, writers, t0, time.monotonic)
        finally:
            db.close()

    print(json.dumps(asyncio.run(go())), flush=True)


def frame_text(i: int, text: str, seq: int, sent: float | None = None) -> str:
    """A ``plane.change`` frame shaped like drsg's for node ``n{i}`` (the bare server's payload)."""
    record = {"id": i + 1, "external_key": f"n{i}", "labels": ["Line"], "properties": {"text": text}}
    change = {"kind": "node", "op": "created", "id": i + 1, "labels": ["Line"], "record": record}
    params: dict[str, Any] = {"plane": "feed", "seq": seq, "ts": int(time.time() * 1000), "changes": [change]}
    params["truncated"] = False
    if sent is not None:
        params["sent"] = sent
    return json.dumps({"jsonrpc": "2.0", "method": "plane.change", "params": params}, separators=(",", ":"))


def bare_process(rate: int, total: int) -> None:
    """``--role bare``: a bare aiohttp WS server; on a connection it pushes frame i at t0 + i/rate."""
    lines = common.text_lines()

    async def push(request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(compress=False)
        await ws.prepare(request)
        t0 = float(request.query["t0"])
        for i in range(total):
            delay = t0 + i / rate - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            await ws.send_str(frame_text(i, lines[i % len(lines)], i + 3, time.monotonic()))
        await ws.receive()  # until the client closes
        return ws

    async def main() -> None:
        app = web.Application()
        app.add_routes([web.get("/ws", push)])
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = next(int(a[1]) for a in runner.addresses if isinstance(a, tuple))
        print(f"serving on http://127.0.0.1:{port}", flush=True)
        await asyncio.Event().wait()

    asyncio.run(main())


def _spawn(argv: list[str], out: Path, env: dict[str, str] | None = None) -> tuple[subprocess.Popen[bytes], str]:
    """Start a server process; → (process, its base URL) once it has printed "… on http://HOST:PORT …"."""
    with out.open("w") as fh, out.with_suffix(".err").open("w") as err:
        proc = subprocess.Popen(argv, stdout=fh, stderr=err, env=env)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        text = out.read_text()
        if "http://" in text:
            return proc, "http://" + text.split("http://", 1)[1].split()[0]
        if proc.poll() is not None:
            break
        time.sleep(0.02)
    proc.kill()
    raise SystemExit(f"{argv[2:5]} did not start: {out.read_text()}")


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _this(role: str, *args: object) -> list[str]:
    return [sys.executable, "-m", "tests.bench.bench_feed", "--role", role, *map(str, args)]


# --------------------------------------------------------------------------- ws: the client


async def _receive(ws: aiohttp.ClientWebSocketResponse, total: int, stamp: bool) -> dict[str, float]:
    """key → when its frame arrived (``stamp``: → arrival minus the frame's own "sent")."""
    got: dict[str, float] = {}
    while len(got) < total:
        msg = await ws.receive(30)
        now = time.monotonic()
        if msg.type != aiohttp.WSMsgType.TEXT:
            raise SystemExit(f"the feed ended early: {msg.type} after {len(got)} of {total} frames")
        frame = json.loads(msg.data)
        if frame.get("method") != "plane.change":
            continue
        for change in frame["params"]["changes"]:
            key = change["record"]["external_key"]
            got[key] = now - frame["params"]["sent"] if stamp else now
    return got


async def _engine(rate: int, total: int, writers: int) -> dict[str, float]:
    work = common.fresh_dir(f"feed_ws_{rate}")
    db_path = work / "g.drsg"
    with drsg.open(db_path, map_size=1 << 30) as db:
        db.write(lambda tx: tx.create_plane("feed"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("DRSG_")} | {"DRSG_TOKEN": TOKEN}
    serve = [sys.executable, "-m", "drsg.surfaces.cli", "--db", str(db_path), "serve", "--addr", "127.0.0.1:0"]
    server, url = _spawn(serve, work / "serve.out", env)
    try:
        async with aiohttp.ClientSession() as session, session.ws_connect(f"{url}/ws?token={TOKEN}") as ws:
            watch = {"plane": "feed", "resolved_every": None}
            await ws.send_str(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "plane.watch", "params": watch}))
            while json.loads((await ws.receive(30)).data).get("id") != 1:
                pass
            t0 = time.monotonic() + 1.0  # the writer's start-up
            proc = await asyncio.create_subprocess_exec(
                *_this("writer", db_path, rate, total, writers, t0), stdout=asyncio.subprocess.PIPE
            )
            await asyncio.sleep(max(0.0, t0 - time.monotonic()))
            cpu = _cpu_seconds(server.pid)
            got = await _receive(ws, total, stamp=False)
            cpu = _cpu_seconds(server.pid) - cpu
            out, _ = await proc.communicate()
            acked: dict[str, float] = json.loads(out)
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(30)
    elapsed = max(acked.values()) - t0
    latencies = [max(0.0, got[k] - acked[k]) for k in acked]
    early = sum(got[k] < acked[k] for k in acked) / total  # delivered before the writer's task resumed: 0
    return {"rate": total / elapsed, **_summary(latencies), "cpu": cpu / elapsed, "early": early}


async def _bare(rate: int, total: int) -> dict[str, float]:
    work = common.fresh_dir(f"feed_ws_bare_{rate}")
    server, url = _spawn(_this("bare", rate, total), work / "bare.out")
    try:
        t0 = time.monotonic() + 0.3
        async with aiohttp.ClientSession() as session, session.ws_connect(f"{url}/ws?t0={t0}") as ws:
            await asyncio.sleep(max(0.0, t0 - time.monotonic()))
            cpu = _cpu_seconds(server.pid)
            got = await _receive(ws, total, stamp=True)
            cpu = _cpu_seconds(server.pid) - cpu
    finally:
        server.kill()
        server.wait(30)
    return {**_summary([max(0.0, v) for v in got.values()]), "cpu": cpu / (total / rate)}


def ws_mode(seconds: float, writers: int, rounds: int) -> None:
    rows = []
    for rate in RATES:
        total = int(rate * seconds)
        for n in range(rounds):
            engine = asyncio.run(_engine(rate, total, writers))
            bare = asyncio.run(_bare(rate, total))
            verdict = "" if rate != 10_000 else (" — PASS" if engine["p99"] < 10 else " — FAIL (target p99 < 10 ms)")
            rows.append(
                (
                    f"{rate:,} commits/s, {total:,} commits, round {n + 1}: p50 / p99 (max)",
                    f"achieved {engine['rate']:,.0f}/s; {engine['p50']:.2f} / {engine['p99']:.2f} ms "
                    f"({engine['max']:.1f}); {engine['early']:.0%} before the ack; server CPU {engine['cpu']:.0%}"
                    f"{verdict}",
                    f"bare aiohttp WS: {bare['p50']:.2f} / {bare['p99']:.2f} ms ({bare['max']:.1f}); "
                    f"server CPU {bare['cpu']:.0%}",
                    f"{common.ratio(engine['p50'], bare['p50']):.1f}× / "
                    f"{common.ratio(engine['p99'], bare['p99']):.1f}×",
                )
            )
    notes = [
        "drsg: a `drsg serve` subprocess; a writer process commits one node per commit through the Python API "
        "(`db.awrite`, open-loop schedule, group commit) into the database the server has open; this process "
        "watches over WebSocket on loopback. Latency = frame received − the writer's awrite returned (a frame "
        'received before that counts as 0: "before the ack"). Server CPU: share of one core while the commits ran.',
        "raw: a bare aiohttp WebSocket server process pushing frames of the same shape and text at the same rate "
        "to the same client; latency = frame received − just before its send_str. Columns: drsg | raw | ratio.",
    ]
    common.record("Change feed over WebSocket (loopback): commit-to-delivery latency", rows, notes)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mode", choices=("all", "inproc", "ws"), default="all")
    ap.add_argument("--quick", action="store_true", help="2 s per rate instead of 8")
    ap.add_argument("--writers", type=int, default=256, help="concurrent writer tasks")
    ap.add_argument("--rounds", type=int, default=1, help="ws mode: rounds per rate (engine, then raw)")
    ap.add_argument("--role", choices=("writer", "bare"), help=argparse.SUPPRESS)
    ap.add_argument("args", nargs="*", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.role == "writer":
        db_path, rate, total, writers, t0 = args.args
        return writer_process(db_path, int(rate), int(total), int(writers), float(t0))
    if args.role == "bare":
        return bare_process(int(args.args[0]), int(args.args[1]))
    seconds = 2.0 if args.quick else 8.0
    if args.mode in ("all", "inproc"):
        inproc(seconds, args.writers)
    if args.mode in ("all", "ws"):
        ws_mode(seconds, args.writers, args.rounds)


if __name__ == "__main__":
    main()
