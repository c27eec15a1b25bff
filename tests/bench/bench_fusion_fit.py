"""Fusion fitted to judged queries (`hybrid-eval --fit`, issue #22) on two real judged corpora from
different sources: WordNet 3.0 nouns (``wordnet_corpus``, the hybrid benchmark's) and the section-1
manual pages installed here (``manpage_corpus``).

For each: the corpus is loaded, embedded by the local MiniLM model and BM25-indexed; then the
command a user runs, ``drsg hybrid-eval QRELS --queries Q --label L --vector embedding --keyword
PROP --graph-hops 1 --fit --json`` (5 folds, seed 0), gives held-out nDCG@10 and recall@100 for
each channel alone, upstream's fixed fusion (the defaults) and the fitted one. Beside them: the
ceiling of the space on these queries (the ascent fitted *and* scored on every query: no fusion
in the space does better in-sample), and why a ceiling is where it is — how often each channel alone
already ranks the target first, and how often neither finds it in its top 10 (no fusion of the two
lifts a target neither ranks).

    python -m tests.bench.bench_fusion_fit [--quick] [--no-record]

Needs ``apt-get install -y wordnet-base``; the second corpus runs where manual pages are installed
under /usr/share/man/man1 (a minimal image may exclude them).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
from click.testing import CliRunner

from drsg.models.embedders import get_embedder
from drsg.pipeline.vectorize import vectorize
from drsg.plan.hybrid import GraphPart, HybridSpec, KeywordPart, VectorPart
from drsg.store.database import Database
from drsg.store.transaction import WriteTx
from drsg.surfaces.cli.main import cli
from drsg.workers.evaluation import Query, parse_qrels
from drsg.workers.fitting import Evaluator, Space, ascend, defaults
from drsg.workers.manager import IndexSet
from drsg.workers.search import Searcher
from tests.bench import common, manpage_corpus, wordnet_corpus

TITLE = "(#22) fusion fitted to judged queries: WordNet and manual pages"


@dataclass
class Case:
    """One judged corpus as a plane: its nodes' text in ``prop``, its edges typed ``edge``."""

    name: str
    corpus: Any  # wordnet_corpus.Corpus or manpage_corpus.Corpus: edges, queries, qrels_lines()
    plane: str
    label: str
    prop: str
    nodes: dict[str, str]
    edge: str


def load(path: Path, case: Case, embedder: Any) -> float:
    plane, label, prop = case.plane, case.label, case.prop
    db = Database(path, create=True, map_size=1 << 30, max_map_size=8 << 30)
    start = time.perf_counter()

    def fill(tx: WriteTx) -> None:
        p = tx.create_plane(plane)
        for key, text in case.nodes.items():
            tx.create_node(p, key, [label], {prop: text})
        for a, b in case.corpus.edges:
            tx.create_edge(p, a, b, case.edge)
        tx.declare_index(p, "keyword", label, prop, {"language": "english"})

    db.write(fill, {"via": "bench_fusion_fit"})
    vectorize(db, embedder, plane, prop, "embedding", label)
    db.write(lambda tx: tx.declare_index(tx.plane(plane), "vector", label, "embedding", {"metric": "cosine"}))
    indexes = IndexSet(db, ef_search=64)
    indexes.catch_up()
    indexes.save()
    indexes.close()
    db.close()
    return time.perf_counter() - start


def run(case: Case, embedder: Any) -> list[str]:
    corpus, plane, label, prop = case.corpus, case.plane, case.label, case.prop
    out = common.fresh_dir(f"fusion_fit_{plane}")
    loaded = load(out / "graph.drsg", case, embedder)
    queries_path, qrels_path = out / "queries.jsonl", out / "qrels.txt"
    queries_path.write_text("".join(json.dumps({"id": q, "text": t}) + "\n" for q, t in corpus.queries))
    qrels_path.write_text("\n".join(corpus.qrels_lines()) + "\n")
    argv = ["--db", str(out / "graph.drsg"), "hybrid-eval", str(qrels_path), "--queries", str(queries_path)]
    argv += ["-p", plane, "--label", label, "--vector", "embedding", "--keyword", prop, "--graph-hops", "1"]
    start = time.perf_counter()
    ran = CliRunner().invoke(cli, [*argv, "--fit", "--json"], catch_exceptions=False)
    fit_s = time.perf_counter() - start
    assert ran.exit_code == 0, ran.output
    report = json.loads(ran.stdout.splitlines()[-1])

    # the ceiling and the channels' overlap, in-process on the same pools
    qrels = parse_qrels(qrels_path.read_text().splitlines())
    queries = [Query(q, t) for q, t in corpus.queries if any(g > 0 for g in qrels.get(q, {}).values())]
    vectors = dict(zip([q.id for q in queries], embedder.embed([q.text for q in queries]), strict=True))
    spec = HybridSpec(
        label=label, vector=VectorPart("embedding", ""), keyword=KeywordPart(prop, ""), graph=GraphPart(1)
    )
    db = Database(out / "graph.drsg", readonly=True)
    indexes = IndexSet(db, ef_search=64)
    evaluator = Evaluator(Searcher(db, indexes), plane, spec, queries, vectors, qrels, Space())
    everything = np.arange(len(queries))
    start = defaults(spec)
    top = ascend(evaluator, everything, start, Space())
    ceiling = float(evaluator.scores(top)[0].mean())
    # every fusion × balance × graph weight at the defaults' pool and graph (not just the ascent's
    # path), in-sample; and the per-query oracle over that grid: each query scored by whichever
    # point suits it best, a bound on any fusion that could adapt per query
    space = Space()
    grid = [
        replace(start, fusion=f, rrf_k=k, alpha=a, graph_weight=g)
        for f, k in space.fusions
        for a in space.alphas
        for g in space.graph_weights
    ]
    per_point = np.stack([evaluator.scores(point)[0] for point in grid])
    exhaustive = float(per_point.mean(axis=1).max())
    oracle = float(per_point.max(axis=0).mean())
    first, found = {}, {}
    for channel in ("vector", "keyword"):
        ranks = []
        for i, q in enumerate(queries):
            target = next(doc for doc, g in qrels[q.id].items() if g == 2)
            ids = evaluator.pools[(i, 100)][0][channel][0][:10].tolist()
            keys = [evaluator.keys.get(n) for n in ids]
            ranks.append(keys.index(target) if target in keys else None)
        first[channel] = np.array([r == 0 for r in ranks])
        found[channel] = np.array([r is not None for r in ranks])
    indexes.close()
    db.close()

    o = report["overall"]
    best = report["best_single"]
    gain = report["gain_over_best_single"]
    chosen = report["chosen"]
    lines = [
        f"### {case.name}",
        "",
        f"{len(case.nodes):,} nodes, {len(corpus.edges):,} `{case.edge}` edges, {report['queries']} judged "
        f"queries; loaded, embedded and indexed in {loaded:.0f} s; `hybrid-eval --fit --json` took {fit_s:.1f} s "
        f"({report['points_scored']} fusions scored).",
        "",
        "| held out (5 folds, seed 0) | nDCG@10 | recall@100 |",
        "|---|---|---|",
        *[
            f"| {row} | {o[row]['ndcg']:.4f} | {o[row]['recall']:.4f} |"
            for row in ("vector", "keyword", "defaults", "fitted")
        ],
        f"| the ascent fitted and scored on every query (in-sample) | {ceiling:.4f} | — |",
        f"| the best of all {len(grid):,} fusion × balance × graph-weight points, in-sample | {exhaustive:.4f} | — |",
        f"| per-query oracle over those points (each query its own best point) | {oracle:.4f} | — |",
        "",
        f"- fitted vs {best} alone (the best single channel): **{gain:+.1%}** nDCG@10; defaults vs it: "
        f"{(o['defaults']['ndcg'] - o[best]['ndcg']) / o[best]['ndcg']:+.1%}; the in-sample best point vs it: "
        f"{(max(ceiling, exhaustive) - o[best]['ndcg']) / o[best]['ndcg']:+.1%}; the per-query oracle: "
        f"{(oracle - o[best]['ndcg']) / o[best]['ndcg']:+.1%}.",
        f"- chosen on every query: {chosen['fusion']} (k {chosen['rrf_k']}), weights {chosen['weights']}, "
        f"{chosen['candidates']} candidates, graph {chosen['graph']}; per fold: "
        + "; ".join(
            f"{f['chosen']['fusion']} v{f['chosen']['weights']['vector']:g}/g{f['chosen']['weights']['graph']:g}"
            for f in report["folds"]
        ),
        f"- the target at rank 1: vector {first['vector'].mean():.1%}, keyword {first['keyword'].mean():.1%}, "
        f"either {(first['vector'] | first['keyword']).mean():.1%}; in the top 10 of neither channel: "
        f"{(~found['vector'] & ~found['keyword']).mean():.1%} of queries (no fusion of the two can rank those).",
    ]
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="Small corpora (a smoke run).")
    parser.add_argument("--no-record", action="store_true", help="Print only; do not append to RESULTS.md.")
    args = parser.parse_args(argv)
    if not wordnet_corpus.available():
        print("WordNet is not installed: apt-get install -y wordnet-base", file=sys.stderr)
        sys.exit(2)
    embedder = get_embedder(None)
    started = dt.datetime.now(dt.UTC)
    size, n = (800, 80) if args.quick else (4000, 500)
    wn = wordnet_corpus.build(size, queries=n)
    wordnet = Case(
        "WordNet 3.0 nouns (the hybrid benchmark's corpus: gloss = definition + examples; a query is an example "
        "sentence, else the definition, with the lemma words removed)",
        wn,
        "wordnet",
        "Synset",
        "gloss",
        {offset: syn.gloss for offset, syn in wn.synsets.items()},
        "IS_A",
    )
    lines = run(wordnet, embedder)
    print("\n".join(lines), flush=True)
    if not manpage_corpus.available():  # a minimal image may leave the manual pages out
        lines += ["", f"(No manual pages under {manpage_corpus.MAN1}: the second corpus was not run.)"]
        common.append_section(TITLE, started, lines, not (args.no_record or args.quick))
        return
    man = manpage_corpus.build(size=600 if args.quick else 10**6, queries=n)
    manpages = Case(
        "Section-1 manual pages installed here (text = the DESCRIPTION's first 80 words; a query is the NAME "
        "summary without the page's own names)",
        man,
        "manpages",
        "Page",
        "text",
        {page.key: page.description for page in man.pages.values()},
        "SEE_ALSO",
    )
    lines += ["", *run(manpages, embedder)]
    common.append_section(TITLE, started, lines, not (args.no_record or args.quick))


if __name__ == "__main__":
    main()
