"""Retention: the file's size over time under a steady update workload, with and without it.

N keyed nodes (a line of real text each) are updated round after round, every node once a round in
commits of 50; with ``[log] retain_commits`` = R the history is compacted after each round (what
`drsg serve` does every ``compact_every_secs``). The file's size is recorded after chosen rounds,
with each compaction's time; without retention the file grows by a round's versions every round.

    .venv/bin/python -m tests.bench.bench_retention [--nodes 5000] [--rounds 100] [--keep 500]
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import statistics
import threading
import time
from collections.abc import Iterator
from typing import Any

from drsg.store.database import Database
from drsg.store.retention import Retention, compact_history
from tests.bench import common

PER_COMMIT = 50


def run(nodes: int, rounds: int, keep: int, name: str) -> tuple[dict[int, int], list[float], int]:
    """Sizes after each round, each compaction's seconds, and the head."""
    lines = common.text_lines()
    folder = common.fresh_dir(f"retention-{name}")
    sizes: dict[int, int] = {}
    compactions: list[float] = []
    with Database(folder / "g.drsg", map_size=1 << 30) as db:

        def create(tx: Any) -> list[int]:
            plane = tx.plane("startup")
            return [tx.create_node(plane, f"k{i}", ["Doc"], {"text": lines[i % len(lines)]}).id for i in range(nodes)]

        ids = db.write(create).value
        for r in range(1, rounds + 1):
            for at in range(0, nodes, PER_COMMIT):

                def update(tx: Any, chunk: list[int] = ids[at : at + PER_COMMIT], r: int = r) -> None:
                    plane = tx.plane("startup")
                    for i in chunk:
                        tx.update_node(plane, i, {"text": lines[(i + r) % len(lines)], "round": r}, [], None)

                db.write(update)
            if keep:
                started = time.perf_counter()
                db.compact_history(Retention(commits=keep))
                compactions.append(time.perf_counter() - started)
            sizes[r] = db.env.file_size()
        return sizes, compactions, db.head()


def latency(nodes: int, keep: int, commits: int = 2000) -> tuple[list[float], list[float], list[float]]:
    """Single-update commits' latencies alone and while compaction runs without pause in another
    thread, and how long each of its transactions held the writer's turn."""
    folder = common.fresh_dir("retention-latency")
    held: list[float] = []
    with Database(folder / "g.drsg", map_size=1 << 30) as db:
        ids = db.write(lambda tx: [tx.create_node(tx.plane("startup"), f"k{i}", [], {"n": 0}).id for i in range(nodes)])
        ids = ids.value

        def commit_times() -> list[float]:
            times = []
            for n in range(commits):
                started = time.perf_counter()
                db.write(lambda tx, n=n: tx.update_node(tx.plane("startup"), ids[n % nodes], {"n": n}, [], None))
                times.append(time.perf_counter() - started)
            return times

        @contextlib.contextmanager
        def turn() -> Iterator[None]:
            with db.writer.exclusive():
                started = time.perf_counter()
                yield
                held.append(time.perf_counter() - started)

        alone = commit_times()
        stop = threading.Event()

        def compact() -> None:
            while not stop.is_set():
                compact_history(db.env, turn, Retention(commits=keep))

        thread = threading.Thread(target=compact)
        thread.start()
        try:
            beside = commit_times()
        finally:
            stop.set()
            thread.join()
    return alone, beside, held


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--keep", type=int, default=500)
    args = parser.parse_args()
    started = dt.datetime.now(dt.UTC)
    kept, times, head = run(args.nodes, args.rounds, args.keep, "kept")
    unbounded, _, _ = run(args.nodes, args.rounds, 0, "all")
    shown = sorted(r for r in {1, 2, 5, *range(10, args.rounds + 1, 10), args.rounds} if r <= args.rounds)
    per_round = args.nodes // PER_COMMIT
    lines = [
        f"{args.nodes:,} nodes updated once a round in commits of {PER_COMMIT} ({per_round} commits a round, "
        f"{head:,} commits in all); retain_commits = {args.keep:,} ({args.keep / per_round:g} rounds), "
        "compacted after every round.",
        "",
        "| after round | file with retention | file without | without / with |",
        "|---|---|---|---|",
        *[
            f"| {r} | {kept[r] / 2**20:.1f} MiB | {unbounded[r] / 2**20:.1f} MiB | {unbounded[r] / kept[r]:.2f}× |"
            for r in shown
        ],
        "",
        f"- a compaction (every versioned table walked, {per_round * PER_COMMIT:,} superseded versions and "
        f"{per_round} log records removed a round): median {statistics.median(times) * 1000:.0f} ms, "
        f"max {max(times) * 1000:.0f} ms, in transactions of at most 2,000 keys each.",
    ]
    alone, beside, held = latency(args.nodes, args.keep)
    ms = 1000
    lines += [
        f"- single-update commits ({len(alone):,}), alone: p50 {common.pct(alone, 50) * ms:.2f} ms, "
        f"p99 {common.pct(alone, 99) * ms:.2f} ms, max {max(alone) * ms:.1f} ms; while compaction runs without "
        f"pause in another thread: p50 {common.pct(beside, 50) * ms:.2f} ms, p99 {common.pct(beside, 99) * ms:.2f} "
        f"ms, max {max(beside) * ms:.1f} ms. Each compaction transaction held the writer's turn for p50 "
        f"{common.pct(held, 50) * ms:.2f} ms, max {max(held) * ms:.1f} ms ({len(held):,} transactions).",
    ]
    common.append_section("(#40 item 2) retention: file size over time under steady updates", started, lines, True)


if __name__ == "__main__":
    main()
