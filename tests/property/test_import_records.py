"""Records in memory imported (``import_records``: the Python API's bulk path) make the same database
as the same records written to a JSONL file and imported (``import_jsonl``): every table entry for
entry, the log's records too — the same report, the same refusal at the same record — on every
path (reference, bulk, made ahead), from a list or a generator read once, with a few records or
all of them per commit and per transaction. Records that hold values of the data model JSON has no
word for (bytes, vectors) make what their JSON dialect makes in a file; what is outside the data
model (a datetime, a set, a tuple, NaN, a map key that is no str) is refused by its number, with
nothing written.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import drsg
from drsg.kernel.errors import DrsgError, UsageError
from drsg.kernel.values import Vector, to_json
from drsg.store.environment import DB_NAMES
from drsg.store.jsonl import ON_CONFLICT, import_jsonl, import_records
from drsg.store.readahead import RecordLines
from tests.support.import_parity import (
    INTS,
    PATHS,
    SEEDED,
    dump,
    import_path,
    labels,
    lines,
    open_seeded,
    plain,
    plain_line,
    raw_line,
    text,
)

records_of_lines = st.lists(st.one_of(plain_line, plain_line, raw_line, *[lines.map(lambda got: got[0])]), max_size=24)
native = st.one_of(  # values JSON has no word for, inside the data model
    st.binary(max_size=4),
    st.lists(st.floats(-1, 1, width=32), min_size=2, max_size=2).map(Vector.of),
)
native_record = st.fixed_dictionaries(
    {
        "labels": st.just(["A"]),
        "external_key": st.sampled_from(["k0", "k1", "n3"]),
        "properties": st.fixed_dictionaries({"b": native}),
    }
)
OUTSIDE = [  # each a record drsg must refuse by its number
    {"external_key": "z", "properties": {"t": datetime.datetime(2026, 1, 1)}},
    {"external_key": "z", "properties": {"s": {1, 2}}},
    {"external_key": "z", "properties": {"t": (1, 2)}},
    {"external_key": "z", "properties": {"f": float("nan")}},
    {"external_key": "z", "properties": {"m": {1: "one"}}},
    {"external_key": "z", "properties": {"i": 2**64}},
    {"external_key": datetime.date(2026, 1, 1)},
    {"src_key": "k0", "dst_key": "k1", "type": "R", "properties": {"x": float("inf")}},
    {"labels": ("A",)},
    None,
    ["labels"],
    "k0",
]


def _parsed(body: list[str]) -> list[Any]:
    """The records a file's lines would parse to: each line that is JSON (the rest cannot be a record)."""
    out = []
    for line in body:
        with contextlib.suppress(ValueError):
            out.append(json.loads(line))
    return out


def _dialect(record: Any) -> Any:
    """A record as its file's line spells it: bytes and vectors in the JSON dialect."""
    if isinstance(record, dict):
        return {k: _dialect(v) for k, v in record.items()}
    if isinstance(record, list):
        return [_dialect(v) for v in record]
    return to_json(record) if isinstance(record, (bytes, Vector)) else record


def _outcome(fn: Any) -> Any:
    try:
        report = fn()
    except DrsgError as exc:  # the refusal's kind and the records it names (by number, from 1)
        return type(exc).__name__, re.findall(r"(?:line|record) (\d+)", str(exc)), str(exc).count("already exist")
    return report.to_json()


def _both(root: Path, records: list[Any], how: tuple[str, bool, int, int], path: str, generator: bool) -> None:
    """``records`` imported as records and, written one a line to a file called ``records`` (the
    origin the log records name), as a file: the same outcome and every table the same."""
    mode, seeded, commit_lines, txn = how
    data = root / "records"
    data.write_text("".join(json.dumps(_dialect(r)) + "\n" for r in records))  # (a lone surrogate escaped)
    got = {}
    for kind in ("file", "records"):
        with open_seeded(root / f"{kind}-{path}.drsg", seeded) as db, import_path(path):
            if kind == "file":
                run = lambda: import_jsonl(  # noqa: E731
                    db, data, "p", mode, commit_lines=commit_lines, txn_bytes=txn * 40, create_plane=not seeded
                )
            else:
                run = lambda: import_records(  # noqa: E731
                    db,
                    iter(records) if generator else records,
                    "p",
                    mode,
                    commit_lines=commit_lines,
                    txn_records=txn,
                    create_plane=not seeded,
                )
            got[kind] = _outcome(run), dump(db)
    assert got["records"][0] == got["file"][0], path
    for table in DB_NAMES:
        assert got["records"][1][table] == got["file"][1][table], (path, table)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    body=records_of_lines,
    natives=st.lists(native_record, max_size=3),
    mode=st.sampled_from(ON_CONFLICT),
    seeded=st.booleans(),
    commit_lines=st.sampled_from([2, 1000]),
    txn=st.sampled_from([1, 5, 100_000]),
    generator=st.booleans(),
)
@example(  # all the common shapes, a few records a transaction, from a generator: the window read again
    body=[json.dumps({"labels": ["A"], "external_key": f"n{i}"}) for i in range(9)],
    natives=[],
    mode="error",
    seeded=True,
    commit_lines=2,
    txn=5,
    generator=True,
)
def test_records_make_the_same_database_as_their_file(
    tmp_path_factory: pytest.TempPathFactory,
    body: list[str],
    natives: list[dict[str, Any]],
    mode: str,
    seeded: bool,
    commit_lines: int,
    txn: int,
    generator: bool,
) -> None:
    root = tmp_path_factory.mktemp("records")
    records = _parsed(body) + natives
    for path in PATHS:
        _both(root, records, (mode, seeded, commit_lines, txn), path, generator)


NAMES = ["n0", "n1", "ключ", 'q"uote', "back\\slash", "tab\there", "é", "\U0001f600", "x" * 401]
plain_str = st.one_of(st.sampled_from(["", "a b", 'say "hi"', "C:\\dir", "é", "\x7f", "~"]), text)
common_props = st.dictionaries(
    st.sampled_from(["x", "y", "v", "名", 'k"ey', "p" * 401]), st.one_of(plain, plain_str), max_size=5
)


@st.composite
def common_records(draw: st.DrawFn) -> list[Any]:
    """Nodes of distinct keys (or none) and edges between them and the seeded keys: the shapes the
    scan of records reads (store/_bulkscan.c's of_records), strings, numbers and names at the edges
    of what it takes, mostly accepted under ``error``."""
    keys = draw(st.lists(st.sampled_from(NAMES), unique=True, max_size=len(NAMES)))
    nodes = []
    for key in keys + [None] * draw(st.integers(0, 2)):
        node: dict[str, Any] = {"labels": draw(labels.map(lambda got: sorted(set(got))))}
        if key is not None or draw(st.booleans()):
            node["external_key"] = key
        if draw(st.booleans()):
            node["properties"] = draw(st.one_of(st.none(), common_props))
        nodes.append(node)
    ends = st.sampled_from([*keys, *SEEDED])
    types = st.sampled_from(["R", "S", "→", 'q"'])
    edges = [
        {"src_key": draw(ends), "dst_key": draw(ends), "type": draw(types), "properties": props}
        for props in draw(st.lists(st.one_of(st.none(), common_props), max_size=8))
    ]
    return draw(st.permutations(nodes + edges)) if draw(st.booleans()) else nodes + edges


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(records=common_records(), seeded=st.booleans(), commit_lines=st.sampled_from([3, 1000]), generator=st.booleans())
@example(  # each integer form msgpack has, either side of its edges; floats at theirs; bools and null
    records=[
        {"labels": ["A", "B"], "external_key": "n0", "properties": {f"i{n}": n for n in INTS}},
        {"external_key": "n1", "properties": {"a": -0.0, "b": 5e-324, "c": 1e308, "t": True, "f": False, "z": None}},
        {"src_key": "n1", "dst_key": "n0", "type": "R", "properties": {"x": True, "y": None, "s": "t"}},
    ],
    seeded=True,
    commit_lines=1000,
    generator=False,
)
def test_records_of_the_common_shapes_make_what_their_file_makes(
    tmp_path_factory: pytest.TempPathFactory, records: list[Any], seeded: bool, commit_lines: int, generator: bool
) -> None:
    root = tmp_path_factory.mktemp("common")
    for path in PATHS[1:]:  # (the reference path reads no scan)
        _both(root, records, ("error", seeded, commit_lines, 100_000), path, generator)


@pytest.mark.parametrize(
    "bad", OUTSIDE, ids=lambda bad: type(bad).__name__ if not isinstance(bad, dict) else repr(bad)[:40]
)
@pytest.mark.parametrize("path", PATHS)
def test_a_record_outside_the_data_model_is_refused_by_its_number_and_nothing_is_written(
    tmp_path: Path, bad: Any, path: str
) -> None:
    good = [{"labels": ["A"], "external_key": f"n{i}", "properties": {"i": i}} for i in range(5)]
    with open_seeded(tmp_path / "g.drsg", True) as db, import_path(path):
        before = dump(db)
        with pytest.raises(UsageError, match=r"^records: 1 bad record\(s\), nothing was written — record 4: "):
            import_records(db, [*good[:3], bad, *good[3:]], "p", commit_lines=2)
        assert dump(db) == before


@pytest.mark.parametrize("given_", ["a path", b"bytes", {"external_key": "k"}, 7, Path("g.jsonl")])
def test_what_is_no_iterable_of_records_is_refused_before_anything_is_read(tmp_path: Path, given_: Any) -> None:
    with drsg.open(tmp_path / "g.drsg") as db:
        db.write(lambda tx: tx.create_plane("p"))
        head = db.head()
        with pytest.raises(
            UsageError, match=r"records must be an iterable of node and edge dicts, not a .*import_jsonl"
        ):
            db.plane("p").import_records(given_)
        with pytest.raises(UsageError, match="--on-conflict must be one of"):
            db.import_records("p", [], on_conflict="merge")
        assert db.head() == head


def test_a_generator_is_read_once_and_only_a_transactions_records_are_kept(tmp_path: Path) -> None:
    """A generator of records is read as the import goes: what it keeps is one transaction's, not
    everything read so far (RecordLines forgets each transaction's records when the next begins)."""
    kept: list[int] = []
    real = RecordLines.forget

    def forget(self: RecordLines) -> None:
        real(self)
        kept.append(len(self._kept))

    made = 0

    def records() -> Iterator[dict[str, Any]]:
        nonlocal made
        for i in range(5_000):
            made += 1
            yield {"labels": ["N"], "external_key": f"n{i}"}
        for i in range(5_000):
            made += 1
            yield {"src_key": f"n{i}", "dst_key": f"n{(i * 7) % 5_000}", "type": "E"}

    pytest.MonkeyPatch().setattr(RecordLines, "forget", forget)
    try:
        with drsg.open(tmp_path / "g.drsg") as db:
            db.write(lambda tx: tx.create_plane("p"))
            progress: list[int] = []
            report = import_records(db, records(), "p", commit_lines=500, txn_records=2_000, progress=progress.append)
            assert (report.nodes_created, report.edges_created, made) == (5_000, 5_000, 10_000)
            assert db.stats().edges == 5_000 and progress[-1] == 10_000 and progress == sorted(progress)
    finally:
        pytest.MonkeyPatch().undo()
    assert kept and max(kept) <= 2_000


def test_the_records_are_read_as_they_are_given(tmp_path: Path) -> None:
    """A record's properties keep their values: bytes and vectors as the data model's, a nested map
    as given; through the API's plane too."""
    with drsg.open(tmp_path / "g.drsg") as db:
        plane = db.create_plane("p")
        records = [
            {"labels": ["A"], "external_key": "a", "properties": {"b": b"\x00\xff", "v": Vector.of([0.5, -1.0])}},
            {"labels": ["A"], "external_key": "c", "properties": {"m": {"x": [1, "two", None]}, "s": "é"}},
            {"src_key": "a", "dst_key": "c", "type": "R", "properties": {"w": 0.25}},
        ]
        report = plane.import_records(records)
        assert (report.nodes_created, report.edges_created, report.commits) == (2, 1, 1)
        with db.snapshot() as snap:
            a, c = (snap.node_by_key(plane.id, key) for key in ("a", "c"))
            assert a is not None and a.props["b"] == b"\x00\xff" and a.props["v"] == Vector.of([0.5, -1.0])
            assert c is not None and c.props == {"m": {"x": [1, "two", None]}, "s": "é"}
            (hop,) = snap.neighbors(plane.id, a.id, "out")
            assert hop.node == c.id and hop.edge.props == {"w": 0.25}


@pytest.mark.parametrize("generator", [False, True], ids=["list", "generator"])
def test_a_commit_the_made_ahead_path_gives_back_is_read_again_whole(tmp_path: Path, generator: bool) -> None:
    """Records made ahead until one the C loop cannot make (nested properties): its commit is given
    back (store/importahead.py) and read again by the importer's own transaction — from the records
    kept, a generator's too."""
    nodes = [{"labels": ["A"], "external_key": f"n{i}", "properties": {"i": i}} for i in range(7)]
    nodes[5]["properties"] = {"nested": {"i": 5}}
    edges = [{"src_key": f"n{i}", "dst_key": f"n{(i + 1) % 7}", "type": "R"} for i in range(7)]
    records = [*nodes, *edges]
    for path in PATHS:
        (tmp_path / path).mkdir()
        _both(tmp_path / path, records, ("error", True, 2, 100_000), path, generator)
