"""The bulk path of an import (store/bulkwrite.py: new records kept and written as sorted runs) makes
the same database as the reference path (every record through WriteTx and the projection): every
table the same entry for entry — the log's records too, at a fixed clock — the same report, the
same refusal.

Random files mix keyed and keyless nodes, edges by key and by the file's ``id``, unicode, numbers,
nested lists and maps, vectors (which take the reference path mid-file), repeated keys and bad
lines; each is imported by both paths into a fresh file (the plane made by the import) and into a
plane that holds data and is not the newest (so no run can be appended), under every
``--on-conflict``, with a few lines or the whole file per commit and per transaction.
"""

from __future__ import annotations

import itertools
import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import lmdb
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import drsg
from drsg.kernel.errors import DrsgError
from drsg.kernel.values import pack, unpacker
from drsg.store import bulkwrite, importahead, keys, native, staging
from drsg.store.database import Database
from drsg.store.environment import DB_NAMES
from drsg.store.jsonl import ON_CONFLICT, ImportReport, import_jsonl
from drsg.store.log import encode
from drsg.store.mutations import EdgePut, NodePut, from_wire
from drsg.store.sink import LogSink
from tests.support.chunks import chunks_written
from tests.support.import_parity import (
    INTS,
    PATHS,
    dump,
    import_path,
    lines,
    nested_props,
    open_seeded,
    plain_line,
    raw_line,
)


def _import(root: Path, data: Path, how: tuple[str, bool, int, int], path: str) -> tuple[Any, Any]:
    mode, seeded, commit_lines, txn_bytes = how
    with open_seeded(root / f"{path}.drsg", seeded) as db, import_path(path):
        read: list[int] = []  # progress: the bytes read after each commit (the bulk path reads ahead)
        try:
            outcome: Any = import_jsonl(
                db,
                data,
                "p",
                mode,
                commit_lines=commit_lines,
                txn_bytes=txn_bytes,
                create_plane=not seeded,
                progress=read.append,
            )
        except DrsgError as exc:
            outcome = (type(exc).__name__, str(exc))
        return (outcome, read), dump(db)


def _same_as_reference(root: Path, data: Path, how: tuple[str, bool, int, int]) -> None:
    """``data`` imported by each path: the same report, or the same refusal word for word, the same
    progress, and every table the reference's."""
    reference, *others = (_import(root, data, how, path) for path in PATHS)
    for path, other in zip(PATHS[1:], others, strict=True):
        assert other[0] == reference[0], path
        for table in DB_NAMES:
            assert other[1][table] == reference[1][table], (path, table)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    body=lines,
    mode=st.sampled_from(ON_CONFLICT),
    seeded=st.booleans(),
    commit_lines=st.sampled_from([2, 5, 1000]),
    txn_bytes=st.sampled_from([1, 200, 1 << 20]),
)
@example(  # an end named by a lone surrogate is a bad line, not an internal error
    body=['{"external_key": "k0"}', '{"type": "R", "src_key": "\\ud800", "dst_key": "k0"}'],
    mode="error",
    seeded=False,
    commit_lines=1000,
    txn_bytes=1 << 20,
)
@example(  # five bad lines stop the reading mid-file: the bulk path, which read ahead, reports no further
    body=["{bad"] * 5 + ['{"labels": ["A"]}'] * 3, mode="error", seeded=False, commit_lines=1000, txn_bytes=1 << 20
)
def test_the_bulk_path_makes_the_same_database_as_the_reference(
    tmp_path_factory: pytest.TempPathFactory,
    body: list[str],
    mode: str,
    seeded: bool,
    commit_lines: int,
    txn_bytes: int,
) -> None:
    root = tmp_path_factory.mktemp("parity")
    data = root / "in.jsonl"
    data.write_text("\n".join(body) + "\n", encoding="utf-8")
    how = (mode, seeded, commit_lines, txn_bytes)
    _same_as_reference(root, data, how)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    body=st.lists(st.one_of(plain_line, plain_line, plain_line, raw_line), min_size=1, max_size=30),
    seeded=st.booleans(),
    commit_lines=st.sampled_from([3, 1000]),
)
@example(  # each integer form msgpack has, either side of its edges; floats at theirs
    body=[
        json.dumps({"labels": ["A", "B"], "external_key": "n0", "properties": {f"i{n}": n for n in INTS}}),
        json.dumps({"external_key": "n1", "properties": {"a": -0.0, "b": 5e-324, "c": 1e308, "d": "é\n"}}),
        json.dumps({"type": "R", "src_key": "n1", "dst_key": "n0", "properties": {"x": True, "y": None}}),
    ],
    seeded=True,
    commit_lines=1000,
)
def test_the_c_line_loop_makes_the_same_database_as_the_reference(
    tmp_path_factory: pytest.TempPathFactory, body: list[str], seeded: bool, commit_lines: int
) -> None:
    """Files of mostly the common shapes (the C line loop's), with its numbers' edges, escapes,
    repeated keys and lines it must leave to the Python path mixed in."""
    root = tmp_path_factory.mktemp("loop")
    data = root / "in.jsonl"
    data.write_text("\n".join(body) + "\n", encoding="utf-8")
    how = ("error", seeded, commit_lines, 1 << 20)
    _same_as_reference(root, data, how)


@pytest.mark.parametrize("ahead", [False, True], ids=["in-transaction", "made-ahead"])
def test_a_file_the_bulk_path_takes_is_written_by_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ahead: bool
) -> None:
    """The parity above compares something: a plain file under ``error`` goes through the bulk path's
    runs (every new record, none written one at a time) and comes out whole — into a plane there
    already, made ahead of its transaction and written by the writer thread (store/importahead.py)."""
    made_ahead = chunks_written(monkeypatch)
    monkeypatch.setattr(importahead, "_enabled", ahead)
    data = tmp_path / "in.jsonl"
    data.write_text(
        "".join(
            json.dumps({"labels": ["A"], "external_key": f"n{i}", "properties": {"i": i}}) + "\n" for i in range(50)
        )
        + "".join(
            json.dumps({"src_key": f"n{i % 50}", "dst_key": f"n{(i * 7) % 50}", "type": "E"}) + "\n" for i in range(80)
        )
    )
    flushed: list[int] = []
    real, real_merged = bulkwrite.write_runs, bulkwrite.write_merged

    def counting(txn: Any, dbs: Any, runs: dict[str, bulkwrite.Run]) -> None:
        flushed.extend(len(run) for run in runs.values())
        real(txn, dbs, runs)

    def counting_merged(txn: Any, db: Any, runs: list[bulkwrite.Run]) -> None:  # (adjacency held back)
        flushed.extend(len(run) for run in runs)
        real_merged(txn, db, runs)

    monkeypatch.setattr(bulkwrite, "write_runs", counting)
    monkeypatch.setattr(bulkwrite, "write_merged", counting_merged)
    with drsg.open(tmp_path / "g.drsg") as db:
        if ahead:
            db.write(lambda tx: tx.create_plane("p"))  # (a plane the import makes: its first transaction's own)
        report = import_jsonl(db, data, "p", create_plane=True, commit_lines=20)
        assert isinstance(report, ImportReport) and (report.nodes_created, report.edges_created) == (50, 80)
        assert db.stats().edges == 80
    # nodes + keys + labels (50 each), edges + out + in (80 each)
    assert sum(flushed) == 3 * 50 + 3 * 80
    assert sum(made_ahead) == (7 if ahead else 0)  # (130 lines, 20 a commit: each made ahead)


class _Unwired(LogSink):
    """A staged write's sink that wants the mutation objects, as a Kafka node's import does."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **{**kwargs, "wired": False})


@pytest.mark.parametrize("wired", [True, False])
def test_the_c_line_loop_takes_the_common_shapes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, wired: bool) -> None:
    """Upstream's line shapes are made into records by store/_bulklines.c, not line by line in
    Python: the parity above then holds the C loop, not only the Python path. A staged write's
    transaction is wired (sealed from its wires): the loop makes no mutation object, only wires that
    read back as its records; a transaction that is not gets each object, slot by slot its wire."""
    if not wired:
        monkeypatch.setattr(staging, "LogSink", _Unwired)
    monkeypatch.setattr(importahead, "_enabled", False)  # (each commit in its transaction: tx is the WriteTx)
    data = tmp_path / "in.jsonl"
    nodes = [{"labels": ["A", "B"], "external_key": f"n{i}", "properties": {"i": -i, "f": i / 3}} for i in range(40)]
    edges = [{"src_key": f"n{i % 40}", "dst_key": f"n{i * 7 % 40}", "type": "E", "properties": {}} for i in range(60)]
    data.write_text("".join(json.dumps(obj) + "\n" for obj in [*nodes, {"labels": []}, *edges]))
    taken: list[tuple[int, int]] = []
    real = bulkwrite.BulkWrites.take

    def counting(self: bulkwrite.BulkWrites, tx: Any, parsed: list[Any], start: int) -> tuple[int, int, int]:
        assert tx.wired is wired
        made, packed, count = len(tx.mutations), len(tx.wires), tx.wire_count
        got = real(self, tx, parsed, start)
        taken.append(got[1:])
        n = sum(got[1:])
        if wired:  # (one item holds every line's: the sink seals them as tx.wire_count mutations)
            assert len(tx.mutations) == made and tx.wire_count == count + n
            assert len(tx.wires) == packed + (n > 0)
            reader = unpacker(b"".join(tx.wires[packed:]))
            made_here = [from_wire(wire) for wire in reader]
        else:
            assert tx.wires == [] and tx.wire_count == 0
            made_here = tx.mutations[made:]
        assert len(made_here) == n and {type(m) for m in made_here} <= {NodePut, EdgePut}
        return got

    monkeypatch.setattr(bulkwrite.BulkWrites, "take", counting)
    with drsg.open(tmp_path / "g.drsg") as db:
        report = import_jsonl(db, data, "p", create_plane=True, commit_lines=25)
        assert (report.nodes_created, report.edges_created) == (41, 60)
    assert tuple(map(sum, zip(*taken, strict=True))) == (41, 60)


name = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), min_size=1, max_size=3).map(
    lambda s: s * (1 + len(s) % 3) ** 5  # some past 31 and 255 bytes: msgpack's longer string forms
)
uint = st.one_of(
    st.integers(0, 16),
    st.integers(0, 300),
    st.integers(0, 2**64 - 1),
    st.sampled_from([127, 128, 255, 256, 65535, 65536]),
)


@settings(max_examples=300, deadline=None)
@given(
    plane=st.integers(0, 2**32 - 1),
    ids=st.tuples(uint, uint, uint),
    key=st.one_of(st.none(), name),
    labels=st.lists(name, max_size=18),
    edge_type=name,
    inv=st.binary(min_size=8, max_size=8),
    properties=nested_props,
)
def test_the_c_encoder_makes_the_python_encoders_entries(
    plane: int,
    ids: tuple[int, int, int],
    key: str | None,
    labels: list[str],
    edge_type: str,
    inv: bytes,
    properties: dict[str, Any],
) -> None:
    """store/_bulk.c against the reference encoder, byte for byte, over the whole range of each
    field (the import above meets small ids and short names only)."""
    assert bulkwrite.NATIVE is not bulkwrite.PyEncoder and type(bulkwrite.NATIVE).__name__ == "module"  # built
    packed = pack(properties)
    made: list[list[list[tuple[bytes, bytes]]]] = []
    for encoder in (bulkwrite.NATIVE, bulkwrite.PyEncoder()):
        node_runs: bulkwrite.Runs = (encoder.Run(), encoder.Run(), encoder.Run())
        edge_runs: bulkwrite.Runs = (encoder.Run(), encoder.Run(), encoder.Run())
        encoder.node(node_runs, plane, ids[0], key, labels, inv, packed)
        encoder.edge(edge_runs, plane, ids[0], ids[1], ids[2], edge_type, inv, packed)
        made.append([run.entries() for run in (*node_runs, *edge_runs)])
    assert made[0] == made[1]
    assert made[1][0][0][1] == pack([key, labels, properties])  # the reference is the projection's record
    assert made[1][3][0][1] == pack([ids[1], ids[2], edge_type, properties])


@settings(max_examples=200, deadline=None)
@given(
    run=st.lists(  # short keys, and keys past the 16 bytes a Run compares as integers first
        st.tuples(
            st.one_of(st.binary(max_size=6), st.binary(max_size=6).map(lambda k: b"\x01" * 16 + k)),
            st.binary(max_size=2),
        ),
        unique_by=lambda pair: pair[0],
        max_size=60,  # past 12 keys sharing their 16-byte heads: those are merge-sorted, not insertion-sorted
    ),
    presorted=st.booleans(),
)
def test_the_c_sort_orders_a_run_as_python_does(run: list[tuple[bytes, bytes]], presorted: bool) -> None:
    """Keys that are prefixes of others, empty keys, a run in order already (new ids' runs)."""
    if presorted:
        run.sort()
    mine = bulkwrite.NATIVE.Run()
    for key, value in run:
        mine.add(key, value)
    mine.sort()
    assert mine.entries() == sorted(run) and len(mine) == len(run)


def test_the_c_sort_orders_a_large_run_by_every_byte() -> None:
    """A run as an import's out run is (one plane and type, ids over three bytes, so the radix sort
    passes over some head bytes and skips the rest), with groups of keys sharing their 16-byte heads
    of each size the tie sort takes (insertion up to 12, merged past): sorted as Python sorts bytes."""
    rng = random.Random(37)
    run = {
        b"\0\0\0\1" + rng.randrange(1 << 24).to_bytes(8, "big") + b"E\0" + rng.randbytes(8): b"v" for _ in range(5000)
    }
    for size in (2, 12, 13, 200):
        head = rng.randbytes(16)
        run |= {head + rng.randbytes(2 + rng.randrange(3)): b"t" for _ in range(size)}
    mine = bulkwrite.NATIVE.Run()
    for key, value in run.items():
        mine.add(key, value)
    mine.sort()
    assert mine.entries() == sorted(run.items())


key_value = st.one_of(name, st.just("\ud800"), st.integers(0, 3), st.none(), st.lists(st.integers(0, 2), max_size=1))
parsed_line = st.one_of(
    st.dictionaries(st.sampled_from(["external_key", "src_key", "dst_key", "type", "labels"]), key_value, max_size=4),
    st.lists(st.integers(0, 2), max_size=2),
    st.none(),
    name,
)


@settings(max_examples=200, deadline=None)
@given(lines=st.lists(parsed_line, max_size=12), plane_group=st.binary(min_size=4, max_size=4))
def test_the_c_key_collection_is_the_pythons(lines: list[Any], plane_group: bytes) -> None:
    """The keys a commit's lines name, sorted with their groups: lists and numbers where a key should
    be, a lone surrogate (left out), lines that are no object."""
    assert bulkwrite.NATIVE.key_groups(lines, plane_group) == bulkwrite.PyEncoder.key_groups(lines, plane_group)


@pytest.mark.parametrize("count", [0, 1, 15, 16, 65535, 65536])
def test_a_record_sealed_from_wires_is_the_record_packed_from_mutations(count: int) -> None:
    """store/log.py's ``encode`` given the mutations' wires made already (the C line loop's) spells
    msgpack's array headers as the packer does, at each of their sizes."""
    mutations = [NodePut(1, i, None, ["A"], {"i": i}) for i in range(count)]
    wires = [pack(m.to_wire()) for m in mutations]
    origin: dict[str, Any] = {"via": "import"}
    assert encode(7, origin, list(mutations), wires) == encode(7, origin, list(mutations))
    runs = [b"".join(wires[: count // 3]), b"".join(wires[count // 3 :])]  # (the C loop's: one item a run)
    assert encode(7, origin, [], runs, count) == encode(7, origin, list(mutations))


def test_a_run_is_written_from_c_on_py_lmdbs_transaction(tmp_path: Path) -> None:
    """store/_bulkrun.c writes a sorted run on py-lmdb's own write transaction (the import's tables
    above are equal only if it writes each entry): put in key order before the table's last key,
    appended past it; and an LMDB error is the class and words py-lmdb's putmulti gives it."""
    bulkwrite._bind_lmdb()
    env = lmdb.open(str(tmp_path / "t.lmdb"), subdir=False, max_dbs=2, map_size=1 << 20)
    db = env.open_db(b"t")
    with env.begin(write=True) as txn:
        txn.put(b"m", b"0", db=db)
        for made in ([b"c", b"a"], [b"z", b"x"], []):  # before "m": put; past it: appended; nothing
            run = bulkwrite.NATIVE.Run()
            for key in made:
                run.add(key, key.upper())
            run.sort()
            assert run.write(txn, db) == 0  # written from C, not left to py-lmdb (False)
        assert list(txn.cursor(db=db).iternext()) == [
            (b"a", b"A"),
            (b"c", b"C"),
            (b"m", b"0"),
            (b"x", b"X"),
            (b"z", b"Z"),
        ]
    got: list[tuple[type[BaseException], str]] = []
    for encoder in (bulkwrite.NATIVE, bulkwrite.PyEncoder()):  # past the map: MapFullError from both
        run = encoder.Run()
        for i in range(400):
            run.add(b"k%05d" % i, b"v" * 4000)
        with pytest.raises(lmdb.Error) as failed, env.begin(write=True) as txn:
            bulkwrite.put_sorted(txn, db, run)
        got.append((failed.type, str(failed.value)))
    env.close()
    assert got[0] == got[1] and got[0][0] is lmdb.MapFullError, got


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    entries=st.lists(
        st.tuples(
            st.one_of(st.binary(min_size=1, max_size=6), st.binary(max_size=6).map(lambda k: b"\x01" * 16 + k)),
            st.binary(max_size=3),
        ),
        unique_by=lambda pair: pair[0],
        max_size=80,
    ),
    cuts=st.lists(st.integers(0, 80), max_size=5),
    there=st.integers(0, 80),
)
def test_packed_runs_are_merged_into_a_table_in_key_order(
    tmp_path: Path, entries: list[tuple[bytes, bytes]], cuts: list[int], there: int
) -> None:
    """An import's held adjacency (store/importahead.py): runs made by ``packed`` (keys that are
    prefixes of others, heads shared) hold their entries sorted, and ``write_merged`` puts them all
    into a table — empty, or holding keys already (put in key order, not appended) — as Python's
    merge does, as does ``write_merged`` of the one run ``merged`` makes of them; from C, and by
    py-lmdb where C is not bound."""
    bulkwrite._bind_lmdb()
    table, new = entries[:there], entries[there:]
    bounds = sorted({0, len(new), *(min(cut, len(new)) for cut in cuts)})
    for encoder, name in ((bulkwrite.NATIVE, "c"), (bulkwrite.PyEncoder(), "py")):
        bulkwrite.use_c(name == "c")
        path = tmp_path / f"{name}.lmdb"
        env = lmdb.open(str(path), subdir=False, max_dbs=2, map_size=1 << 20)
        txn = env.begin(write=True)
        try:
            parts = []
            for lo, hi in itertools.pairwise(bounds):
                run = encoder.Run()
                for key, value in new[lo:hi]:
                    run.add(key, value)
                part = run.packed()
                assert part.entries() == run.entries() == sorted(new[lo:hi])
                assert part.nbytes() >= sum(len(key) + len(value) for key, value in new[lo:hi])
                parts.append(part)
            one = bulkwrite.merged(parts)
            assert one.entries() == sorted(new)
            for db_name, runs in ((b"parts", parts), (b"merged", [one])):
                db = env.open_db(db_name, txn=txn)
                for key, value in table:
                    txn.put(key, value, db=db)
                bulkwrite.write_merged(txn, db, runs)
                assert list(txn.cursor(db=db).iternext()) == sorted(entries), (name, db_name)
        finally:
            bulkwrite.use_c(True)
            txn.abort()
            env.close()
        path.unlink()  # (the next example's table starts empty)


@pytest.fixture(scope="module")
def keyed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Database]:
    """A plane whose nodes have some of the names the lines below may name."""
    with drsg.open(tmp_path_factory.mktemp("keyed") / "g.drsg") as db:
        lines = [{"labels": ["A"], "external_key": key} for key in ["a", "aa", "bbb", "aaaaaaaaa", "é"]]
        path = tmp_path_factory.mktemp("keyed") / "in.jsonl"
        path.write_text("".join(json.dumps(line) + "\n" for line in lines))
        import_jsonl(db, path, "p", create_plane=True)
        yield db


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(parsed_line, max_size=12), named=st.lists(st.sampled_from(["a", "aa", "bbb", "aaaaaaaaa", "é"])))
def test_the_c_key_look_up_answers_as_the_python_path(keyed: Database, lines: list[Any], named: list[str]) -> None:
    """store/_bulk.c's look_up fills a commit's known keys as key_groups + _walk.c's key_ids do
    (found, absent, keys that share 8-byte heads or are prefixes of others, lone surrogates, non-str
    keys); a key too long for LMDB to seek leaves the whole answer to the Python path (False)."""
    lines = lines + [{"src_key": key} for key in named]
    bulkwrite._bind_lmdb()
    walk, c = native.walker(), bulkwrite._native
    assert walk is not None and c is not None
    env = keyed.env
    with keyed.snapshot() as snap:
        plane_group, inv = keys.plane_group(snap.plane("p").id), keys.inv(snap.at + 1)  # (as a commit after it)
    txn = env.begin_write()
    try:
        for extra in ([], [{"dst_key": "x" * 600}]):
            known: dict[str, int | None] = {}
            took = c.look_up(lines + extra, txn, env.dbs["keys"], plane_group, inv, known)
            order, groups = bulkwrite.PyEncoder.key_groups(lines + extra, plane_group)
            found = walk.key_ids(txn, env.dbs["keys"], inv, groups)
            assert (took is False) == (found is False)  # a key too long to seek: both leave it to Python
            if extra:
                assert took is False
            elif found is not False:
                assert took is True and known == dict(zip(order, found, strict=True))
                assert {known[key] is not None for key in named} <= {True}
    finally:
        txn.abort()


def test_a_transactions_adjacency_is_written_once_at_its_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The ``out``/``in`` runs wait for the LMDB transaction's end (each commit's other runs do not):
    one put of each per transaction, holding every commit's edges — and the tables come out whole.
    (Commits made ahead of their transaction hold theirs back longer: tests/integration/test_import_ahead.py.)"""
    monkeypatch.setattr(importahead, "_enabled", False)
    data = tmp_path / "in.jsonl"
    nodes = [{"labels": ["A"], "external_key": f"n{i}"} for i in range(20)]
    edges = [{"src_key": f"n{i % 20}", "dst_key": f"n{i * 7 % 20}", "type": "E"} for i in range(80)]
    data.write_text("".join(json.dumps(obj) + "\n" for obj in [*nodes, *edges]))
    written: list[tuple[str, int]] = []
    real = bulkwrite.write_runs

    def counting(txn: Any, dbs: Any, runs: dict[str, bulkwrite.Run]) -> None:
        written.extend((name, len(run)) for name, run in runs.items() if len(run))
        real(txn, dbs, runs)

    monkeypatch.setattr(bulkwrite, "write_runs", counting)
    with drsg.open(tmp_path / "g.drsg") as db:
        import_jsonl(db, data, "p", create_plane=True, commit_lines=10)  # 10 commits, one transaction
        assert db.stats().edges == 80
    assert [n for name, n in written if name == "out"] == [80] == [n for name, n in written if name == "in"]
    assert [n for name, n in written if name == "edges"] == [10] * 8  # (each commit's)
