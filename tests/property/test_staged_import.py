"""A staged import that fails leaves every table byte for byte as it was; one that succeeds leaves a
projection equal to a replay of the log (store/staging.py, store/verify.py).

Oracle for the failure: a dump of every LMDB table before the import. The files mix new and
existing keys, label changes, key-addressed and id-addressed edges, under every --on-conflict mode,
staged two lines per commit so undo meets records written by several staged commits.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import drsg
from drsg.store.database import Database
from drsg.store.environment import DB_NAMES
from drsg.store.jsonl import ON_CONFLICT, import_jsonl
from drsg.store.verify import verify

KEYS = [f"k{i}" for i in range(6)]

node_line = st.fixed_dictionaries(
    {
        "labels": st.lists(st.sampled_from(["A", "B", "C"]), max_size=2),
        "external_key": st.sampled_from(KEYS),
        "properties": st.dictionaries(st.sampled_from(["x", "y"]), st.integers(-5, 5), max_size=2),
    }
)
edge_line = st.fixed_dictionaries(  # ends seeded before, made by the file (earlier lines), or not yet made
    {"src_key": st.sampled_from(KEYS), "dst_key": st.sampled_from(KEYS), "type": st.sampled_from(["R", "S"])}
)


def _dump(db: Database) -> dict[str, list[tuple[bytes, bytes]]]:
    with db.env.read() as txn:
        return {name: list(txn.cursor(db=db.env.dbs[name])) for name in DB_NAMES}


def _seeded(path: Path) -> Database:
    db = drsg.open(path)

    def seed(tx):  # type: ignore[no-untyped-def]
        plane = tx.ensure_plane("p")
        nodes = [tx.create_node(plane, key, ["A"], {"x": i}) for i, key in enumerate(KEYS[:3])]
        tx.create_edge(plane, nodes[0].id, nodes[1].id, "R")
        tx.create_edge(plane, nodes[0].id, nodes[1].id, "R")  # parallel
        tx.create_edge(plane, nodes[2].id, nodes[0].id, "S")

    db.write(seed)
    return db


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    lines=st.lists(st.one_of(node_line, edge_line), min_size=1, max_size=14),
    mode=st.sampled_from(ON_CONFLICT),
    fail=st.booleans(),
)
def test_a_failed_import_changes_nothing_and_a_finished_one_matches_a_replay(
    tmp_path_factory: pytest.TempPathFactory, lines: list[dict[str, object]], mode: str, fail: bool
) -> None:
    folder = tmp_path_factory.mktemp("staged")
    source = folder / "in.jsonl"
    body = "".join(json.dumps(line) + "\n" for line in lines)
    source.write_text(body + ("{not json\n" if fail else ""))
    with _seeded(folder / "g.drsg") as db:
        before = _dump(db)
        try:
            import_jsonl(db, source, "p", mode, commit_lines=2)
        except (drsg.UsageError, drsg.Conflict):
            assert _dump(db) == before  # every table, byte for byte: meta (head, ids, no mark) too
            return
        assert not fail, "a bad last line must refuse the import"
        report = verify(db.env)
        assert report.ok, report.problems
        assert not report.notes
        with db.snapshot() as snap:  # each edge line's ends are the nodes holding its keys
            plane = snap.plane("p").id
            ends = {(e.src, e.type, e.dst) for e in snap.edges(plane)}
            for line in lines:
                if "type" in line:
                    src, dst = snap.node_id_by_key(plane, line["src_key"]), snap.node_id_by_key(plane, line["dst_key"])  # type: ignore[arg-type]
                    assert (src, line["type"], dst) in ends
