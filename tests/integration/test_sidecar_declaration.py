"""A sidecar is valid for the index it holds, not for when its declaration was last restated
(workers/base.py's ``meta``, ``built_for``): a fresh database's first vectors restate the vector
index's declaration with their dims, and the sidecar saved before is still the same index; another
metric, other dims, or a drop and a declaration again make another index, rebuilt from the log."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import structlog

import drsg
from drsg.kernel.values import Json, Vector
from drsg.store.database import Database
from drsg.store.records import IndexDecl, Plane
from drsg.workers.manager import IndexSet
from drsg.workers.vector import VectorIndex

VECTORS = {"a": [1.0, 0.0, 0.0], "b": [0.0, 1.0, 0.0], "c": [0.6, 0.8, 0.0]}


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    """A fresh database whose plane `docs` declares a vector index on Doc.emb before any vector."""
    database = drsg.open(tmp_path / "g.drsg")
    assert isinstance(database, Database)
    database.write(lambda tx: tx.declare_index(tx.ensure_plane("docs"), "vector", "Doc", "emb", {}))
    yield database
    database.close()


def docs(db: Database) -> Plane:
    with db.snapshot() as snap:
        return snap.plane("docs")


def decl(db: Database) -> IndexDecl:
    with db.snapshot() as snap:
        found = snap.index(docs(db).id, "vector", "Doc", "emb")
    assert found is not None
    return found


def write_vectors(db: Database) -> None:
    plane = docs(db)
    for key, values in VECTORS.items():
        db.write(lambda tx, k=key, v=values: tx.create_node(plane, k, ["Doc"], {"emb": Vector.of(v)}))


def saved(db: Database) -> None:
    """What a command's index set leaves behind: its indexes caught up and saved."""
    indexes = IndexSet(db)
    indexes.catch_up()
    indexes.close()


def reopened(db: Database) -> tuple[VectorIndex, list[dict[str, Any]]]:
    """A new process's index set caught up: its vector worker and what it logged on the way."""
    indexes = IndexSet(db)
    with structlog.testing.capture_logs() as logs:
        indexes.catch_up()
    worker = indexes.get(docs(db).id, "vector", "Doc", "emb")
    assert isinstance(worker, VectorIndex)
    return worker, logs


def rejected(logs: list[dict[str, Any]]) -> list[str]:
    return [e["reason"] for e in logs if e["event"] == "sidecar rejected; rebuilding from the log"]


def test_the_first_vectors_restating_the_dims_keep_the_sidecar_saved_before_them(db: Database) -> None:
    saved(db)  # the empty index, its declaration without dims
    declared = decl(db)
    write_vectors(db)
    restated = decl(db)
    assert (declared.dims, restated.dims) == (None, 3)
    assert restated.since > declared.since and restated.born == declared.born  # restated, the same index
    worker, logs = reopened(db)
    assert rejected(logs) == [] and "index built" not in [e["event"] for e in logs]
    assert sorted(worker.node_ids()) == [1, 2, 3]  # the commits after the sidecar's, applied
    assert worker.search(Vector.of([1.0, 0.0, 0.0]), 1)[0][0] == 1


def test_a_sidecar_saved_with_vectors_is_kept_when_nothing_changed(db: Database) -> None:
    write_vectors(db)
    saved(db)
    worker, logs = reopened(db)
    assert rejected(logs) == [] and len(worker) == 3


@pytest.mark.parametrize(
    "options", [{}, {"metric": "l2"}, {"dims": 4}], ids=["same options", "another metric", "other dims"]
)
def test_a_drop_and_a_declaration_again_make_another_index(db: Database, options: dict[str, Json]) -> None:
    write_vectors(db)
    saved(db)  # holds a, b and c
    plane = docs(db)
    db.write(lambda tx: tx.drop_index(plane, "vector", "Doc", "emb"))
    db.write(lambda tx: tx.declare_index(plane, "vector", "Doc", "emb", options))
    worker, logs = reopened(db)
    assert rejected(logs) == ["it was built for a different index declaration"]
    # rebuilt from the graph: replaying the old sidecar from its checkpoint would apply the drop and
    # hold nothing, though the nodes written before it belong to the new index too
    assert len(worker) == (0 if options.get("dims") == 4 else 3)
    assert worker.decl.born == decl(db).born > 0


def test_a_saved_declaration_is_this_index_only_if_what_it_is_matches(db: Database, tmp_path: Path) -> None:
    write_vectors(db)
    worker = VectorIndex(decl(db), tmp_path / "g.drsg", db.uuid)
    meta = worker.meta()
    assert "since" not in meta and meta["born"] == decl(db).born and meta["dims"] == 3
    assert worker.built_for(meta)
    assert worker.built_for({**meta, "dims": None})  # saved before the first vector: empty, the same index
    for change in ({"dims": 4}, {"metric": "l2"}, {"born": meta["born"] + 1}, {"label": "Other"}):
        assert not worker.built_for({**meta, **change}), change
