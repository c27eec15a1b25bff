"""Re-importing a file converges: `--on-conflict skip` changes nothing the second time, `update`
leaves the plane as the file says, and an identical edge between the same two nodes is a conflict
just as a key is (parallel edges inside one file stay a multigraph's right)."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import drsg
from drsg.store.jsonl import export_lines, import_jsonl

SAMPLE = Path(__file__).resolve().parents[2] / "drsg" / "data" / "sample.jsonl"


def _export(db: drsg.store.database.Database, plane: str = "p") -> list[str]:  # type: ignore[name-defined]
    return list(export_lines(db, plane))


def test_skip_reimport_changes_nothing_and_update_converges(tmp_path: Path) -> None:
    db = drsg.open(tmp_path / "g.drsg")
    first = import_jsonl(db, SAMPLE, "p", create_plane=True)
    assert first.edges_created > 0
    before, head = _export(db), db.head()
    again = import_jsonl(db, SAMPLE, "p", on_conflict="skip")
    assert (again.edges_created, again.edges_skipped) == (0, first.edges_created)
    assert again.nodes_skipped == first.nodes_created
    assert _export(db) == before and db.head() == head, "a skip re-import wrote something"
    updated = import_jsonl(db, SAMPLE, "p", on_conflict="update")
    assert (updated.edges_created, updated.edges_updated) == (0, first.edges_created)
    assert _export(db) == before, "an update re-import of the same file did not converge"
    db.close()


def test_update_gives_an_old_edge_the_lines_properties(tmp_path: Path) -> None:
    db = drsg.open(tmp_path / "g.drsg")
    lines = [
        {"labels": ["P"], "external_key": "a", "properties": {}},
        {"labels": ["P"], "external_key": "b", "properties": {}},
        {"type": "KNOWS", "src_key": "a", "dst_key": "b", "properties": {"since": 1, "old": True}},
    ]
    source = tmp_path / "f.jsonl"
    source.write_text("".join(json.dumps(line) + "\n" for line in lines))
    import_jsonl(db, source, "p", create_plane=True)
    lines[2]["properties"] = {"since": 2}
    source.write_text("".join(json.dumps(line) + "\n" for line in lines))
    import_jsonl(db, source, "p", on_conflict="update")
    with db.snapshot() as snap:
        (edge,) = list(snap.edges(snap.plane("p").id))
    assert edge.props == {"since": 2}
    db.close()


def test_an_old_identical_edge_is_a_conflict_under_error_and_nothing_is_written(tmp_path: Path) -> None:
    db = drsg.open(tmp_path / "g.drsg")
    nodes = tmp_path / "nodes.jsonl"
    nodes.write_text('{"labels": ["P"], "external_key": "a"}\n{"labels": ["P"], "external_key": "b"}\n')
    edges = tmp_path / "edges.jsonl"
    edges.write_text('{"type": "KNOWS", "src_key": "a", "dst_key": "b"}\n')
    import_jsonl(db, nodes, "p", create_plane=True)
    import_jsonl(db, edges, "p")
    head = db.head()
    try:
        import_jsonl(db, edges, "p")
    except drsg.Conflict as exc:
        assert "edge a -[KNOWS]-> b" in str(exc) and "--on-conflict skip" in str(exc)
    else:
        raise AssertionError("a second identical edge from the same file was not a conflict")
    assert db.head() == head
    db.close()


# A small multigraph: parallel edges of one type between the same nodes are legitimate in a file.
_edge = st.tuples(st.integers(0, 3), st.sampled_from(["A", "B"]), st.integers(0, 3), st.integers(0, 9))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edges=st.lists(_edge, max_size=12), mode=st.sampled_from(["skip", "update"]))
def test_reimport_of_any_multigraph_converges(
    tmp_path: Path, edges: list[tuple[int, str, int, int]], mode: str
) -> None:
    """Oracle: the export after the first import. A re-import (skip or update) must leave it as it is."""
    source = tmp_path / f"m-{abs(hash((tuple(edges), mode)))}.jsonl"
    lines = [{"labels": ["N"], "external_key": f"n{i}", "properties": {}} for i in range(4)]
    lines += [{"type": t, "src_key": f"n{s}", "dst_key": f"n{d}", "properties": {"w": w}} for s, t, d, w in edges]
    source.write_text("".join(json.dumps(line) + "\n" for line in lines))
    db = drsg.open(source.with_suffix(".drsg"))
    try:
        import_jsonl(db, source, "p", create_plane=True)
        before = _export(db)
        import_jsonl(db, source, "p", on_conflict=mode)
        assert _export(db) == before
    finally:
        db.close()
