"""An import's commits made ahead of their transactions and written by a thread of their own
(store/importahead.py): what the writer meets is the import's error, what the importer meets stops
the writer first, and either way nothing is written; a line the C loop leaves mid-file hands the
rest to the importer's own transactions, and the graph comes out whole."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

import drsg
from drsg.store import importahead
from drsg.store.database import Database
from drsg.store.jsonl import export_lines, import_jsonl
from drsg.store.meta import read_mark
from drsg.store.transaction import WriteTx
from drsg.store.verify import verify
from tests.support.chunks import chunks_written

NODES, EDGES = 3_000, 6_000


def _graph(path: Path, odd_line_at: int | None = None) -> Path:
    lines = [{"labels": ["N"], "external_key": f"n{i}", "properties": {"i": i}} for i in range(NODES)]
    lines += [{"src_key": f"n{i % NODES}", "dst_key": f"n{i * 7 % NODES}", "type": "E"} for i in range(EDGES)]
    if odd_line_at is not None:  # a keyless node with the file's id: a shape the C loop leaves to jsonl.py
        lines.insert(odd_line_at, {"id": 1, "labels": ["K"]})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def _untouched(db: Database, head: int) -> None:
    """Nothing of an import that failed is left: the head, the counts, no mark, a sound file."""
    assert db.head() == head
    assert (db.stats().nodes, db.stats().edges) == (0, 0)
    with db.env.read() as txn:
        assert read_mark(txn, db.env.dbs["meta"]) is None
    assert verify(db.env).ok
    assert not [t for t in threading.enumerate() if t.name == "drsg-import-writer"]


def _import(db: Database, data: Path, **kwargs: object) -> object:
    return import_jsonl(db, data, "p", commit_lines=500, txn_bytes=30_000, **kwargs)  # type: ignore[arg-type]


def test_what_the_writer_thread_meets_is_the_imports_error_and_nothing_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = _graph(tmp_path / "g.jsonl")
    written: list[int] = []
    write = importahead.Chunk.write

    def failing(chunk: importahead.Chunk, tx: WriteTx) -> None:
        written.append(chunk.first_seq)
        if len(written) == 3:
            raise RuntimeError("the disk went away")
        write(chunk, tx)

    monkeypatch.setattr(importahead.Chunk, "write", failing)
    with drsg.open(tmp_path / "g.drsg") as db:
        db.write(lambda tx: tx.create_plane("p"))
        head = db.head()
        with pytest.raises(RuntimeError, match="the disk went away"):
            _import(db, data)
        assert len(written) == 3  # two chunks were written (and are removed), the third failed
        _untouched(db, head)
        monkeypatch.setattr(importahead.Chunk, "write", write)
        _import(db, data)  # the next import is not in its way
        assert (db.stats().nodes, db.stats().edges) == (NODES, EDGES)


def test_what_the_importer_meets_stops_the_writer_first_and_nothing_is_written(tmp_path: Path) -> None:
    data = _graph(tmp_path / "g.jsonl")
    reports: list[int] = []

    def interrupted(read: int) -> None:
        reports.append(read)
        if len(reports) == 9:  # mid-file: a chunk made ahead is being written meanwhile
            raise KeyboardInterrupt

    with drsg.open(tmp_path / "g.drsg") as db:
        db.write(lambda tx: tx.create_plane("p"))
        head = db.head()
        with pytest.raises(KeyboardInterrupt):
            _import(db, data, progress=interrupted)
        _untouched(db, head)


@pytest.mark.parametrize("odd_line_at", [0, 1_700, NODES + 2_600], ids=["first", "nodes", "edges"])
def test_a_line_the_c_loop_leaves_hands_the_rest_to_the_importer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, odd_line_at: int
) -> None:
    """The commit holding it is taken back whole and read again in the importer's transaction; the
    file's next transactions are made ahead again: the graph is the one imported without it."""
    data = _graph(tmp_path / "g.jsonl", odd_line_at)
    made = chunks_written(monkeypatch)
    outcomes = []
    for name, ahead in (("ahead.drsg", True), ("reference.drsg", False)):
        monkeypatch.setattr(importahead, "_enabled", ahead)
        with drsg.open(tmp_path / name) as db:
            db.write(lambda tx: tx.create_plane("p"))
            outcomes.append((_import(db, data), list(export_lines(db, "p", canonical=True))))
    assert outcomes[0] == outcomes[1]
    report = outcomes[0][0]
    assert made and sum(made) < report.commits  # type: ignore[attr-defined]  # some made ahead, not all
