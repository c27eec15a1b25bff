"""A snapshot taken while `drsg serve` runs, four processes write and a WebSocket subscriber follows
the feed: restored, it is exactly the database at its seq (every plane's canonical export equal to
the live one's `--as-of` that seq), `check` is clean, and its indexes load from the sidecars it
carries and catch up from the log, not rebuilt. Taken both ways: `drsg snapshot` in another process
and `GET /snapshot` streamed from the server (workers/backup.py, store/backup.py)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path

import aiohttp
import pytest

import drsg
from drsg.kernel.values import Vector
from drsg.workers.manager import IndexSet
from tests.support.feed_clients import connect
from tests.support.server import TOKEN, RunningServer, clean_env, cli, start_server

pytestmark = pytest.mark.timeout(240)
WRITER = Path(__file__).resolve().parents[1] / "support" / "snapshot_writer.py"
PLANES = ("startup", "load", "other")


def seed(db_path: Path) -> None:
    """Planes `load` and `other`, a few Docs, a keyword and a vector index with sidecars saved."""
    for plane in ("load", "other"):
        assert cli(db_path, "plane", "create", plane).returncode == 0
    with drsg.open(db_path) as db:
        for i in range(20):
            db.write(
                lambda tx, i=i: tx.create_node(
                    tx.plane("load"),
                    f"seed-{i}",
                    ["Doc"],
                    {"body": f"graph log seed {i}", "emb": Vector.of([i, 1, 2, 3])},
                )
            )
    assert cli(db_path, "index", "keyword", "Doc", "body", "-p", "load").returncode == 0
    assert cli(db_path, "index", "ensure", "Doc", "emb", "-p", "load").returncode == 0
    for statement in (
        'SEARCH (d:Doc) ON body MATCHING "graph" TOPK 3',
        "SEARCH (d:Doc) ON emb NEAR [1, 1, 2, 3] TOPK 3",
    ):
        ran = cli(db_path, "search", statement, "-p", "load")  # a read saves the sidecars beside the database
        assert ran.returncode == 0, ran.stderr


async def fetch_snapshot(server: RunningServer, out: Path) -> int:
    async with aiohttp.ClientSession() as session:
        headers = {"Authorization": f"Bearer {TOKEN}"}
        async with session.get(f"{server.url}/snapshot", headers=headers) as resp:
            assert resp.status == 200, await resp.text()
            with out.open("wb") as fh:
                async for block in resp.content.iter_chunked(1 << 16):
                    fh.write(block)
    return out.stat().st_size


async def scenario(server: RunningServer, tmp: Path) -> tuple[dict[str, object], int, int]:
    """Writers, a subscriber, and both snapshots taken while they run; returns the CLI's summary,
    the head when the writers ended, and how many changes the subscriber saw."""
    stop = tmp / "stop"
    async with connect(server) as socket:
        await socket.watch(plane="load", from_seq=1)
        writers = [
            await asyncio.create_subprocess_exec(
                sys.executable,
                str(WRITER),
                str(server.db),
                f"w{i}",
                str(stop),
                str(i),
                env=clean_env(),
                stderr=subprocess.PIPE,
            )
            for i in range(4)
        ]
        await asyncio.sleep(1.0)  # the writers are under way
        before = server.head()
        argv = ["-m", "drsg.surfaces.cli", "--db", str(server.db), "snapshot", str(tmp / "cli.snap"), "--json"]
        snap = await asyncio.create_subprocess_exec(
            sys.executable, *argv, env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        (out, err), size = await asyncio.gather(snap.communicate(), fetch_snapshot(server, tmp / "http.snap"))
        assert snap.returncode == 0, err.decode()
        assert size > 0
        summary = json.loads(out)
        assert summary["seq"] > before  # taken while they wrote
        await asyncio.sleep(0.5)  # and they go on writing after it
        stop.touch()
        for proc in writers:
            _, werr = await proc.communicate()
            assert proc.returncode == 0, werr.decode()
        head = server.head()
        assert head > summary["seq"]  # and they went on writing after it
        changes = await socket.changes_through(head, timeout=60)
    return summary, head, len(changes)


def export(db: Path, plane: str, *extra: str) -> str:
    ran = cli(db, "export", "--canonical", "-p", plane, *extra)
    assert ran.returncode == 0, ran.stderr
    return ran.stdout


def assert_restores_exactly(snapshot: Path, live: Path, target: Path) -> int:
    ran = cli(target, "restore", str(snapshot), "--json")
    assert ran.returncode == 0, ran.stderr
    seq = int(json.loads(ran.stdout)["seq"])
    for plane in PLANES:
        assert export(target, plane) == export(live, plane, "--as-of", str(seq)), plane
    checked = cli(target, "check", "--json")
    assert checked.returncode == 0, checked.stderr
    assert json.loads(checked.stdout)["ok"] is True
    assert json.loads(cli(target, "stats", "--json").stdout)["commit_seq"] == seq
    return seq


def test_snapshot_under_writers_and_a_subscriber_restores_exactly(tmp_path: Path) -> None:
    live = tmp_path / "live.drsg"
    seed(live)
    server = start_server(live, tmp_path, name="snap")
    try:
        summary, head, seen = asyncio.run(scenario(server, tmp_path))
    finally:
        assert server.stop() == 0
    assert seen > 100  # the subscriber followed the writers throughout
    seq = assert_restores_exactly(tmp_path / "cli.snap", live, tmp_path / "cli.drsg")
    assert seq == summary["seq"]
    pinned = {s["name"].split("/", 1)[0]: s["seq"] for s in summary["sidecars"]}  # type: ignore[union-attr]
    assert set(pinned) == {".hnsw", ".bm25"} and all(0 < s <= seq for s in pinned.values())
    http_seq = assert_restores_exactly(tmp_path / "http.snap", live, tmp_path / "http.drsg")
    assert 0 < http_seq <= head

    with drsg.open(tmp_path / "cli.drsg") as restored:
        indexes = IndexSet(restored)
        started = time.perf_counter()
        assert indexes.catch_up() == seq
        with restored.snapshot() as snap:
            plane = snap.plane("load").id
            docs = {n.id for n in snap.nodes(plane, "Doc")}
        for worker in indexes.workers.values():
            # loaded from the snapshot's sidecar (a rebuild starts a new lineage at 0), then caught up
            assert worker.sidecar.in_force_seq == pinned[worker.suffix], worker.describe()
            assert worker.seq == seq and worker.node_ids() == docs, worker.describe()
        took = time.perf_counter() - started
        print(f"\nrestored indexes loaded and caught up {seq - min(pinned.values())} commits in {took:.2f} s")
