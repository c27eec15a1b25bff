"""Retention: the file's size over time under a steady update workload, with and without it.

N keyed nodes (a line of real text each) are updated round after round, every node once a round in
commits of 50; with ``[log] retain_commits`` = R the history is compacted after each round (what
`drsg serve` does every ``compact_every_secs``). The file's size is recorded after chosen rounds,
with each compaction's time; without retention the file grows by a round's versions every round.

    .venv/bin/python -m tests.bench.bench_retention [--nodes 5000] [--rounds 100] [--keep 500]
"""

from __future__ import annotations

import argparse
import datetime as dt
import statistics
import time
from typing import Any

from drsg.store.database import Database
from drsg.store.retention import Retention
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
    common.append_section("(#40 item 2) retention: file size over time under steady updates", started, lines, True)


if __name__ == "__main__":
    main()
