"""WriteTx.put_node (store/transaction.py): the one by-key node write of the CLI, JSON-RPC and import."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import drsg
from drsg.kernel.errors import BadValue, Conflict, NotFound, UsageError
from drsg.store.database import Database
from drsg.store.transaction import PUT_MODES, NodeWrite


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    database = drsg.open(tmp_path / "g.drsg")
    database.write(lambda tx: tx.create_node(tx.plane("startup"), "ada", ["Person", "Writer"], {"born": 1815, "x": 1}))
    yield database
    database.close()


def put(db: Database, key: str | None, labels: list[str], props: dict[str, object], mode: str) -> NodeWrite:
    return db.write(lambda tx: tx.put_node(tx.plane("startup"), key, labels, props, mode=mode)).value


def test_a_free_key_or_no_key_is_a_new_node_in_every_mode(db: Database) -> None:
    for mode in PUT_MODES:
        op, node = put(db, f"new-{mode}", ["L"], {"m": mode}, mode)
        assert op == "created" and (node.key, node.labels, node.props) == (f"new-{mode}", ["L"], {"m": mode})
        op, keyless = put(db, None, [], {}, mode)
        assert op == "created" and keyless.key is None and keyless.id != node.id


def test_a_taken_key_is_refused_updated_replaced_or_skipped(db: Database) -> None:
    with pytest.raises(Conflict, match="already exists"):
        put(db, "ada", ["Person"], {}, "create")
    op, node = put(db, "ada", ["Countess", "Person"], {"born": 1816}, "update")
    assert op == "updated" and node.labels == ["Countess", "Person", "Writer"]
    assert node.props == {"born": 1816, "x": 1}
    op, same = put(db, "ada", ["Other"], {"y": 2}, "skip")
    assert op == "skipped" and same == node
    op, replaced = put(db, "ada", ["Poet"], {"y": 2}, "replace")
    assert op == "replaced" and (replaced.id, replaced.labels, replaced.props) == (node.id, ["Poet"], {"y": 2})
    with db.snapshot() as snap:
        assert snap.node_by_key(0, "ada") == replaced
        assert sum(1 for _ in snap.nodes(0)) == 1


def test_a_skip_writes_no_commit_and_a_refused_put_writes_nothing(db: Database) -> None:
    head = db.head()
    assert db.write(lambda tx: tx.put_node(tx.plane("startup"), "ada", [], {}, mode="skip")).seq is None
    with pytest.raises(Conflict):
        put(db, "ada", [], {}, "create")
    assert db.head() == head


def test_bad_input_is_refused_before_anything_is_written(db: Database) -> None:
    head = db.head()
    with pytest.raises(UsageError, match="unknown put mode 'merge'; use one of create, update, replace, skip"):
        put(db, "ada", [], {}, "merge")
    with pytest.raises(BadValue, match="labels must be a list of strings"):
        db.write(lambda tx: tx.put_node(tx.plane("startup"), "ada", "Person", {}, mode="update"))  # type: ignore[arg-type]
    with pytest.raises(BadValue):
        put(db, "ada", ["bad\x00label"], {}, "update")
    assert db.head() == head


def test_a_dropped_plane_is_refused_even_when_nothing_would_change(db: Database) -> None:
    db.write(lambda tx: tx.create_plane("gone"))
    gone = db.plane("gone")
    db.write(lambda tx: tx.create_node(gone, "k"))
    db.write(lambda tx: tx.drop_plane("gone"))
    with pytest.raises(NotFound, match="no longer exists"):
        db.write(lambda tx: tx.put_node(gone, "k", [], {}, mode="skip"))
