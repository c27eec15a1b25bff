"""`drsg snapshot`, `drsg restore`, `drsg compact` and `GET /snapshot` (store/backup.py,
workers/backup.py, store/compact.py): a round trip with sidecars; a restore refused into a target
where anything is, or from a truncated, altered or crafted snapshot, with nothing written; `kill -9`
during a snapshot or a restore leaves no half-made file; compact gives back free pages, and is
refused while another process has the file open. (Under writers and a subscriber:
test_snapshot_live.py.)"""

from __future__ import annotations

import io
import json
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

import drsg
from drsg.kernel.errors import DamagedDatabase
from drsg.store import backup
from drsg.store import compact as compact_module
from drsg.workers.backup import SUFFIXES, restore_snapshot, take_snapshot
from drsg.workers.keyword import KeywordIndex
from drsg.workers.vector import VectorIndex
from tests.support.cli import Drsg, seed_social
from tests.support.server import TOKEN, clean_env, cli, drsg_argv, start_server

pytestmark = pytest.mark.timeout(180)


def leftovers(folder: Path) -> list[str]:
    """What a failed or killed snapshot or restore may have left in ``folder``: its hidden temporaries."""
    marks = (".snapshot-", ".pins-", ".restore-")
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(".") and any(m in p.name for m in marks))


def canonical(drsg: Drsg, db: Path, plane: str, *extra: str) -> str:
    ran = drsg("export", "--canonical", "-p", plane, *extra, db=db)
    assert ran.code == 0, ran.err
    return ran.out


def seeded(drsg: Drsg, db_path: Path) -> None:
    seed_social(drsg)
    assert drsg("index", "keyword", "Person", "name", "-p", "social").code == 0
    assert drsg("node", "put", "cy", "-p", "social", "-l", "Person", "-P", "name=Cy Young").code == 0
    assert drsg("search", 'SEARCH (p:Person) ON name MATCHING "young" TOPK 3', "-p", "social").code == 0


def test_round_trip_with_sidecars(drsg: Drsg, db_path: Path, tmp_path: Path) -> None:
    seeded(drsg, db_path)
    ran = drsg("snapshot", str(tmp_path / "s.snap"), "--json")
    assert ran.code == 0, ran.err
    summary = json.loads(ran.out)
    head = json.loads(drsg("stats", "--json").out)["commit_seq"]
    assert summary["seq"] == head and summary["bytes"] == (tmp_path / "s.snap").stat().st_size
    assert [s["seq"] for s in summary["sidecars"]] == [head]  # the keyword index, saved by the search
    target = tmp_path / "restored.drsg"
    ran = drsg("restore", str(tmp_path / "s.snap"), db=target)
    assert ran.code == 0, ran.err
    assert f"at seq {head}" in ran.out
    for plane in ("startup", "social"):
        assert canonical(drsg, target, plane) == canonical(drsg, db_path, plane)
    assert drsg("check", db=target).code == 0
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("restored")) == [
        "restored.drsg", "restored.drsg-lock", "restored.drsg.bm25",
    ]  # fmt: skip
    assert leftovers(tmp_path) == []
    found = drsg("search", 'SEARCH (p:Person) ON name MATCHING "young" TOPK 3', "-p", "social", "--json", db=target)
    assert found.code == 0 and "cy" in found.out


def test_suffixes_are_the_workers(tmp_path: Path) -> None:
    assert (VectorIndex.suffix, KeywordIndex.suffix) == SUFFIXES


def test_an_existing_out_is_kept_unless_forced(drsg: Drsg, db_path: Path, tmp_path: Path) -> None:
    seed_social(drsg)
    out = tmp_path / "s.snap"
    out.write_bytes(b"precious")
    ran = drsg("snapshot", str(out))
    assert ran.code == 2 and ran.err.count("\n") == 1 and "--force" in ran.err
    assert out.read_bytes() == b"precious"
    assert drsg("snapshot", str(out), "--force").code == 0
    assert out.read_bytes().startswith(backup.MAGIC) and leftovers(tmp_path) == []
    before = db_path.read_bytes()
    ran = drsg("snapshot", str(db_path), "--force")  # never over the database itself
    assert ran.code == 2 and "the database's own file" in ran.err and db_path.read_bytes() == before


@pytest.mark.parametrize("taken", ["file", "lock", "sidecar"])
def test_restore_only_where_nothing_is(drsg: Drsg, tmp_path: Path, taken: str) -> None:
    seed_social(drsg)
    assert drsg("snapshot", str(tmp_path / "s.snap")).code == 0
    target = tmp_path / "t.drsg"
    occupied = {"file": target, "lock": Path(f"{target}-lock"), "sidecar": Path(f"{target}.hnsw")}[taken]
    if taken == "sidecar":
        occupied.mkdir()
    else:
        occupied.write_bytes(b"mine")
    ran = drsg("restore", str(tmp_path / "s.snap"), db=target)
    assert ran.code == 2, ran.err
    assert ran.err.startswith("error: cannot restore to") and ran.err.count("\n") == 1
    assert occupied.exists() and (taken == "sidecar" or occupied.read_bytes() == b"mine")
    assert (taken == "file") == target.exists() and leftovers(tmp_path) == []


def damaged_variants(data: bytes) -> dict[str, bytes]:
    flipped = bytearray(data)
    flipped[len(data) // 2] ^= 0x01  # one bit inside the database part
    return {
        "empty": b"",
        "cut in the header": data[:10],
        "cut in the database": data[: len(data) // 2],
        "cut before the checksum": data[:-20],
        "one bit flipped": bytes(flipped),
        "bytes after the end": data + b"x",
        "not a snapshot": b"SQLite format 3\x00" + data[16:],
    }


def test_a_truncated_or_altered_snapshot_is_refused_and_nothing_written(
    drsg: Drsg, db_path: Path, tmp_path: Path
) -> None:
    seeded(drsg, db_path)
    assert drsg("snapshot", str(tmp_path / "s.snap")).code == 0
    data = (tmp_path / "s.snap").read_bytes()
    for what, bad in damaged_variants(data).items():
        source = tmp_path / "bad.snap"
        source.write_bytes(bad)
        target = tmp_path / "t.drsg"
        ran = drsg("restore", str(source), db=target)
        assert ran.code == 1, (what, ran.err)
        assert ran.err.startswith(f"error: {source} is not a whole drsg snapshot") and ran.err.count("\n") == 1, what
        assert not target.exists() and not Path(f"{target}.bm25").exists(), what
        assert leftovers(tmp_path) == [], what


def crafted(parts: list[tuple[str, bytes]]) -> bytes:
    """A snapshot stream with the given parts and a valid checksum (what an attacker can make)."""
    out = io.BytesIO()
    sink = backup._Out(out, None)
    header = json.dumps({"seq": 1, "uuid": ""}).encode()
    sink.write(backup._HEADER.pack(backup.MAGIC, backup.FORMAT, 1, len(header)) + header)
    for name, data in parts:
        sink.part(name)
        sink.chunk(data)
        sink.chunk(b"")
    sink.write(b"E")
    sink.write(sink.digest.digest())
    return out.getvalue()


@pytest.mark.parametrize(
    "name",
    ["../escape", "sidecar/.hnsw/../../escape/x", "sidecar/.other/idx/CURRENT", "/etc/passwd", "sidecar/.bm25/x"],
)
def test_a_crafted_part_name_is_refused(tmp_path: Path, name: str) -> None:
    (tmp_path / "in").mkdir()
    target = tmp_path / "in" / "t.drsg"
    with pytest.raises(DamagedDatabase, match="unexpected part"):
        restore_snapshot(io.BytesIO(crafted([(name, b"x")])), "crafted", target)
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["in"]


def test_a_checksummed_snapshot_without_a_database_is_refused(tmp_path: Path) -> None:
    with pytest.raises(DamagedDatabase, match="no database"):
        restore_snapshot(io.BytesIO(crafted([])), "crafted", tmp_path / "t.drsg")
    with pytest.raises(DamagedDatabase, match="does not open"):
        restore_snapshot(io.BytesIO(crafted([("db", b"\0" * 8192)])), "crafted", tmp_path / "t.drsg")
    assert list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------------- kill -9


def sizable(db: Path, nodes: int = 30000) -> None:
    lines = (
        json.dumps({"labels": ["Doc"], "external_key": f"k{i}", "properties": {"body": "x" * 200, "i": i}})
        for i in range(nodes)
    )
    source = db.parent / "seed.jsonl"
    source.write_text("\n".join(lines) + "\n")
    ran = cli(db, "import", str(source), "--plane", "big", "--create-plane")
    assert ran.returncode == 0, ran.stderr


def killed_at_random(
    argv: list[str], runs: int, seconds: float, seed: int = 7, after: Callable[[], None] | None = None
) -> int:
    """Run ``argv`` ``runs`` times, each killed (SIGKILL) after a random part of ``seconds`` (how long
    a whole run took), then ``after()``; returns how many were killed before they finished. A run
    that finished first halves ``seconds``: a first run timed while the machine was busier can take
    several times a later one, and every kill would then come too late."""
    rng, killed = random.Random(seed), 0
    for _ in range(runs):
        proc = subprocess.Popen(argv, env=clean_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0, seconds))
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            killed += 1
        else:
            seconds /= 2
        proc.wait()
        if after is not None:
            after()
    return killed


def timed(argv: list[str]) -> float:
    started = time.perf_counter()
    ran = subprocess.run(argv, env=clean_env(), capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr
    return time.perf_counter() - started


def test_kill_during_snapshot_and_restore_leaves_nothing_half_made(tmp_path: Path) -> None:
    db = tmp_path / "g.drsg"
    sizable(db)
    out, target = tmp_path / "s.snap", tmp_path / "r.drsg"
    snapshot = [*drsg_argv(), "--db", str(db), "snapshot", str(out), "--force"]
    took = timed(snapshot)
    whole = out.read_bytes()
    out.unlink()
    assert killed_at_random(snapshot, 8, took * 1.2) >= 4
    if out.exists():  # a run that finished: the whole snapshot (same seq, same database)
        with out.open("rb") as fh:
            restore_snapshot(fh, "kept", tmp_path / "check.drsg")
        assert (tmp_path / "check.drsg").stat().st_size > 0
    assert timed(snapshot) and leftovers(tmp_path) == []  # the next run sweeps what killed ones left

    out.write_bytes(whole)
    restore = [*drsg_argv(), "--db", str(target), "restore", str(out)]
    took = timed(restore)
    expected = cli(target, "export", "--canonical", "-p", "big").stdout
    for leftover in (target, Path(f"{target}-lock")):
        leftover.unlink()

    def judge() -> None:  # a run that got there made the whole database, never a part of one
        if target.exists():
            assert cli(target, "check").returncode == 0
            assert cli(target, "export", "--canonical", "-p", "big").stdout == expected
            for leftover in (target, Path(f"{target}-lock")):
                leftover.unlink()

    assert killed_at_random(restore, 8, took * 1.2, seed=11, after=judge) >= 4
    assert timed(restore) and leftovers(tmp_path) == []


def test_kill_while_restore_reads_a_slow_stream(tmp_path: Path, drsg: Drsg) -> None:
    """Deterministic: the snapshot arrives through a pipe that stops half-way; kill -9 there."""
    seed_social(drsg)
    assert drsg("snapshot", str(tmp_path / "s.snap")).code == 0
    data = (tmp_path / "s.snap").read_bytes()
    target = tmp_path / "r.drsg"
    proc = subprocess.Popen(
        [*drsg_argv(), "--db", str(target), "restore", "-"],
        stdin=subprocess.PIPE,
        env=clean_env(),
        stderr=subprocess.PIPE,
    )
    assert proc.stdin is not None
    proc.stdin.write(data[: len(data) // 2])
    proc.stdin.flush()
    deadline = time.monotonic() + 30
    while not leftovers(tmp_path) and time.monotonic() < deadline:  # it is unpacking
        time.sleep(0.02)
    assert leftovers(tmp_path), "restore never started"
    proc.kill()
    proc.wait()
    assert not target.exists() and leftovers(tmp_path)  # a hidden staging folder stays; no database
    proc = subprocess.Popen(
        [*drsg_argv(), "--db", str(target), "restore", "-"],
        stdin=subprocess.PIPE,
        env=clean_env(),
        stderr=subprocess.PIPE,
    )
    _, err = proc.communicate(data, timeout=60)
    assert proc.returncode == 0, err
    assert cli(target, "check").returncode == 0 and leftovers(tmp_path) == []  # swept by the next restore


# --------------------------------------------------------------------------- compact


def grown(db: Path) -> None:
    """A file with many free pages: writes while a read pins the old pages, then the read ends."""
    with drsg.open(db) as handle:
        handle.write(lambda tx: tx.create_plane("bulk"))
        with handle.snapshot():
            for i in range(300):
                handle.write(lambda tx, i=i: tx.create_node(tx.plane("bulk"), f"n{i}", ["Doc"], {"body": "y" * 2000}))


def test_compact_gives_back_free_pages_and_keeps_every_record(drsg: Drsg, db_path: Path) -> None:
    seed_social(drsg)
    grown(db_path)
    before = {p: canonical(drsg, db_path, p) for p in ("startup", "social", "bulk")}
    ran = drsg("compact", "--json")
    assert ran.code == 0, ran.err
    done = json.loads(ran.out)
    assert done["before"] > done["after"] == db_path.stat().st_size
    assert done["reclaimed"] == done["before"] - done["after"] and done["reclaimed"] > done["after"]
    assert {p: canonical(drsg, db_path, p) for p in before} == before
    assert drsg("check").code == 0
    assert drsg("node", "put", "dan", "-p", "social").code == 0  # and it takes writes again


HOLDER = "import sys, drsg; db = drsg.open(sys.argv[1]); print('open', flush=True); sys.stdin.read()"


def test_compact_is_refused_while_another_process_has_the_file_open(drsg: Drsg, db_path: Path) -> None:
    seed_social(drsg)
    size = db_path.stat().st_size
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(db_path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=clean_env()
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"open\n"
        ran = drsg("compact")
        assert ran.code == 1 and "is open in another process" in ran.err and ran.err.count("\n") == 1
        assert db_path.stat().st_size == size and leftovers(db_path.parent) == []
    finally:
        holder.communicate(b"", timeout=30)
    assert drsg("compact").code == 0  # alone now


def test_an_opener_waits_for_compact_and_never_reads_a_stale_lock_file(drsg: Drsg, db_path: Path) -> None:
    """A process opening the file while compact holds it waits; once compact lets go, it is told
    it cannot open (one line) or opens the compacted file, never the old file's reader table."""
    seed_social(drsg)
    grown(db_path)
    expected = canonical(drsg, db_path, "social")
    with compact_module._alone(db_path):
        opener = subprocess.Popen(
            [*drsg_argv(), "--db", str(db_path), "export", "--canonical", "-p", "social"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=clean_env(),
        )  # fmt: skip
        time.sleep(1.0)
        assert opener.poll() is None  # waiting for the lock
    out, err = opener.communicate(timeout=60)
    waited = opener.returncode == 1 and err.count("\n") == 1 and "`drsg compact` rewrote it meanwhile" in err
    assert (opener.returncode, out) == (0, expected) or waited, err
    assert canonical(drsg, db_path, "social") == expected  # and the next one opens it afresh


# --------------------------------------------------------------------------- GET /snapshot


def test_get_snapshot_needs_a_token_and_restores(tmp_path: Path) -> None:
    db = tmp_path / "g.drsg"
    assert cli(db, "plane", "create", "social").returncode == 0
    server = start_server(db, tmp_path, name="snap")
    try:
        assert server.request("GET", "/snapshot").status == 401
        assert server.request("GET", "/snapshot", headers={"Authorization": "Bearer wrong"}).status == 401
        answer = server.request("GET", "/snapshot", headers={"Authorization": f"Bearer {TOKEN}"})
        assert answer.status == 200 and answer.headers["Content-Type"] == "application/octet-stream"
    finally:
        assert server.stop() == 0
    target = tmp_path / "r.drsg"
    restore_snapshot(io.BytesIO(answer.body), "the answer", target)
    assert cli(target, "check").returncode == 0
    assert "social" in cli(target, "plane", "list").stdout

    open_server = start_server(db, tmp_path, name="open", token=None)
    try:
        refused = open_server.request("GET", "/snapshot")
        assert refused.status == 403 and "DRSG_TOKEN" in refused.json()["error"]["message"]
    finally:
        assert open_server.stop() == 0


def test_what_an_import_had_staged_is_not_restored(tmp_path: Path) -> None:
    """A snapshot taken while an import stages its chunks past the head holds them and the import's
    mark; the restored database is the one at the snapshot's seq: without them, writable at once."""
    db_path, target = tmp_path / "g.drsg", tmp_path / "r.drsg"
    with drsg.open(db_path) as db:
        db.write(lambda tx: tx.create_plane("p"))
        with db.staged() as staged:
            staged.chunk(lambda tx: tx.create_node(tx.plane("p"), "staged", ["Doc"], {"n": 1}))
            with (tmp_path / "s.snap").open("wb") as fh:
                taken = take_snapshot(db, fh)
    assert taken.info.seq == 2
    with (tmp_path / "s.snap").open("rb") as fh:
        restore_snapshot(fh, "s.snap", target)
    put = subprocess.run(
        [*drsg_argv(), "--db", str(target), "node", "put", "late", "-p", "p"],
        env=clean_env(),
        capture_output=True,
        timeout=30,
    )  # another process than the importer's: it would wait for the import's mark while that process lives
    assert put.returncode == 0, put.stderr
    assert cli(target, "check").returncode == 0
    assert [json.loads(line)["external_key"] for line in cli(target, "export", "-p", "p").stdout.splitlines()] == [
        "late"
    ]


def test_a_snapshot_piped_into_a_restore(drsg: Drsg, db_path: Path, tmp_path: Path) -> None:
    seed_social(drsg)
    target = tmp_path / "piped.drsg"
    taking = subprocess.Popen(
        [*drsg_argv(), "--db", str(db_path), "snapshot", "-", "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clean_env(),
    )  # fmt: skip
    restoring = subprocess.run(
        [*drsg_argv(), "--db", str(target), "restore", "-"], stdin=taking.stdout, capture_output=True, env=clean_env()
    )
    _, summary = taking.communicate(timeout=60)
    assert taking.returncode == 0 and restoring.returncode == 0, restoring.stderr
    assert json.loads(summary)["seq"] == json.loads(drsg("stats", "--json").out)["commit_seq"]  # on stderr
    assert canonical(drsg, target, "social") == canonical(drsg, db_path, "social")
