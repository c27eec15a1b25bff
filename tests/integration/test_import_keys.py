"""An import resolves an edge's ends by key: every edge must land between exactly the nodes its
line names, whether the end was made in this chunk, an earlier chunk, a chunk run again after the
map grew, or before the import; and nodes it skipped or refused are never taken for its own."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

import drsg
from drsg.kernel.errors import Conflict
from drsg.store import importahead, jsonl
from drsg.store.database import Database
from drsg.store.transaction import WriteTx


def _write(path: Path, lines: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def _edges_by_key(db: Database, plane_name: str) -> list[tuple[str, str, str]]:
    with db.snapshot() as snap:
        plane = snap.plane(plane_name).id
        key_of = {node.id: node.key for node in snap.nodes(plane)}
        return sorted((key_of[e.src], e.type, key_of[e.dst]) for e in snap.edges(plane))  # type: ignore[misc]


@pytest.mark.parametrize("ahead", [False, True], ids=["in-transaction", "made-ahead"])
def test_edges_land_between_the_named_nodes_across_chunks_and_reruns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ahead: bool
) -> None:
    """Each transaction that meets a full map runs again from where it began — one made ahead of
    itself (store/importahead.py) from the same chunk — and every edge lands between its nodes."""
    rng = random.Random(3)
    pairs = [(i, i + 1, "NEXT") for i in range(1499)] + [
        (rng.randrange(1500), rng.randrange(1500), "SEE") for _ in range(800)
    ]
    lines: list[dict[str, object]] = []
    waiting = sorted(pairs, key=lambda pair: max(pair[:2]))
    for i in range(1500):  # each edge right after the later of its two ends: ends in this chunk and in earlier ones
        lines.append({"labels": ["W"], "external_key": f"k{i}", "properties": {"text": "x" * 300}})
        while waiting and max(waiting[0][:2]) == i:
            src, dst, kind = waiting.pop(0)
            lines.append({"src_key": f"k{src}", "dst_key": f"k{dst}", "type": kind})
    source = _write(tmp_path / "g.jsonl", lines)
    starts: list[int] = []  # where each run of a transaction began: in the file, or its chunk's first seq
    transaction, write = jsonl._Importer._transaction, importahead.Chunk.write

    def counted(self: jsonl._Importer, tx: WriteTx, rewind: jsonl._Rewind) -> None:
        starts.append(rewind.offset)
        transaction(self, tx, rewind)

    def counted_ahead(chunk: importahead.Chunk, tx: WriteTx, held: tuple[str, ...] = ()) -> None:
        starts.append(chunk.first_seq)
        write(chunk, tx, held)

    monkeypatch.setattr(importahead, "_enabled", ahead)
    if ahead:
        monkeypatch.setattr(importahead.Chunk, "write", counted_ahead)
    else:
        monkeypatch.setattr(jsonl._Importer, "_transaction", counted)
    with drsg.open(tmp_path / "g.drsg", map_size=1 << 20) as db:  # 1 MiB: chunks meet a full map and run again
        db.write(lambda tx: tx.create_plane("p"))
        monkeypatch.setattr(db.env, "reserve", lambda extra: None)  # no headroom ahead: the map grows mid-import
        report = jsonl.import_jsonl(db, source, "p", commit_lines=300, txn_bytes=150_000)  # ~2 commits a transaction
        assert report.nodes_created == 1500 and report.edges_created == len(pairs)
        assert len(starts) > len(set(starts))  # some transaction ran again
        assert report.commits > len(set(starts)) > 1  # several transactions, several commits in some
        expected = sorted((f"k{src}", kind, f"k{dst}") for src, dst, kind in pairs)
        assert _edges_by_key(db, "p") == expected


def test_keys_from_before_and_keys_it_skipped_resolve_to_the_nodes_already_there(tmp_path: Path) -> None:
    with drsg.open(tmp_path / "g.drsg") as db:
        plane = db.write(lambda tx: tx.create_plane("p")).value
        old = db.write(lambda tx: tx.create_node(plane, "old", ["W"], {"v": 1}).id).value
        lines = [
            {"labels": ["W"], "external_key": "old", "properties": {"v": 2}},  # skipped: it is there
            {"labels": ["W"], "external_key": "new"},
            {"src_key": "new", "dst_key": "old", "type": "T"},
            {"src_key": "old", "dst_key": "new", "type": "T"},
        ]
        report = jsonl.import_jsonl(db, _write(tmp_path / "a.jsonl", lines), "p", on_conflict="skip")
        assert (report.nodes_created, report.nodes_skipped, report.edges_created) == (1, 1, 2)
        assert _edges_by_key(db, "p") == [("new", "T", "old"), ("old", "T", "new")]
        with db.snapshot() as snap:
            assert snap.node_id_by_key(plane.id, "old") == old
        refused = [{"labels": ["W"], "external_key": "old"}, {"src_key": "old", "dst_key": "new", "type": "U"}]
        with pytest.raises(Conflict):  # a refused node is not this import's: nothing is written
            jsonl.import_jsonl(db, _write(tmp_path / "b.jsonl", refused), "p")
        assert _edges_by_key(db, "p") == [("new", "T", "old"), ("old", "T", "new")]
