"""A read loads only the indexes of the plane it searches (workers/manager.py's ``lazy`` set, the
Python API's and so every one-shot command's): a search on plane a of a database that also indexes
plane b reads none of b's sidecars, and b's load when a read first asks for them, once, kept for
the reads after it. Hits are those of a set that loads every index (serve's, `drsg workers`')."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import drsg
from drsg.api.database import Database as ApiDatabase
from drsg.kernel.values import Vector
from drsg.store.database import Database
from drsg.store.snapshot import Snapshot
from drsg.workers.base import IndexWorker
from drsg.workers.manager import IndexSet
from drsg.workers.search import Hit, Searcher

WORDS = ["graph store", "vector index", "keyword search", "append only log", "graph index"]


def _fill(db: Database) -> None:
    for name in ("a", "b"):
        db.write(lambda tx, n=name: tx.declare_index(tx.ensure_plane(n), "vector", "Doc", "emb", {}))
        db.write(lambda tx, n=name: tx.declare_index(tx.ensure_plane(n), "keyword", "Doc", "text", {}))
        for i, text in enumerate(WORDS):
            emb = Vector.of([float(i + 1), float(len(name)), float(i % 2), 0.5])
            db.write(
                lambda tx, n=name, i=i, t=text, e=emb: tx.create_node(
                    tx.ensure_plane(n), f"{n}{i}", ["Doc"], {"emb": e, "text": f"{n} {t}"}
                )
            )


@pytest.fixture
def path(tmp_path: Path) -> Path:
    """A database with a vector and a keyword index on each of planes a and b, sidecars saved."""
    path = tmp_path / "g.drsg"
    db = drsg.open(path)
    assert isinstance(db, Database)
    _fill(db)
    indexes = IndexSet(db)  # what `drsg index ensure` leaves: every index caught up and saved
    indexes.catch_up()
    indexes.close()
    db.close()
    return path


@pytest.fixture
def loads(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, str, str]]:
    """Every worker's start, as (plane id, kind, how): a sidecar read, or a build from the log."""
    started: list[tuple[int, str, str]] = []
    load, rebuild = IndexWorker.load, IndexWorker.rebuild

    def loading(self: IndexWorker, head: int, reach: Callable[[int], bool] | None = None) -> bool:
        started.append((self.decl.plane, self.kind, "sidecar"))
        return load(self, head, reach)

    def building(self: IndexWorker, snap: Snapshot) -> None:
        started.append((self.decl.plane, self.kind, "build"))
        rebuild(self, snap)

    monkeypatch.setattr(IndexWorker, "load", loading)
    monkeypatch.setattr(IndexWorker, "rebuild", building)
    return started


@pytest.fixture
def db(path: Path) -> Iterator[ApiDatabase]:
    database = drsg.open(path)
    assert isinstance(database, ApiDatabase)
    yield database
    database.close()


def _ids(db: ApiDatabase) -> dict[str, int]:
    with db.store.snapshot() as snap:
        return {p.name: p.id for p in snap.planes()}


def _searches(db: ApiDatabase, plane: str) -> list[list[tuple[str | None, float | None]]]:
    """A vector and a keyword search on ``plane`` through the Python API, as (key, score) lists."""
    near = db.plane(plane).search([2.0, 1.0, 1.0, 0.5], "emb", label="Doc", k=3)
    words = db.plane(plane).search("graph", "text", keyword=True, label="Doc", k=3)
    return [[(h.node.key, h.score) for h in hits] for hits in (near, words)]


def _full_load(db: ApiDatabase, plane: str) -> list[list[tuple[str | None, float | None]]]:
    """The same searches through a set that loads every index (as serve's and `drsg workers`' do)."""
    store = db.store
    searcher = Searcher(store, IndexSet(store))
    hits: list[list[Hit]] = [
        searcher.vector(plane, "Doc", "emb", Vector.of([2.0, 1.0, 1.0, 0.5]), k=3),
        searcher.keyword(plane, "Doc", "text", "graph", k=3),
    ]
    planes = _ids(db)
    assert {w.decl.plane for w in searcher.indexes.workers.values()} == {planes["a"], planes["b"]}
    return [[(h.node.key, h.score) for h in found] for found in hits]


def test_a_search_on_one_plane_reads_no_other_planes_sidecars(
    path: Path, db: ApiDatabase, loads: list[tuple[int, str, str]]
) -> None:
    planes = _ids(db)
    found = _searches(db, "a")
    assert sorted(loads) == [(planes["a"], "keyword", "sidecar"), (planes["a"], "vector", "sidecar")]
    assert {w.decl.plane for w in db.searcher.indexes.workers.values()} == {planes["a"]}
    assert found == _full_load(db, "a")
    assert all(found)  # the searches did find: the comparison is not of two empty lists


def test_a_long_lived_process_loads_another_plane_once_when_a_read_asks(
    path: Path, db: ApiDatabase, loads: list[tuple[int, str, str]]
) -> None:
    planes = _ids(db)
    on_a = _searches(db, "a")
    on_b = _searches(db, "b")
    assert _searches(db, "b") == on_b and _searches(db, "a") == on_a  # answered from what is held
    assert sorted(loads) == sorted(
        (planes[p], kind, "sidecar") for p in ("a", "b") for kind in ("vector", "keyword")
    )  # each index started once
    assert (on_a, on_b) == (_full_load(db, "a"), _full_load(db, "b"))
    # b's indexes, held now, keep up with the log: a node written since is found, with no new load
    db.plane("b").put("b9", labels=["Doc"], props={"emb": Vector.of([2.0, 1.0, 1.0, 0.5]), "text": "graph graph"})
    loads.clear()
    near, words = _searches(db, "b")
    assert near[:2] == [("b1", near[0][1]), ("b9", near[0][1])] and words[0][0] == "b9"  # (b1's vector is b9's)
    assert loads == []


def test_a_read_as_of_an_earlier_commit_loads_no_index(db: ApiDatabase, loads: list[tuple[int, str, str]]) -> None:
    head = db.store.head()
    near = db.plane("b").search([2.0, 1.0, 1.0, 0.5], "emb", label="Doc", k=3, as_of=head - 1)
    assert near and loads == []  # searched exactly, as today


def test_the_indexes_a_lazy_set_has_not_loaded_are_not_saved_over(
    path: Path, db: ApiDatabase, loads: list[tuple[int, str, str]]
) -> None:
    b = _ids(db)["b"]

    def b_files() -> dict[Path, int]:
        """Each file and folder of b's sidecars, with when it last changed."""
        roots = (Path(f"{path}.hnsw"), Path(f"{path}.bm25"))
        found = (f for root in roots for f in root.rglob("*") if f.relative_to(root).parts[0].startswith(f"{b}-"))
        return {f: f.stat().st_mtime_ns for f in found}

    before = b_files()
    _searches(db, "a")
    db.plane("b").put("b8", labels=["Doc"], props={"text": "more graph"})  # b's indexes are behind now
    db.close()  # saves what the set holds: a's
    assert b_files() == before and len(before) >= 2


def test_every_kind_of_read_loads_only_its_planes_indexes(db: ApiDatabase, loads: list[tuple[int, str, str]]) -> None:
    a = _ids(db)["a"]
    plane = db.plane("a")
    reads: list[Callable[[], object]] = [
        lambda: plane.query("SEARCH (d:Doc) ON emb NEAR [2, 1, 1, 0.5] TOPK 2"),
        lambda: plane.query('SEARCH (d:Doc) ON text MATCHING "graph" TOPK 2'),
        lambda: plane.cypher('SEARCH (d:Doc) ON text MATCHING "graph" TOPK 2 RETURN d.text'),
        lambda: plane.cypher("SEARCH (d:Doc) ON emb NEAR [2, 1, 1, 0.5] TOPK 2 RETURN d.text"),
        lambda: plane.hybrid("graph", label="Doc", keyword="text", graph_hops=0, k=2),
    ]
    for read in reads:
        assert read()  # each finds something, from plane a's indexes alone
        assert {p for p, _kind, _how in loads} == {a}


def test_a_server_keeps_every_index_loaded_once_and_answers_on_both_planes(
    db: ApiDatabase, loads: list[tuple[int, str, str]]
) -> None:
    from drsg.kernel.settings import load
    from drsg.surfaces.server.config import server_config
    from drsg.surfaces.server.queries import plane_search
    from drsg.surfaces.server.state import ServerState

    planes = _ids(db)
    state = ServerState(db, server_config(load(environ={})))
    state.start()  # its background indexer holds every index, as before
    try:

        def on(plane: str) -> list[list[tuple[str | None, float | None]]]:
            near = {"plane": plane, "property": "emb", "label": "Doc", "query": [2.0, 1.0, 1.0, 0.5], "k": 3}
            words = {"plane": plane, "property": "text", "label": "Doc", "query": "graph", "kind": "keyword", "k": 3}
            answers = [asyncio.run(plane_search(state, p)) for p in (near, words)]
            return [[(h["external_key"], h["score"]) for h in answer] for answer in answers]

        on_a, on_b, again = on("a"), on("b"), on("b")
    finally:
        state.close()
    assert sorted(loads) == sorted((planes[p], k, "sidecar") for p in ("a", "b") for k in ("vector", "keyword"))
    assert on_b == again and (on_a, on_b) == (_full_load(db, "a"), _full_load(db, "b"))


def test_a_search_naming_its_index_loads_that_index_alone(db: ApiDatabase, loads: list[tuple[int, str, str]]) -> None:
    planes = _ids(db)
    assert db.plane("a").search("graph", "text", keyword=True, label="Doc", k=2)
    assert loads == [(planes["a"], "keyword", "sidecar")]  # not a's vector index
    assert db.plane("b").query("SEARCH (d:Doc) ON emb NEAR [2, 1, 1, 0.5] TOPK 2")
    assert loads[1:] == [(planes["b"], "vector", "sidecar")]  # a statement's source names its index too
    assert db.plane("a").hybrid("graph", label="Doc", keyword="text", graph_hops=0, k=2)
    assert loads[2:] == []  # a keyword-only hybrid query: the keyword index it names, held already


def _declare_more(path: Path) -> int:
    """A second vector and a second keyword index on plane a, on other properties: a read that
    names its indexes leaves these unloaded (a read that loads its plane's would start them).
    Returns a's id."""
    db = drsg.open(path)
    assert isinstance(db, ApiDatabase)
    for kind, prop in (("vector", "emb2"), ("keyword", "title")):
        db.store.write(lambda tx, k=kind, p=prop: tx.declare_index(tx.ensure_plane("a"), k, "Doc", p, {}))
    a = _ids(db)["a"]
    db.close()
    return a


def _each_fresh(
    path: Path, reads: list[Callable[[ApiDatabase], object]], loads: list[tuple[int, str, str]]
) -> list[tuple[object, list[tuple[int, str, str]]]]:
    """Each read in a process of its own (a new database handle, nothing loaded): (its answer, what it loaded)."""
    out: list[tuple[object, list[tuple[int, str, str]]]] = []
    for read in reads:
        db = drsg.open(path)
        assert isinstance(db, ApiDatabase)
        loads.clear()
        try:
            out.append((read(db), sorted(loads)))
        finally:
            db.close()
    return out


def _with_every_index(path: Path, reads: list[Callable[[ApiDatabase], object]]) -> list[object]:
    """The same reads with every index of a loaded first, as a read loaded them before."""
    db = drsg.open(path)
    assert isinstance(db, ApiDatabase)
    try:
        db.searcher.indexes.catch_up(plane=_ids(db)["a"])
        assert len(db.searcher.indexes.workers) == 4
        return [read(db) for read in reads]
    finally:
        db.close()


def _cypher(statement: str, params: dict[str, object] | None = None) -> Callable[[ApiDatabase], object]:
    return lambda db: db.plane("a").cypher(statement, params).rows


def _hits(hits: list[Hit]) -> list[tuple[str | None, float | None]]:
    return [(h.node.key, h.score) for h in hits]


def test_a_cypher_search_loads_the_one_index_it_names(path: Path, loads: list[tuple[int, str, str]]) -> None:
    a = _declare_more(path)
    reads = [
        _cypher("SEARCH (d:Doc) ON emb NEAR [2, 1, 1, 0.5] TOPK 2 RETURN d.text"),
        _cypher('SEARCH (d:Doc) ON text MATCHING "graph" TOPK 2 RETURN d.text'),
        # a parameter defers the source to the row plan: it names its index all the same
        _cypher("SEARCH (d:Doc) ON emb NEAR $v TOPK 2 RETURN d.text AS t ORDER BY t", {"v": [2, 1, 1, 0.5]}),
        _cypher("SEARCH (d:Doc) ON text MATCHING $q TOPK 2 WITH d RETURN d.text", {"q": "graph"}),
    ]
    found = _each_fresh(path, reads, loads)
    assert all(answer for answer, _ in found)
    # each its one index: not emb2's, title's, nor the other kind's
    assert [loaded for _, loaded in found] == [[(a, kind, "sidecar")] for kind in ("vector", "keyword") * 2]
    assert _with_every_index(path, reads) == [answer for answer, _ in found]  # the same rows


def test_a_hybrid_query_loads_its_vector_and_keyword_indexes_alone(
    path: Path, loads: list[tuple[int, str, str]]
) -> None:
    a = _declare_more(path)
    near = 'VECTOR ON emb NEAR [2, 1, 1, 0.5] KEYWORD ON text MATCHING "graph" TOPK 3'
    reads: list[Callable[[ApiDatabase], object]] = [
        lambda db: _hits(db.plane("a").hybrid("graph", label="Doc", keyword="text", graph_hops=1, k=3)),
        lambda db: _hits(db.plane("a").query(f"HYBRID (d:Doc) {near}")),
        _cypher(f"HYBRID (d:Doc) {near} RETURN d.text"),
        _cypher(
            "HYBRID (d:Doc) VECTOR ON emb NEAR $v KEYWORD ON text MATCHING $q TOPK 3 RETURN d.text",
            {"v": [2, 1, 1, 0.5], "q": "graph"},
        ),
    ]
    found = _each_fresh(path, reads, loads)
    both = [(a, "keyword", "sidecar"), (a, "vector", "sidecar")]
    assert all(answer for answer, _ in found)
    assert [loaded for _, loaded in found] == [both[:1], both, both, both]  # (the first: keyword and graph channels)
    assert _with_every_index(path, reads) == [answer for answer, _ in found]  # the same hits
