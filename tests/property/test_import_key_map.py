"""The keys an import made are answered from its map (store/_bulkmap.c) without a seek, once their
LMDB transaction committed: lines naming keys made in earlier transactions land between the nodes
they name, even when a transaction runs again after the map grew (a rerun's keys must not be taken
for keys already in the file: its node lines would be refused as collisions), and every key the map
holds answers as the file does."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import lmdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import drsg
from drsg.store import bulkwrite, importahead, jsonl
from drsg.store.transaction import WriteTx


def _lines(nodes: int, edges: list[tuple[int, int]], interleaved: bool) -> list[dict[str, Any]]:
    """Node lines with a long text (the 1 MiB map fills: transactions run again), a third with a list
    property (read by msgspec, not the C scan), and each edge either right after the later of its
    ends or after every node (upstream's file)."""
    out: list[dict[str, Any]] = []
    waiting = sorted(edges, key=max) if interleaved else []
    for i in range(nodes):
        props: dict[str, Any] = {"text": "x" * 2000} if i % 3 else {"text": "x" * 2000, "tags": ["t", i]}
        out.append({"labels": ["W"], "external_key": f"k{i}", "properties": props})  # (tags: msgspec's, not the scan's)
        while waiting and max(waiting[0]) == i:
            src, dst = waiting.pop(0)
            out.append({"src_key": f"k{src}", "dst_key": f"k{dst}", "type": "SEE"})
    if not interleaved:
        out += [{"src_key": f"k{src}", "dst_key": f"k{dst}", "type": "SEE"} for src, dst in edges]
    return out


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    nodes=st.integers(450, 700),
    seed=st.integers(0, 2**32 - 1),
    interleaved=st.booleans(),
    commit_lines=st.sampled_from([5, 40, 300]),
    txn_bytes=st.sampled_from([30_000, 150_000]),
)
def test_keys_made_in_earlier_transactions_resolve_through_reruns(
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    nodes: int,
    seed: int,
    interleaved: bool,
    commit_lines: int,
    txn_bytes: int,
) -> None:
    rng = random.Random(seed)
    edges = [(rng.randrange(nodes), rng.randrange(nodes)) for _ in range(3 * nodes)]
    root = tmp_path_factory.mktemp("keymap")
    source = root / "g.jsonl"
    source.write_text("".join(json.dumps(line) + "\n" for line in _lines(nodes, edges, interleaved)))
    starts: list[int] = []  # where each run of a transaction began in the file
    maps: list[bulkwrite.KeyMap] = []
    transaction, make_map = jsonl._Importer._transaction, bulkwrite.key_map

    def counted(self: jsonl._Importer, tx: WriteTx, rewind: jsonl._Rewind) -> None:
        starts.append(rewind.offset)
        transaction(self, tx, rewind)

    def kept() -> bulkwrite.KeyMap | None:
        maps.append(made := make_map())  # type: ignore[arg-type]
        return made

    with monkeypatch.context() as patch:
        patch.setattr(jsonl._Importer, "_transaction", counted)
        patch.setattr(jsonl, "key_map", kept)
        with drsg.open(root / "g.drsg", map_size=1 << 20) as db:  # 1 MiB: transactions meet a full map
            db.write(lambda tx: tx.create_plane("p"))
            patch.setattr(db.env, "reserve", lambda extra: None)  # no headroom ahead: the map grows mid-import
            report = jsonl.import_jsonl(db, source, "p", commit_lines=commit_lines, txn_bytes=txn_bytes)
            assert (report.nodes_created, report.edges_created) == (nodes, len(edges))
            assert len(starts) > len(set(starts)) > 1  # several transactions, and some ran again
            with db.snapshot() as snap:
                plane = snap.plane("p").id
                ids = {f"k{i}": snap.node_id_by_key(plane, f"k{i}") for i in range(nodes)}
                key_of = {node_id: key for key, node_id in ids.items()}
                got = sorted((key_of[e.src], key_of[e.dst]) for e in snap.edges(plane))
    assert got == sorted((f"k{src}", f"k{dst}") for src, dst in edges)
    (keymap,) = maps
    assert len(keymap) == nodes  # every key made, once, published: and each answers as the file does
    assert {name: keymap.get(name) for name in ids} == ids


def test_past_its_cap_the_map_keeps_no_more_and_the_seeks_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    maps: list[bulkwrite.KeyMap] = []
    make_map = bulkwrite.key_map

    def small() -> bulkwrite.KeyMap | None:
        maps.append(made := make_map(50))  # type: ignore[arg-type]
        return made

    monkeypatch.setattr(jsonl, "key_map", small)
    source = tmp_path / "g.jsonl"
    edges = [(i, (i * 7 + 3) % 200) for i in range(200)]
    source.write_text("".join(json.dumps(line) + "\n" for line in _lines(200, edges, interleaved=False)))
    with drsg.open(tmp_path / "g.drsg") as db:
        report = jsonl.import_jsonl(db, source, "p", commit_lines=30, create_plane=True)
        assert (report.nodes_created, report.edges_created) == (200, 200)
        with db.snapshot() as snap:
            plane = snap.plane("p").id
            key_of = {node.id: node.key for node in snap.nodes(plane)}
            got = sorted((key_of[e.src], key_of[e.dst]) for e in snap.edges(plane))
    assert got == sorted((f"k{src}", f"k{dst}") for src, dst in edges)
    assert len(maps[0]) == 50


def test_a_rerun_does_not_answer_a_key_its_failed_run_made(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A transaction that fails after some of its commits flushed runs again from its start: its
    node lines must not find their own keys, made by the failed run, in the map (it publishes a
    transaction's keys only once it committed). Node lines with a list property: the C scan leaves
    them to msgspec, and the bulk path reads their keys' answers from look_up as given."""
    lines = [{"labels": ["W"], "external_key": f"k{i}", "properties": {"tags": ["a", i]}} for i in range(20)]
    source = tmp_path / "g.jsonl"
    source.write_text("".join(json.dumps(line) + "\n" for line in lines))
    commit, calls = jsonl._Importer._commit, []

    def failing_once(self: jsonl._Importer) -> None:
        calls.append(self.line_no)
        if len(calls) == 3:  # the transaction's third commit, after two flushed theirs: the map must grow
            raise lmdb.MapFullError("forced")
        commit(self)

    monkeypatch.setattr(jsonl._Importer, "_commit", failing_once)
    monkeypatch.setattr(importahead, "_enabled", False)  # (one transaction of several commits, from the first)
    with drsg.open(tmp_path / "g.drsg") as db:
        report = jsonl.import_jsonl(db, source, "p", commit_lines=5, create_plane=True)
        assert report.nodes_created == 20
        with db.snapshot() as snap:
            plane = snap.plane("p").id
            assert sorted(node.key for node in snap.nodes(plane)) == sorted(f"k{i}" for i in range(20))  # type: ignore[type-var]
    assert calls[:4] == [0, 5, 10, 0]  # the transaction ran again from its start


_names = st.text(st.sampled_from("ab\x00é"), max_size=20) | st.text(
    st.characters(exclude_categories=("Cs",)), min_size=14, max_size=40
)  # (a lone surrogate is no key look_up asks for)


@settings(max_examples=150, deadline=None)
@given(
    batches=st.lists(
        st.tuples(st.dictionaries(_names, st.integers(0, 2**64 - 1), max_size=60), st.booleans()), max_size=8
    ),
    asked=st.lists(_names, max_size=30),
)
def test_the_map_answers_as_a_dict_of_its_published_keys(
    batches: list[tuple[dict[str, int], bool]], asked: list[str]
) -> None:
    """Names short enough to sit in their slots and longer ones (compared in the arena), names one
    prefix of another, NUL and non-ASCII bytes, keys dropped and published across rehashes: each
    name the map is asked for answers as a dict of the published keys does (the last id given wins,
    as insert keeps it; the import never gives a key twice)."""
    keymap = bulkwrite.key_map()
    if keymap is None:
        pytest.skip("store/_bulk.c is not built")
    oracle: dict[str, int] = {}
    for key_ids, committed in batches:
        keymap.add(key_ids)
        if committed:
            keymap.publish()
            oracle.update(key_ids)
        else:
            keymap.drop()
    assert len(keymap) == sum(len(key_ids) for key_ids, committed in batches if committed)
    for name in [*oracle, *asked]:
        assert keymap.get(name) == oracle.get(name), name
