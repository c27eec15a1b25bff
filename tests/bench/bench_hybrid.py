"""Hybrid retrieval on a real judged corpus (WordNet nouns), and hybrid latency against raw libraries.

Quality: ``wordnet_corpus.build`` picks a connected region of noun synsets under ten roots; glosses
are embedded with the local MiniLM embedder (``vectorize``), BM25 indexes ``Synset.gloss``, and the
``hybrid-eval`` command scores every channel alone and fused (nDCG@10 graded, recall@100). The
default weights are reported, then one tuned setting: a small grid over the keyword and graph
weights (and RRF) picked on the odd-numbered queries (dev) and reported on the even ones (test), so
the tuned figure is not fitted to the queries it is judged on.

Latency: a 20,000-synset plane (breadth-first under ``entity``), query vectors embedded beforehand;
``hybrid()`` (vector + keyword, 100 candidates each, top 10) against the sum of a raw ``hnswlib``
k-NN (same M, ef_construction, ef, k = 100) and a raw ``tantivy`` BM25 top-100 (keyword.py's
schema) for the same query in the same run. Targets: p50 ≤ 2 ms, p99 ≤ 5 ms, p50 ≤ 1.3× the raw sum.

    python -m tests.bench.bench_hybrid [--quick] [--no-latency | --no-quality]

Needs ``apt-get install -y wordnet-base``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from dataclasses import replace
from pathlib import Path
from typing import Any

import hnswlib
import numpy as np
import tantivy
from click.testing import CliRunner

from drsg.kernel.values import Vector
from drsg.models.embedders import get_embedder
from drsg.pipeline.vectorize import vectorize
from drsg.plan.hybrid import GraphPart, HybridSpec, KeywordPart, VectorPart
from drsg.store.database import Database
from drsg.store.transaction import WriteTx
from drsg.surfaces.cli.main import cli
from drsg.workers.analysis import analyze
from drsg.workers.evaluation import Query, Row, evaluate_hybrid, parse_qrels
from drsg.workers.hybrid import hybrid
from drsg.workers.manager import IndexSet
from drsg.workers.search import Searcher
from drsg.workers.vector import EF_CONSTRUCTION, M
from tests.bench import common, wordnet_corpus

PLANE = "wordnet"
LABEL = "Synset"


def load_corpus(path: Path, corpus: wordnet_corpus.Corpus, embedder: Any) -> tuple[Database, float, float]:
    """A fresh database with the corpus, a keyword index on gloss, and embedded glosses."""
    db = Database(path, create=True, map_size=1 << 30, max_map_size=8 << 30)
    start = time.perf_counter()

    def load(tx: WriteTx) -> None:
        plane = tx.create_plane(PLANE)
        for offset, syn in corpus.synsets.items():
            tx.create_node(plane, offset, [LABEL], {"lemmas": syn.lemma_text, "gloss": syn.gloss})
        for hypo, hyper in corpus.edges:
            tx.create_edge(plane, hypo, hyper, "IS_A")
        tx.declare_index(plane, "keyword", LABEL, "gloss", {"language": "english"})

    db.write(load, {"via": "bench_hybrid"})
    loaded = time.perf_counter() - start
    start = time.perf_counter()
    vectorize(db, embedder, PLANE, "gloss", "embedding", LABEL)
    db.write(
        lambda tx: tx.declare_index(tx.plane(PLANE), "vector", LABEL, "embedding", {"metric": "cosine"}),
        {"via": "bench_hybrid"},
    )
    embedded = time.perf_counter() - start
    return db, loaded, embedded


def spec_for(w_keyword: float = 1.0, w_graph: float = 0.5, fusion: str = "minmax", hops: int | None = 1) -> HybridSpec:
    return HybridSpec(
        label=LABEL,
        vector=VectorPart("embedding", "", "cosine"),
        keyword=KeywordPart("gloss", ""),
        graph=None if hops is None else GraphPart(hops),
        weights={"vector": 1.0, "keyword": w_keyword, "graph": w_graph},
        fusion=fusion,
        k=100,
    )


def rows_table(rows: list[Row]) -> list[str]:
    return [f"| {r.config.name} | {r.scores.ndcg:.4f} | {r.scores.recall:.4f} | {r.scores.queries} |" for r in rows]


def verdict(rows: list[Row]) -> tuple[str, str]:
    """Does the best fused row beat the best single channel on nDCG@10?"""
    single = max((r for r in rows if r.config.name in ("vector", "keyword")), key=lambda r: r.scores.ndcg)
    fused = max((r for r in rows if "+" in r.config.name), key=lambda r: r.scores.ndcg)
    ok = fused.scores.ndcg > single.scores.ndcg
    word = "YES" if ok else "NO"
    return word, (
        f"fused beats the best single channel: **{word}** — best fused `{fused.config.name}` "
        f"{fused.scores.ndcg:.4f} vs best single `{single.config.name}` {single.scores.ndcg:.4f} nDCG@10"
    )


def quality(size: int, n_queries: int, embedder: Any) -> list[str]:
    corpus = wordnet_corpus.build(size, queries=n_queries)
    out = common.fresh_dir("hybrid_wordnet")
    db, loaded, embedded = load_corpus(out / "graph.drsg", corpus, embedder)
    queries_path, qrels_path = out / "queries.jsonl", out / "qrels.txt"
    queries_path.write_text("".join(json.dumps({"id": q, "text": t}) + "\n" for q, t in corpus.queries))
    qrels_path.write_text("\n".join(corpus.qrels_lines()) + "\n")
    with _indexes(db) as indexes:
        indexes.catch_up()
        indexes.save()
    db.close()

    # 1. the command itself, default weights, graph 1 hop
    argv = ["--db", str(out / "graph.drsg"), "hybrid-eval", str(qrels_path), "--queries", str(queries_path)]
    argv += ["-p", PLANE, "--label", LABEL, "--vector", "embedding", "--keyword", "gloss", "--graph-hops", "1"]
    start = time.perf_counter()
    ran = CliRunner().invoke(cli, [*argv, "--json"], catch_exceptions=False)
    cli_s = time.perf_counter() - start
    assert ran.exit_code == 0, ran.output
    report = json.loads(ran.stdout)
    print(CliRunner().invoke(cli, argv, catch_exceptions=False).stdout, flush=True)

    # 2. the same evaluation in-process (queries embedded once), then the tuning on dev / test halves
    db = Database(out / "graph.drsg", readonly=True)
    qrels = parse_qrels(qrels_path.read_text().splitlines())
    queries = [Query(q, t) for q, t in corpus.queries]
    vectors = dict(zip([q.id for q in queries], embedder.embed([q.text for q in queries]), strict=True))
    dev = [q for i, q in enumerate(queries) if i % 2 == 0]
    test = [q for i, q in enumerate(queries) if i % 2 == 1]
    with _indexes(db) as indexes:
        searcher = Searcher(db, indexes)
        default_rows = evaluate_hybrid(searcher, PLANE, spec_for(), queries, vectors, qrels)
        assert [round(r.scores.ndcg, 9) for r in default_rows] == [round(r["ndcg"], 9) for r in report["rows"]]
        grid: list[tuple[float, str, HybridSpec]] = []
        for fusion in ("minmax", "rrf"):
            for w_keyword in (0.25, 0.5, 1.0, 2.0):
                for w_graph in (0.0, 0.1, 0.25, 0.5):
                    spec = spec_for(w_keyword, w_graph, fusion)
                    rows = evaluate_hybrid(searcher, PLANE, spec, dev, vectors, _subset(qrels, dev))
                    fused = next(r for r in rows if r.config.name == "vector+keyword+graph")
                    grid.append((fused.scores.ndcg, f"{fusion} w_keyword={w_keyword} w_graph={w_graph}", spec))
        grid.sort(key=lambda g: -g[0])
        best_dev, best_name, best_spec = grid[0]
        test_default = evaluate_hybrid(searcher, PLANE, spec_for(), test, vectors, _subset(qrels, test))
        test_tuned = evaluate_hybrid(searcher, PLANE, best_spec, test, vectors, _subset(qrels, test))
    db.close()

    judged_neighbours = sum(len(j) - 1 for j in corpus.qrels.values())
    word_default, line_default = verdict(default_rows)
    word_test_default, line_test_default = verdict(test_default)
    word_tuned, line_tuned = verdict(test_tuned)
    lines = [
        f"Corpus: WordNet 3.0 nouns (Debian `wordnet-base`, {wordnet_corpus.WORDNET}/data.noun): "
        f"{len(corpus.synsets):,} synsets picked breadth-first under {', '.join(wordnet_corpus.EVAL_ROOTS)}; "
        f"{len(corpus.edges):,} `IS_A` edges; {len(corpus.queries)} judged queries (an example sentence, else the "
        f"definition, with the lemma words removed), relevance 2 = the synset, 1 = its {judged_neighbours:,} direct "
        "hypernyms/hyponyms in the pick. Node property `gloss` = definition + examples, so a query is a "
        "near-copy of part of its target's gloss (a known-item task): absolute figures are high by design.",
        f"Embedder: `{embedder.identity()}` (local MiniLM int8 ONNX), glosses embedded in {embedded:.1f} s "
        f"(load {loaded:.2f} s); keyword: BM25 on `Synset.gloss` (English analyser); metric cosine; "
        "candidates 100 per channel; graph: 1 hop, decay 0.5, 10 seeds per channel, range normalisation.",
        "",
        "Default weights (vector 1, keyword 1, graph 0.5; min-max fusion), all queries, via `drsg hybrid-eval "
        f"--json` ({cli_s:.1f} s, the same figures in-process):",
        "",
        "| channels | nDCG@10 | recall@100 | queries |",
        "|---|---|---|---|",
        *rows_table(default_rows),
        "",
        f"- {line_default}",
        "",
        f"Tuned: grid of {len(grid)} settings (fusion minmax|rrf × w_keyword 0.25–2 × w_graph 0–0.5, vector 1), "
        f"picked by the fused nDCG@10 on the {len(dev)} odd-numbered queries (dev: {best_dev:.4f}); best "
        f"**{best_name}**. On the {len(test)} even-numbered queries (test), default vs tuned:",
        "",
        "| channels | nDCG@10 default | nDCG@10 tuned | recall@100 default | recall@100 tuned |",
        "|---|---|---|---|---|",
        *[
            f"| {a.config.name} | {a.scores.ndcg:.4f} | {b.scores.ndcg:.4f} | {a.scores.recall:.4f} | "
            f"{b.scores.recall:.4f} |"
            for a, b in zip(test_default, test_tuned, strict=True)
        ],
        "",
        f"- test, default weights: {line_test_default}",
        f"- test, tuned weights: {line_tuned}",
        "- Runner-up settings on dev: " + "; ".join(f"{name} {ndcg:.4f}" for ndcg, name, _ in grid[1:4]),
    ]
    del word_default, word_test_default, word_tuned
    return lines


def _subset(qrels: dict[str, dict[str, int]], queries: list[Query]) -> dict[str, dict[str, int]]:
    keep = {q.id for q in queries}
    return {q: j for q, j in qrels.items() if q in keep}


@contextmanager
def _indexes(db: Database) -> Iterator[IndexSet]:
    """An index set that saves its sidecars afterwards, as the CLI's does."""
    indexes = IndexSet(db, ef_search=64)
    try:
        yield indexes
    finally:
        with suppress(OSError):
            indexes.save()
        indexes.close()


# --------------------------------------------------------------------------- latency


def latency(size: int, n_queries: int, embedder: Any, rounds: int) -> list[str]:
    corpus = wordnet_corpus.build(size, roots=("entity",), queries=n_queries)
    out = common.fresh_dir("hybrid_latency")
    db, loaded, embedded = load_corpus(out / "graph.drsg", corpus, embedder)
    indexes = IndexSet(db, ef_search=64)
    build_s = time.perf_counter()
    indexes.catch_up()
    build_s = time.perf_counter() - build_s
    searcher = Searcher(db, indexes)
    texts = [t for _, t in corpus.queries]
    vectors: list[Vector] = embedder.embed(texts)
    n = len(corpus.synsets)

    # raw hnswlib over the very same vectors, in node-id order
    with db.snapshot() as snap:
        plane = snap.plane(PLANE).id
        nodes = [(node.id, node.props["embedding"], str(node.props["gloss"])) for node in snap.nodes(plane)]
    matrix = np.stack([np.frombuffer(v.data, dtype="<f4") for _, v, _ in nodes])
    ids = np.array([i for i, _, _ in nodes], dtype=np.int64)
    raw = hnswlib.Index(space="cosine", dim=matrix.shape[1])
    raw.init_index(max_elements=len(nodes), ef_construction=EF_CONSTRUCTION, M=M)
    raw.add_items(matrix, ids, num_threads=1)
    raw.set_ef(200)  # what the worker uses for k = 100: max(ef_search, 2k)

    # raw tantivy with keyword.py's schema, fed the analyser's terms
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("body", stored=True, tokenizer_name="whitespace", index_option="freq")
    builder.add_integer_field("id", indexed=True, fast=True)
    schema = builder.build()
    raw_dir = common.fresh_dir("hybrid_latency_tantivy")
    tindex = tantivy.Index(schema, path=str(raw_dir))
    writer = tindex.writer(64_000_000, 1)
    for node_id, _, gloss in nodes:
        terms = analyze(gloss, "english")
        if terms:
            writer.add_document(tantivy.Document(id=node_id, body=" ".join(terms)))
    writer.commit()
    writer.wait_merging_threads()
    tindex.reload()
    tsearcher = tindex.searcher()

    def raw_keyword(text: str) -> list[tuple[int, float]]:
        counts: dict[str, int] = {}
        for t in analyze(text, "english"):
            counts[t] = counts.get(t, 0) + 1
        clauses = []
        for term, c in sorted(counts.items()):
            clause = tantivy.Query.term_query(schema, "body", term)
            if c > 1:
                clause = tantivy.Query.boost_query(clause, float(c))
            clauses.append((tantivy.Occur.Should, clause))
        hits = tsearcher.search(tantivy.Query.boolean_query(clauses), 100, count=False).hits
        found = tsearcher.fast_field_values("id", [address for _, address in hits])
        return [(int(i), float(s)) for (s, _), i in zip(hits, found, strict=True)]  # type: ignore[arg-type]

    qmat = [np.frombuffer(v.data, dtype="<f4").reshape(1, -1) for v in vectors]
    base = HybridSpec(label=LABEL, vector=None, keyword=None, candidates=100, k=10)
    specs = [
        replace(base, vector=VectorPart("embedding", v, "cosine"), keyword=KeywordPart("gloss", t))
        for v, t in zip(vectors, texts, strict=True)
    ]
    graph_specs = [replace(s, graph=GraphPart(1)) for s in specs]
    for j in range(min(20, len(specs))):  # warm-up: every measured call, raw ones included
        raw.knn_query(qmat[j], k=100)
        raw_keyword(texts[j])
        hybrid(searcher, PLANE, specs[j])
        hybrid(searcher, PLANE, graph_specs[j])
        searcher.vector(PLANE, LABEL, "embedding", vectors[j], "cosine", 100)
        searcher.keyword(PLANE, LABEL, "gloss", texts[j], 100)
    t_hybrid: list[float] = []
    t_graph: list[float] = []
    t_vec: list[float] = []
    t_kw: list[float] = []
    t_sv: list[float] = []
    t_sk: list[float] = []
    clock = time.perf_counter
    for _ in range(rounds):
        for i in range(len(specs)):
            a = clock()
            raw.knn_query(qmat[i], k=100)
            b = clock()
            raw_keyword(texts[i])
            c = clock()
            hybrid(searcher, PLANE, specs[i])
            d = clock()
            hybrid(searcher, PLANE, graph_specs[i])
            e = clock()
            searcher.vector(PLANE, LABEL, "embedding", vectors[i], "cosine", 100)
            f = clock()
            searcher.keyword(PLANE, LABEL, "gloss", texts[i], 100)
            g = clock()
            t_sv.append(f - e)
            t_sk.append(g - f)
            t_vec.append(b - a)
            t_kw.append(c - b)
            t_hybrid.append(d - c)
            t_graph.append(e - d)
    t_sum = [v + k for v, k in zip(t_vec, t_kw, strict=True)]
    p = common.pct
    ms = 1000.0
    h50, h99, s50, s99 = p(t_hybrid, 50) * ms, p(t_hybrid, 99) * ms, p(t_sum, 50) * ms, p(t_sum, 99) * ms
    checks = [
        (h50 <= 2.0, f"p50 {h50:.3f} ms ≤ 2 ms"),
        (h99 <= 5.0, f"p99 {h99:.3f} ms ≤ 5 ms"),
        (h50 <= 1.3 * s50, f"p50 {h50:.3f} ms ≤ 1.3 × raw sum p50 {s50:.3f} ms = {1.3 * s50:.3f} ms"),
    ]
    side_by_side = throughput(
        lambda i: hybrid(searcher, PLANE, specs[i]),
        lambda i: (raw.knn_query(qmat[i], k=100), raw_keyword(texts[i])),
        len(specs),
    )
    db.close()
    return [
        f"Plane: {n:,} WordNet noun synsets (breadth-first under `entity`), {len(corpus.edges):,} `IS_A` edges, "
        f"384-dim MiniLM vectors of the glosses (embedded in {embedded:.1f} s; load {loaded:.2f} s; index "
        f"catch-up {build_s:.1f} s). {len(specs)} queries (derived as above) × {rounds} rounds, vectors "
        "embedded beforehand (embedding excluded from every figure).",
        "",
        "| measure | p50 | p99 | mean |",
        "|---|---|---|---|",
        *[
            f"| {name} | {p(t, 50) * ms:.3f} ms | {p(t, 99) * ms:.3f} ms | {sum(t) / len(t) * ms:.3f} ms |"
            for name, t in (
                ("`hybrid()` vector + keyword (100 candidates each, top 10)", t_hybrid),
                ("`hybrid()` vector + keyword + graph 1 hop", t_graph),
                ("raw hnswlib `knn_query` k=100 (M=16, ef_construction=200, ef=200)", t_vec),
                ("raw tantivy BM25 top-100 (analyser included)", t_kw),
                ("raw sum (hnswlib + tantivy, same query)", t_sum),
                ("`Searcher.vector` k=100 alone (hits hydrated)", t_sv),
                ("`Searcher.keyword` k=100 alone (hits hydrated)", t_sk),
            )
        ],
        "",
        *[f"- **{'PASS' if ok else 'FAIL'}** — `hybrid()` {text}" for ok, text in checks],
        f"- `hybrid()` / raw sum: p50 {h50 / s50:.2f}×, p99 {h99 / s99:.2f}×. The two `Searcher` rows (each "
        "channel's own search, which `hybrid()` runs, with its 100 hits read from the store) show where the "
        "gap to the raw libraries lies.",
        "",
        *side_by_side,
    ]


def throughput(engine: Callable[[int], object], raw: Callable[[int], object], n: int, repeats: int = 5) -> list[str]:
    """Queries per second with 1, 2 and 8 threads each running queries back to back (as `drsg serve`'s
    read pool does), the engine's `hybrid()` beside the raw pair (hnswlib + tantivy, same queries).
    Thread scheduling on this VM is noisy: each figure is the median of ``repeats`` runs, the two
    measures alternating."""
    rows = []
    medians: dict[int, tuple[float, float]] = {}
    for threads in (1, 2, 8):
        rates: dict[str, list[float]] = {"engine": [], "raw": []}
        for _ in range(repeats):
            for name, run in (("engine", engine), ("raw", raw)):
                start = time.perf_counter()
                with ThreadPoolExecutor(threads) as pool:
                    for _ in pool.map(run, range(n)):
                        pass
                rates[name].append(n / (time.perf_counter() - start))
        e, r = (float(np.median(rates[name])) for name in ("engine", "raw"))
        medians[threads] = (e, r)
        rows.append(f"| {threads} | {e:,.0f} | {r:,.0f} | {e / r:.2f}× |")
    (e1, r1), (e2, r2) = medians[1], medians[2]
    cores = min(2, os.cpu_count() or 1)
    return [
        f"Throughput: threads each running the {n} queries back to back, median of {repeats} runs "
        "(`Searcher` runs one query per CPU core at a time; the rest wait their turn):",
        "",
        "| threads | `hybrid()` queries/s | raw hnswlib + tantivy pairs/s | engine / raw |",
        "|---|---|---|---|",
        *rows,
        "",
        f"- #14's target for 2 threads (≥ 0.8× the raw pair) asks the engine for {0.8 * r2:,.0f} queries/s: "
        f"{0.8 * r2 / e1:.2f}× its own 1-thread rate. Perfect scaling on {cores} cores gives at most "
        f"{cores}× ({cores * e1:,.0f}/s = {cores * e1 / r2:.2f}× the raw pair); the engine scales "
        f"{e2 / e1:.2f}×, the raw pair (C with the interpreter released) {r2 / r1:.2f}×.",
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="A small corpus and few queries (a smoke run).")
    parser.add_argument("--no-latency", action="store_true", help="Skip the 20k-node latency part.")
    parser.add_argument("--no-quality", action="store_true", help="Skip the judged-quality part (latency only).")
    parser.add_argument("--no-record", action="store_true", help="Print only; do not append to RESULTS.md.")
    args = parser.parse_args(argv)
    if not wordnet_corpus.available():
        print("WordNet is not installed: apt-get install -y wordnet-base", file=sys.stderr)
        sys.exit(2)
    embedder = get_embedder(None)
    started = dt.datetime.now(dt.UTC)
    lines = [] if args.no_quality else quality(800 if args.quick else 4000, 60 if args.quick else 500, embedder)
    print("\n".join(lines), flush=True)
    if not args.no_latency:
        lat = latency(3000 if args.quick else 20_000, 50 if args.quick else 200, embedder, 1 if args.quick else 3)
        print("\n".join(lat), flush=True)
        lines += ["", "### Latency (query embedding excluded)", "", *lat]
    common.append_section(
        "hybrid retrieval on WordNet: quality and latency", started, lines, not (args.no_record or args.quick)
    )


if __name__ == "__main__":
    main()
