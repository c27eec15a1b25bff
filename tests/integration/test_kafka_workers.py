"""`drsg workers`: index workers of a Kafka log as a consumer group (workers/index_group.py).

Two worker processes share six planes' indexes (a keyword and a vector index each) over four
shards while a writer commits creates, updates and deletes: one worker is killed with ``kill -9``
at random points and restarted, the other is paused past its session timeout (its shards move;
when it wakes, its saves must be refused) and a third member joins and leaves. Then:

- every index's lineage (in its sidecar's manifest) is one unbroken chain of saves from 0 to the
  log's head, and every save any worker logged is a link of it: no commit lost, none applied twice;
- every index, loaded from the shared folder, holds what an index built from scratch over the
  same log holds.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import drsg
from drsg.kernel.values import Vector
from drsg.store.kafka.database import KafkaDatabase
from drsg.store.transaction import WriteTx
from drsg.workers.base import IndexWorker
from drsg.workers.manager import IndexSet
from tests.bench.common import text_lines
from tests.support.kafka_broker import Broker
from tests.support.server import start_server
from tests.support.waiting import wait_until

pytestmark = pytest.mark.timeout(300)
PLANES = [f"p{i}" for i in range(6)]
SHARDS = 4
DIM = 8
COMMITS = 3_000  # at most: the writer goes on until the members have been through everything
SESSION = 3.0  # seconds: the group gives a silent member's shards away after this
QUERIES = ["the", "module", "return value", "file name", "error", "python"]


class Member:
    """One `drsg workers` process on its own node copy, logging JSON lines to a file of its own."""

    runs = 0

    def __init__(self, root: Path, name: str, url: str, shared: Path) -> None:
        Member.runs += 1
        self.log = root / f"{name}-{Member.runs}.log"
        env = {**os.environ, "DRSG_LOG_URL": url, "DRSG_LOGGING_FORMAT": "json"}
        argv = [sys.executable, "-m", "drsg.surfaces.cli", "--db", str(root / f"{name}.drsg"), "-v", "workers"]
        argv += ["--index-dir", str(shared), "--shards", str(SHARDS), "--save-every", "0.3"]
        argv += ["--session-timeout", str(SESSION)]
        with self.log.open("w") as out:
            # a session of its own: a pause stops the whole group (`drsg` runs its command in a child)
            self.proc = subprocess.Popen(
                argv, env=env, stdout=subprocess.DEVNULL, stderr=out, start_new_session=True
            )  # fmt: skip

    def events(self, name: str) -> list[dict[str, Any]]:
        return [e for e in events_in(self.log) if e.get("event") == name]

    def owns(self) -> bool:
        assigned = self.events("shards_assigned")
        return bool(assigned and assigned[-1]["shards"])

    def pause(self, sig: signal.Signals) -> None:
        """SIGSTOP or SIGCONT to the command and its child, as a machine's pause would."""
        os.killpg(self.proc.pid, sig)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.pause(signal.SIGCONT)
            self.proc.terminate()
        assert self.proc.wait(30) == 0, self.log.read_text()[-3000:]

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(10)


def events_in(path: Path) -> Iterator[dict[str, Any]]:
    for line in path.read_text().splitlines():
        if line.startswith("{"):
            yield json.loads(line)


def manifests(shared: Path) -> dict[str, dict[str, Any]]:
    """The manifest in force of every sidecar in the shared folder, by sidecar name."""
    found = {}
    for current in shared.glob("*/*/CURRENT"):
        version = current.parent / current.read_text().strip()
        found[current.parent.name] = json.loads((version / "manifest.json").read_text())
    return found


def vector(rng: random.Random) -> Vector:
    return Vector.of(np.array([rng.uniform(-1, 1) for _ in range(DIM)], dtype=np.float32))


def setup(tx: WriteTx) -> None:
    for name in PLANES:
        plane = tx.ensure_plane(name)
        tx.declare_index(plane, "keyword", "Doc", "text", {"language": "english"})
        tx.declare_index(plane, "vector", "Doc", "vec", {"metric": "cosine"})


def contents(worker: IndexWorker, probes: list[Any]) -> tuple[set[int], list[dict[int, float]]]:
    """A worker's documents and its complete rankings (every document) for some probes."""
    everything = max(1, len(worker))
    rankings = []
    for probe in probes:
        ids, scores = worker.search_arrays(probe, everything)
        rankings.append({int(i): round(float(s), 4) for i, s in zip(ids, scores, strict=True)})
    return worker.node_ids(), rankings


def test_workers_killed_paused_and_rebalanced_lose_nothing_and_apply_nothing_twice(
    tmp_path: Path, kafka_broker: Broker
) -> None:
    url = kafka_broker.url(f"workers-{uuid.uuid4().hex[:12]}")
    seed = random.randrange(1 << 30)
    chance = random.Random(seed)
    print("seed", seed)
    shared = tmp_path / "shared"
    lines = text_lines(COMMITS)
    writer = drsg.open(tmp_path / "writer.drsg", log=url)
    assert isinstance(writer, KafkaDatabase)
    writer.write(setup)
    done, calm = threading.Event(), threading.Event()
    failures: list[BaseException] = []

    def write() -> None:
        try:
            for i, line in enumerate(lines):
                if calm.is_set():
                    break
                plane, key = chance.choice(PLANES), f"d{chance.randrange(max(1, i))}"
                with writer.snapshot() as snap:
                    found = snap.find_plane(plane)
                    exists = found is not None and snap.node_by_key(found.id, key) is not None
                roll = chance.random()
                if roll < 0.15 and exists:
                    update = {"text": line, "vec": vector(chance)}
                    writer.write(lambda tx, p=plane, k=key, u=update: tx.update_node(tx.plane(p), f"@{k}", u))
                elif roll < 0.25 and exists:
                    writer.write(lambda tx, p=plane, k=key: tx.delete_node(tx.plane(p), f"@{k}"))
                else:
                    props = {"text": line, "vec": vector(chance)}
                    writer.write(lambda tx, p=plane, i=i, d=props: tx.create_node(tx.plane(p), f"d{i}", ["Doc"], d))
                time.sleep(chance.uniform(0.005, 0.05))
        except BaseException as exc:
            failures.append(exc)
        finally:
            done.set()

    members = [Member(tmp_path, "a", url, shared), Member(tmp_path, "b", url, shared)]
    every = list(members)
    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    try:
        wait_until(lambda: all(m.owns() for m in members), "both members to own shards", timeout=60)
        for round in range(3):  # kill -9 member a at random points (once while it starts), and start it again
            if round:
                wait_until(members[0].owns, "the restarted member to own shards", timeout=60)
            time.sleep(chance.uniform(0.2, 2.0))
            members[0].kill()
            members[0] = Member(tmp_path, "a", url, shared)
            every.append(members[0])
        wait_until(members[0].owns, "the restarted member to own shards", timeout=60)
        paused = members[1]
        paused.pause(signal.SIGSTOP)  # past its session timeout: its shards move to a
        wait_until(
            lambda: len(members[0].events("shards_assigned")[-1]["shards"]) == SHARDS,
            "the other member to take every shard",
            timeout=60,
        )
        paused.pause(signal.SIGCONT)  # it wakes holding indexes that are no longer its own
        third = Member(tmp_path, "c", url, shared)
        every.append(third)
        wait_until(third.owns, "a third member to be given shards", timeout=60)
        third.stop()  # it leaves: the group hands its shards back at once
        calm.set()
        assert done.wait(60), "the writer did not finish"
        assert not failures, failures
        head = writer.head()

        def all_saved_at_head() -> bool:
            found = manifests(shared)
            return len(found) == 2 * len(PLANES) and all(m["seq"] == head for m in found.values())

        wait_until(all_saved_at_head, "every index saved at the log's head", timeout=90)
    finally:
        for member in every:
            if member.proc.poll() is None:
                member.stop()
    found = manifests(shared)
    saves = [e for m in every for e in m.events("index_saved")]
    for name, manifest in found.items():
        lineage = [(base, seq) for base, seq, _owner in manifest["lineage"]]
        assert lineage[0][0] == 0 and lineage[-1][1] == head, (name, lineage)
        assert all(a[1] == b[0] and a[0] < a[1] for a, b in itertools.pairwise(lineage)), (name, lineage)
        logged = {(e["base"], e["seq"]) for e in saves if e["sidecar"] == name}
        assert logged <= set(lineage), (name, sorted(logged - set(lineage)))  # no save was overwritten
    assert len({owner for m in found.values() for *_, owner in m["lineage"]}) >= 3  # the work moved about
    # `drsg workers --status` on another node of the log reads the same from the shared folder
    argv = [sys.executable, "-m", "drsg.surfaces.cli", "--db", str(tmp_path / "status.drsg"), "--log", url]
    status = subprocess.run(
        [*argv, "workers", "--status", "--index-dir", str(shared), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert status.returncode == 0, status.stderr
    rows = [json.loads(line) for line in status.stdout.splitlines()]
    assert {r["sidecar"]: (r["seq"], r["head"], r["behind"], r["saved_by"]) for r in rows} == {
        name: (head, head, 0, m["lineage"][-1][2]) for name, m in found.items()
    }
    shown = subprocess.run(
        [*argv, "workers", "--status", "--index-dir", str(shared)], capture_output=True, text=True, timeout=120
    ).stdout.splitlines()
    assert len(shown) == len(found)
    assert all(line.startswith("plane ") and f"seq {head}, 0 behind head {head}; saved by " in line for line in shown)
    assert sorted((r["plane"], r["kind"], r["label"], r["property"]) for r in rows) == sorted(
        (m["meta"]["plane"], m["meta"]["kind"], m["meta"]["label"], m["meta"]["property"]) for m in found.values()
    )
    # a server on a node of the log serves the group's indexes: loaded from the shared folder, not saved
    server = start_server(
        tmp_path / "reader.drsg",
        tmp_path,
        env={"DRSG_LOG_URL": url, "DRSG_LOG_INDEX_DIR": str(shared), "DRSG_LOGGING_LEVEL": "info"},
        name="reader",
    )
    try:
        wait_until(lambda: server.head() >= head, "the server's node to catch up")
        served = {
            (name, query): {hit["id"] for hit in server.call("plane.search", {
                "plane": name, "label": "Doc", "property": "text", "query": query, "kind": "keyword", "k": 1000,
            })}
            for name in PLANES[:2]
            for query in QUERIES[:2]
        }  # fmt: skip
    finally:
        assert server.stop() == 0
    assert not [e for e in server.logs() if e.get("event") == "index built"]  # loaded, not built
    assert manifests(shared) == found  # and not saved over
    assert [p.name for p in tmp_path.glob("reader.drsg.*")] == ["reader.drsg.synced"]  # nor beside its copy (its mark)
    # what the group saved, loaded from the shared folder, against indexes built from scratch
    checker = drsg.open(tmp_path / "checker.drsg", log=url)
    try:
        assert checker.catch_up(head) == head
        from_group = IndexSet(checker, sidecars=shared / url.rsplit("/", 1)[1])
        fresh = IndexSet(checker)  # beside the checker's own file: there is none, so built from the log
        from_group.catch_up()
        fresh.catch_up()
        assert all(w.seq == head for w in from_group.workers.values())
        rng = np.random.default_rng(seed)
        vectors = [rng.uniform(-1, 1, DIM).astype(np.float32) for _ in range(3)]
        with checker.snapshot() as snap:
            for name in PLANES:
                found = snap.find_plane(name)
                assert found is not None
                plane = found.id
                live = {n.id for n in snap.nodes(plane, label="Doc")}
                for kind, probes in (("keyword", QUERIES), ("vector", vectors)):
                    prop = "text" if kind == "keyword" else "vec"
                    kept, built = from_group.get(plane, kind, "Doc", prop), fresh.get(plane, kind, "Doc", prop)
                    assert kept is not None and built is not None
                    assert kept.node_ids() == live, (name, kind)
                    assert len(kept) == len(built) == len(live), (name, kind)  # one document per node
                    assert contents(kept, probes) == contents(built, probes), (name, kind)
                    if kind == "keyword":
                        for query in QUERIES[:2]:
                            if (name, query) in served:
                                assert served[name, query] == set(built.search_arrays(query, 1000)[0].tolist())
    finally:
        checker.close()
        writer.close()


def test_workers_need_a_kafka_log_and_a_shared_folder(tmp_path: Path, kafka_broker: Broker) -> None:
    def run(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "drsg.surfaces.cli", "--db", str(tmp_path / "n.drsg"), *argv],
            env={**os.environ, **(env or {})},
            capture_output=True,
            text=True,
            timeout=60,
        )

    embedded = run("workers", "--index-dir", str(tmp_path / "shared"))
    assert embedded.returncode == 2
    assert embedded.stderr.strip().splitlines() == [
        "error: `drsg workers` indexes a Kafka log; give --log kafka://HOST:PORT/TOPIC "
        "(an embedded database is indexed inside `drsg serve`)"
    ]
    nowhere = run("--log", kafka_broker.url("workers-nowhere"), "workers")
    assert nowhere.returncode == 2
    assert nowhere.stderr.strip().splitlines() == [
        "error: give --index-dir DIR (or [log] index_dir): the folder every worker of the group shares"
    ]
    assert not (tmp_path / "n.drsg").exists()  # nothing written
    empty = run(
        "--log", kafka_broker.url(f"workers-{uuid.uuid4().hex[:12]}"), "workers", "--status", "--index-dir", "x"
    )
    assert empty.returncode == 0, empty.stderr
    assert (
        empty.stdout.startswith("no index saved in x for workers-")
        and "no member of the group has saved one" in empty.stdout
    )


def test_a_sidecar_saved_from_a_copy_further_on_is_loaded_once_this_copy_gets_there(
    tmp_path: Path, kafka_broker: Broker
) -> None:
    """Another member saved a keyword index at a seq this node's catch-up has not reached: the node
    waits for its copy to get there and loads it, rather than rebuilding it from nothing and saving
    over the group's lineage (the kill/pause/rebalance test above met that once in CI)."""
    url = kafka_broker.url(f"reach-{uuid.uuid4().hex[:12]}")
    shared = tmp_path / "shared"
    a = drsg.open(tmp_path / "a.drsg", log=url)
    b = drsg.open(tmp_path / "b.drsg", log=url)
    try:
        a.write(lambda tx: tx.declare_index(tx.plane("startup"), "keyword", "Doc", "text", {}))
        docs = [
            a.write(lambda tx, i=i: tx.create_node(tx.plane("startup"), f"d{i}", ["Doc"], {"text": f"line {i}"}))
            for i in range(5)
        ]
        behind = b.catch_up(docs[-1].seq)  # where b's own catch-up will be asked to stop
        saved = a.write(lambda tx: tx.create_node(tx.plane("startup"), "late", ["Doc"], {"text": "late line"})).seq
        assert saved is not None and saved > behind
        first = IndexSet(a, sidecars=shared, fenced=True)
        assert first.catch_up() == saved
        first.save()
        second = IndexSet(b, sidecars=shared, fenced=True)
        assert second.catch_up(behind) == saved  # loaded at its checkpoint, past the head it was asked for
        ((worker,), (made,)) = second.workers.values(), first.workers.values()
        assert worker.seq == saved and worker.sidecar.lineage == made.sidecar.lineage  # no rebuild from 0
    finally:
        a.close()
        b.close()
