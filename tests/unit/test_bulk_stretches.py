"""What keeps `drsg serve`'s event loop answering while a large catalog is indexed: no full garbage
collection inside the index run or the index workers' catch-up (each one held the GIL 100-180 ms),
a large commit decoded a mutation at a time, and the workers offering the GIL between slices. A
JSONL import pauses the collector too, for its speed (its passes cost 6 % and found nothing)."""

from __future__ import annotations

import gc
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from drsg.kernel.errors import CorruptRecord
from drsg.kernel.gcpause import collector_paused
from drsg.pipeline.catalog import service
from drsg.pipeline.catalog.connections import Connection
from drsg.store import log as commit_log
from drsg.store.database import Database
from drsg.store.jsonl import import_jsonl
from drsg.store.transaction import WriteTx
from drsg.workers import base
from drsg.workers.manager import IndexSet
from tests.bench.bench_catalog import make_catalog


@pytest.fixture
def collections() -> Iterator[list[int]]:
    """The generation of every garbage collection that starts while the test runs."""
    seen: list[int] = []

    def note(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            seen.append(int(info["generation"]))

    gc.collect()
    gc.callbacks.append(note)
    try:
        yield seen
    finally:
        gc.callbacks.remove(note)


def _none_inside(collections: list[int]) -> bool:
    """No collection ran inside the stretch: at most the one young collection its first allocation
    after the resume triggers (without the pause: dozens, full ones among them)."""
    return collections in ([], [0])


def test_the_collector_pauses_while_any_stretch_runs_and_resumes_after_the_last() -> None:
    assert gc.isenabled()
    entered, release = threading.Event(), threading.Event()

    def other() -> None:
        with collector_paused():
            entered.set()
            release.wait(10)

    thread = threading.Thread(target=other)
    with collector_paused():
        thread.start()
        assert entered.wait(10) and not gc.isenabled()
    assert not gc.isenabled()  # the other thread's stretch still runs
    release.set()
    thread.join()
    assert gc.isenabled()
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()  # a collector the program turned off stays off
    finally:
        gc.enable()


def _many_nodes(tx: WriteTx, n: int) -> None:
    plane = tx.create_plane("big")
    tx.declare_index(plane, "keyword", "Doc", "text", {"language": "english"})
    for i in range(n):
        tx.create_node(plane, f"d{i}", ["Doc"], {"text": f"document number {i} about columns and tables", "i": i})


def test_a_large_catch_up_runs_no_collection(tmp_path: Path, collections: list[int]) -> None:
    with Database(tmp_path / "g.drsg", create=True) as db:
        db.write(lambda tx: _many_nodes(tx, 5000), {"via": "test"})
        gc.collect()
        collections.clear()
        indexes = IndexSet(db)
        indexes.catch_up()  # a rebuild: 5,000 documents from the snapshot
        db.write(
            lambda tx: [tx.update_node(tx.plane("big"), n.id, {"i": -1}) for n in tx.view.nodes(tx.plane("big").id)]
        )
        gc.collect()
        collections.clear()
        indexes.catch_up()  # an apply: one commit of 5,000 updates
        assert _none_inside(collections) and gc.isenabled()
        assert len(indexes.workers) == 1 and len(next(iter(indexes.workers.values()))) == 5000


def test_a_catalog_index_run_runs_no_collection(tmp_path: Path, collections: list[int]) -> None:
    catalog = make_catalog(tmp_path / "catalog.db", tables=40)
    conn = Connection("bench", str(catalog), "sqlite")
    with Database(tmp_path / "g.drsg", create=True) as db:
        gc.collect()
        collections.clear()
        reports = service.index(db, conn, "full", 20, [])
        assert _none_inside(collections) and gc.isenabled()
        assert reports[0]["created"] == 40 * 21 and reports[1]["updated"] > 0


def test_an_import_runs_no_collection(tmp_path: Path, collections: list[int]) -> None:
    source = tmp_path / "graph.jsonl"
    nodes = [{"labels": ["Doc"], "external_key": f"d{i}", "properties": {"text": f"line {i}"}} for i in range(6000)]
    edges = [{"src_key": f"d{i}", "dst_key": f"d{i + 1}", "type": "NEXT"} for i in range(5999)]
    source.write_text("".join(json.dumps(line) + "\n" for line in nodes + edges))
    with Database(tmp_path / "g.drsg", create=True) as db:
        gc.collect()
        collections.clear()
        report = import_jsonl(db, source, "startup", commit_lines=2000)  # several chunks
        assert _none_inside(collections) and gc.isenabled()
        assert (report.nodes_created, report.edges_created) == (6000, 5999)


def test_a_large_commit_decodes_a_mutation_at_a_time_to_the_same_commit(tmp_path: Path) -> None:
    with Database(tmp_path / "g.drsg", create=True) as db:
        seq = db.write(lambda tx: _many_nodes(tx, 4000), {"via": "test"}).seq
        with db.read() as r:
            commit = next(iter(r.commits(seq, seq)))
    record = commit_log.encode(commit.ts, commit.origin, commit.mutations)
    assert len(record) > commit_log.STREAM_FROM  # the streamed path
    streamed = commit_log.decode(seq, record)
    assert streamed.to_json() == commit.to_json()
    body = record[commit_log._HEADER.size :]
    whole, _ = commit_log.unpack(body), None
    assert len(whole[1]) == len(streamed.mutations)
    for bad in (record[:-7], record + b"\x00"):
        with pytest.raises(CorruptRecord):
            commit_log.decode(seq, bad)


def test_workers_offer_the_gil_between_slices(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    offered: list[float] = []
    real_sleep = base.time.sleep
    monkeypatch.setattr(base.time, "sleep", lambda s: offered.append(s) or real_sleep(s))
    with Database(tmp_path / "g.drsg", create=True) as db:
        db.write(lambda tx: _many_nodes(tx, 2000), {"via": "test"})
        IndexSet(db).catch_up()
    assert offered.count(0) >= 2000 // base.SLICE
