"""Index sidecars under crashes and corruption: the next open always serves correct results."""

from __future__ import annotations

import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import drsg
from drsg.kernel.values import Vector
from drsg.workers.exact import exact_vector_search
from drsg.workers.manager import IndexSet
from drsg.workers.search import Searcher
from tests.support.glove import rows

WRITER = r"""
import sys, drsg
from drsg.kernel.values import Vector
from drsg.workers.manager import IndexSet
from tests.support.glove import rows
path, start = sys.argv[1], int(sys.argv[2])
db = drsg.open(path)
plane = db.plane("startup")
db.write(lambda tx: tx.declare_index(plane, "vector", "Word", "embedding", {"metric": "cosine"}))
db.write(lambda tx: tx.declare_index(plane, "keyword", "Word", "text", {"language": "english"}))
indexes = IndexSet(db)
v = rows(0, 3000)
lines = [ln for ln in open("tests/data/ai_native_en.txt").read().splitlines() if len(ln) > 30]
print("ready", flush=True)
i = start
while True:
    db.write(lambda tx: [tx.create_node(plane, f"w{i}-{j}", ["Word"], {"embedding": Vector.of(v[(i * 7 + j) % 3000]),
                                                                       "text": lines[(i * 5 + j) % len(lines)]})
                         for j in range(5)])
    if i % 3 == 0:
        db.write(lambda tx: tx.delete_node(plane, f"w{i - 1}-0"))
    indexes.catch_up()
    indexes.save()          # killed anywhere in here, often mid-save
    print(i, flush=True)
    i += 1
"""


def _check_correct(path: Path) -> bool:
    """Both indexes serve exactly what the log says; True when the keyword index was there to check."""
    db = drsg.open(path)
    try:
        indexes = IndexSet(db, ef_search=400)
        head = indexes.catch_up()
        worker = indexes.get(0, "vector", "Word", "embedding")
        assert worker is not None and worker.seq == head
        with db.snapshot() as snap:
            live = {n.id for n in snap.nodes(0, "Word")}
            assert worker.live == live  # type: ignore[attr-defined]
            searcher = Searcher(db, indexes)
            for q in rows(5000, 5):
                query = Vector.of(q)
                # Scores, not ids: the data repeats vectors, and equal scores may tie at the cut.
                got = [round(h.score or 0, 4) for h in searcher.vector("startup", "Word", "embedding", query, k=5)]
                exact = exact_vector_search(snap, 0, "Word", "embedding", query, "cosine", 5)
                assert got == [round(s, 4) for _, s in exact]
            keyword = indexes.get(0, "keyword", "Word", "text")
            if keyword is not None:  # declared by the writer's first run (it may have died before)
                assert keyword.seq == head
                fresh = type(keyword)(keyword.decl, db.path, "")
                fresh.rebuild(snap)
                for text in ("vector index", "hybrid retrieval keyword", "time travel change feed"):
                    assert keyword.search(text, 10) == fresh.search(text, 10)  # type: ignore[attr-defined]
        indexes.save()
        return keyword is not None
    finally:
        db.close()


def test_killed_while_indexing_and_saving(tmp_path: Path) -> None:
    path = tmp_path / "g.drsg"
    root = Path(__file__).resolve().parents[2]
    rng = random.Random(11)
    start = 1
    keyword_checks = 0
    for _ in range(12):
        proc = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path), str(start)], cwd=root, stdout=subprocess.PIPE, text=True
        )
        # the kill lands while it indexes and saves, however long the interpreter took to start
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
        time.sleep(rng.uniform(0.1, 1.1))
        proc.send_signal(signal.SIGKILL)
        out, _ = proc.communicate()
        done = [int(x) for x in out.split()]
        start = (done[-1] + 1 if done else start) + 1000  # fresh keys for the next round
        keyword_checks += _check_correct(path)
    assert keyword_checks >= 6  # the keyword index was checked after most kills, not skipped


@pytest.mark.parametrize("damage", ["flip", "truncate", "empty", "delete"])
def test_corrupt_sidecar_is_rebuilt(tmp_path: Path, damage: str) -> None:
    path = tmp_path / "g.drsg"
    db = drsg.open(path)
    plane = db.plane("startup")
    v = rows(0, 1500)
    db.write(lambda tx: tx.declare_index(plane, "vector", "Word", "embedding", {"metric": "cosine"}))
    db.write(lambda tx: [tx.create_node(plane, f"w{i}", ["Word"], {"embedding": Vector.of(v[i])}) for i in range(1500)])
    indexes = IndexSet(db)
    indexes.catch_up()
    indexes.save()
    db.close()
    rng = random.Random(damage)
    for name in ("index.hnsw", "state.msgpack", "manifest.json", "CURRENT"):
        for _ in range(3):
            version = next(p for p in Path(f"{path}.hnsw").rglob("v*") if p.is_dir())
            target = version.parent / "CURRENT" if name == "CURRENT" else version / name
            original = target.read_bytes()
            if damage == "flip":
                data = bytearray(original)
                pos = rng.randrange(len(data))
                data[pos] ^= 1 << rng.randrange(8)
                target.write_bytes(bytes(data))
            elif damage == "truncate":
                target.write_bytes(original[: rng.randrange(len(original))])
            elif damage == "empty":
                target.write_bytes(b"")
            else:
                target.unlink()
            _check_correct(path)  # rebuilds from the log, then saves a good sidecar again


def _indexed_database(path: Path, offset: int) -> None:
    db = drsg.open(path)
    plane = db.plane("startup")
    v = rows(offset, 200)
    db.write(lambda tx: tx.declare_index(plane, "vector", "Word", "embedding", {"metric": "cosine"}))
    db.write(lambda tx: [tx.create_node(plane, f"w{i}", ["Word"], {"embedding": Vector.of(v[i])}) for i in range(200)])
    indexes = IndexSet(db)
    indexes.catch_up()
    indexes.save()
    db.close()


def test_foreign_sidecar_is_not_trusted(tmp_path: Path) -> None:
    a, b = tmp_path / "a.drsg", tmp_path / "b.drsg"
    _indexed_database(a, 0)
    _indexed_database(b, 100)
    shutil.rmtree(f"{b}.hnsw")
    shutil.copytree(f"{a}.hnsw", f"{b}.hnsw")  # same names, same seqs: only the uuid tells them apart
    _check_correct(b)
