"""The keyword (BM25) index worker end to end: a real database, real tantivy, real sidecar files.

Documents are docstrings of the Python standard library (real English text that every test machine
has). Scores are checked against a brute-force BM25 (k1=1.2, b=0.75, upstream's IDF): equal to
float32 precision while documents are short (tantivy stores document lengths exactly up to ~40
terms), within a few percent for long documents (one-byte field norms), with the same ranking.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import json
import math
import random
import shutil
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgpack
import pytest

import drsg
from drsg.store.database import Database
from drsg.store.records import IndexDecl
from drsg.store.transaction import WriteTx
from drsg.workers.analysis import analyze
from drsg.workers.keyword import KeywordIndex

MODULES = [
    "json", "re", "os", "pathlib", "collections", "functools", "itertools", "textwrap", "shutil",
    "subprocess", "threading", "heapq", "bisect", "string", "random", "statistics", "csv", "argparse",
]  # fmt: skip
QUERIES = [
    "regular expression pattern match",
    "thread lock acquire",
    "sort heap queue",
    "file path directory",
    "random number generator",
    "iterator returns elements",
]


def stdlib_docstrings() -> list[str]:
    docs = set()
    for name in MODULES:
        module = importlib.import_module(name)
        for attr in dir(module):
            if not attr.startswith("_"):
                doc = inspect.getdoc(getattr(module, attr))
                if doc and len(doc) > 40:
                    docs.add(doc)
    return sorted(docs)


DOCS = stdlib_docstrings()


def brute_bm25(texts: dict[int, str], query: str, k: int = 10) -> list[tuple[int, float]]:
    """BM25 straight from the formula, over the same analyser's terms."""
    k1, b = 1.2, 0.75
    terms = {i: analyze(text, "english") for i, text in texts.items()}
    terms = {i: t for i, t in terms.items() if t}  # empty documents are not stored
    n = len(terms)
    if n == 0:
        return []
    avgdl = sum(len(t) for t in terms.values()) / n
    df = Counter(term for t in terms.values() for term in set(t))
    hits = []
    for node_id, t in terms.items():
        tf = Counter(t)
        score = 0.0
        for q in analyze(query, "english"):
            if tf[q]:
                idf = math.log((n - df[q] + 0.5) / (df[q] + 0.5) + 1)
                score += idf * tf[q] * (k1 + 1) / (tf[q] + k1 * (1 - b + b * len(t) / avgdl))
        if score > 0:
            hits.append((node_id, score))
    return sorted(hits, key=lambda h: (-h[1], h[0]))[:k]


# ---------------------------------------------------------------------- fixtures and helpers


@pytest.fixture
def db(db_path: Path) -> Iterator[Database]:
    database = drsg.open(db_path)
    yield database
    database.close()


def declare(db: Database, plane: str = "startup", language: str = "english", prop: str = "body") -> IndexDecl:
    def fn(tx: WriteTx) -> IndexDecl:
        return tx.declare_index(tx.ensure_plane(plane), "keyword", "Doc", prop, {"language": language})

    return db.write(fn).value


def worker_for(db: Database, decl: IndexDecl, uuid: str | None = None) -> KeywordIndex:
    return KeywordIndex(decl, Path(db.path), db.uuid if uuid is None else uuid)


def catch_up(worker: KeywordIndex, db: Database) -> KeywordIndex:
    for commit in db.commits(worker.seq + 1):
        worker.apply(commit.seq, commit.mutations)
    worker.flush()
    return worker


def write(db: Database, fn: Callable[[WriteTx], Any]) -> Any:
    return db.write(fn).value


def add_docs(db: Database, texts: list[str], plane: str = "startup", label: str = "Doc") -> dict[int, str]:
    def fn(tx: WriteTx) -> dict[int, str]:
        p = tx.plane(plane)
        return {tx.create_node(p, None, [label], {"body": text}).id: text for text in texts}

    return write(db, fn)


def results(worker: KeywordIndex, k: int = 10) -> dict[str, list[tuple[int, float]]]:
    return {q: worker.search(q, k) for q in QUERIES}


def hit_ids(worker: KeywordIndex, query: str, k: int = 1000) -> set[int]:
    return {node_id for node_id, _ in worker.search(query, k)}


@pytest.fixture
def built(db: Database) -> tuple[Database, IndexDecl, KeywordIndex, dict[int, str]]:
    decl = declare(db)
    docs = add_docs(db, DOCS)
    worker = catch_up(worker_for(db, decl), db)
    return db, decl, worker, docs


# ---------------------------------------------------------------------- searching


def test_search_ranks_by_bm25_then_node_id(built: tuple[Database, IndexDecl, KeywordIndex, dict[int, str]]) -> None:
    _, _, worker, docs = built
    assert len(worker) == len(docs)
    for query in QUERIES:
        hits = worker.search(query, 10)
        assert len(hits) == 10, query
        assert hits == sorted(hits, key=lambda h: (-h[1], h[0]))
        wanted = set(analyze(query, "english"))
        for node_id, score in hits:
            assert score > 0
            assert wanted & set(analyze(docs[node_id], "english")), (query, node_id)
    top = worker.search("regular expression", 3)
    assert all("regular expression" in docs[node_id].lower() for node_id, _ in top)
    assert worker.search("the and of", 10) == []  # stopwords only
    assert worker.search("zyzzyvaqq", 10) == []
    assert worker.search("regular", 0) == []
    # user text never reaches tantivy's query parser: its syntax is just text here
    assert worker.search('body:regular AND "expression" OR (pattern^3', 5) == worker.search(
        "body regular and expression or pattern 3", 5
    )


def test_scores_equal_brute_force_bm25_on_short_documents(db: Database) -> None:
    decl = declare(db)
    short = [" ".join(doc.split()[:25]) for doc in DOCS]  # < 40 terms: exact field norms
    texts = add_docs(db, short)
    worker = catch_up(worker_for(db, decl), db)
    for query in QUERIES:
        got, want = worker.search(query, 10), brute_bm25(texts, query)
        assert [h[0] for h in got] == [h[0] for h in want], query
        for (_, score), (_, expected) in zip(got, want, strict=True):
            assert score == pytest.approx(expected, rel=1e-5), query


def test_long_documents_differ_from_exact_bm25_only_by_field_norm_rounding(
    built: tuple[Database, IndexDecl, KeywordIndex, dict[int, str]],
) -> None:
    _, _, worker, docs = built
    same_order = 0
    for query in QUERIES:
        got = worker.search(query, 10)
        want = dict(brute_bm25(docs, query, k=len(docs)))
        for node_id, score in got:
            assert score == pytest.approx(want[node_id], rel=0.05), (query, node_id)
        same_order += [h[0] for h in got] == sorted(want, key=lambda i: (-want[i], i))[:10]
    assert same_order >= len(QUERIES) - 2


def test_ties_are_broken_by_ascending_node_id(db: Database) -> None:
    decl = declare(db)
    twins = sorted(add_docs(db, ["identical graph text"] * 25 + ["graph"] * 3))
    worker = catch_up(worker_for(db, decl), db)
    hits = worker.search("graph", 30)
    assert len({score for _, score in hits}) == 2
    assert [h[0] for h in hits] == sorted(twins[25:]) + twins[:25]  # short docs first, then by id
    assert [h[0] for h in worker.search("identical", 4)] == twins[:4]
    assert [h[0] for h in worker.search("identical", 1)] == twins[:1]


def test_duplicate_query_terms_count_once_per_occurrence(db: Database) -> None:
    decl = declare(db)
    texts = add_docs(db, ["graph store", "vector store", "graph graph graph"])
    worker = catch_up(worker_for(db, decl), db)
    once, twice = dict(worker.search("graph store", 5)), dict(worker.search("graph graph store", 5))
    for node_id, text in texts.items():
        if "graph" in text and node_id in once:
            assert twice[node_id] > once[node_id]
    assert dict(brute_bm25(texts, "graph graph store")) == pytest.approx(twice, rel=1e-5)


def test_chinese_index_finds_a_word_inside_a_compound(db: Database) -> None:
    decl = declare(db, language="zh")
    texts = add_docs(db, ["广告点击率很高", "用户点击了按钮", "今天天气很好"])
    worker = catch_up(worker_for(db, decl), db)
    (first, _), *_ = worker.search("广告", 5)
    assert texts[first] == "广告点击率很高"
    assert len(worker.search("广告", 5)) == 1
    assert {texts[i] for i, _ in worker.search("点击", 5)} == {"广告点击率很高", "用户点击了按钮"}


# ---------------------------------------------------------------------- keeping up with the log


def test_updates_deletes_and_label_changes(built: tuple[Database, IndexDecl, KeywordIndex, dict[int, str]]) -> None:
    db, decl, worker, docs = built
    target = next(iter(hit_ids(worker, "regular expression")))
    write(db, lambda tx: tx.update_node(tx.plane("startup"), target, {"body": "zebras graze on the savanna"}))
    catch_up(worker, db)
    assert target not in hit_ids(worker, "regular expression")
    assert worker.search("zebra", 5)[0][0] == target

    # another property changes, the text does not: nothing moves
    before = results(worker)
    write(db, lambda tx: tx.update_node(tx.plane("startup"), target, {"rank": 7}))
    catch_up(worker, db)
    assert results(worker) == before

    write(db, lambda tx: tx.update_node(tx.plane("startup"), target, labels=["Other"]))
    catch_up(worker, db)
    assert worker.search("zebra", 5) == []
    write(db, lambda tx: tx.update_node(tx.plane("startup"), target, labels=["Doc", "Other"]))
    catch_up(worker, db)
    assert [h[0] for h in worker.search("zebra", 5)] == [target]

    victim = worker.search("heap", 1)[0][0]
    write(db, lambda tx: tx.delete_node(tx.plane("startup"), victim))
    catch_up(worker, db)
    assert victim not in hit_ids(worker, "heap")
    assert len(worker) == len(docs) - 1
    assert_equals_rebuild(worker, db, decl)


def test_only_non_empty_strings_of_the_label_and_plane_are_indexed(db: Database) -> None:
    decl = declare(db)
    write(db, lambda tx: tx.create_plane("elsewhere"))

    def fn(tx: WriteTx) -> None:
        p, other = tx.plane("startup"), tx.plane("elsewhere")
        tx.create_node(p, "num", ["Doc"], {"body": 42})
        tx.create_node(p, "list", ["Doc"], {"body": ["graph", "store"]})
        tx.create_node(p, "map", ["Doc"], {"body": {"graph": "store"}})
        tx.create_node(p, "empty", ["Doc"], {"body": ""})
        tx.create_node(p, "stop", ["Doc"], {"body": "the and of"})  # analyses to nothing: not stored
        tx.create_node(p, "none", ["Doc"], {"title": "graph store"})
        tx.create_node(p, "label", ["Page"], {"body": "graph store"})
        tx.create_node(other, "plane", ["Doc"], {"body": "graph store"})
        tx.create_node(p, "yes", ["Doc"], {"body": "graph store"})

    write(db, fn)
    worker = catch_up(worker_for(db, decl), db)
    assert len(worker) == 1
    with db.snapshot() as snap:
        yes = snap.node_by_key(0, "yes")
    assert yes is not None
    assert [h[0] for h in worker.search("graph", 10)] == [yes.id]

    # a text value replaced by a number leaves the index
    write(db, lambda tx: tx.update_node(tx.plane("startup"), "@yes", {"body": 3.5}))
    catch_up(worker, db)
    assert len(worker) == 0


def test_plane_drop_and_index_drop_empty_the_index(db: Database) -> None:
    decl = declare(db, plane="docs")
    add_docs(db, DOCS[:50], plane="docs")
    add_docs(db, DOCS[:50])  # the startup plane: not this index
    worker = catch_up(worker_for(db, decl), db)
    assert len(worker) == 50
    write(db, lambda tx: tx.drop_plane("docs"))
    catch_up(worker, db)
    assert len(worker) == 0
    assert worker.search("file", 10) == []

    decl2 = declare(db)
    worker2 = catch_up(worker_for(db, decl2), db)
    assert len(worker2) == 50
    write(db, lambda tx: tx.drop_index(tx.plane("startup"), "keyword", "Doc", "body"))
    catch_up(worker2, db)
    assert len(worker2) == 0


def test_replaying_commits_is_harmless(built: tuple[Database, IndexDecl, KeywordIndex, dict[int, str]]) -> None:
    db, decl, worker, _ = built
    before = results(worker)
    for commit in db.commits():
        worker.apply(commit.seq, commit.mutations)
    worker.flush()
    assert results(worker) == before
    fresh = worker_for(db, decl)
    for commit in db.commits():  # every commit applied twice in a row
        fresh.apply(commit.seq, commit.mutations)
        fresh.apply(commit.seq, commit.mutations)
    fresh.flush()
    assert results(fresh) == before


# ---------------------------------------------------------------------- sidecars


def assert_equals_rebuild(worker: KeywordIndex, db: Database, decl: IndexDecl) -> None:
    fresh = worker_for(db, decl)
    with db.snapshot() as snap:
        fresh.rebuild(snap)
    assert fresh.seq == db.head()
    for query, hits in results(worker, k=50).items():
        expected = fresh.search(query, 50)
        assert [h[0] for h in hits] == [h[0] for h in expected], query
        assert [h[1] for h in hits] == pytest.approx([h[1] for h in expected], abs=1e-4), query


def test_save_and_load_give_the_same_results(built: tuple[Database, IndexDecl, KeywordIndex, dict[int, str]]) -> None:
    db, decl, worker, _ = built
    worker.save()
    assert not worker.dirty
    version = next(p for p in worker.sidecar.dir.iterdir() if p.is_dir())
    assert all(p.is_file() for p in version.iterdir())  # plain files only
    assert not any(p.name.endswith(".lock") for p in version.iterdir())

    loaded = worker_for(db, decl)
    assert loaded.load(db.head())
    assert loaded.seq == worker.seq
    assert results(loaded) == results(worker)

    # a loaded index keeps up with the log and saves again
    add_docs(db, ["zebras graze on the savanna"])
    catch_up(loaded, db)
    assert len(loaded.search("zebra", 3)) == 1
    loaded.save()
    again = worker_for(db, decl)
    assert again.load(db.head())
    assert results(again) == results(loaded)
    assert len(again.search("zebra", 3)) == 1

    assert not worker_for(db, decl).load(worker.seq - 1)  # a checkpoint ahead of the log


def test_a_damaged_sidecar_is_rejected_and_rebuilt(db: Database) -> None:
    decl = declare(db)
    first, *_ = add_docs(db, DOCS[:150])
    worker = catch_up(worker_for(db, decl), db)
    write(db, lambda tx: tx.delete_node(tx.plane("startup"), first))
    catch_up(worker, db)
    worker.save()
    expected = results(worker)
    assert sum(len(hits) for hits in expected.values()) > 10
    side = worker.sidecar.dir
    pristine = side.parent / "pristine"
    shutil.copytree(side, pristine)
    rng = random.Random(20240607)
    files = sorted(p.relative_to(side) for p in side.rglob("*") if p.is_file())
    assert len(files) == 3  # CURRENT, manifest.json, docs.msgpack
    for rel in files:
        for damage in ("flip", "truncate", "remove"):
            shutil.rmtree(side)
            shutil.copytree(pristine, side)
            path = side / rel
            data = path.read_bytes()
            if damage == "flip" and data:
                offset = rng.randrange(len(data))
                path.write_bytes(data[:offset] + bytes([data[offset] ^ 0x5A]) + data[offset + 1 :])
            elif damage == "truncate":
                path.write_bytes(data[: rng.randrange(len(data))] if data else b"")
                if not data:
                    continue
            else:
                path.unlink()
            fresh = worker_for(db, decl)
            assert not fresh.load(db.head()), (rel, damage)
            with db.snapshot() as snap:
                fresh.rebuild(snap)
            assert results(fresh) == expected, (rel, damage)
    shutil.rmtree(side)
    shutil.copytree(pristine, side)
    assert worker_for(db, decl).load(db.head())


def test_a_sidecar_from_another_database_or_declaration_is_rejected(
    built: tuple[Database, IndexDecl, KeywordIndex, dict[int, str]], tmp_path: Path
) -> None:
    db, decl, worker, _ = built
    worker.save()
    assert not worker_for(db, decl, uuid="0" * 32).load(db.head())

    # the same files beside another database (same path layout, another uuid)
    other_path = tmp_path / "other.drsg"
    other = drsg.open(other_path)
    try:
        shutil.copytree(Path(f"{db.path}.bm25"), Path(f"{other_path}.bm25"))
        assert other.uuid != db.uuid
        assert not KeywordIndex(decl, other_path, other.uuid).load(db.head())
    finally:
        other.close()

    # a different analyser language is a different index
    german = IndexDecl(decl.plane, decl.kind, decl.label, decl.prop, {"language": "german"})
    assert not worker_for(db, german).load(db.head())


def test_a_well_checksummed_but_malformed_sidecar_is_rejected_without_a_crash(
    built: tuple[Database, IndexDecl, KeywordIndex, dict[int, str]],
) -> None:
    """Checksums stop accidents; these files pass them (the manifest is rewritten to match)."""
    db, decl, worker, _ = built
    worker.save()
    expected = results(worker)
    version = next(p for p in worker.sidecar.dir.iterdir() if p.is_dir())
    assert sorted(p.name for p in version.iterdir()) == ["docs.msgpack", "manifest.json"]
    docs_file, manifest_file = version / "docs.msgpack", version / "manifest.json"
    original, manifest = docs_file.read_bytes(), json.loads(manifest_file.read_text())
    header = msgpack.packb({"format": 1, "count": 2})
    bad = [
        b"",
        original[: len(original) // 2],  # torn: fewer records than the header says
        msgpack.packb([1, 2, 3]),  # no header
        header + msgpack.packb([2, "graph"]) + msgpack.packb([1, "store"]),  # ids out of order
        header + msgpack.packb([1, "graph"]) + msgpack.packb([1, "graph"]),  # duplicate id
        header + msgpack.packb([1, "graph"]) + msgpack.packb(["x", "store"]),  # not an id
        header + msgpack.packb([1, "graph"]) + msgpack.packb([2, ""]),  # empty document
        header + msgpack.packb([1, "graph"]) + msgpack.packb([2**63, "store"]),  # id out of range
        header + b"\xc1" * 20,  # never-used msgpack byte
    ]
    for content in bad:
        docs_file.write_bytes(content)
        manifest["files"]["docs.msgpack"] = hashlib.sha256(content).hexdigest()
        manifest_file.write_text(json.dumps(manifest, sort_keys=True))
        fresh = worker_for(db, decl)
        assert not fresh.load(db.head()), content[:40]
        assert len(fresh) == 0  # nothing half-loaded
        with db.snapshot() as snap:
            fresh.rebuild(snap)
        assert results(fresh) == expected


def test_search_limit_is_clamped_and_an_empty_index_is_still_truthy(db: Database) -> None:
    decl = declare(db)
    worker = catch_up(worker_for(db, decl), db)
    assert len(worker) == 0 and worker
    assert worker.search("graph", 10) == []
    add_docs(db, ["graph store", "graph"])
    catch_up(worker, db)
    assert len(worker.search("graph", 10**12)) == 2
    assert worker.search("graph", 10**12) == worker.search("graph", 2)
