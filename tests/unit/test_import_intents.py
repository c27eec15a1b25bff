"""An import as intents decided on one store (store/import_intents.py, drsg/api/imports.py): the same
graph and report as the embedded import of the same file, the same refusals word for word, chunks
refused out of order, and a dead writer's chunks dropped by seq — every node would do the same."""

from __future__ import annotations

from pathlib import Path

import pytest

import drsg
from drsg.kernel.errors import Conflict, UsageError
from drsg.store import import_intents
from drsg.store.database import Database
from drsg.store.import_intents import CHUNK, CLOSE
from drsg.store.intents import Intent
from drsg.store.jsonl import export_lines

LINES = [
    '{"external_key":"a","labels":["P"],"properties":{"n":1}}\n',
    '{"id":7,"labels":["Anon"]}\n',
    '{"external_key":"b","labels":["P"]}\n',
    '{"src_key":"a","dst_key":"b","type":"KNOWS"}\n',
    '{"src":7,"dst_key":"a","type":"ABOUT"}\n',
]


def as_intents(db: Database, import_id: str, lines: list[str], per: int, **close: object) -> object:
    """Submit ``lines`` as chunks of ``per`` lines, then the close; its answer."""
    chunks = ["".join(lines[i : i + per]) for i in range(0, len(lines), per)]
    for n, text in enumerate(chunks):
        db.submit(Intent(CHUNK, {"import": import_id, "n": n, "lines": text}))
    args = {"import": import_id, "chunks": len(chunks), "plane": "p", "on_conflict": "error", "create_plane": True}
    return db.submit(Intent(CLOSE, {**args, "source": "in.jsonl", **close})).value  # type: ignore[dict-item]


def held(db: Database) -> list[bytes]:
    with db.env.read() as txn:
        return [bytes(k) for k, _ in txn.cursor(db=db.env.dbs["meta"]) if bytes(k).startswith(b"import_")]


def test_an_import_decided_at_its_close_is_the_embedded_import(tmp_path: Path) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text("".join(LINES))
    with drsg.open(tmp_path / "plain.drsg") as plain, drsg.open(tmp_path / "intents.drsg") as db:
        report = plain.import_jsonl("p", source, create_plane=True)
        answer = as_intents(db, "x", LINES, per=2)
        assert answer == {k: v for k, v in report.to_json().items() if k not in ("commits", "first_seq", "last_seq")}
        assert list(export_lines(db, "p", canonical=True)) == list(export_lines(plain, "p", canonical=True))
        # a collision and a bad line: the embedded import's errors, word for word
        with pytest.raises(Conflict) as embedded:
            plain.import_jsonl("p", source)
        with pytest.raises(Conflict) as decided:
            as_intents(db, "y", LINES, per=3, create_plane=False)
        assert str(decided.value) == str(embedded.value)
        bad = tmp_path / "bad.jsonl"
        bad.write_text("not json\n")
        with pytest.raises(UsageError) as embedded_bad:
            plain.import_jsonl("p", bad)
        with pytest.raises(UsageError) as decided_bad:
            as_intents(db, "z", ["not json\n"], per=1, source=str(bad))
        assert str(decided_bad.value) == str(embedded_bad.value)


def test_chunks_out_of_order_and_a_dead_writers_chunks_are_refused_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(import_intents, "HELD_FOR", 3)
    with drsg.open(tmp_path / "g.drsg") as db:
        with pytest.raises(UsageError, match="chunk 1 landed after 0 of its chunks"):
            db.submit(Intent(CHUNK, {"import": "early", "n": 1, "lines": LINES[0]}))
        db.submit(Intent(CHUNK, {"import": "dead", "n": 0, "lines": LINES[0]}))
        assert len(held(db)) == 2  # its chunk and its count
        for i in range(4):  # more than HELD_FOR commits after its last chunk
            db.submit(Intent("node.put", {"plane": "startup", "key": f"k{i}"}))
        db.submit(Intent(CHUNK, {"import": "live", "n": 0, "lines": LINES[0]}))  # deciding one sweeps
        assert sorted(held(db)) == [b"import_held:live", b"import_lines:live\x00\x00\x00\x00"]
        with pytest.raises(UsageError, match=r"in\.jsonl: 0 of the import's 1 chunk\(s\) are in the log"):
            as_intents(db, "dead", [], per=1, chunks=1)
        assert as_intents(db, "live", [], per=1, chunks=1) == {
            "lines": 1,
            "nodes_created": 1,
            "nodes_updated": 0,
            "nodes_skipped": 0,
            "edges_created": 0,
            "edges_updated": 0,
            "edges_skipped": 0,
        }
        assert held(db) == []  # decided: dropped
