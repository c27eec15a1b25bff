"""`kill -9` of `drsg import` at any point leaves all of the file or none of it (#14).

The import is staged (store/staging.py): chunks of lines committed past the head, made visible by
one last transaction. Here the real command is killed at 24 points spread over its whole run —
before staging starts, between and inside chunks, around the final commit, after it — and after
each kill the database must read exactly as before the import or exactly as after a complete one,
pass `drsg check`, and take the next write (which removes a dead import's staged commits). Every
fourth time, that next write is killed too, while it removes them. Both must have happened at
least a few times, or the kills did not land where they should.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import drsg
from drsg.kernel.settings import REGISTRY
from drsg.store import importahead
from drsg.store.environment import Environment, EnvOptions
from drsg.store.jsonl import TXN_BYTES, export_lines, import_jsonl
from drsg.store.meta import StageMark, read_mark
from drsg.store.staging import settle
from drsg.store.verify import verify

KILLS = 24
EXE = Path(sys.executable).parent / "drsg"
# 400 lines a commit, about three commits a transaction: kills land between and inside transactions.
ENV = {**os.environ, "DRSG_STORE_IMPORT_COMMIT_LINES": "400", "DRSG_STORE_IMPORT_TXN_BYTES": "64K"}


def _source(path: Path) -> Path:
    with path.open("w") as out:
        for i in range(6_000):
            out.write(json.dumps({"labels": ["W"], "external_key": f"w{i}", "properties": {"n": i}}) + "\n")
        for i in range(5_999):
            out.write(json.dumps({"src_key": f"w{i}", "dst_key": f"w{i + 1}", "type": "NEXT"}) + "\n")
        out.write(json.dumps({"src_key": "old0", "dst_key": "w0", "type": "NEXT"}) + "\n")
    return path


def _state(path: Path) -> tuple[int, list[str], tuple[int, int]]:
    with drsg.open(path, readonly=True) as db:
        stats = db.stats()
        return db.head(), list(export_lines(db, "p")), (stats.nodes, stats.edges)


def _staged(path: Path) -> bool:
    return _staged_commits(path) > 0


def _staged_commits(path: Path) -> int:
    """How many commits a running (or dead) import has staged past the head."""
    try:
        with drsg.open(path, readonly=True) as db, db.env.read() as txn:
            mark = read_mark(txn, db.env.dbs["meta"])
            return mark.top - mark.base if mark is not None else 0
    except drsg.DrsgError:
        return 0  # the file is being grown or replaced this instant: ask again


def _wait_gone(path: Path) -> None:
    """The command's supervised child dies with its parent (PR_SET_PDEATHSIG), a moment later."""
    needle = str(path).encode()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        alive = False
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    alive = alive or needle in (entry / "cmdline").read_bytes()
                except OSError:
                    continue
        if not alive:
            return
        time.sleep(0.02)
    raise AssertionError("a killed drsg process is still running")


def _kill_after(cmd: list[str], delay: float, path: Path) -> None:
    proc = subprocess.Popen(cmd, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    time.sleep(delay)
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)
    _wait_gone(path)


def _kill_when_staged(cmd: list[str], commits: int, path: Path) -> None:
    """Kill the import once it has staged ``commits`` commits: a point inside staging however fast
    or slow the machine is today (a kill timed by a clock lands after the end on a quiet machine)."""
    proc = subprocess.Popen(cmd, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    while proc.poll() is None and _staged_commits(path) < commits:
        time.sleep(0.001)
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)
    _wait_gone(path)


def _head(path: Path) -> int:
    try:
        with drsg.open(path, readonly=True) as db:
            return db.head()
    except drsg.DrsgError:
        return -1  # the file is being grown or replaced this instant: ask again


def _kill_when_landed(cmd: list[str], head: int, path: Path) -> None:
    """Kill the import once its last transaction has moved the head past ``head``: a kill after the
    end however slow the machine is today (one timed by a clock may still land before it)."""
    proc = subprocess.Popen(cmd, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    while proc.poll() is None and _head(path) <= head:
        time.sleep(0.001)
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)
    _wait_gone(path)


@pytest.mark.slow
def test_a_killed_import_leaves_all_of_the_file_or_none(tmp_path: Path) -> None:
    source = _source(tmp_path / "words.jsonl")
    path = tmp_path / "g.drsg"
    with drsg.open(path) as db:  # something already there, which the import's edge reaches
        db.write(lambda tx: tx.create_node(tx.ensure_plane("p"), "old0", ["Old"], {"n": -1}))
    pristine = tmp_path / "before.drsg"
    shutil.copy(path, pristine)
    before = _state(path)

    complete = tmp_path / "complete.drsg"
    shutil.copy(path, complete)
    # A complete run, watched: when do its first and last chunks land?
    started = time.monotonic()
    proc = subprocess.Popen(
        [str(EXE), "--db", str(complete), "import", str(source), "--plane", "p"], env=ENV, stderr=subprocess.PIPE
    )
    first = last = None
    while proc.poll() is None:
        if _staged(complete):
            first = first or time.monotonic() - started
            last = time.monotonic() - started
        time.sleep(0.002)
    assert proc.returncode == 0 and first is not None and last is not None, proc.stderr.read() if proc.stderr else ""
    took = time.monotonic() - started
    after = _state(complete)
    assert after[2] == (6_001, 6_000) and after[0] > before[0] + 20  # many commits: many chunks to land in
    # Most kills while chunks are being staged, each once a given number of commits has been staged
    # (the last of them as the head moves); the first few by the clock, before staging starts and
    # after the end; the last once the head has moved.
    chunks = after[0] - before[0]
    points: list[float | int | None] = [first * 0.5, first * 0.9]
    points += [max(1, round(chunks * i / (KILLS - 5))) for i in range(KILLS - 4)]
    points += [last + (took - last) * 0.5, None]

    outcomes = {"none": 0, "none, staged commits left": 0, "all": 0, "undo killed": 0}
    for kill, point in enumerate(points):
        command = [str(EXE), "--db", str(path), "import", str(source), "--plane", "p"]
        if point is None:
            _kill_when_landed(command, before[0], path)
        elif isinstance(point, int):
            _kill_when_staged(command, point, path)
        else:
            _kill_after(command, point, path)
        delay = point
        staged = _staged(path)
        state = _state(path)
        assert state in (before, after), f"kill {kill} at {delay} left a partial import: {state[2]}"
        assert subprocess.run([str(EXE), "--db", str(path), "check"], env=ENV, capture_output=True).returncode == 0
        if state == after:
            outcomes["all"] += 1
            shutil.copy(pristine, path)  # start the next kill from before the import again
            before = _state(path)
            continue
        outcomes["none, staged commits left" if staged else "none"] += 1
        if staged and kill % 4 == 1:  # kill the write that removes them, too
            _kill_after([str(EXE), "--db", str(path), "plane", "create", f"q{kill}"], 0.45, path)
            outcomes["undo killed"] += 1
            landed = _state(path)  # the import's content as before; the head moved by the plane's commit at most
            assert landed[1:] == before[1:] and landed[0] in (before[0], before[0] + 1), (landed[0], before[0])
        with drsg.open(path) as db:
            db.write(lambda tx: None)  # any write removes what the dead import staged
            assert db.head() >= before[0]  # (a killed `plane create` may have landed)
            with db.env.read() as txn:
                assert read_mark(txn, db.env.dbs["meta"]) is None
                assert txn.get((db.head() + 1).to_bytes(8, "big"), db=db.env.dbs["log"]) is None
        before = _state(path)  # (a landed `plane create` is part of "before" from now on)
    print(f"\nimport kills: {outcomes} (import took {took:.2f}s)")
    assert outcomes["none, staged commits left"] >= 8, outcomes
    assert outcomes["all"] >= 1, outcomes

    # And the import still goes through on the file that was killed so often.
    with drsg.open(path) as db:
        report = import_jsonl(db, source, "p")
        assert report.nodes_created == 6_000 and report.edges_created == 6_000
    assert _state(path)[2] == after[2]


def test_a_staged_import_is_invisible_until_it_finishes(db_path: Path, tmp_path: Path) -> None:
    """In-process: while chunks are staged, readers (and the log) see none of them; an error removes them."""
    source = _source(tmp_path / "words.jsonl")
    with drsg.open(db_path) as db:
        db.write(lambda tx: tx.create_node(tx.ensure_plane("p"), "old0", [], {}))
        head = db.head()
        seen: list[tuple[int, int, int]] = []

        def peek(done: int) -> None:
            with db.read() as reader:
                snap = reader.snapshot()
                staged = sum(1 for _ in reader.commits(head + 1))
                seen.append((reader.head, sum(1 for _ in snap.nodes(snap.plane("p").id)), staged))

        import_jsonl(db, source, "p", commit_lines=1_000, progress=peek)
        assert len(seen) > 5 and all(s == (head, 1, 0) for s in seen[:-1]), seen
        imported = db.head()
        assert imported > head + 5

        with pytest.raises(drsg.UsageError):  # a bad last line: everything staged before it goes
            bad = tmp_path / "bad.jsonl"
            bad.write_text(source.read_text().replace("w", "x") + "{not json\n")
            import_jsonl(db, bad, "p", commit_lines=1_000)
        assert db.head() == imported
        with db.env.read() as txn:
            assert read_mark(txn, db.env.dbs["meta"]) is None
            cur = txn.cursor(db=db.env.dbs["log"])
            assert cur.last() and int.from_bytes(cur.key(), "big") == db.head()


@pytest.mark.parametrize("ahead", [False, True], ids=["in-transaction", "made-ahead"])
def test_several_commits_share_each_staged_transaction(
    db_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ahead: bool
) -> None:
    """A commit per ``commit_lines`` lines, as many to an LMDB transaction as ``txn_bytes`` of the file
    hold: the mark (what other processes see staged) moves three commits at a time, while progress is
    reported after every commit and the log holds one commit per 500 lines. Commits made ahead of
    their transaction (store/importahead.py) are reported as they are made, and the mark follows as
    the writer thread commits them: never ahead of them, at most three at a time."""
    monkeypatch.setattr(importahead, "_enabled", ahead)
    lines = tmp_path / "nodes.jsonl"
    lines.write_text("".join(json.dumps({"external_key": f"k{i:05}"}) + "\n" for i in range(6_000)))
    line_bytes = len(json.dumps({"external_key": "k00000"})) + 1  # every line is as long
    with drsg.open(db_path) as db:
        db.write(lambda tx: tx.ensure_plane("p"))
        base = db.head()
        staged: list[int] = []

        def peek(read: int) -> None:
            with db.env.read() as txn:  # only what committed transactions wrote
                mark = read_mark(txn, db.env.dbs["meta"])
                assert mark is not None and mark.base == base
                staged.append(mark.top - base)

        report = import_jsonl(db, lines, "p", commit_lines=500, txn_bytes=3 * 500 * line_bytes, progress=peek)
        assert report.commits == 12 and report.first_seq == base + 1
        if ahead:  # a transaction ends early too, when the writer has nothing to write
            marks = sorted(set(staged))
            assert staged == sorted(staged) and all(n <= made for made, n in enumerate(staged))
            assert all(0 < b - a <= 3 for a, b in itertools.pairwise(marks))
        else:
            assert staged == [0, 0, 0, 3, 3, 3, 6, 6, 6, 9, 9, 9]  # one report a commit, a transaction per three
        with db.read() as reader:
            assert [len(c.mutations) for c in reader.commits(base + 1)] == [500] * 12
        with db.env.read() as txn:
            assert read_mark(txn, db.env.dbs["meta"]) is None


def test_the_import_default_is_the_settings() -> None:
    """``import_jsonl``'s own default is the setting's, which the library and the CLI pass."""
    assert {s.name: s.default for s in REGISTRY}["store.import_txn_bytes"] == TXN_BYTES


def test_another_process_waits_for_a_live_import(db_path: Path, tmp_path: Path) -> None:
    """A writer in another process sees the mark of a live import and waits for it to finish."""
    with drsg.open(db_path) as db:
        db.write(lambda tx: tx.ensure_plane("p"))
    lines = tmp_path / "nodes.jsonl"
    lines.write_text("".join(json.dumps({"external_key": f"k{i}"}) + "\n" for i in range(30_000)))
    importer = subprocess.Popen(
        [str(EXE), "--db", str(db_path), "import", str(lines), "--plane", "p"], env=ENV, stderr=subprocess.PIPE
    )
    deadline = time.monotonic() + 30
    while not _staged(db_path):  # wait until it is part-way through
        assert time.monotonic() < deadline and importer.poll() is None, "the import never staged a chunk"
        time.sleep(0.005)
    wrote = subprocess.run(
        [str(EXE), "--db", str(db_path), "node", "put", "after", "--plane", "p"], env=ENV, capture_output=True
    )
    assert wrote.returncode == 0, wrote.stderr
    assert importer.wait(60) == 0
    with drsg.open(db_path, readonly=True) as db, db.snapshot() as snap:
        plane = snap.plane("p").id
        after, first = snap.node_by_key(plane, "after"), snap.node_by_key(plane, "k0")
        assert after is not None and first is not None and after.id > first.id  # it waited: written later


def test_a_writer_that_found_a_dead_import_leaves_the_next_live_one_alone(db_path: Path) -> None:
    """A writer decides a mark's owner is dead outside the transaction that undoes its commits; by
    then that import may have finished and a live one claimed a new mark. Undoing must touch only the
    dead owner's write: removing the live import's newest staged commit left a seq with no record
    under the head it then published (CI met it in test_feed_load: "log record 20697 ... gap")."""
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    with drsg.open(db_path) as db:
        db.write(lambda tx: tx.create_plane("p"))
        found = StageMark(dead.pid, 1, db.head(), db.head() + 2)  # what the writer read, then let go
        with db.staged() as stage:
            for n in range(3):
                stage.chunk(lambda tx, n=n: tx.create_node(tx.plane("p"), f"s{n}", ["Doc"], {"n": n}))
            settle(db.env, found)  # its owner is gone: the writer would undo what it left
            staged = stage.top
            stage.finish()
        assert db.head() == staged
        with db.snapshot() as snap:
            assert [snap.node_by_key(snap.plane("p").id, f"s{n}") is not None for n in range(3)] == [True] * 3
    report = verify(Environment(db_path, EnvOptions(readonly=True, create=False)))
    assert report.ok, report.problems
