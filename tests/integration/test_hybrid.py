"""Hybrid retrieval end to end: channels over a snapshot, the graph channel, the CLI's output lines,
the embedder check, AS OF, and the HYBRID query form. Real text (the seed chapter's paragraphs),
real GloVe vectors, and the real local embedder."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from drsg.kernel.asof import AsOf
from drsg.kernel.errors import QuerySyntaxError, UsageError
from drsg.kernel.values import Vector
from drsg.plan.hybrid import GraphPart, HybridSpec, KeywordPart, VectorPart
from drsg.plan.query import Plan
from drsg.plan.statements import parse_query
from drsg.store.database import Database
from drsg.workers.hybrid import HybridHit, expand, hybrid
from drsg.workers.manager import IndexSet
from drsg.workers.search import Searcher
from tests.support.glove import rows

SEED = Path(__file__).resolve().parents[1] / "data" / "ai_native_en.txt"
PARAGRAPHS = [p.strip() for p in SEED.read_text().split("\n\n") if len(p.strip()) > 40][:30]
N = len(PARAGRAPHS)
# Edges: a chain p0–p1–p2–p3, a directed cycle p5→p6→p7→p5, p0 and p9 ABOUT a Topic node (no
# text, no vector, another label), and p20 with no edge at all.
EDGES = [
    ("p0", "p1", "NEXT"),
    ("p1", "p2", "NEXT"),
    ("p2", "p3", "NEXT"),
    ("p5", "p6", "CITES"),
    ("p6", "p7", "CITES"),
    ("p7", "p5", "CITES"),
    ("p0", "topic", "ABOUT"),
    ("p9", "topic", "ABOUT"),
]
LINE = re.compile(r"^  (\d+\.\d{4})\t(\S+)\t\[v=(-|-?\d+\.\d{3}) k=(-|\d+\.\d{3}) g=(-|\d\.\d{3})\]$")

Run = Callable[..., Any]


def _vec(i: int) -> Vector:
    return Vector.of([float(x) for x in rows(1000 + i, 1)[0]])


@pytest.fixture
def graph_db(drsg: Run, tmp_path: Path, db_path: Path) -> Path:
    """Seed paragraphs as Doc nodes with GloVe vectors, a Topic node, edges, a keyword index."""
    vectors = rows(1000, N)
    f = tmp_path / "graph.jsonl"
    with f.open("w") as fh:
        for i, (text, vec) in enumerate(zip(PARAGRAPHS, vectors, strict=True)):
            props = {"body": text, "embedding": {"$vector": [float(x) for x in vec]}}
            fh.write(json.dumps({"labels": ["Doc"], "external_key": f"p{i}", "properties": props}) + "\n")
        fh.write(json.dumps({"labels": ["Topic"], "external_key": "topic", "properties": {"name": "retrieval"}}) + "\n")
        for src, dst, kind in EDGES:
            fh.write(json.dumps({"src_key": src, "dst_key": dst, "type": kind}) + "\n")
    ran = drsg("import", str(f), "--plane", "docs", "--create-plane")
    assert ran.code == 0, ran.err
    assert drsg("index", "keyword", "Doc", "body", "--plane", "docs").code == 0
    return db_path


@pytest.fixture
def searcher(graph_db: Path) -> Iterator[Searcher]:
    db = Database(graph_db, create=False)
    try:
        yield Searcher(db, IndexSet(db))
    finally:
        db.close()


def _ids(s: Searcher) -> dict[str, int]:
    with s.db.snapshot() as snap:
        plane = snap.plane("docs").id
        return {n.key: n.id for n in snap.nodes(plane) if n.key is not None}


def _keys(s: Searcher, hits: list[HybridHit]) -> list[str | None]:
    return [h.node.key for h in hits]


# ---------------------------------------------------------------------- the graph channel


def test_expand_decays_per_hop_over_undirected_edges_of_every_type(searcher: Searcher) -> None:
    ids = _ids(searcher)
    key = {v: k for k, v in ids.items()}
    with searcher.db.snapshot() as snap:
        plane = snap.plane("docs").id

        def run(seeds: list[str], hops: int, decay: float = 0.5) -> dict[str, float]:
            return {key[n]: s for n, s in expand(snap, plane, [ids[x] for x in seeds], hops, decay).items()}

        assert run(["p0"], 0) == {"p0": 1.0}
        assert run(["p0"], 1) == {"p0": 1.0, "p1": 0.5, "topic": 0.5}  # ABOUT too, and a Topic node
        assert run(["p0"], 2) == {"p0": 1.0, "p1": 0.5, "topic": 0.5, "p2": 0.25, "p9": 0.25}
        assert run(["p3"], 3) == {"p3": 1.0, "p2": 0.5, "p1": 0.25, "p0": 0.125}  # against edge direction
        assert run(["p0"], 3, decay=0.8)["p3"] == pytest.approx(0.8**3)
        assert run(["p0"], 1, decay=0.0) == {"p0": 1.0, "p1": 0.0, "topic": 0.0}


def test_expand_cycles_multi_source_and_lonely_seeds(searcher: Searcher) -> None:
    ids = _ids(searcher)
    key = {v: k for k, v in ids.items()}
    with searcher.db.snapshot() as snap:
        plane = snap.plane("docs").id

        def run(seeds: list[str], hops: int) -> dict[str, float]:
            return {key[n]: s for n, s in expand(snap, plane, [ids[x] for x in seeds], hops, 0.5).items()}

        # The cycle p5→p6→p7→p5: both others are one hop away either way; walking on adds nothing.
        assert run(["p5"], 1) == {"p5": 1.0, "p6": 0.5, "p7": 0.5}
        assert run(["p5"], 50) == {"p5": 1.0, "p6": 0.5, "p7": 0.5}
        # Several seeds: each node takes its nearest seed; seeds stay 1.0 even when adjacent.
        assert run(["p0", "p3"], 1) == {"p0": 1.0, "p3": 1.0, "p1": 0.5, "p2": 0.5, "topic": 0.5}
        assert run(["p0", "p1"], 1) == {"p0": 1.0, "p1": 1.0, "p2": 0.5, "topic": 0.5}
        assert run(["p20"], 3) == {"p20": 1.0}  # a seed without neighbours
        assert run(["p20", "p20"], 1) == {"p20": 1.0}  # duplicates are one seed


@given(
    st.lists(st.sampled_from(["p0", "p3", "p5", "p9", "p20", "topic"]), max_size=4),
    st.integers(min_value=0, max_value=5),
    st.floats(min_value=0.0, max_value=1.0),
)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_expand_matches_a_reference_bfs(searcher: Searcher, seeds: list[str], hops: int, decay: float) -> None:
    """Property: every node within ``hops`` of the nearest seed scores decay^distance, no other."""
    adjacency: dict[str, set[str]] = {}
    for src, dst, _ in EDGES:
        adjacency.setdefault(src, set()).add(dst)
        adjacency.setdefault(dst, set()).add(src)
    dist = dict.fromkeys(seeds, 0)
    frontier = list(dict.fromkeys(seeds))
    for level in range(1, hops + 1):
        frontier = [m for n in frontier for m in sorted(adjacency.get(n, ())) if m not in dist]
        for m in frontier:
            dist.setdefault(m, level)
        frontier = list(dict.fromkeys(frontier))
    ids = _ids(searcher)
    key = {v: k for k, v in ids.items()}
    with searcher.db.snapshot() as snap:
        got = expand(snap, snap.plane("docs").id, [ids[x] for x in seeds], hops, decay)
    assert {key[n]: s for n, s in got.items()} == {n: decay**d for n, d in dist.items()}
    assert all(0.0 <= s <= 1.0 for s in got.values())


def test_one_hop_neighbours_score_decay_not_zero(searcher: Searcher) -> None:
    """The deliberate fix: the graph channel is normalised by its range [0, 1], so a one-hop
    neighbour contributes w_graph × decay; upstream's min-max (graph_norm="minmax") gives it 0."""
    ids = _ids(searcher)
    spec = HybridSpec(
        label="Doc",
        vector=VectorPart("embedding", _vec(7)),
        graph=GraphPart(hops=1, seeds=1),
        candidates=N,
        k=N + 1,
    )
    by = {h.node.key: h for h in hybrid(searcher, "docs", spec)}
    top = hybrid(searcher, "docs", spec)[0]
    assert (
        top.node.key == "p7" and top.channels["graph"] == 1.0 and top.channels["vector"] == pytest.approx(0, abs=1e-6)
    )
    assert top.score == pytest.approx(1.0 + 0.5)
    for neighbour in ("p5", "p6"):
        hit = by[neighbour]
        assert hit.channels["graph"] == 0.5 and hit.normalised["graph"] == 0.5
        assert hit.score == pytest.approx(hit.normalised["vector"] + 0.5 * 0.5)  # type: ignore[operator]
    assert by["p8"].channels["graph"] is None and by["p8"].normalised["graph"] is None
    upstream = {h.node.key: h for h in hybrid(searcher, "docs", replace(spec, graph_norm="minmax"))}
    assert upstream["p6"].normalised["graph"] == 0.0 and upstream["p7"].normalised["graph"] == 1.0
    assert upstream["p6"].score == pytest.approx(by["p6"].normalised["vector"])  # type: ignore[arg-type]
    assert ids["p6"] in {h.node.id for h in hybrid(searcher, "docs", spec)}


def test_graph_only_nodes_join_the_union(searcher: Searcher) -> None:
    spec = HybridSpec(
        label="Doc", vector=VectorPart("embedding", _vec(0)), graph=GraphPart(hops=1, seeds=1), candidates=5, k=50
    )
    by = {h.node.key: h for h in hybrid(searcher, "docs", spec)}
    topic = by["topic"]  # no label filter in the graph channel, no vector, no text
    assert topic.channels == {"vector": None, "keyword": None, "graph": 0.5}
    assert topic.score == pytest.approx(0.25)
    assert "Topic" in topic.node.labels
    assert set(by) >= {"p0", "p1", "topic"}


def test_channels_raw_scores_and_defaults(searcher: Searcher) -> None:
    spec = HybridSpec(
        label="Doc", vector=VectorPart("embedding", _vec(3)), keyword=KeywordPart("body", "hybrid retrieval")
    )
    hits = hybrid(searcher, "docs", spec)
    assert len(hits) == 10  # default k
    assert hits[0].node.key == "p3" or any(h.node.key == "p3" for h in hits)
    assert [(-h.score, h.node.id) for h in hits] == sorted((-h.score, h.node.id) for h in hits)  # type: ignore[operator]
    # raw vector = cosine distance (lower is better), raw keyword = BM25; normalised best = 1
    vec = [h for h in hits if h.channels["vector"] is not None]
    best_v = min(vec, key=lambda h: h.channels["vector"])  # type: ignore[arg-type,return-value]
    assert best_v.normalised["vector"] == 1.0
    kw = searcher.keyword("docs", "Doc", "body", "hybrid retrieval", k=100)
    bm25 = {h.node.id: h.score for h in kw}
    for h in hits:
        if h.channels["keyword"] is not None:
            assert h.channels["keyword"] == pytest.approx(bm25[h.node.id])
    for h in hits:
        total = sum(w * (h.normalised[c] or 0.0) for c, w in (("vector", 1.0), ("keyword", 1.0)))
        assert h.score == pytest.approx(total)
    # Dot and L2 report distances too: −dot, and the Euclidean distance (0 for the node itself).
    for metric in ("dot", "l2"):
        top = hybrid(searcher, "docs", HybridSpec(label="Doc", vector=VectorPart("embedding", _vec(3), metric), k=1))
        if metric == "l2":
            assert top[0].node.key == "p3" and top[0].channels["vector"] == pytest.approx(0.0, abs=1e-4)
        else:
            assert top[0].channels["vector"] is not None and top[0].channels["vector"] < 0


def test_candidates_limit_each_channel_and_weights_reorder(searcher: Searcher) -> None:
    base = dict(label="Doc", vector=VectorPart("embedding", _vec(12)), keyword=KeywordPart("body", "keyword index"))
    few = hybrid(searcher, "docs", HybridSpec(**base, candidates=2, k=50))  # type: ignore[arg-type]
    assert sum(h.channels["vector"] is not None for h in few) == 2
    assert sum(h.channels["keyword"] is not None for h in few) <= 2
    only_kw = hybrid(searcher, "docs", HybridSpec(**base, weights={"vector": 0.0, "keyword": 1.0, "graph": 0.5}))  # type: ignore[arg-type]
    kw = searcher.keyword("docs", "Doc", "body", "keyword index", k=10)
    assert _keys(searcher, only_kw)[: len(kw)] == [h.node.key for h in kw]
    zero = hybrid(searcher, "docs", HybridSpec(**base, weights={"vector": 0.0, "keyword": 0.0, "graph": 0.0}, k=5))  # type: ignore[arg-type]
    assert all(h.score == 0.0 for h in zero)
    assert [h.node.id for h in zero] == sorted(h.node.id for h in zero)  # ties: node id ascending


def test_any_k_returns_every_hit_there_is(searcher: Searcher) -> None:
    """k past sys.maxsize (a fuzzer's TOPK 99999999999999999999) is just "all of them", never a crash."""
    base = {"label": "Doc", "vector": VectorPart("embedding", _vec(0)), "keyword": KeywordPart("body", "graph")}
    everything = hybrid(searcher, "docs", HybridSpec(**base, k=10_000))  # type: ignore[arg-type]
    huge = hybrid(searcher, "docs", HybridSpec(**base, k=10**20))  # type: ignore[arg-type]
    assert _keys(searcher, huge) == _keys(searcher, everything) and everything


def test_alternative_fusions(searcher: Searcher) -> None:
    base = dict(label="Doc", vector=VectorPart("embedding", _vec(5)), keyword=KeywordPart("body", "vector index"), k=5)
    rrf = hybrid(searcher, "docs", HybridSpec(**base, fusion="rrf"))  # type: ignore[arg-type]
    assert all(0 < h.score <= 2 / 61 + 1e-12 for h in rrf)  # type: ignore[operator]
    assert rrf[0].normalised["vector"] in (None, 1 / 61, 1 / 62, 1 / 63, 1 / 64, 1 / 65, 1 / 66)
    dbsf = hybrid(searcher, "docs", HybridSpec(**base, fusion="dbsf"))  # type: ignore[arg-type]
    assert len(dbsf) == 5 and all(0.0 <= (h.normalised["vector"] or 0.0) <= 1.0 for h in dbsf)
    with pytest.raises(UsageError, match="unknown fusion"):
        hybrid(searcher, "docs", HybridSpec(**base, fusion="borda"))  # type: ignore[arg-type]


def test_keyword_errors_and_missing_index(searcher: Searcher) -> None:
    with pytest.raises(UsageError, match="needs a label"):
        hybrid(searcher, "docs", HybridSpec(keyword=KeywordPart("body", "graph")))
    with pytest.raises(UsageError, match="vector or a keyword channel"):
        hybrid(searcher, "docs", HybridSpec(label="Doc", graph=GraphPart(1)))
    # No keyword index declared on Topic.name: an empty channel, as upstream (not an error).
    spec = HybridSpec(label="Topic", keyword=KeywordPart("name", "retrieval"))
    assert hybrid(searcher, "docs", spec) == []


def test_as_of_runs_every_channel_on_the_snapshot(searcher: Searcher) -> None:
    db = searcher.db
    spec = HybridSpec(
        label="Doc",
        vector=VectorPart("embedding", _vec(20)),
        keyword=KeywordPart("body", "hybrid"),
        graph=GraphPart(hops=1, seeds=1),
        k=N + 2,
        candidates=N,
    )
    before = hybrid(searcher, "docs", spec)
    with db.snapshot() as snap:
        head = snap.head
    assert {h.node.key: h.channels["graph"] for h in before}.get("p21") is None
    victim = next(h.node.key for h in before if h.channels["keyword"] is not None and h.node.key != "p20")

    def change(tx: Any) -> None:
        p = tx.plane("docs")
        tx.create_edge(p, "p20", "p21", "LINKS")  # p20 is the vector seed: p21 becomes a neighbour
        tx.delete_node(p, victim)

    db.write(change, {"via": "test"})
    now = {h.node.key: h for h in hybrid(searcher, "docs", spec)}
    assert now["p21"].channels["graph"] == 0.5 and victim not in now
    then = {h.node.key: h for h in hybrid(searcher, "docs", spec, as_of=AsOf(seq=head))}
    assert then["p21"].channels["graph"] is None and victim in then
    assert then[victim].channels["keyword"] == pytest.approx(
        next(h for h in before if h.node.key == victim).channels["keyword"]  # type: ignore[arg-type]
    )
    assert [(h.node.key, h.score) for h in before] == [(k, h.score) for k, h in then.items()]


# ---------------------------------------------------------------------- the CLI


def _api(db_path: Path, spec: HybridSpec) -> list[HybridHit]:
    """The library's answer, with the database closed again (one environment per process)."""
    db = Database(db_path, create=False)
    try:
        return hybrid(Searcher(db, IndexSet(db)), "docs", spec)
    finally:
        db.close()


def test_cli_output_lines_are_upstreams(drsg: Run, graph_db: Path) -> None:
    ran = drsg("hybrid", "hybrid retrieval channels", "-p", "docs", "--label", "Doc", "--keyword", "body",
               "--graph-hops", "2")  # fmt: skip
    assert ran.code == 0, ran.err
    lines = ran.out.splitlines()
    spec = HybridSpec(label="Doc", keyword=KeywordPart("body", "hybrid retrieval channels"), graph=GraphPart(hops=2))
    expected = _api(graph_db, spec)
    assert lines[0] == f"hybrid: {len(expected)} results" and len(lines) == len(expected) + 1
    for line, hit in zip(lines[1:], expected, strict=True):
        match = LINE.match(line)
        assert match, line
        k = hit.channels["keyword"]
        g = hit.channels["graph"]
        raw = f"v=- k={'-' if k is None else f'{k:.3f}'} g={'-' if g is None else f'{g:.3f}'}"
        want = f"  {hit.score:.4f}\t{hit.node.key}\t[{raw}]"
        assert line == want
    as_json = drsg("hybrid", "hybrid retrieval channels", "-p", "docs", "--label", "Doc", "--keyword", "body",
                   "--graph-hops", "2", "--json").json_lines()  # fmt: skip
    assert [j["id"] for j in as_json] == [h.node.id for h in expected]
    assert set(as_json[0]["channels"]) == {"vector", "keyword", "graph"} and as_json[0]["channels"]["vector"] is None
    assert as_json[0]["score"] == pytest.approx(expected[0].score)
    explained = drsg("hybrid", "graph", "-p", "docs", "--label", "Doc", "--keyword", "body", "--k", "2", "--explain")
    assert explained.code == 0 and explained.lines()[2].strip().startswith(explained.lines()[1].split("\t")[0].strip())
    assert "1×k(norm)" in explained.lines()[2]


def test_cli_keyless_nodes_print_their_id(drsg: Run, graph_db: Path) -> None:
    assert drsg("node", "put", "-p", "docs", "-l", "Doc", "-P", "body=Hybrid hybrid hybrid retrieval.").code == 0
    ran = drsg("hybrid", "hybrid", "-p", "docs", "--label", "Doc", "--keyword", "body", "--k", "3")
    assert ran.code == 0, ran.err
    first = LINE.match(ran.lines()[1])
    assert first and first.group(2).startswith("#") and first.group(2)[1:].isdigit()


def test_cli_errors(drsg: Run, graph_db: Path) -> None:
    no_label = drsg("hybrid", "graph", "-p", "docs", "--keyword", "body")
    assert no_label.code != 0 and "keyword channel needs a label" in no_label.err
    nothing = drsg("hybrid", "graph", "-p", "docs", "--label", "Doc", "--graph-hops", "1")
    assert nothing.code != 0 and "--vector PROP and/or --keyword PROP" in nothing.err
    bad_decay = drsg("hybrid", "graph", "-p", "docs", "--label", "Doc", "--keyword", "body", "--graph-decay", "2")
    assert bad_decay.code == 2


def test_cli_refuses_a_channel_that_cannot_run_as_search_does(drsg: Run, graph_db: Path) -> None:
    """The API and RPC keep upstream's empty channel (test_keyword_errors_and_missing_index); on the
    command line a channel named but impossible is an error naming the fix (it printed 0 results)."""
    no_index = drsg("hybrid", "graph", "-p", "docs", "--label", "Topic", "--keyword", "name")
    assert no_index.code == 1 and "no keyword index on Topic.name; declare one with `drsg index keyword" in no_index.err
    no_vectors = drsg("hybrid", "graph", "-p", "docs", "--label", "Doc", "--vector", "nope", "--keyword", "body")
    assert no_vectors.code == 1 and "no Doc node holds a vector in 'nope'" in no_vectors.err, no_vectors.err
    assert len(no_index.err.strip().splitlines()) == len(no_vectors.err.strip().splitlines()) == 1
    # where both channels can run, the same query does
    ran = drsg("hybrid", "graph", "-p", "docs", "--label", "Doc", "--keyword", "body", "--k", "2")
    assert ran.code == 0 and "hybrid: 2 results" in ran.out


def test_weights_are_bounded_so_no_score_is_infinite(drsg: Run, graph_db: Path) -> None:
    """Two weights of 1e308 summed to a score of Infinity, which --json printed (not JSON)."""
    huge = drsg("hybrid", "graph", "-p", "docs", "--label", "Doc", "--keyword", "body", "--w-keyword", "1e308")
    assert huge.code == 2 and "the keyword weight must be a number from -1,000,000 to 1,000,000" in huge.err
    top = ("--w-keyword", "1000000", "--w-graph", "1000000", "--graph-hops", "1", "--json")
    ran = drsg("hybrid", "graph", "-p", "docs", "--label", "Doc", "--keyword", "body", *top)
    assert ran.code == 0
    scores = [json.loads(line)["score"] for line in ran.out.splitlines()]  # json.loads accepts Infinity: check it
    assert scores and all(math.isfinite(s) for s in scores)


def test_cli_text_query_uses_the_recorded_embedder(drsg: Run, tmp_path: Path, db_path: Path) -> None:
    f = tmp_path / "docs.jsonl"
    with f.open("w") as fh:
        for i, text in enumerate(PARAGRAPHS[:20]):
            fh.write(json.dumps({"labels": ["Doc"], "external_key": f"p{i}", "properties": {"body": text}}) + "\n")
        fh.write(json.dumps({"src_key": "p9", "dst_key": "p3", "type": "SEE_ALSO"}) + "\n")
    assert drsg("import", str(f), "--plane", "docs", "--create-plane").code == 0
    assert drsg("vectorize", "--plane", "docs", "--label", "Doc", "--from", "body").code == 0
    assert drsg("index", "keyword", "Doc", "body", "--plane", "docs").code == 0
    q = "merging several ranking signals into one list"
    ran = drsg("hybrid", q, "-p", "docs", "--label", "Doc", "--vector", "embedding", "--keyword", "body",
               "--graph-hops", "1", "--k", "5")  # fmt: skip
    assert ran.code == 0, ran.err
    lines = ran.lines()
    assert lines[0] == "hybrid: 5 results"
    parsed = [LINE.match(line) for line in lines[1:]]
    assert all(parsed)
    assert parsed[0].group(2) in {"p9", "p10", "p12"}  # type: ignore[union-attr]  # the paragraph on hybrid retrieval
    assert all(m.group(3) != "-" for m in parsed[:3])  # type: ignore[union-attr]
    same = drsg("hybrid", q, "-p", "docs", "--label", "Doc", "--vector", "embedding", "--keyword", "body",
                "--graph-hops", "1", "--k", "5", "--embed", "local")  # fmt: skip
    assert same.out == ran.out  # naming the recorded embedder changes nothing

    # Vectors recorded as written by another embedder: the local one must not query them.
    db = Database(db_path, create=False)
    try:
        db.write(lambda tx: tx.set_plane_props("docs", {"_embedder:embedding": "openai:text-embedding-3-small"}))
    finally:
        db.close()
    mismatch = drsg("hybrid", q, "-p", "docs", "--label", "Doc", "--vector", "embedding", "--embed", "local")
    assert mismatch.code == 2  # a usage error
    assert "openai:text-embedding-3-small" in mismatch.err and "local:all-MiniLM-L6-v2" in mismatch.err
    keyword_only = drsg("hybrid", q, "-p", "docs", "--label", "Doc", "--keyword", "body", "--embed", "local")
    assert keyword_only.code == 0  # no vector channel, nothing to embed


def test_cli_as_of(drsg: Run, graph_db: Path) -> None:
    head = drsg("stats", "--json").json_lines()[0]["commit_seq"]
    args = ("hybrid", "hybrid retrieval", "-p", "docs", "--label", "Doc", "--keyword", "body", "--graph-hops", "1")
    before = drsg(*args).out
    top = LINE.match(before.splitlines()[1]).group(2)  # type: ignore[union-attr]
    assert drsg("node", "delete", f"@{top}", "-p", "docs").code == 0
    after = drsg(*args).out
    assert f"\t{top}\t" not in after
    assert drsg(*args, "--as-of", str(head)).out == before


# ---------------------------------------------------------------------- the HYBRID query form


def _body(plan: Plan) -> dict[str, Any]:
    assert isinstance(plan.source, dict)
    body = plan.source["Hybrid"]
    assert isinstance(body, dict)
    return body


def test_hybrid_form_compiles_to_the_hybrid_source(searcher: Searcher) -> None:
    plan = parse_query(
        'HYBRID (d:Doc) KEYWORD ON body MATCHING "graph database" WEIGHT 2 '
        'VECTOR ON embedding NEAR "time travel" METRIC dot GRAPH HOPS 2 DECAY 0.25 SEEDS 3 CANDIDATES 50 TOPK 5 AS OF 7'
    )
    assert plan.as_of == AsOf(seq=7)
    assert plan.source == {
        "Hybrid": {
            "label": "Doc",
            "vector": {"property": "embedding", "query_text": "time travel", "metric": "Dot"},
            "keyword": {"property": "body", "query": "graph database"},
            "graph": {"hops": 2, "decay": 0.25, "seeds": 3},
            "weights": {"vector": 1.0, "keyword": 2.0, "graph": 0.5},
            "candidates": 50,
            "k": 5,
        }
    }
    spec = HybridSpec.from_plan_json(_body(plan))
    assert spec.graph == GraphPart(2, 0.25, 3) and spec.vector == VectorPart("embedding", "time travel", "dot")
    assert HybridSpec.from_plan_json(spec.to_plan_json()["Hybrid"]) == spec
    defaults = _body(parse_query('HYBRID (d:Doc) KEYWORD ON body MATCHING "x"'))
    assert defaults["candidates"] == 100 and defaults["k"] == 10 and defaults["graph"] is None
    assert defaults["weights"] == {"vector": 1.0, "keyword": 1.0, "graph": 0.5}
    vec = _body(parse_query("HYBRID (d) VECTOR NEAR $q GRAPH HOPS 1 FUSION rrf K 10", {"q": [0.5, 1.5]}))
    assert vec["vector"]["query"] == [0.5, 1.5] and vec["graph"]["decay"] == 0.5
    assert vec["fusion"] == "rrf" and vec["rrf_k"] == 10
    assert parse_query('SEARCH (d:Doc) ON body MATCHING "x"').source == {
        "KeywordTopK": {"label": "Doc", "property": "body", "query": "x", "k": 10}
    }
    for bad, why in [
        ('HYBRID (d) KEYWORD ON body MATCHING "x"', "needs a label"),
        ("HYBRID (d:Doc) GRAPH HOPS 1", "VECTOR"),
        ('HYBRID (d:Doc) KEYWORD ON b MATCHING "x" KEYWORD ON b MATCHING "y"', "twice"),
        ('HYBRID (d:Doc) KEYWORD ON b MATCHING "x" FUSION borda', "unknown FUSION"),
        ('HYBRID (d:Doc) KEYWORD ON b MATCHING "x" GRAPH HOPS 1 DECAY 3', "DECAY"),
        ('HYBRID (d:Doc) KEYWORD ON b MATCHING "x" BOGUS', "column 42: expected .* but found 'BOGUS'"),
    ]:
        with pytest.raises(QuerySyntaxError, match=why):
            parse_query(bad)


def test_hybrid_plan_runs_like_the_api(searcher: Searcher) -> None:
    q = [float(x) for x in rows(1004, 1)[0]]
    plan = parse_query(
        f'HYBRID (d:Doc) VECTOR NEAR {json.dumps(q)} KEYWORD ON body MATCHING "keyword" GRAPH HOPS 1 TOPK 4'
    )
    spec = HybridSpec.from_plan_json(_body(plan))
    got = hybrid(searcher, "docs", spec)
    direct = hybrid(
        searcher,
        "docs",
        HybridSpec(
            label="Doc",
            vector=VectorPart("embedding", Vector.of(q)),
            keyword=KeywordPart("body", "keyword"),
            graph=GraphPart(1),
            k=4,
        ),
    )
    assert [(h.node.id, h.score) for h in got] == [(h.node.id, h.score) for h in direct]
    assert len(got) == 4 and "p4" in {h.node.key for h in got}  # the query is p4's own vector
    assert next(h for h in got if h.node.key == "p4").normalised["vector"] == 1.0
