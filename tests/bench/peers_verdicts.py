"""The store issue's guards as bench_peers' verdict lines (issue #37 item 6), each the median of three runs.

Each guard is measured by the bench that defined it, through its own functions (nothing re-written):

* import ≥ 0.7× the least Python importer — bench_import's ENGINE and FLOOR scripts on its generated data;
* group commit (16 threads) ≥ 0.45× the perfect single writer — bench_commits' ``reference`` and
  ``threads_row``, the bound as its ``group_rows`` computes it;
* one durable commit per call ≥ 0.7× raw py-lmdb — bench_commits' ``single_rows``;
* reads ≤ 2× raw py-lmdb — bench_index's ``bench_reads`` (node by key and 1-hop, p50, the worse of the
  open-read and a-read-each rows).
"""

from __future__ import annotations

import re
import statistics
import sys
from pathlib import Path

from tests.bench import bench_commits, bench_import, common

RATIO = re.compile(r"([0-9.]+)×")


def import_ratio(work: Path, nodes: int, edges: int) -> float:
    data = work / f"words-{nodes}-{edges}.jsonl"
    if not data.exists():
        bench_import.generate(data, nodes, edges, 11)
    for name in ("engine.drsg", "engine.drsg-lock", "floor.lmdb", "floor.lmdb-lock"):
        (work / name).unlink(missing_ok=True)
    eng = bench_import.run([sys.executable, "-c", bench_import.ENGINE, str(work / "engine.drsg"), str(data)])
    floor = bench_import.run([sys.executable, "-c", bench_import.FLOOR, str(work / "floor.lmdb"), str(data)])
    return float(floor["secs"]) / float(eng["secs"])  # the same lines: the ratio of the rates


def group_ratio(work: Path, commits: int) -> float:
    ref = bench_commits.reference(work / "ref.drsg")
    row = bench_commits.threads_row(work / "case.drsg", threads=16, n=commits)
    serial = 1 / (1 / ref + 1 / row.replay)  # as group_rows: the reference's cost plus the replay's, back to back
    return row.rate / serial


def single_ratio(work: Path, commits: int, rounds: int) -> float:
    rows = bench_commits.single_rows(work, commits, rounds, engine_only=False)
    first = next(r for r in rows if r[0].startswith("(3) one caller"))
    return float(RATIO.findall(first[3])[0])


def reads_ratio(vectors: int, queries: int) -> float:
    from tests.bench import bench_index

    sec = bench_index.bench_reads(bench_index.Size(vectors=vectors, read_queries=queries, read_rounds=2))
    return max(float(RATIO.findall(r[3])[0]) for r in sec.rows if r[0].endswith(": p50"))


def verdicts(runs: int = 3, quick: bool = False) -> list[str]:
    """The four verdict lines, each a median of ``runs`` runs, with PASS/MISS and the target."""
    got: dict[str, list[float]] = {"import": [], "group": [], "single": [], "reads": []}
    for i in range(runs):
        work = common.fresh_dir(f"peers-verdicts-{i}")
        got["import"].append(import_ratio(work, 20_000 if quick else 100_000, 40_000 if quick else 200_000))
        got["group"].append(group_ratio(work, 1_600 if quick else 3_200))
        got["single"].append(single_ratio(work, 400 if quick else 2_000, 4))
        got["reads"].append(reads_ratio(2_000 if quick else 10_000, 300 if quick else 1_000))
    lines = []
    for key, what, target, higher in (
        ("import", "import vs the least Python importer", 0.7, True),
        ("group", "group commit, 16 threads, vs the perfect single writer", 0.45, True),
        ("single", "one durable commit per call vs raw py-lmdb", 0.7, True),
        ("reads", "reads (node by key, 1-hop; p50, the worse row) vs raw py-lmdb", 2.0, False),
    ):
        m = statistics.median(got[key])
        ok = m >= target if higher else m <= target
        each = ", ".join(f"{v:.3f}" for v in got[key])
        lines.append(
            f"- **{'PASS' if ok else 'MISS'}** — {what}: {m:.3f}× ({'≥' if higher else '≤'} {target}× "
            f"wanted; runs {each})"
        )
    return lines
