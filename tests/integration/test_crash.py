"""Crash safety: SIGKILL a busy writer process at many random points; nothing acknowledged is lost.

A writer subprocess (tests/support/crash_writer.py) appends commits from several threads — single-node commits,
multi-node commits with edges and deletes, and bulk writes of many commits in one transaction — and
prints each seq only after ``db.write`` returned. The parent kills it with SIGKILL at random moments
(during start-up, right after it is ready, mid-run), then opens the database and checks that

* every acknowledged seq is in the log with exactly the content that was acknowledged, and an as-of
  snapshot at that seq shows it;
* the log is gap-free ``1..head`` (checked with raw LMDB as well as through drsg), every record
  decodes with a good checksum, timestamps never decrease, and no commit is torn: a multi-node commit
  holds all its mutations, a bulk write is all of its commits or none;
* the projection agrees with the log: live nodes and edges per plane (and per label) equal a replay
  of node/edge put/delete mutations from ``db.commits()``;
* the database accepts new writes.

The same database is reused across every kill. Reproduce a run with ``DRSG_CRASH_SEED=<seed>`` (the
seed is printed on failure); ``DRSG_CRASH_KILLS`` changes the number of kills (default 45).
"""

from __future__ import annotations

import importlib.util
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import lmdb
import pytest

import drsg
from drsg.kernel.errors import CorruptRecord
from drsg.store.log import Commit
from drsg.store.meta import META_STATE
from drsg.store.mutations import EdgeDelete, EdgePut, NodeDelete, NodePut, PlaneCreate

HELPER = Path(__file__).parents[1] / "support" / "crash_writer.py"
#: The meta key whose value starts with the head seq (u64, big-endian).
META_HEAD_KEY = META_STATE
_spec = importlib.util.spec_from_file_location("drsg_crash_crash_writer", HELPER)
assert _spec and _spec.loader
helpers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(helpers)


class CheckFailed(AssertionError):
    pass


def check(cond: bool, message: str) -> None:
    if not cond:
        raise CheckFailed(message)


# ---------------------------------------------------------------------------------------------------
# acknowledgements


@dataclass
class Ack:
    kind: str  # S, M, B or P (the parent's own write)
    seqs: list[int]
    keys: list[str]
    deleted: str | None = None
    run: int = -1


def parse_acks(lines: list[str], run: int) -> list[Ack]:
    acks: list[Ack] = []
    for line in lines:
        parts = line.split()
        if not parts or parts[0] in ("READY", "DONE"):
            continue
        check(parts[0] != "ERROR", f"run {run}: the writer failed: {line}")
        kind = parts[0]
        if kind == "S":
            acks.append(Ack("S", [int(parts[1])], [parts[2]], run=run))
        elif kind == "M":
            acks.append(Ack("M", [int(parts[1])], parts[2].split(","), None if parts[3] == "-" else parts[3], run))
        elif kind == "B":
            acks.append(Ack("B", [int(s) for s in parts[1].split(",")], parts[2].split(","), run=run))
        else:
            raise CheckFailed(f"run {run}: unexpected writer output {line!r}")
    return acks


# ---------------------------------------------------------------------------------------------------
# the checker: replays the log incrementally and holds the database to it


@dataclass
class Replay:
    """Graph state rebuilt from the log alone (node/edge put/delete, plane create)."""

    head: int = 0
    last_ts: int = 0
    planes: dict[str, int] = field(default_factory=dict)
    nodes: dict[int, dict[int, tuple[str | None, tuple[str, ...]]]] = field(default_factory=lambda: defaultdict(dict))
    edges: dict[int, set[int]] = field(default_factory=lambda: defaultdict(set))

    def apply(self, commit: Commit) -> None:
        check(commit.seq == self.head + 1, f"log gap: expected seq {self.head + 1}, got {commit.seq}")
        check(commit.ts >= self.last_ts, f"seq {commit.seq}: timestamp went backwards")
        for m in commit.mutations:
            if isinstance(m, PlaneCreate):
                self.planes[m.name] = m.plane
            elif isinstance(m, NodePut):
                self.nodes[m.plane][m.id] = (m.key, tuple(m.labels))
            elif isinstance(m, NodeDelete):
                check(m.id in self.nodes[m.plane], f"seq {commit.seq}: deletes absent node {m.id}")
                del self.nodes[m.plane][m.id]
            elif isinstance(m, EdgePut):
                self.edges[m.plane].add(m.id)
            elif isinstance(m, EdgeDelete):
                self.edges[m.plane].discard(m.id)
        self.head, self.last_ts = commit.seq, commit.ts

    def label_counts(self, plane: int) -> Counter[str]:
        return Counter(label for _, labels in self.nodes[plane].values() for label in labels)


def check_commit_shape(commit: Commit) -> None:
    """No torn commit: what the origin says the commit holds is exactly what it holds."""
    origin, muts = commit.origin, commit.mutations
    for m in muts:
        if isinstance(m, NodePut) and m.key is not None and origin.get("via") in ("crash", "crash-parent"):
            check(
                m.props == helpers.props_for(m.key),
                f"seq {commit.seq}: node {m.key} holds {m.props!r}, not its expected content",
            )
    kind = origin.get("kind")
    if kind == "S" or origin.get("via") == "crash-parent":
        check(len(muts) == 1 and isinstance(muts[0], NodePut), f"seq {commit.seq}: bad single commit {muts}")
        check(muts[0].key == origin["key"], f"seq {commit.seq}: holds {muts[0].key}, origin {origin['key']}")
    elif kind == "M":
        puts = [m.key for m in muts if isinstance(m, NodePut)]
        edges = [m for m in muts if isinstance(m, EdgePut)]
        deletes = [m for m in muts if isinstance(m, NodeDelete)]
        check(puts == origin["keys"], f"seq {commit.seq}: torn multi commit, nodes {puts} != {origin['keys']}")
        check(len(edges) == len(puts) - 1, f"seq {commit.seq}: torn multi commit, {len(edges)} edges")
        check(len(deletes) == (origin["del"] is not None), f"seq {commit.seq}: delete missing or extra")
    elif kind == "B":
        check(len(muts) == 1 and isinstance(muts[0], NodePut), f"seq {commit.seq}: bad bulk commit {muts}")
    elif kind == "plane":
        check(all(isinstance(m, PlaneCreate) for m in muts), f"seq {commit.seq}: bad plane commit")


def raw_log_head(path: Path) -> int:
    """Engine-independent look at the file: log keys are exactly 1..N and meta's head is N (or a
    staged write's mark says which commits past the head are its own)."""
    if not path.exists() or path.stat().st_size == 0:
        return 0
    env = lmdb.open(str(path), subdir=False, readonly=True, max_dbs=32)
    try:
        with env.begin() as txn:
            try:
                log_db = env.open_db(b"log", txn=txn, create=False)
                meta_db = env.open_db(b"meta", txn=txn, create=False)
            except lmdb.NotFoundError:
                return 0  # killed before the tables were created: nothing can have been acknowledged
            expected = 1
            for key in txn.cursor(db=log_db).iternext(values=False):
                check(int.from_bytes(key, "big") == expected, f"raw log: key {key.hex()} where {expected} due")
                expected += 1
            raw_head = txn.get(META_HEAD_KEY, db=meta_db)
            head = 0 if raw_head is None else int.from_bytes(raw_head[:8], "big")
            # An import killed before it finished leaves its staged commits past the head, under a
            # mark: [pid, process start, base head, top staged seq], four big-endian u64s.
            mark = txn.get(b"staged", db=meta_db)
            end = head if mark is None else int.from_bytes(mark[24:32], "big")
            if mark is not None:
                base = int.from_bytes(mark[16:24], "big")
                check(base == head, f"raw staged mark from head {base}, but meta's head is {head}")
            check(end == expected - 1, f"raw meta head {head} (staged to {end}) but the log ends at {expected - 1}")
            return head
    finally:
        env.close()


class Checker:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.replay = Replay()
        self.acks: list[Ack] = []
        self.acked_seqs: dict[int, Ack] = {}

    def verify(self, new_acks: list[Ack], *, full_scan: bool, rng: random.Random) -> None:
        raw_head = raw_log_head(self.path)
        with drsg.open(self.path) as db:
            # Opening may add only the bootstrap commit, and only to an empty log.
            check(
                db.head() == raw_head or (raw_head == 0 and db.head() == 1),
                f"the raw file says head {raw_head}, drsg says {db.head()}",
            )
            new = list(db.commits(self.replay.head + 1))
            region_start = self.replay.head + 1
            batches: Counter[tuple[int, int]] = Counter()
            for commit in new:
                check_commit_shape(commit)
                self.replay.apply(commit)
                if commit.origin.get("kind") == "B":
                    batches[(commit.origin["run"], commit.origin["batch"])] += 1
            check(self.replay.head == db.head(), f"db.commits() ends at {self.replay.head}, head {db.head()}")
            for batch, n in batches.items():
                check(n == helpers.BULK_SIZE, f"bulk write {batch} is torn: {n} of {helpers.BULK_SIZE} commits")
            by_seq = {c.seq: c for c in new}
            self._check_acks(db, new_acks, by_seq, region_start)
            sample = rng.sample(self.acks, min(200, len(self.acks)))  # older acks must stay intact
            self._check_asof(db, sample)
            self.acks += new_acks
            self._check_projection(db, full_scan)
            self._write_more(db)

    def _check_acks(self, db: drsg.store.database.Database, acks: list[Ack], by_seq: dict, start: int) -> None:
        for a in acks:
            for seq in a.seqs:
                check(seq >= start, f"run {a.run}: acknowledged seq {seq} collides with an earlier run's")
                check(seq not in self.acked_seqs, f"seq {seq} acknowledged twice")
                check(seq in by_seq, f"run {a.run}: acknowledged seq {seq} is missing (head {db.head()})")
                self.acked_seqs[seq] = a
                origin = by_seq[seq].origin
                check(origin.get("run") == a.run, f"seq {seq}: acknowledged by run {a.run}, log says {origin}")
            if a.kind == "B":
                check(len(a.seqs) == helpers.BULK_SIZE, f"bulk ack with {len(a.seqs)} seqs")
                check(a.seqs == list(range(a.seqs[0], a.seqs[0] + len(a.seqs))), f"bulk seqs {a.seqs}")
                for seq, key in zip(a.seqs, a.keys, strict=True):
                    check(by_seq[seq].mutations[0].key == key, f"seq {seq}: bulk commit without {key}")
            elif a.kind == "M":
                check(by_seq[a.seqs[0]].origin["keys"] == a.keys, f"seq {a.seqs[0]}: keys differ from ack")
            else:
                check(by_seq[a.seqs[0]].mutations[0].key == a.keys[0], f"seq {a.seqs[0]}: not {a.keys[0]}")
        self._check_asof(db, acks)

    def _check_asof(self, db: drsg.store.database.Database, acks: list[Ack]) -> None:
        plane = self.replay.planes.get(helpers.PLANE, 0)
        for a in acks:
            for seq, key in zip(a.seqs, a.keys if a.kind == "B" else [a.keys[0]] * len(a.seqs), strict=True):
                keys = a.keys if a.kind == "M" else [key]
                with db.snapshot(as_of=seq) as s:
                    for k in keys:
                        node = s.node_by_key(plane, k)
                        check(node is not None, f"as of seq {seq}: acknowledged node {k} is missing")
                        check(node.props == helpers.props_for(k), f"as of seq {seq}: node {k} has wrong content")
                    if a.deleted is not None:
                        check(s.node_by_key(plane, a.deleted) is None, f"as of {seq}: {a.deleted} not deleted")
                if a.kind != "B" and a.deleted is None:
                    with db.snapshot(as_of=seq - 1) as s:
                        check(s.node_by_key(plane, keys[0]) is None, f"as of {seq - 1}: {keys[0]} already there")

    def _check_projection(self, db: drsg.store.database.Database, full_scan: bool) -> None:
        total_nodes = total_edges = 0
        with db.snapshot() as s:
            names = {p.name: p.id for p in s.planes()}
            check(names == self.replay.planes, f"planes {names} but the log made {self.replay.planes}")
            for pid in names.values():
                live, edges = self.replay.nodes[pid], self.replay.edges[pid]
                check(
                    s.counts(pid) == (len(live), len(edges)),
                    f"plane {pid}: projection counts {s.counts(pid)}, replay ({len(live)}, {len(edges)})",
                )
                tally = s.tally(pid, b"L")
                check(tally == dict(self.replay.label_counts(pid)), f"plane {pid}: label tally {tally} differs")
                total_nodes, total_edges = total_nodes + len(live), total_edges + len(edges)
                if full_scan:
                    ids = {n.id: (n.key, tuple(n.labels)) for n in s.nodes(pid)}
                    check(ids == live, f"plane {pid}: projection's nodes differ from the log's replay")
                    edge_ids = {e.id for e in s.edges(pid)}
                    check(edge_ids == edges, f"plane {pid}: projection's edges differ from the log's replay")
                    for label, n in self.replay.label_counts(pid).items():
                        check(sum(1 for _ in s.node_ids_with_label(pid, label)) == n, f"label {label} walk")
        stats = db.stats()
        check((stats.nodes, stats.edges) == (total_nodes, total_edges), f"stats {stats} differ from replay")

    def _write_more(self, db: drsg.store.database.Database) -> None:
        """The database still accepts writes (the parent's write is acknowledged like any other)."""
        plane = db.write(lambda tx: tx.ensure_plane(helpers.PLANE)).value
        key = f"p{self.replay.head}"
        r = db.write(
            lambda tx: tx.create_node(plane, key, ["Doc"], helpers.props_for(key)),
            {"via": "crash-parent", "key": key, "run": -1},
        )
        check(r.seq == db.head() and r.seq > self.replay.head, f"new write got seq {r.seq}")
        for commit in db.commits(self.replay.head + 1):
            check_commit_shape(commit)
            self.replay.apply(commit)
        ack = Ack("P", [r.seq], [key], run=-1)
        self.acked_seqs[r.seq] = ack
        self.acks.append(ack)

    def final(self, rng: random.Random) -> None:
        """From scratch: decode every record, replay the whole log, check every ack and old states."""
        with drsg.open(self.path) as db:
            fresh = Replay()
            probes = sorted(rng.sample(range(1, db.head() + 1), min(5, db.head())))
            at_probe: dict[int, tuple[int, int]] = {}
            plane = self.replay.planes[helpers.PLANE]
            for commit in db.commits():
                check_commit_shape(commit)
                fresh.apply(commit)
                if commit.seq in probes:
                    at_probe[commit.seq] = (len(fresh.nodes[plane]), len(fresh.edges[plane]))
            check(fresh.head == db.head() == self.replay.head, "full replay head differs")
            for pid in set(fresh.nodes) | set(self.replay.nodes) | set(fresh.edges) | set(self.replay.edges):
                check(fresh.nodes[pid] == self.replay.nodes[pid], f"plane {pid}: full and incremental replays differ")
                check(fresh.edges[pid] == self.replay.edges[pid], f"plane {pid}: edge replays differ")
            check(set(self.acked_seqs) <= set(range(1, fresh.head + 1)), "an acknowledged seq is gone")
            self._check_asof(db, self.acks)
            self._check_projection(db, full_scan=True)
            for seq, (n, e) in at_probe.items():
                with db.snapshot(as_of=seq) as s:
                    got = (sum(1 for _ in s.nodes(plane)), sum(1 for _ in s.edges(plane)))
                check(got == (n, e), f"as of seq {seq}: projection has {got} nodes/edges, replay ({n}, {e})")


# ---------------------------------------------------------------------------------------------------
# the writer process and the kills


def run_and_kill(path: Path, run: int, rng: random.Random) -> tuple[list[str], str, float]:
    proc = subprocess.Popen(
        [sys.executable, str(HELPER), str(path), str(run), str(rng.randrange(2**32))],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    lines: list[str] = []
    ready = threading.Event()

    def read() -> None:
        assert proc.stdout is not None
        for raw in proc.stdout:
            if raw.endswith(b"\n"):  # a line cut by the kill was never acknowledged
                line = raw.decode().strip()
                lines.append(line)
                if line == "READY":
                    ready.set()
        ready.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    roll = rng.random()
    if roll < 0.15:
        delay = rng.uniform(0.0, 0.3)  # during start-up: import, open, bootstrap, plane creation
    else:
        check(ready.wait(30), f"run {run}: the writer never became ready")
        delay = rng.choice([rng.uniform(0, 0.03), rng.uniform(0.03, 0.5), rng.uniform(0.5, 1.0)])
    time.sleep(delay)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(30)
    reader.join(30)
    stderr = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    check(
        proc.returncode == -signal.SIGKILL,
        f"run {run}: the writer exited with {proc.returncode} before it was killed:\n{stderr[-3000:]}",
    )
    return lines, stderr, delay


@pytest.mark.slow
def test_acknowledged_commits_survive_sigkill(tmp_path: Path) -> None:
    seed = int(os.environ.get("DRSG_CRASH_SEED", random.randrange(2**32)))
    kills = int(os.environ.get("DRSG_CRASH_KILLS", "45"))
    rng = random.Random(seed)
    path = tmp_path / "crash.drsg"
    checker = Checker(path)
    started = time.monotonic()
    delays = []
    try:
        for run in range(kills):
            lines, _stderr, delay = run_and_kill(path, run, rng)
            delays.append(delay)
            checker.verify(parse_acks(lines, run), full_scan=run % 5 == 4, rng=rng)
        checker.final(rng)
    except CheckFailed as exc:
        raise CheckFailed(f"{exc}  [reproduce with DRSG_CRASH_SEED={seed}]") from None
    elapsed = time.monotonic() - started
    kinds = Counter(a.kind for a in checker.acks)
    print(
        f"\ncrash test: {kills} kills in {elapsed:.1f}s, head {checker.replay.head}, acks {dict(kinds)}, "
        f"delays {min(delays):.3f}..{max(delays):.3f}s, seed {seed}"
    )
    check(kinds["S"] > 0 and kinds["M"] > 0 and kinds["B"] > 0, f"some writer kinds never got through: {kinds}")


# ---------------------------------------------------------------------------------------------------
# the checker itself must be able to fail


def _small_db(path: Path) -> tuple[Checker, list[Ack]]:
    """A database written like the crash writer does, with its acks, checked clean once."""
    checker = Checker(path)
    with drsg.open(path) as db:
        plane = db.write(lambda tx: tx.ensure_plane(helpers.PLANE), {"via": "crash", "run": 0, "kind": "plane"})
        acks = []
        for i in range(5):
            key = f"r0-s0-{i}"
            r = db.write(
                lambda tx, key=key: tx.create_node(plane.value, key, ["Doc"], helpers.props_for(key)),
                {"via": "crash", "run": 0, "kind": "S", "key": key},
            )
            acks.append(Ack("S", [r.seq], [key], run=0))
    return checker, acks


def _raw_edit(path: Path, edit) -> None:  # type: ignore[no-untyped-def]
    env = lmdb.open(str(path), subdir=False, max_dbs=32)
    with env.begin(write=True) as txn:
        edit(txn, env.open_db(b"log", txn=txn), env.open_db(b"nodes", txn=txn))
    env.close()


def test_checker_catches_a_lost_acknowledged_commit(tmp_path: Path) -> None:
    checker, acks = _small_db(tmp_path / "a.drsg")
    acks.append(Ack("S", [acks[-1].seqs[0] + 5], ["r0-s0-99"], run=0))  # acknowledged, never written
    with pytest.raises(CheckFailed, match="missing"):
        checker.verify(acks, full_scan=True, rng=random.Random(0))


def test_checker_catches_a_log_gap(tmp_path: Path) -> None:
    checker, acks = _small_db(tmp_path / "b.drsg")
    _raw_edit(tmp_path / "b.drsg", lambda txn, log, _n: txn.delete((3).to_bytes(8, "big"), db=log))
    with pytest.raises((CheckFailed, CorruptRecord)):
        checker.verify(acks, full_scan=True, rng=random.Random(0))


def test_checker_catches_a_bad_checksum(tmp_path: Path) -> None:
    checker, acks = _small_db(tmp_path / "c.drsg")

    def flip(txn: lmdb.Transaction, log: object, _n: object) -> None:
        key = (4).to_bytes(8, "big")
        record = bytearray(txn.get(key, db=log))
        record[-3] ^= 0x20
        txn.put(key, bytes(record), db=log)

    _raw_edit(tmp_path / "c.drsg", flip)
    with pytest.raises(CorruptRecord, match="checksum"):
        checker.verify(acks, full_scan=True, rng=random.Random(0))


def test_checker_catches_a_projection_that_disagrees_with_the_log(tmp_path: Path) -> None:
    checker, acks = _small_db(tmp_path / "d.drsg")

    def drop_node(txn: lmdb.Transaction, _log: object, nodes: object) -> None:
        cur = txn.cursor(db=nodes)
        assert cur.last()
        cur.delete()

    _raw_edit(tmp_path / "d.drsg", drop_node)
    with pytest.raises(CheckFailed):
        checker.verify(acks, full_scan=True, rng=random.Random(0))


def test_checker_catches_wrong_content(tmp_path: Path) -> None:
    checker, acks = _small_db(tmp_path / "e.drsg")
    acks[2] = Ack("S", acks[2].seqs, ["r0-s0-4"], run=0)  # the ack says another node was written there
    with pytest.raises(CheckFailed):
        checker.verify(acks, full_scan=True, rng=random.Random(0))
