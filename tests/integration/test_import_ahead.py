"""An import's commits made ahead of their transactions and written by a thread of their own
(store/importahead.py): what the writer meets is the import's error, what the importer meets stops
the writer first, and either way nothing is written; a line the C loop leaves mid-file hands the
rest to the importer's own transactions, and the graph comes out whole."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import lmdb
import pytest

import drsg
from drsg.kernel.errors import Conflict
from drsg.store import bulkwrite, importahead, jsonl
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


@pytest.mark.parametrize("failing", ["chunk", "held"])
def test_what_the_writer_thread_meets_is_the_imports_error_and_nothing_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failing: str
) -> None:
    """A chunk's transaction (the third) or the adjacency held back (written once, at the end)."""
    data = _graph(tmp_path / "g.jsonl")
    written: list[int] = []
    write = importahead.Chunk.write

    def failing_chunk(chunk: importahead.Chunk, tx: WriteTx, held: tuple[str, ...] = ()) -> None:
        written.append(chunk.first_seq)
        if len(written) == 3:
            raise RuntimeError("the disk went away")
        write(chunk, tx, held)

    def failing_held(held: importahead.Held, tx: WriteTx) -> None:
        written.append(len(held))
        raise RuntimeError("the disk went away")

    if failing == "chunk":
        monkeypatch.setattr(importahead.Chunk, "write", failing_chunk)
    else:
        monkeypatch.setattr(importahead.Held, "write", failing_held)
    with drsg.open(tmp_path / "g.drsg") as db:
        db.write(lambda tx: tx.create_plane("p"))
        head = db.head()
        with pytest.raises(RuntimeError, match="the disk went away"):
            _import(db, data)
        # two chunks were written (and are removed), the third failed; or the first held entries' write
        assert len(written) == (3 if failing == "chunk" else 1) and all(written)
        _untouched(db, head)
        monkeypatch.undo()
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


def _merged(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A list that gets how many entries each put of held adjacency entries (one table's) holds."""
    puts: list[int] = []
    write_merged = bulkwrite.write_merged

    def counted(txn: object, db: object, runs: list[bulkwrite.Run]) -> None:
        puts.append(sum(len(run) for run in runs))
        write_merged(txn, db, runs)  # type: ignore[arg-type]

    monkeypatch.setattr(bulkwrite, "write_merged", counted)
    return puts


def _as_one_thread_imports(tmp_path: Path, db: Database, data: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``db``'s plane ``p`` is what importing ``data`` with no commit made ahead gives, and sound."""
    assert verify(db.env).ok
    with monkeypatch.context() as patch, drsg.open(tmp_path / "reference.drsg") as reference:
        patch.setattr(importahead, "_enabled", False)
        reference.write(lambda tx: tx.create_plane("p"))
        _import(reference, data)
        assert list(export_lines(db, "p", canonical=True)) == list(export_lines(reference, "p", canonical=True))


def test_the_adjacency_is_held_back_and_written_once_when_the_import_is_done(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The chunks' transactions write no ``out`` or ``in`` entry; one put a table writes every
    edge's, after the last chunk — and the graph is the one-thread import's."""
    data = _graph(tmp_path / "g.jsonl")
    puts = _merged(monkeypatch)
    monkeypatch.setattr(jsonl, "HELD_TXNS", 100)  # (the file's ~1 MiB of them at 30 kB a transaction)
    in_chunks: list[int] = []
    write_runs = bulkwrite.write_runs

    def counted(txn: object, dbs: object, runs: dict[str, bulkwrite.Run]) -> None:
        in_chunks.extend(len(run) for name, run in runs.items() if name in bulkwrite.ADJACENCY)
        write_runs(txn, dbs, runs)  # type: ignore[arg-type]

    monkeypatch.setattr(bulkwrite, "write_runs", counted)
    with drsg.open(tmp_path / "g.drsg") as db:
        db.write(lambda tx: tx.create_plane("p"))
        _import(db, data)
        assert puts == [EDGES, EDGES] and sum(in_chunks) == 0
        _as_one_thread_imports(tmp_path, db, data, monkeypatch)


def test_the_held_write_run_again_when_the_map_grew_writes_the_same_entries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The last table's runs are merged into one on a thread of their own while the others are put;
    run again (the map grew after the first table was put), the write puts the same entries."""
    data = _graph(tmp_path / "g.jsonl")
    monkeypatch.setattr(jsonl, "HELD_TXNS", 100)
    calls: list[tuple[int, int]] = []  # each put's runs and entries
    write_merged = bulkwrite.write_merged

    def full_once(txn: object, db: object, runs: list[bulkwrite.Run]) -> None:
        calls.append((len(runs), sum(len(run) for run in runs)))
        write_merged(txn, db, runs)  # type: ignore[arg-type]
        if len(calls) == 2:  # (the second table's put, the first's already in the transaction)
            raise lmdb.MapFullError("the map is full")

    monkeypatch.setattr(bulkwrite, "write_merged", full_once)
    with drsg.open(tmp_path / "g.drsg") as db:
        db.write(lambda tx: tx.create_plane("p"))
        _import(db, data)
        (out_runs, out), (in_runs, in_), again_out, again_in = calls
        assert out_runs > 1 and in_runs == 1 and out == in_ == EDGES  # ("in" merged into one run)
        assert again_out == (out_runs, EDGES) and again_in == (1, EDGES)
        _as_one_thread_imports(tmp_path, db, data, monkeypatch)


def test_the_last_chunks_adjacency_is_packed_by_the_importer_while_the_writer_writes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The importer has nothing else to do once the file is read: it packs the last chunk's
    adjacency itself; what that meets is the import's error, the writer is stopped first, and
    nothing is written."""
    data = _graph(tmp_path / "g.jsonl")
    monkeypatch.setattr(jsonl, "HELD_TXNS", 100)
    packers: list[str] = []
    take = importahead.Held.take

    def recorded(held: importahead.Held, runs: dict[str, bulkwrite.Run]) -> None:
        packers.append(threading.current_thread().name)
        take(held, runs)

    monkeypatch.setattr(importahead.Held, "take", recorded)
    with drsg.open(tmp_path / "g.drsg") as db:
        db.write(lambda tx: tx.create_plane("p"))
        _import(db, data)
        importer = threading.current_thread().name
        assert packers[-1] == importer and set(packers[:-1]) == {"drsg-import-writer"} and len(packers) > 2
        _as_one_thread_imports(tmp_path, db, data, monkeypatch)

    def failing(held: importahead.Held, runs: dict[str, bulkwrite.Run]) -> None:
        if threading.current_thread().name == importer:
            raise MemoryError
        take(held, runs)

    monkeypatch.setattr(importahead.Held, "take", failing)
    with drsg.open(tmp_path / "h.drsg") as db:
        db.write(lambda tx: tx.create_plane("p"))
        head = db.head()
        with pytest.raises(MemoryError):
            _import(db, data)
        _untouched(db, head)


def test_adjacency_held_past_its_bound_is_written_as_the_import_goes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the import holds back stays bounded (a transaction's bytes here): past it, the held
    entries are written in a transaction of their own, and the graph is the same."""
    data = _graph(tmp_path / "g.jsonl")
    puts = _merged(monkeypatch)
    monkeypatch.setattr(jsonl, "HELD_TXNS", 1)
    events: list[tuple[str, str]] = []  # (thread, what): the held entries are the importer's once it takes the last
    take, write = importahead.Held.take, importahead.Held.write

    def taking(held: importahead.Held, runs: dict[str, bulkwrite.Run]) -> None:
        events.append((threading.current_thread().name, "take"))
        take(held, runs)

    def writing(held: importahead.Held, tx: WriteTx) -> None:
        events.append((threading.current_thread().name, "write"))
        write(held, tx)

    monkeypatch.setattr(importahead.Held, "take", taking)
    monkeypatch.setattr(importahead.Held, "write", writing)
    with drsg.open(tmp_path / "g.drsg") as db:
        db.write(lambda tx: tx.create_plane("p"))
        _import(db, data)
        assert len(puts) > 4 and sum(puts) == 2 * EDGES
        importer = threading.current_thread().name
        last_take = events.index((importer, "take"))
        assert ("drsg-import-writer", "write") not in events[last_take:]
        _as_one_thread_imports(tmp_path, db, data, monkeypatch)


def test_an_import_that_makes_its_plane_makes_the_rest_ahead(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The transaction that makes the plane ends after its first commit (its edges' entries would
    be in the trees the held ones are appended to); every later commit is made ahead."""
    data = _graph(tmp_path / "g.jsonl")
    made = chunks_written(monkeypatch)
    with drsg.open(tmp_path / "g.drsg") as db:
        report = import_jsonl(db, data, "p", create_plane=True, commit_lines=500, txn_bytes=1 << 20)
        assert sum(made) == report.commits - 1
        _as_one_thread_imports(tmp_path, db, data, monkeypatch)


def test_a_plane_is_keyless_until_a_key_was_written_to_it(tmp_path: Path) -> None:
    """An import into a keyless plane answers its keys from its map alone; one key ever written
    (even of a node since deleted) and they are sought."""
    with drsg.open(tmp_path / "g.drsg") as db:
        assert importahead.keyless(db.env, "p", db.head())  # not there: the import makes it
        db.write(lambda tx: tx.create_plane("p"))
        db.write(lambda tx: tx.create_node(tx.plane("p"), labels=["N"]))  # (keyless nodes)
        assert importahead.keyless(db.env, "p", db.head())
        db.write(lambda tx: tx.create_node(tx.plane("p"), key="k"))
        db.write(lambda tx: tx.create_plane("q"))
        assert not importahead.keyless(db.env, "p", db.head()) and importahead.keyless(db.env, "q", db.head())
        db.write(lambda tx: tx.delete_node(tx.plane("p"), "k"))
        assert not importahead.keyless(db.env, "p", db.head())


def test_a_key_the_plane_holds_is_a_conflict_for_an_import_made_ahead(tmp_path: Path) -> None:
    data = _graph(tmp_path / "g.jsonl")
    with drsg.open(tmp_path / "g.drsg") as db:
        db.write(lambda tx: tx.create_plane("p"))
        db.write(lambda tx: tx.create_node(tx.plane("p"), key=f"n{NODES - 1}"))  # the file's last node's
        head = db.head()
        with pytest.raises(Conflict, match=f"n{NODES - 1}"):
            _import(db, data)
        assert db.head() == head and db.stats().nodes == 1
