"""The change feed under load, full size (issue #4): a real `drsg serve`, four writer processes —
two JSON-RPC writers and two CLI writers (`drsg import` / `drsg node delete` / `drsg node put`,
each a real `drsg` process on the same database) — append 50k commits while 20 subscribers (10 over
WebSocket ``plane.watch``, 10 over SSE ``/feed/{plane}``, ten different filters) keep dropping their
connection at random points and resuming from the last seq they saw.

Oracle: once the writers are done and every subscriber has reached the head (a change or a
``resolved`` watermark at or past it), the log is replayed by tests/support/feed_oracle.py — which
shares no code with drsg.feed — and each subscriber's deliveries must equal its filter's expected
(seq, changes) list exactly: every commit once, in seq order, with the right changes.

``DRSG_LOAD_COMMITS`` sets the size (default 50,000).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import aiohttp
import pytest

import drsg
from tests.support.feed_load import RPC_WRITER, Follower, first_difference
from tests.support.feed_oracle import Filter, Replay
from tests.support.server import TOKEN, clean_env, drsg_argv, start_server

pytestmark = [pytest.mark.slow, pytest.mark.timeout(400)]

COMMITS = int(os.environ.get("DRSG_LOAD_COMMITS", "50000"))
RPC_SHARE, CLI_SHARE = 0.2, 0.3  # of COMMITS, per writer process (2 of each)

FILTERS = [
    Filter("load"),
    Filter("load", labels=frozenset({"Person"})),
    Filter("load", labels=frozenset({"Robot"})),
    Filter("load", ops=frozenset({"created"})),
    Filter("load", ops=frozenset({"updated", "deleted"})),
    Filter("load", labels=frozenset({"Person"}), ops=frozenset({"deleted"})),
    Filter("other"),
    Filter("load", labels=frozenset({"Person", "Robot"})),
    Filter("load", ops=frozenset({"deleted"})),
    Filter("load", labels=frozenset({"Robot"}), ops=frozenset({"created", "updated"})),
]


class CliWriter:
    """A stream of `drsg` CLI processes writing plane `load` while the server runs: mostly `drsg import`
    of small JSONL files (one commit per line: new nodes, label-changing updates, edges), and now and
    then a `drsg node delete` or `drsg node put`."""

    def __init__(self, db: Path, workdir: Path, name: str, count: int, seed: int) -> None:
        self.db = db
        self.workdir = workdir
        self.name = name
        self.count = count
        self.rng = random.Random(seed)
        self.mine: list[str] = []
        self.made = self.runs = 0

    async def drsg(self, *args: str) -> dict[str, Any]:
        env = clean_env(DRSG_STORE_IMPORT_COMMIT_LINES="1")
        proc = await asyncio.create_subprocess_exec(
            *drsg_argv(),
            "--db",
            str(self.db),
            *args,
            env=env,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await proc.communicate()
        assert proc.returncode == 0, (args, err.decode())
        self.runs += 1
        return json.loads(out) if "--json" in args else {}

    def _import_file(self) -> Path:
        rng, lines = self.rng, []
        for _ in range(rng.randint(150, 600)):
            roll = rng.random()
            label = rng.choice(["Person", "Robot"])
            if roll < 0.2 and self.mine:
                key = rng.choice(self.mine)  # --on-conflict update: replaces labels and properties
                lines.append({"external_key": key, "labels": [label], "properties": {"u": self.made}})
            elif roll < 0.35 and len(self.mine) > 1:
                src, dst = rng.sample(self.mine, 2)
                lines.append({"src_key": src, "dst_key": dst, "type": "NEXT"})
            else:
                key = f"{self.name}-{self.made}-{len(lines)}"
                lines.append({"external_key": key, "labels": [label], "properties": {"i": len(lines)}})
                self.mine.append(key)
        path = self.workdir / f"{self.name}-{self.runs}.jsonl"
        path.write_text("".join(json.dumps(line) + "\n" for line in lines))
        return path

    async def run(self) -> None:
        while self.made < self.count:
            roll = self.rng.random()
            if roll < 0.15 and len(self.mine) > 2:
                key = self.mine.pop(self.rng.randrange(len(self.mine)))
                await self.drsg("node", "delete", "-p", "load", f"@{key}")
                self.made += 1
            elif roll < 0.2:
                key = f"{self.name}-put-{self.made}"
                await self.drsg("node", "put", key, "-l", self.rng.choice(["Person", "Robot"]), "-p", "load")
                self.mine.append(key)
                self.made += 1
            else:
                path = self._import_file()
                report = await self.drsg("import", str(path), "-p", "load", "--on-conflict", "update", "--json")
                self.made += report["commits"]


def test_50k_commits_from_four_writer_processes_reach_20_resuming_subscribers_exactly_once(tmp_path: Path) -> None:
    running = start_server(tmp_path / "g.drsg", tmp_path, name="load")
    try:
        for name in ("load", "other"):
            running.call("plane.create", {"name": name})
        start = running.head() + 1
        rpc_count, cli_count = int(COMMITS * RPC_SHARE), int(COMMITS * CLI_SHARE)
        followers = [
            Follower(running, via, feed, start, seed=i * 2 + (via == "sse"))
            for i, feed in enumerate(FILTERS)
            for via in ("ws", "sse")
        ]
        clis = [CliWriter(running.db, tmp_path, f"cli{i}", cli_count, seed=100 + i) for i in range(2)]
        timings: dict[str, float] = {}

        async def scenario() -> None:
            began = time.monotonic()
            async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
                readers = [asyncio.create_task(f.run(session)) for f in followers]
                rpc = [  # their output is small: read once they exit
                    await asyncio.create_subprocess_exec(
                        sys.executable,
                        str(RPC_WRITER),
                        f"{running.url}/rpc",
                        TOKEN,
                        f"rpc{i}",
                        str(rpc_count),
                        str(i),
                        env=clean_env(),
                        stdout=asyncio.subprocess.PIPE,
                        stderr=asyncio.subprocess.PIPE,
                    )
                    for i in range(2)
                ]
                try:
                    await asyncio.gather(*(w.run() for w in clis))
                    for proc in rpc:
                        _, err = await proc.communicate()
                        assert proc.returncode == 0, err.decode()
                finally:
                    for proc in rpc:
                        if proc.returncode is None:
                            proc.kill()
                timings["writers"] = time.monotonic() - began
                head = running.head()
                for f in followers:
                    f.head = head
                async with asyncio.timeout(240):
                    await asyncio.gather(*readers)
                timings["caught_up"] = time.monotonic() - began

        asyncio.run(scenario())
        with drsg.open(running.db, readonly=True) as db:
            head = db.head()
            origins = Counter(c.origin.get("via") for c in db.commits(start))
            replay = Replay(db.commits(1), start)
        commits = head - start + 1
        resumes = sum(f.resumes for f in followers)
        print(
            f"\nfeed load: {commits:,} commits ({dict(origins)}) from 2 RPC + 2 CLI writers "
            f"({sum(w.runs for w in clis)} drsg processes) in {timings['writers']:.1f} s; 20 subscribers, "
            f"{resumes} resumes, all at the head after {timings['caught_up']:.1f} s; "
            f"{sum(len(f.got) for f in followers):,} messages checked"
        )
        assert commits >= COMMITS
        assert origins["rpc"] >= 2 * rpc_count and origins["import"] + origins["cli"] >= 2 * cli_count
        assert resumes >= 100
        for f in followers:  # every commit of its filter, once, in seq order, with the right changes
            expected = replay.expected(f.feed)
            assert f.got == expected, f"{f.via} {f.feed}: {first_difference(f.got, expected)}"
        assert all(replay.expected(feed) for feed in FILTERS)  # every filter had something to deliver
    finally:
        assert running.stop() == 0
