"""Index lag under `drsg serve`: commit-to-searchable at a steady 1,000 commits/s.

The database holds 20,000 GloVe 6B 50-d word vectors as ``Word`` nodes under a cosine vector index,
caught up. Then ``IndexSet.start()`` runs with its defaults, exactly as ``drsg serve`` starts it, while
8 writer threads commit one ``Word`` node each (GloVe rows 20000…, vectors precomputed) on an
open-loop schedule (commit i is due at t0 + i/rate, so group commit absorbs the fsyncs), from:

- ``process``: another process (as CLI writes, or a second writer, reach a running server);
- ``thread``: this process (as JSON-RPC writes do).

Commit-to-searchable of commit s: the moment a background catch-up that reached s returned (from then
on every search sees s) minus the moment the writer's ``db.write`` for s returned (durable), on
CLOCK_MONOTONIC, which processes share. Every commit is measured; afterwards each written vector is
searched for, to check the index holds it. Raw, same run: the bare libraries' notification floor — a
thread blocked on an inotify watch of the database file (libc through ctypes) reading the head with
py-lmdb when woken, so commit-to-noticed. A commit seen before its writer's ``db.write`` returned
(the writer thread not yet resumed) counts as 0 on both sides. Also measured: the main process's CPU
over 5 s with the indexer running and nothing committed.

    .venv/bin/python -m tests.bench.bench_index_lag                # both sources, appends to RESULTS.md
    .venv/bin/python -m tests.bench.bench_index_lag --quick --no-record
    .venv/bin/python -m tests.bench.bench_index_lag --source process --label "before (a78f2da)"
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import select
import subprocess
import sys
import threading
import time
from dataclasses import dataclass

import numpy as np

import drsg
from drsg.kernel.values import Vector
from drsg.store.database import Database
from drsg.store.transaction import WriteTx
from drsg.workers.manager import IndexSet
from tests.bench import common
from tests.support.glove import rows

MAP = 1 << 30
PLANE = "startup"
IN_MODIFY = 0x2
IDLE_SECONDS = 5.0


@dataclass
class Size:
    initial: int = 20_000
    rate: float = 1_000.0
    seconds: float = 20.0
    writers: int = 8


QUICK = Size(initial=5_000, seconds=4.0)

Written = list[tuple[int, int, float, int]]  # (seq, node id, when its db.write returned, GloVe row offset)


# --------------------------------------------------------------------------------------- the writers


def write_open_loop(db: Database, first_row: int, size: Size, t0: float) -> Written:
    """Commit node ``w<first_row + i>`` at ``t0 + i / rate`` from ``size.writers`` threads."""
    plane = db.plane(PLANE)
    total = int(size.rate * size.seconds)
    payload = [Vector.of(v) for v in rows(first_row, total)]
    written: Written = []
    lock = threading.Lock()
    next_i = [0]
    errors: list[BaseException] = []

    def writer() -> None:
        try:
            while True:
                with lock:
                    i = next_i[0]
                    next_i[0] += 1
                if i >= total:
                    return
                delay = t0 + i / size.rate - time.monotonic()
                if delay > 0:
                    time.sleep(delay)  # the open-loop schedule, not a wait on a condition
                v = payload[i]
                result = db.write(
                    lambda tx, i=i, v=v: tx.create_node(plane, f"w{first_row + i}", ["Word"], {"embedding": v})
                )
                returned = time.monotonic()
                with lock:
                    written.append((result.seq or 0, result.value.id, returned, i))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=writer, name=f"writer-{n}") for n in range(size.writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return written


def child(path: str, first_row: int, size: Size) -> None:
    """The writer process: says ready, reads t0 from stdin, writes, prints what it wrote as JSON."""
    db = drsg.open(path, map_size=MAP)
    rows(first_row, 1)  # load GloVe before the clock starts
    print("ready", flush=True)
    t0 = float(sys.stdin.readline())
    written = write_open_loop(db, first_row, size, t0)
    db.close()
    print(json.dumps(written), flush=True)


def write_elsewhere(path: str, first_row: int, size: Size) -> Written:
    args = [str(first_row), str(size.rate), str(size.seconds), str(size.writers)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.bench.bench_index_lag", "--child", path, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=common.REPO,
    )
    assert proc.stdin is not None and proc.stdout is not None
    if proc.stdout.readline().strip() != "ready":
        raise RuntimeError("the writer process did not start")
    proc.stdin.write(f"{time.monotonic() + 0.5}\n")
    proc.stdin.flush()
    out = proc.stdout.readline()
    if proc.wait(timeout=60) != 0 or not out:
        raise RuntimeError("the writer process failed")
    return [(int(s), int(n), float(t), int(i)) for s, n, t, i in json.loads(out)]


# --------------------------------------------------------------------------------------- raw floor


class RawNotice:
    """The bare libraries: an inotify watch on the file, and a py-lmdb read of the head on each wake."""

    def __init__(self, db: Database) -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        self.fd = int(libc.inotify_init1(os.O_NONBLOCK))
        if self.fd < 0 or libc.inotify_add_watch(self.fd, os.fsencode(db.path), IN_MODIFY) < 0:
            raise OSError(ctypes.get_errno(), "inotify is not available here")
        self.env, self.meta = db.env.env, db.env.dbs["meta"]  # the raw py-lmdb handles
        self.seen: list[tuple[float, int]] = []  # (when, head) each time the head moved
        self._moved = threading.Condition()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="raw-notice", daemon=True)

    def _head(self) -> int:
        with self.env.begin(buffers=False) as txn:
            raw = txn.get(b"state", db=self.meta)
        return 0 if raw is None else int.from_bytes(raw[:8], "big")

    def _run(self) -> None:
        # LMDB publishes a commit to readers (the lock file's txnid) just after its last write to the
        # file, so a wake can read the old head: then read it again soon, backing off.
        last, idle = self._head(), 0.2
        timeout = idle
        while not self._stop.is_set():
            woke = bool(select.select([self.fd], [], [], timeout)[0])
            if woke:
                try:
                    while os.read(self.fd, 65536):
                        pass
                except BlockingIOError:
                    pass
            elif timeout >= idle:
                continue
            head = self._head()
            if head > last:
                last, timeout = head, idle
                with self._moved:
                    self.seen.append((time.monotonic(), head))
                    self._moved.notify_all()
            else:
                timeout = 0.0002 if woke else min(idle, timeout * 2)

    def wait_for(self, head: int, timeout: float) -> None:
        with self._moved:
            self._moved.wait_for(lambda: bool(self.seen) and self.seen[-1][1] >= head, timeout)

    def __enter__(self) -> RawNotice:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        os.close(self.fd)


def lags(written: Written, reached: list[tuple[float, int]]) -> list[float]:
    """For each commit, the first moment in ``reached`` (time, head), sorted by time, with head >= its
    seq, minus when its write returned (0 at least)."""
    times = np.array([t for t, _ in reached])
    heads = np.maximum.accumulate(np.array([h for _, h in reached]))
    out = []
    for seq, _node, returned, _i in written:
        at = int(np.searchsorted(heads, seq))
        if at == len(heads):
            raise AssertionError(f"commit {seq} was never reached")
        out.append(max(0.0, float(times[at]) - returned))
    return out


# --------------------------------------------------------------------------------------- the run


def run(source: str, size: Size) -> tuple[list[tuple[str, str, str, str]], list[str]]:
    folder = common.fresh_dir(f"index_lag_{source}")
    db = drsg.open(folder / "g.drsg", map_size=MAP)
    plane = db.plane(PLANE)
    db.write(lambda tx: tx.declare_index(plane, "vector", "Word", "embedding", {"metric": "cosine"}))

    def load(tx: WriteTx) -> None:
        for i, v in enumerate(rows(0, size.initial)):
            tx.create_node(plane, f"w{i}", ["Word"], {"embedding": Vector.of(v)})
            if i % 1000 == 999:
                tx.commit_point()

    db.write(load)
    indexes = IndexSet(db)
    indexes.catch_up()
    worker = indexes.get(plane.id, "vector", "Word", "embedding")
    assert worker is not None

    reached: list[tuple[float, int]] = []  # (when a background catch-up returned, the head it reached)
    plain_catch_up = common.timed_catch_ups(indexes, reached, time.monotonic)  # what the background loop calls
    indexes.start()  # as `drsg serve` starts it (surfaces/server/state.py)
    cpu0, wall0 = time.process_time(), time.monotonic()
    idle_end = wall0 + IDLE_SECONDS
    while time.monotonic() < idle_end:
        time.sleep(idle_end - time.monotonic())  # measuring idle CPU: nothing to wait for
    idle_cpu = (time.process_time() - cpu0) / (time.monotonic() - wall0)

    with RawNotice(db) as raw:
        cpu0, wall0 = time.process_time(), time.monotonic()
        if source == "process":
            written = write_elsewhere(db.path, size.initial, size)
        else:
            written = write_open_loop(db, size.initial, size, time.monotonic() + 0.5)
        last = max(w[0] for w in written)
        deadline = time.monotonic() + 30
        while indexes.applied < last and time.monotonic() < deadline:
            time.sleep(0.01)  # the run is over; only the last catch-up is awaited
        raw.wait_for(last, 30)
        cpu = (time.process_time() - cpu0) / (time.monotonic() - wall0)
    indexes.stop()
    indexes.catch_up = plain_catch_up  # type: ignore[method-assign]

    vectors = rows(size.initial, len(written))
    missing = 0
    for _seq, node, _returned, i in written:
        hits = worker.search(vectors[i], 1)  # type: ignore[attr-defined]
        if not (hits and hits[0][0] == node) and node not in worker.live:  # type: ignore[attr-defined]
            missing += 1
    engine = lags(written, reached)
    floor = lags(written, raw.seen)
    returned = sorted(w[2] for w in written)
    achieved = len(written) / (returned[-1] - returned[0])
    db.close()

    where = "another process" if source == "process" else "this process"
    rows_out = [
        (
            f"{where}: commit-to-searchable (drsg) vs commit-to-noticed (raw) p50",
            ms(common.pct(engine, 50)),
            ms(common.pct(floor, 50)),
            x(common.pct(engine, 50), common.pct(floor, 50)),
        ),
        (
            f"{where}: p99",
            ms(common.pct(engine, 99)),
            ms(common.pct(floor, 99)),
            x(common.pct(engine, 99), common.pct(floor, 99)),
        ),
        (f"{where}: max", ms(max(engine)), ms(max(floor)), "—"),
        (f"{where}: achieved commit rate", f"{achieved:,.0f} commits/s", "—", "—"),
        (
            f"{where}: background catch-ups, mean commits each",
            f"{len(reached):,}, {len(written) / max(1, len(reached)):.1f}",
            f"{len(raw.seen):,} wakes that saw the head move",
            "—",
        ),
        (f"{where}: this process's CPU during the run (raw thread included)", f"{cpu:.2f} cores", "—", "—"),
        (
            f"{where}: this process's CPU, indexer idle for {IDLE_SECONDS:.0f} s",
            f"{idle_cpu * 100:.2f} % of a core",
            "—",
            "—",
        ),
    ]
    notes = [
        f"{where}: {len(written):,} commits measured, {missing} not found by search afterwards "
        f"(a duplicate GloVe vector may shadow one at k=1; those still count as indexed when live)."
    ]
    return rows_out, notes


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:,.2f} ms"


def x(engine: float, raw: float) -> str:
    return f"{engine / raw:.2f}×" if raw > 0 else "—"  # raw 0: it noticed before the write returned


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="smaller, for smoke testing (< 60 s)")
    parser.add_argument("--source", default="process,thread", help="comma-separated: process,thread")
    parser.add_argument("--label", default="", help="added to the section title (e.g. the commit measured)")
    parser.add_argument("--no-record", action="store_true", help="print only; do not append to RESULTS.md")
    parser.add_argument(
        "--child", nargs=5, metavar=("PATH", "ROW", "RATE", "SECONDS", "WRITERS"), help=argparse.SUPPRESS
    )
    args = parser.parse_args(argv)
    if args.child:
        path, row, rate, seconds, writers = args.child
        child(path, int(row), Size(rate=float(rate), seconds=float(seconds), writers=int(writers)))
        return
    if args.no_record:
        os.environ["DRSG_BENCH_NO_RECORD"] = "1"
    size = QUICK if args.quick else Size()
    table: list[tuple[str, str, str, str]] = []
    notes: list[str] = []
    for source in [s.strip() for s in args.source.split(",") if s.strip()]:
        got_rows, got_notes = run(source, size)
        table += got_rows
        notes += got_notes
    notes.append(
        f"{size.initial:,} GloVe `Word` nodes indexed first; {int(size.rate * size.seconds):,} one-node commits at "
        f"{size.rate:,.0f}/s from {size.writers} writer threads; `IndexSet.start()` with its defaults (as `drsg "
        f"serve`). Raw: inotify (IN_MODIFY on the database file) + a py-lmdb read of the head, in a thread of "
        f"this process. Rerun: `.venv/bin/python -m tests.bench.bench_index_lag`."
    )
    title = "Index lag under serve: commit-to-searchable at 1,000 commits/s" + (
        f" ({args.label})" if args.label else ""
    )
    common.record(title, table, notes)


if __name__ == "__main__":
    main()
