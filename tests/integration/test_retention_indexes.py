"""An index sidecar saved before the retention horizon cannot catch up from the log (its next
commits were compacted away): the next open rebuilds it from the graph and it serves what the
graph holds, rather than failing on the missing commits."""

from __future__ import annotations

from pathlib import Path

import drsg
from drsg.store.retention import Retention
from drsg.workers.keyword import KeywordIndex
from drsg.workers.manager import IndexSet


def test_a_sidecar_older_than_the_horizon_is_rebuilt_from_the_graph(tmp_path: Path) -> None:
    path = tmp_path / "g.drsg"
    with drsg.open(path) as db:
        plane = db.plane("startup")
        db.write(lambda tx: tx.declare_index(plane, "keyword", "Doc", "text", {"language": "english"}))
        db.write(lambda tx: tx.create_node(plane, "first", ["Doc"], {"text": "lighthouse keeper"}))
        indexes = IndexSet(db)
        saved_at = indexes.catch_up()
        assert indexes.save() == 1
    with drsg.open(path) as db:
        plane = db.plane("startup")
        for n in range(8):
            db.write(lambda tx, n=n: tx.create_node(plane, f"d{n}", ["Doc"], {"text": f"lighthouse number {n}"}))
        db.write(lambda tx: tx.delete_node(plane, "first"))
        done = db.compact_history(Retention(commits=3))
        assert done.horizon > saved_at + 1  # the sidecar's next commit is gone
        indexes = IndexSet(db)
        head = indexes.catch_up()
        worker = indexes.get(0, "keyword", "Doc", "text")
        assert isinstance(worker, KeywordIndex) and worker.seq == head == db.head()
        with db.snapshot() as snap:
            expected = {snap.node_id_by_key(0, f"d{n}") for n in range(8)}
        assert {node for node, _ in worker.search("lighthouse", 20)} == expected
        for n in range(5):  # the running index falls behind the horizon too: its lag is read from what is left
            db.write(lambda tx, n=n: tx.create_node(plane, f"e{n}", ["Doc"], {"text": "lighthouse"}))
        db.compact_history(Retention(commits=2))
        assert indexes.lag().seqs == 5
        assert indexes.catch_up() == db.head() and len(worker.search("lighthouse", 20)) == 13
