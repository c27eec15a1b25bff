"""Commit throughput (issue #14 targets 2 and 3): group commit and one durable commit per call.

Every row creates one node per commit (a line of real text as its ``text`` property, label ``Line``).

Target 2, group commit. Callers each make one durable commit per call (``db.write`` with one node
create, durable when it returns), from 16 and from 64 threads of one process, and from 4 processes
x 16 threads against one file. The reference is the engine's own single-caller rate with 1,000
commits per ``db.write`` (``commit_point``), measured in the same run just before and just after
each row (the row's reference is the mean of the two, so a load change on the machine hits both).
Targets: 64 threads >= 0.5x, 16 threads >= 0.3x, 4 processes x 16 threads >= 0.3x.

Each row has its bounds beside it, from the same run: raw py-lmdb replaying exactly the engine's
puts in the groups the engine formed (one synced transaction each, one thread: the LMDB work alone),
and for threads the writer's hand-offs alone, each group's work replaced by a wait as long as the
replay's that holds neither a lock nor the interpreter (what waking and re-queueing the callers
costs, with commit functions that cost nothing). A third bound is arithmetic on the first and the
reference: a perfect single writer that pays each commit's own work at the reference's cost and
its group's LMDB work, one after the other, with no hand-off at all (1 / (1/reference + 1/replay)).
The two cannot overlap with one LMDB writer: the next group's functions need the write transaction
that the last group's fsync still holds.

Target 3, one caller making one durable commit per call, against raw py-lmdb doing exactly the
same puts (the same keys and values in the same named tables: the log record, the projection's
versioned entries, the meta state and the plane's tallies) in one synced transaction per commit.
Rounds alternate engine / raw so the disk's fsync noise hits both. Target >= 0.8x.

    .venv/bin/python -m tests.bench.bench_commits                 # everything, appends to RESULTS.md
    .venv/bin/python -m tests.bench.bench_commits --only threads  # just the thread rows (and references)
    .venv/bin/python -m tests.bench.bench_commits --only single --engine-only   # for a profiler
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import lmdb

import drsg
from drsg.store.database import Database
from drsg.store.environment import DB_NAMES
from drsg.store.transaction import WriteTx
from drsg.store.writer import Writer
from tests.bench import common

MAP = 4 << 30  # every database gets the same generous map, so nothing here measures map growth
REF_COMMITS = 50_000


def _one_node(plane: object, key: str, text: str) -> object:
    return lambda tx: tx.create_node(plane, key, ["Line"], {"text": text})


# ------------------------------------------------------------------------------- the reference


def reference(path: Path, n: int = REF_COMMITS, per_write: int = 1000) -> float:
    """Commits/s of one caller making ``per_write`` one-node commits per ``db.write``."""
    lines = common.text_lines()
    with drsg.open(path, map_size=MAP) as db:
        plane = db.plane("startup")
        start = time.perf_counter()
        for base in range(0, n, per_write):

            def fn(tx: WriteTx, base: int = base) -> None:
                for i in range(base, min(base + per_write, n)):
                    tx.create_node(plane, f"b{i}", ["Line"], {"text": lines[i % len(lines)]})
                    tx.commit_point()

            db.write(fn)
        return n / (time.perf_counter() - start)


# ------------------------------------------------------------------------------- threads


def run_threads(db: Database, threads: int, per_thread: int, tag: str, start_gate: object = None) -> float:
    """``threads`` callers each making ``per_thread`` one-node commits, one per ``db.write``; returns
    the seconds from the common start to the last commit."""
    lines = common.text_lines()
    plane = db.plane("startup")
    barrier = threading.Barrier(threads + 1)
    errors: list[BaseException] = []

    def worker(t: int) -> None:
        try:
            barrier.wait()
            for i in range(per_thread):
                db.write(_one_node(plane, f"{tag}t{t}-{i}", lines[(t * per_thread + i) % len(lines)]))  # type: ignore[arg-type]
        except BaseException as exc:
            errors.append(exc)

    pool = [threading.Thread(target=worker, args=(t,)) for t in range(threads)]
    for t in pool:
        t.start()
    if start_gate is not None:
        start_gate()  # type: ignore[operator]
    barrier.wait()
    start = time.perf_counter()
    for t in pool:
        t.join()
    secs = time.perf_counter() - start
    if errors:
        raise errors[0]
    return secs


@dataclass(frozen=True)
class Row:
    rate: float  # commits/s
    group: float  # average commits per LMDB transaction
    replay: float  # commits/s of raw py-lmdb replaying the same groups (replay_groups)
    handoffs: float = 0.0  # commits/s of the writer's hand-offs alone around the replay's waits


class HandOffsOnly(Writer):
    """The engine's writer with each group's work replaced by a wait that holds no lock and not the
    interpreter (like an fsync): what its callers' hand-offs alone allow, whatever the commits cost."""

    def __init__(self, wait: float) -> None:
        super().__init__(env=None)  # type: ignore[arg-type]  # never touched: no group runs
        self.wait = wait

    def _run_group(self, group: list[Any]) -> None:
        time.sleep(self.wait)
        self.groups_committed += 1


def handoffs_only(threads: int, n: int, wait: float) -> float:
    """Calls/s of ``threads`` callers each making one ``write`` per call through :class:`HandOffsOnly`."""
    writer = HandOffsOnly(wait)
    barrier = threading.Barrier(threads + 1)

    def caller() -> None:
        barrier.wait()
        for _ in range(n // threads):
            writer.write(_noop)

    pool = [threading.Thread(target=caller) for _ in range(threads)]
    for t in pool:
        t.start()
    barrier.wait()
    start = time.perf_counter()
    for t in pool:
        t.join()
    return (n // threads * threads) / (time.perf_counter() - start)


def _noop(tx: WriteTx) -> None:
    return None


def note_group_ends(db: Database) -> list[int]:
    """The head after each group this process commits from now on (each group is one LMDB
    transaction: the seqs after the previous group's end, through its own)."""
    ends: list[int] = []
    told = db.writer.on_commit

    def noted(head: int) -> None:
        ends.append(head)
        if told is not None:
            told(head)

    db.writer.on_commit = noted
    return ends


def threads_row(path: Path, threads: int, n: int) -> Row:
    """``n`` commits from ``threads`` threads, and the raw replay of their groups."""
    with drsg.open(path, map_size=MAP) as db:
        per = n // threads
        first = db.head()
        ends = note_group_ends(db)
        secs = run_threads(db, threads, per, "")
        done = db.head() - first
        assert done == per * threads, (done, per * threads)
        groups = grouped_writes(db, first, ends)
    replay = replay_groups(path.with_suffix(".raw.lmdb"), groups)
    group = done / len(groups)
    return Row(done / secs, group, replay, handoffs_only(threads, n, group / replay))


def grouped_writes(db: Database, first: int, ends: list[int]) -> list[list[tuple[str, bytes, bytes]]]:
    """Every put of each group committed after seq ``first``, the groups ending at ``ends``."""
    per_seq = writes_of(db, range(first + 1, db.head() + 1))
    groups, start = [], first
    for end in sorted(ends):
        commits = per_seq[start - first : end - first]
        # The meta state is written once per group (each commit's tallies once per commit).
        group = [put for writes in commits for put in writes if put[0] != "meta"]
        groups.append(group + [put for put in commits[-1] if put[0] == "meta"])
        start = end
    assert start == db.head(), (start, db.head())
    return groups


def replay_groups(path: Path, groups: list[list[tuple[str, bytes, bytes]]]) -> float:
    """Commits/s of raw py-lmdb putting exactly these pre-encoded writes, one synced transaction per
    group, from one thread: the LMDB work of the same groups with no Python encoding, no validation
    and no thread hand-off. What any implementation of group commit must pay at these group sizes."""
    raw = lmdb.open(str(path), subdir=False, map_size=MAP, max_dbs=len(DB_NAMES) + 2, readahead=False)
    try:
        tables = {name: raw.open_db(name.encode()) for name in DB_NAMES}
        resolved = [[(key, value, tables[name]) for name, key, value in group] for group in groups]
        commits = sum(1 for group in groups for name, _, _ in group if name == "log")
        os.sync()
        start = time.perf_counter()
        for group in resolved:
            with raw.begin(write=True) as txn:
                for key, value, table in group:
                    txn.put(key, value, db=table)
        return commits / (time.perf_counter() - start)
    finally:
        raw.close()


# ------------------------------------------------------------------------------- processes


def child(path: str, threads: int, per_thread: int, tag: str) -> None:
    """One writer process: open the file, say ready, wait for the go line, write, report."""
    db = drsg.open(path, map_size=MAP)
    common.text_lines()
    groups = db.writer.groups_committed

    def ready() -> None:
        print("ready", flush=True)
        sys.stdin.readline()

    ends = note_group_ends(db)
    secs = run_threads(db, threads, per_thread, tag, ready)
    print(f"done {secs:.6f} {db.writer.groups_committed - groups} {','.join(map(str, ends))}", flush=True)
    db.close()


def processes_row(path: Path, procs: int, threads: int, n: int) -> Row:
    """``n`` commits from ``procs`` x ``threads``, and the raw replay of their groups."""
    drsg.open(path, map_size=MAP).close()  # created (and bootstrapped) once, before the writers
    per = n // (procs * threads)
    cmd = [sys.executable, "-m", "tests.bench.bench_commits", "--child", str(path), "--threads", str(threads)]
    children = [
        subprocess.Popen(
            [*cmd, "--per-thread", str(per), "--tag", f"p{p}"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=common.REPO,
        )
        for p in range(procs)
    ]
    try:
        for c in children:
            assert c.stdout is not None and c.stdout.readline().strip() == "ready"
        start = time.perf_counter()
        for c in children:
            assert c.stdin is not None
            c.stdin.write("go\n")
            c.stdin.flush()
        ends: list[int] = []
        for c in children:
            assert c.stdout is not None
            line = c.stdout.readline().split()
            assert line and line[0] == "done", line
            ends += [int(end) for end in line[3].split(",")]
        secs = time.perf_counter() - start
    finally:
        for c in children:
            c.wait(60)
    with drsg.open(path) as db:
        done = db.head() - 1
        assert done == per * threads * procs, (done, per * threads * procs)
        groups = grouped_writes(db, 1, ends)
    return Row(done / secs, done / len(groups), replay_groups(path.with_suffix(".raw.lmdb"), groups))


# ------------------------------------------------------------------------------- one caller


def writes_of(db: Database, seqs: range) -> list[list[tuple[str, bytes, bytes]]]:
    """Per commit in ``seqs``, every (table, key, value) it wrote: its log record, its versioned
    entries (their keys end in the commit's ~seq), and the meta state and plane tallies every commit
    rewrites (taken at their values now: the same keys and sizes)."""
    from drsg.store import keys as layout

    per_seq: dict[int, list[tuple[str, bytes, bytes]]] = {seq: [] for seq in seqs}
    fixed: list[tuple[str, bytes, bytes]] = []
    with db.env.read() as txn:
        for name in DB_NAMES:
            for key, value in txn.cursor(db=db.env.dbs[name]):
                if name in ("meta", "tally"):
                    fixed.append((name, key, value))
                    continue
                if name == "log":
                    seq = layout.read_u64(key)
                elif len(key) > 8:
                    seq = layout.seq_of(key)
                else:
                    continue
                if seq in per_seq:
                    per_seq[seq].append((name, key, value))
    return [writes + fixed for _, writes in sorted(per_seq.items())]


def single_rows(out: Path, n: int, rounds: int, engine_only: bool) -> list[tuple[str, str, str, str]]:
    lines = common.text_lines()
    db = drsg.open(out / "single.drsg", map_size=MAP)
    plane = db.plane("startup")
    raw, tables = None, {}
    if not engine_only:  # the engine's own LMDB settings: synced commits, no readahead
        raw = lmdb.open(
            str(out / "raw-single.lmdb"), subdir=False, map_size=MAP, max_dbs=len(DB_NAMES) + 2, readahead=False
        )
        tables = {name: raw.open_db(name.encode()) for name in DB_NAMES}
    engine_secs = raw_secs = 0.0
    engine_lat: list[float] = []
    raw_lat: list[float] = []
    round_rates: list[tuple[float, float]] = []
    per = n // rounds
    os.sync()  # let earlier write-back settle: fsync tails dominate these rows
    for r in range(rounds):
        first = db.head() + 1
        start = time.perf_counter()
        for i in range(per):
            fn = _one_node(plane, f"r{r}-{i}", lines[(r * per + i) % len(lines)])
            t0 = time.perf_counter()
            db.write(fn)  # type: ignore[arg-type]
            engine_lat.append(time.perf_counter() - t0)
        e_secs = time.perf_counter() - start
        engine_secs += e_secs
        if raw is None:
            continue
        commits = writes_of(db, range(first, db.head() + 1))
        start = time.perf_counter()
        for writes in commits:
            t0 = time.perf_counter()
            with raw.begin(write=True) as txn:
                for name, key, value in writes:
                    txn.put(key, value, db=tables[name])
            raw_lat.append(time.perf_counter() - t0)
        r_secs = time.perf_counter() - start
        raw_secs += r_secs
        round_rates.append((per / e_secs, len(commits) / r_secs))
    db.close()
    done = per * rounds
    engine_rate = done / engine_secs
    print(f"one caller: {done} durable commits in {engine_secs:.2f}s = {engine_rate:,.0f}/s", flush=True)
    if raw is None:
        return []
    raw.close()
    raw_rate = done / raw_secs
    ratios = sorted(e / r for e, r in round_rates)
    ms = 1000

    def lat(v: list[float]) -> str:
        return f"p50 {common.pct(v, 50) * ms:.3f} / p99 {common.pct(v, 99) * ms:.3f} ms"

    return [
        (
            f"(3) one caller, one durable commit per call ({done:,} commits, {rounds} alternating rounds)",
            f"{engine_rate:,.0f}/s ({lat(engine_lat)})",
            f"{raw_rate:,.0f}/s raw py-lmdb, the same puts in one synced txn per commit ({lat(raw_lat)})",
            f"**{common.ratio(engine_rate, raw_rate):.3f}×** (target ≥ 0.8×; per round {ratios[0]:.2f}–"
            f"{ratios[-1]:.2f}×, median {ratios[len(ratios) // 2]:.2f}×)",
        ),
        (
            "(3) the same, at median latency (tail-free)",
            f"{1 / common.pct(engine_lat, 50):,.0f}/s",
            f"{1 / common.pct(raw_lat, 50):,.0f}/s",
            f"{common.pct(raw_lat, 50) / common.pct(engine_lat, 50):.3f}×",
        ),
    ]


# ------------------------------------------------------------------------------- the run


def group_rows(out: Path, args: argparse.Namespace) -> list[tuple[str, str, str, str]]:
    cases: list[tuple[str, float, int, Callable[[Path], Row]]] = []
    for threads, n, target in ((16, args.commits16, 0.3), (64, args.commits64, 0.5)):
        if n:
            cases.append((f"{threads} threads", target, n, partial(threads_row, threads=threads, n=n)))
    if args.processes:
        procs, n = args.processes, args.commits_procs
        cases.append((f"{procs} processes x 16 threads", 0.3, n, partial(processes_row, procs=procs, threads=16, n=n)))
    refs = [reference(out / "ref-0.drsg")]
    rows = []
    for i, (name, target, n, run) in enumerate(cases):
        os.sync()
        row = run(out / f"case-{i}.drsg")
        os.sync()
        refs.append(reference(out / f"ref-{i + 1}.drsg"))
        before, after = refs[-2:]
        ref = (before + after) / 2
        print(
            f"{name}: {row.rate:,.0f}/s (avg group {row.group:.1f}); reference {ref:,.0f}/s; "
            f"raw replay of the same groups {row.replay:,.0f}/s",
            flush=True,
        )
        rows.append(
            (
                f"(2) {name}, one durable commit per call ({n:,} commits)",
                f"{row.rate:,.0f}/s (avg group {row.group:.1f} commits/txn)",
                f"{ref:,.0f}/s: the engine, one caller, 1,000 commits per db.write "
                f"(runs before / after: {before:,.0f} / {after:,.0f})",
                f"**{common.ratio(row.rate, ref):.3f}×** (target ≥ {target}×)",
            )
        )
        rows.append(
            (
                f"(2) {name}: the bound, raw py-lmdb replaying the same groups",
                f"{row.rate:,.0f}/s",
                f"{row.replay:,.0f}/s: exactly the engine's puts, pre-encoded, one synced transaction per "
                f"group as the engine grouped them, one thread (= {common.ratio(row.replay, ref):.3f}× the reference)",
                f"{common.ratio(row.rate, row.replay):.3f}×",
            )
        )
        # (iii) A perfect single writer: each commit's own work at the reference's cost, then the
        # LMDB work of its group (i), back to back, with no hand-off at all. One LMDB writer runs
        # both in turn (the next group's functions need the transaction the last one's fsync holds),
        # so no implementation with one writer and commit functions in Python passes this bound.
        serial = 1 / (1 / ref + 1 / row.replay)
        rows.append(
            (
                f"(2) {name}: the bound, a perfect single writer",
                f"{row.rate:,.0f}/s",
                f"{serial:,.0f}/s: the reference's cost per commit plus the raw replay's per group, back to back, "
                f"no hand-offs (= **{common.ratio(serial, ref):.3f}×** the reference, against the target's {target}×)",
                f"{common.ratio(row.rate, serial):.3f}×",
            )
        )
        if row.handoffs:
            rows.append(
                (
                    f"(2) {name}: the bound, the writer's hand-offs alone",
                    f"{row.rate:,.0f}/s",
                    f"{row.handoffs:,.0f}/s: each group's work replaced by a wait as long as the raw replay's "
                    f"({row.group / row.replay * 1e6:,.0f} µs, holding nothing), groups formed as they come "
                    f"(= {common.ratio(row.handoffs, ref):.3f}× the reference)",
                    f"{common.ratio(row.rate, row.handoffs):.3f}×",
                )
            )
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", choices=["threads", "processes", "single", "all"], default="all")
    ap.add_argument("--commits16", type=int, default=32_000, help="commits from 16 threads")
    ap.add_argument("--commits64", type=int, default=64_000, help="commits from 64 threads")
    ap.add_argument("--commits-procs", type=int, default=32_000, help="commits from the writer processes")
    ap.add_argument("--procs", type=int, default=4, help="writer processes (x 16 threads)")
    ap.add_argument("--single", type=int, default=6_000, help="(3) total commits of the one caller")
    ap.add_argument("--rounds", type=int, default=20, help="(3) alternating engine/raw rounds")
    ap.add_argument("--engine-only", action="store_true", help="(3) skip raw py-lmdb (for profiling)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--threads", type=int, default=16, help=argparse.SUPPRESS)
    ap.add_argument("--per-thread", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--tag", default="", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child, args.threads, args.per_thread, args.tag)
        return
    common.text_lines()  # build the corpus cache before timing anything (the children read it)
    out = common.fresh_dir("commits")
    rows: list[tuple[str, str, str, str]] = []
    if args.only in ("threads", "processes", "all"):
        group_args = argparse.Namespace(**vars(args))
        if args.only == "threads":
            group_args.processes = 0
        else:
            group_args.processes = args.procs
        if args.only == "processes":
            group_args.commits16 = group_args.commits64 = 0
        rows += group_rows(out, group_args)
    if args.only in ("single", "all"):
        rows += single_rows(out, args.single, args.rounds, args.engine_only)
    if rows and not args.engine_only:
        common.record(
            "(#14 targets 2, 3) group commit and one durable commit per call",
            rows,
            [
                "(2): every caller makes one one-node commit per db.write and waits for it to be durable "
                "(LMDB syncs on commit); the reference is the engine with one caller and 1,000 commits per "
                "db.write (commit_point), run just before and just after the row (mean of the two).",
                "(3): the raw side puts the very keys and values the engine's commits wrote (log, projection, "
                "meta state, tallies) into the same named tables of its own file, one synced transaction per "
                "commit; rounds alternate so fsync noise hits both.",
            ],
        )
    shutil.rmtree(out, ignore_errors=True)  # scratch databases; nothing here is reused


if __name__ == "__main__":
    main()
