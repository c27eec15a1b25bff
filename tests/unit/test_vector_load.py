"""A vector index loaded from its files makes no empty hnswlib index first, neither when the worker is
made nor when it reads them (a one-shot search loads every declared index: ~1.5-4 ms for nothing),
and answers as the index it was saved from."""

from __future__ import annotations

from pathlib import Path

import hnswlib
import pytest

from drsg.kernel.values import Vector
from drsg.store.records import IndexDecl
from drsg.workers import vector
from drsg.workers.vector import VectorIndex

DECL = IndexDecl(1, "vector", "V", "v", {"metric": "cosine", "dims": 4})


class Counted(hnswlib.Index):  # type: ignore[misc]  # hnswlib is untyped
    made = 0

    def init_index(self, *args: object, **kwargs: object) -> None:
        Counted.made += 1
        super().init_index(*args, **kwargs)


def test_a_load_reads_the_index_without_making_an_empty_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    saved = VectorIndex(DECL, tmp_path / "db", "u")
    for node in range(1, 40):
        saved.upsert(node, Vector.of([node % 3, node % 5, node % 7, 1]))
    saved.flush()
    folder = tmp_path / "files"
    folder.mkdir()
    saved.write_files(folder)
    monkeypatch.setattr(vector.hnswlib, "Index", Counted)
    loaded = VectorIndex(DECL, tmp_path / "db", "u")
    loaded.read_files(folder)
    assert Counted.made == 0
    query = Vector.of([1, 2, 3, 1])
    assert loaded.search(query, 5) == saved.search(query, 5) and len(loaded) == 39
    assert loaded.calibration == saved.calibration


def test_a_new_worker_makes_its_index_at_its_first_add(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vector.hnswlib, "Index", Counted)
    Counted.made = 0
    worker = VectorIndex(DECL, tmp_path / "db", "u")
    assert Counted.made == 0 and worker.search(Vector.of([1, 0, 0, 0]), 3) == [] and len(worker) == 0
    worker.upsert(7, Vector.of([1, 0, 0, 0]))
    worker.flush()
    assert Counted.made == 1 and [node for node, _ in worker.search(Vector.of([1, 0, 0, 0]), 3)] == [7]
    folder = tmp_path / "files"
    folder.mkdir()
    VectorIndex(DECL, tmp_path / "db", "u").write_files(folder)  # never added to: read back as empty
    empty = VectorIndex(DECL, tmp_path / "db", "u")
    empty.read_files(folder)
    assert len(empty) == 0 and empty.search(Vector.of([1, 0, 0, 0]), 3) == []
