"""Many processes, one database: LMDB serialises the writers, every reader sees every commit.

Process A (the test process) holds the database open, keeps reading in one thread and writing in
another, while process B (a ``python -c`` subprocess) writes with two threads of its own. Both start
with a small map, so the file grows several times under the two of them. We check that

* A sees each of B's commits (``db.head()``, ``db.commits()`` and a snapshot read of the node)
  within a bounded time of B acknowledging it, and B sees a commit A makes after B finished;
* seqs never collide: every acknowledged seq belongs to exactly one process, the log is gap-free
  and each commit's origin names the process that acknowledged it;
* the CLI (when installed) can write while another process holds the database open.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path

import pytest

import drsg

HELPER = Path(__file__).parents[1] / "support" / "crash_writer.py"
_spec = importlib.util.spec_from_file_location("drsg_mp_crash_writer", HELPER)
assert _spec and _spec.loader
helpers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(helpers)

B_WRITES = 1500  # per thread; two threads
VISIBLE_WITHIN = 5.0  # seconds: generous for a loaded CI machine; typical lag is a few ms

PROCESS_B = r"""
import json, os, sys, threading, time, importlib.util
spec = importlib.util.spec_from_file_location("h", sys.argv[3])
h = importlib.util.module_from_spec(spec); spec.loader.exec_module(h)
import drsg
db = drsg.open(sys.argv[1], map_size=1 << 20)
n = int(sys.argv[2])
plane = db.write(lambda tx: tx.ensure_plane("mp"), {"proc": "B"}).value
def say(obj):
    os.write(1, (json.dumps(obj) + "\n").encode())
say({"ready": True})
def writer(t):
    for i in range(n):
        key = f"b{t}-{i}"
        r = db.write(lambda tx: tx.create_node(plane, key, ["B"], h.props_for(key)), {"proc": "B"})
        say({"ack": r.seq, "key": key, "at": time.time()})
threads = [threading.Thread(target=writer, args=(t,)) for t in range(2)]
for t in threads: t.start()
for t in threads: t.join()
say({"done_writing": db.head()})
# Now wait for A's answer: a node A writes only after it has read our "done_writing" line.
deadline = time.time() + float(sys.argv[4])
while time.time() < deadline:
    with db.snapshot() as s:
        node = s.node_by_key(plane.id, "a-answer")
    if node is not None:
        # Read the log after the snapshot closed: a read inside another cannot adopt the map when A
        # grows the file meanwhile (Environment.adopt refuses it), which A's writer may do any time.
        seq = db.head()
        origins = [c.origin.get("proc") for c in db.commits()]
        say({"saw_answer": node.props["cid"], "head": seq, "a_commits": origins.count("A")})
        break
    time.sleep(0.002)
else:
    say({"timeout": True})
"""


def test_two_processes_write_and_see_each_other(tmp_path: Path) -> None:
    path = tmp_path / "mp.drsg"
    db = drsg.open(path, map_size=1 << 20)
    plane = db.write(lambda tx: tx.ensure_plane("mp"), {"proc": "A"}).value
    stop = threading.Event()
    errors: list[BaseException] = []
    a_acks: list[int] = []
    seen_at: dict[int, float] = {}  # seq -> when A's reader first saw it (B's commits)
    seen_keys: dict[str, float] = {}  # B's keys A's reader could read back through a snapshot

    def a_writer() -> None:
        i = 0
        try:
            while not stop.is_set():
                key = f"a-{i}"
                r = db.write(
                    lambda tx, key=key: tx.create_node(plane, key, ["A"], helpers.props_for(key)), {"proc": "A"}
                )
                a_acks.append(r.seq)
                i += 1
                time.sleep(0.001)
        except BaseException as exc:
            errors.append(exc)

    def a_reader() -> None:
        next_seq = 1
        try:
            while not stop.is_set():
                head = db.head()
                if head >= next_seq:
                    now = time.time()
                    b_keys = []
                    for commit in db.commits(next_seq, head):
                        assert commit.seq == next_seq, f"A's reader: gap at {next_seq}"
                        next_seq += 1
                        if commit.origin.get("proc") == "B":
                            seen_at[commit.seq] = now
                            b_keys += [m.key for m in commit.mutations if getattr(m, "key", None)]
                    with db.snapshot(as_of=head) as s:  # the same commits through the projection
                        for key in b_keys:
                            node = s.node_by_key(plane.id, key)
                            assert node is not None and node.props == helpers.props_for(key), key
                            seen_keys[key] = now
                else:
                    time.sleep(0.0005)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=a_writer), threading.Thread(target=a_reader)]
    for t in threads:
        t.start()
    proc = subprocess.Popen(
        [sys.executable, "-c", PROCESS_B, str(path), str(B_WRITES), str(HELPER), str(VISIBLE_WITHIN * 2)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    b_acks: dict[int, tuple[str, float]] = {}
    answer = None
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            msg = json.loads(line)
            if "ack" in msg:
                assert msg["ack"] not in b_acks, f"B got seq {msg['ack']} twice"
                b_acks[msg["ack"]] = (msg["key"], msg["at"])
            elif "done_writing" in msg:
                # Answer B only once A has seen all of B's commits, so B's wait measures B's reading.
                deadline = time.time() + VISIBLE_WITHIN
                while not set(b_acks) <= set(seen_at) and time.time() < deadline and not errors:
                    time.sleep(0.001)
                answer = db.write(
                    lambda tx: tx.create_node(plane, "a-answer", ["A"], helpers.props_for("a-answer")),
                    {"proc": "A"},
                )
                answered_at = time.time()
                a_before_answer = sum(1 for seq in list(a_acks) if seq < answer.seq)
            elif "saw_answer" in msg:
                b_saw = msg
                b_lag = time.time() - answered_at
            elif "timeout" in msg:
                pytest.fail("process B never saw the commit process A made after B finished writing")
        proc.wait(60)
        assert proc.returncode == 0, proc.stderr.read() if proc.stderr else ""
        # A's reader catches up with the last of B's commits within the bound.
        deadline = time.time() + VISIBLE_WITHIN
        while not set(b_acks) <= set(seen_at) and time.time() < deadline and not errors:
            time.sleep(0.001)
    finally:
        stop.set()
        for t in threads:
            t.join(30)
        if proc.poll() is None:
            proc.kill()
    assert not errors, "".join(traceback.format_exception(errors[0]))
    assert answer is not None
    assert b_saw["saw_answer"] == "a-answer" and b_saw["head"] >= answer.seq
    # B read A's commits out of the log too: at least every one A made before its answer, and the answer.
    assert b_saw["a_commits"] >= a_before_answer + 1, (b_saw, a_before_answer)

    # A saw every one of B's commits, through the log and through the projection, in bounded time.
    assert len(b_acks) == 2 * B_WRITES
    missing = sorted(set(b_acks) - set(seen_at))
    assert not missing, f"A never saw B's commits {missing[:10]}…"
    assert {key for key, _ in b_acks.values()} <= set(seen_keys)
    lags = sorted(max(0.0, seen_at[seq] - at) for seq, (_, at) in b_acks.items())
    assert lags[-1] < VISIBLE_WITHIN, f"A saw one of B's commits {lags[-1]:.3f}s after B's ack"

    # No collisions: each seq acknowledged once, by the process whose origin the log records.
    a_set, b_set = set(a_acks) | {answer.seq}, set(b_acks)
    assert not a_set & b_set, f"seqs acknowledged by both processes: {sorted(a_set & b_set)[:10]}"
    commits = list(db.commits())
    assert [c.seq for c in commits] == list(range(1, db.head() + 1))
    for c in commits:
        if c.seq in a_set:
            assert c.origin.get("proc") == "A", c
        elif c.seq in b_set:
            assert c.origin.get("proc") == "B", c
    # The two writers really were concurrent: A committed between B's first and last commits.
    assert any(min(b_set) < s < max(b_set) for s in a_set)
    with db.snapshot() as s:
        assert s.counts(plane.id)[0] == len(a_set) + len(b_set)
    assert db.env.map_size() > 1 << 20  # the map grew while both processes had it open
    db.close()
    print(
        f"\nmultiprocess: A {len(a_set)} commits, B {len(b_set)}, A saw B's commits after "
        f"p50 {lags[len(lags) // 2] * 1000:.1f} ms / max {lags[-1] * 1000:.1f} ms; "
        f"B saw A's answer after {b_lag * 1000:.1f} ms"
    )


GROW = r"""
import sys, importlib.util
spec = importlib.util.spec_from_file_location("h", sys.argv[2])
h = importlib.util.module_from_spec(spec); spec.loader.exec_module(h)
import drsg
db = drsg.open(sys.argv[1], map_size=1 << 20)
plane = db.plane("startup")
def fn(tx):
    for i in range(3000):
        key = f"g{i}"
        tx.create_node(plane, key, ["Grow"], {**h.props_for(key), "pad": h.expected_text(key) * 4})
        tx.commit_point()
r = db.write(fn)
print(r.seq, db.env.map_size())
"""


def test_map_grown_by_another_process_leaves_open_snapshots_usable(tmp_path: Path) -> None:
    """Another process grows the map past ours while one thread holds a snapshot and another begins
    a read: adopting the new size must not pull the open snapshot out from under its thread."""
    path = tmp_path / "grow.drsg"
    db = drsg.open(path, map_size=1 << 20)
    plane = db.plane("startup")
    first = db.write(lambda tx: tx.create_node(plane, "first", ["A"], helpers.props_for("first"))).value
    result: dict[str, object] = {}
    with db.snapshot() as snap:
        grown = subprocess.run(
            [sys.executable, "-c", GROW, str(path), str(HELPER)], capture_output=True, text=True, timeout=120
        )
        assert grown.returncode == 0, grown.stderr
        b_head, b_map = map(int, grown.stdout.split())
        assert b_map > 1 << 20 and db.env.map_size() == 1 << 20

        def other_thread() -> None:
            try:
                result["head"] = db.head()  # meets MDB_MAP_RESIZED and adopts the new size
                with db.snapshot() as s:
                    node = s.node_by_key(plane.id, "g2999")
                    result["node"] = node.props["cid"] if node else None
            except BaseException as exc:
                result["error"] = exc

        t = threading.Thread(target=other_thread)
        t.start()
        t.join(0.5)  # it may wait for our snapshot to close; it must not invalidate it
        try:
            still = snap.node(plane.id, first.id)
        except Exception as exc:
            raise AssertionError(f"an open snapshot broke when another thread adopted the grown map: {exc!r}") from exc
        assert still is not None and still.key == "first" and snap.at == 2
    t.join(30)
    assert not t.is_alive(), "the other thread never finished its read after the snapshot closed"
    assert "error" not in result, "".join(traceback.format_exception(result["error"]))  # type: ignore[arg-type]
    assert result["head"] == b_head and result["node"] == "g2999"
    r = db.write(lambda tx: tx.create_node(plane, "after", ["A"], helpers.props_for("after")))
    assert r.seq == b_head + 1
    db.close()


# ---------------------------------------------------------------------------------------------------
# the CLI writes while another process holds the database open

DRSG_CLI = shutil.which("drsg", path=str(Path(sys.executable).parent))

HOLDER = r"""
import json, os, sys, time
import drsg
db = drsg.open(sys.argv[1])
start = db.head()
os.write(1, (json.dumps({"ready": start}) + "\n").encode())
deadline = time.time() + float(sys.argv[2])
while time.time() < deadline:
    with db.snapshot() as s:
        names = [p.name for p in s.planes()]
        nodes = [n.key for n in s.nodes(s.plane("startup").id)]
    if "x" in names and len(nodes) >= 3:
        os.write(1, (json.dumps({"head": db.head(), "planes": names, "nodes": nodes}) + "\n").encode())
        break
    time.sleep(0.005)
else:
    os.write(1, b'{"timeout": true}\n')
"""


@pytest.mark.skipif(DRSG_CLI is None, reason="the drsg command is not installed")
def test_cli_writes_while_another_process_holds_the_database(tmp_path: Path) -> None:
    path = tmp_path / "cli.drsg"
    drsg.open(path).close()
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path), "30"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None
        ready = json.loads(holder.stdout.readline())
        assert "ready" in ready, holder.stderr.read() if holder.stderr else ""
        run = [str(DRSG_CLI), "--db", str(path)]
        out = subprocess.run([*run, "plane", "create", "x"], capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        lines = [
            json.dumps({"labels": ["Doc"], "external_key": key, "properties": {"text": helpers.expected_text(key)}})
            for key in ("c1", "c2", "c3")
        ]
        lines.append(json.dumps({"src_key": "c1", "dst_key": "c2", "type": "NEXT"}))
        data = tmp_path / "in.jsonl"
        data.write_text("\n".join(lines) + "\n")
        out = subprocess.run(
            [*run, "import", str(data), "--plane", "startup"], capture_output=True, text=True, timeout=60
        )
        assert out.returncode == 0, out.stderr
        seen = json.loads(holder.stdout.readline())
        assert "timeout" not in seen, "the holding process never saw the CLI's commits"
        assert "x" in seen["planes"] and {"c1", "c2", "c3"} <= set(seen["nodes"])
        assert seen["head"] > ready["ready"]
        holder.wait(30)
        assert holder.returncode == 0, holder.stderr.read() if holder.stderr else ""
    finally:
        if holder.poll() is None:
            holder.kill()
    with drsg.open(path) as db:
        commits = list(db.commits())
        assert [c.seq for c in commits] == list(range(1, db.head() + 1))
        with db.snapshot() as s:
            startup = s.plane("startup")
            assert [n.key for n in s.nodes(startup.id)] == ["c1", "c2", "c3"]
            assert len(list(s.neighbors(startup.id, s.node_by_key(startup.id, "c1").id))) == 1
