"""Fenced sidecar saves and the lineage in each manifest (workers/sidecar.py), as the index
workers' consumer group uses them (workers/index_group.py): two workers that both believe they
own an index can never put an older state back over a newer one, and the version in force always
carries one unbroken chain of the saves that led to it."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog

import drsg
from drsg.store.database import Database
from drsg.store.records import Plane
from drsg.workers.manager import IndexSet
from drsg.workers.sidecar import LINEAGE, Sidecar, SidecarFenced, SidecarInvalid, survey

META = {"kind": "test"}


def save(sidecar: Sidecar, seq: int, *, fenced: bool = True, body: str = "x") -> None:
    sidecar.save(seq, META, lambda folder: (folder / "data").write_text(f"{body}{seq}"), fenced=fenced)


def load(sidecar: Sidecar) -> int:
    try:
        return sidecar.load(META.__eq__, lambda loaded: None).seq
    except SidecarInvalid:
        return 0


def versions(root: Path) -> list[str]:
    return sorted(p.name for p in (root / "ix").iterdir() if p.name.startswith("v"))


def in_force(root: Path) -> dict[str, object]:
    name = (root / "ix" / "CURRENT").read_text()
    manifest: dict[str, object] = json.loads((root / "ix" / name / "manifest.json").read_text())
    return manifest


def test_a_worker_overtaken_by_another_cannot_save_over_it(tmp_path: Path) -> None:
    first, second = Sidecar(tmp_path, "ix", "db"), Sidecar(tmp_path, "ix", "db")
    assert load(first) == load(second) == 0  # both looked: no sidecar yet
    save(first, 5)
    before = versions(tmp_path)
    with pytest.raises(SidecarFenced, match="another worker saved it meanwhile"):
        save(second, 3)  # it built on "nothing", but version 5 is in force now
    assert versions(tmp_path) == before  # nothing written
    assert in_force(tmp_path)["seq"] == 5
    save(first, 9)  # the one that saved last goes on
    assert load(second) == 9  # the other loads what is in force, and may then go on from there
    save(second, 12)
    with pytest.raises(SidecarFenced):
        save(first, 15)
    lineage = [(base, seq) for base, seq, _owner in in_force(tmp_path)["lineage"]]  # type: ignore[attr-defined]
    assert lineage == [(0, 5), (5, 9), (9, 12)]


def test_unfenced_saves_keep_the_embedded_behaviour(tmp_path: Path) -> None:
    first, second = Sidecar(tmp_path, "ix", "db"), Sidecar(tmp_path, "ix", "db")
    save(first, 5, fenced=False)
    save(second, 3, fenced=False)  # the CLI and `serve` on one file: the last save wins, as before
    assert in_force(tmp_path)["seq"] == 3


def test_the_lineage_keeps_the_newest_saves(tmp_path: Path) -> None:
    sidecar = Sidecar(tmp_path, "ix", "db")
    load(sidecar)
    for seq in range(1, LINEAGE + 6):
        save(sidecar, seq)
    lineage = in_force(tmp_path)["lineage"]
    assert isinstance(lineage, list) and len(lineage) == LINEAGE
    assert lineage[0][:2] == [5, 6] and lineage[-1][:2] == [LINEAGE + 4, LINEAGE + 5]
    assert load(Sidecar(tmp_path, "ix", "db")) == LINEAGE + 5


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    """A database whose plane `docs` has a keyword index on Doc.text."""
    database = drsg.open(tmp_path / "g.drsg")
    assert isinstance(database, Database)
    database.write(lambda tx: tx.declare_index(tx.ensure_plane("docs"), "keyword", "Doc", "text", {}))
    yield database
    database.close()


def docs(db: Database) -> Plane:
    with db.snapshot() as snap:
        return snap.plane("docs")


def test_an_index_set_drops_an_index_another_worker_saved_and_loads_it_again(db: Database, tmp_path: Path) -> None:
    plane = docs(db)
    for i in range(3):
        db.write(lambda tx, i=i: tx.create_node(plane, f"d{i}", ["Doc"], {"text": f"shared words {i}"}))
    shared = tmp_path / "shared" / "topic"
    one, two = (IndexSet(db, sidecars=shared, fenced=True) for _ in range(2))
    one.catch_up()
    two.catch_up()
    assert one.save() == 1
    db.write(lambda tx: tx.create_node(plane, "d3", ["Doc"], {"text": "shared words 3"}))
    two.catch_up()
    with structlog.testing.capture_logs() as logs:
        assert two.save() == 0  # one saved since two built its index from the log
    assert [e["event"] for e in logs] == ["index_fenced"]
    assert two.workers == {}
    two.catch_up()  # owned still: loaded again, from one's save, then brought to the head
    (worker,) = two.workers.values()
    assert worker.seq == db.head() and len(worker) == 4
    assert two.save() == 1
    assert [link[:2] for link in worker.sidecar.lineage] == [[0, db.head() - 1], [db.head() - 1, db.head()]]


def test_a_read_only_index_set_loads_the_shared_sidecars_and_never_writes_them(db: Database, tmp_path: Path) -> None:
    plane = docs(db)
    db.write(lambda tx: tx.create_node(plane, "d0", ["Doc"], {"text": "shared words"}))
    shared = tmp_path / "shared" / "topic"
    owner = IndexSet(db, sidecars=shared, fenced=True)
    owner.catch_up()
    assert owner.save() == 1
    folder = shared.with_name("topic.bm25")
    saved = sorted(p.name for p in folder.rglob("*"))
    reader = IndexSet(db, sidecars=shared, saves=False)  # a server on a node of the group's log
    db.write(lambda tx: tx.create_node(plane, "d1", ["Doc"], {"text": "more shared words"}))
    reader.catch_up()
    (worker,) = reader.workers.values()
    assert len(worker) == 2 and worker.sidecar.in_force_seq == db.head() - 1  # loaded, then applied
    assert reader.save() == 0
    db.write(lambda tx: tx.drop_index(plane, "keyword", "Doc", "text"))
    reader.catch_up()
    assert reader.workers == {}
    assert sorted(p.name for p in folder.rglob("*")) == saved  # nothing saved over, nothing removed


def test_the_status_reads_what_each_version_in_force_says_and_names_the_unreadable(tmp_path: Path) -> None:
    first, second = Sidecar(tmp_path, "ix", "db"), Sidecar(tmp_path, "other", "db")
    save(first, 5)
    save(first, 9)
    save(second, 3)
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "CURRENT").write_text("v-nowhere")
    found, unreadable = survey(tmp_path)
    assert [(s.name, s.seq, s.meta) for s in found] == [("ix", 9, META), ("other", 3, META)]
    assert all(s.saved_by and s.saved_by.endswith(f":{os.getpid()}") for s in found)  # host:pid of the save
    assert unreadable == [("broken", "CURRENT names a missing version 'v-nowhere'")]
    assert survey(tmp_path / "none") == ([], [])  # no folder yet: nothing saved
