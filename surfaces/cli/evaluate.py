"""`hybrid-eval`: nDCG and recall of a judged query set, per channel and fused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from drsg.kernel.errors import BadValue, UsageError
from drsg.kernel.values import Vector
from drsg.surfaces.cli.context import Context, emit_json
from drsg.surfaces.cli.hybrid import hybrid_options, spec_from
from drsg.surfaces.cli.options import embed_options, json_option, plane_option
from drsg.surfaces.cli.search import open_indexes, query_embedder
from drsg.workers.evaluation import Row, evaluate_hybrid, parse_qrels, parse_queries
from drsg.workers.search import Searcher


def _lines(path: str) -> list[str]:
    try:
        return Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise BadValue(f"cannot read {path}: {exc}") from None


def print_rows(rows: list[Row], ndcg_k: int, recall_k: int) -> None:
    width = max([len("channels"), *(len(r.config.name) for r in rows)])
    click.echo(f"{'channels':<{width}}  {f'nDCG@{ndcg_k}':>8}  {f'recall@{recall_k}':>10}  queries")
    for row in rows:
        s = row.scores
        click.echo(f"{row.config.name:<{width}}  {s.ndcg:>8.4f}  {s.recall:>10.4f}  {s.queries}")


@click.command("hybrid-eval")
@click.argument("qrels", metavar="QRELS")
@click.option("--queries", "queries_path", required=True, metavar="FILE", help='JSONL: {"id": "q1", "text": "…"}.')
@plane_option
@hybrid_options
@click.option("--ndcg-k", type=click.IntRange(1), default=10, show_default=True, help="nDCG cut-off.")
@click.option("--recall-k", type=click.IntRange(1), default=100, show_default=True, help="Recall cut-off.")
@embed_options
@json_option
@click.pass_obj
def hybrid_eval(
    obj: Context,
    qrels: str,
    queries_path: str,
    plane: str,
    ndcg_k: int,
    recall_k: int,
    embed: str | None,
    embed_model: str | None,
    embed_url: str | None,
    embed_key_env: str | None,
    as_json: bool,
    **options: Any,
) -> None:
    """Evaluate hybrid retrieval on judged queries: nDCG@10 (graded) and recall@100 for each
    channel alone, each with the graph channel (--graph-hops), and fused. QRELS is TREC-style
    (`qid 0 doc_key relevance`, doc_key = a node's external key); --queries is JSONL
    ({"id": "q1", "text": "…"}). Weights and fusion are `hybrid`'s.

    \b
    drsg hybrid-eval qrels.txt --queries queries.jsonl -p wordnet --label Synset \\
        --vector embedding --keyword gloss --graph-hops 1
    """
    judged = parse_qrels(_lines(qrels), qrels)
    queries = [q for q in parse_queries(_lines(queries_path), queries_path) if q.id in judged]
    missing = sorted(set(judged) - {q.id for q in queries})
    if missing:
        raise UsageError(f"{len(missing)} judged query id(s) have no text in {queries_path}, e.g. {missing[0]!r}")
    if not queries:
        raise UsageError("no query has a judgment: nothing to evaluate")
    spec = spec_from("", max(ndcg_k, recall_k), options)  # each query's text is filled in per query
    with obj.open(write=False) as db:
        vectors: dict[str, Vector] | None = None
        if spec.vector is not None:  # every query embedded once, up front, by the vectors' embedder
            embedder = query_embedder(obj, db, plane, spec.vector.prop, (embed, embed_model, embed_url, embed_key_env))
            made = embedder.embed([q.text for q in queries])
            vectors = {q.id: v for q, v in zip(queries, made, strict=True)}
        with open_indexes(db) as indexes:
            rows = evaluate_hybrid(Searcher(db, indexes), plane, spec, queries, vectors, judged, ndcg_k, recall_k)
    if as_json:
        out: dict[str, Any] = {
            "queries": len(queries),
            "ndcg_k": ndcg_k,
            "recall_k": recall_k,
            "label": spec.label,
            "vector": None if spec.vector is None else {"property": spec.vector.prop, "metric": spec.vector.metric},
            "keyword": None if spec.keyword is None else {"property": spec.keyword.prop},
            "graph": None
            if spec.graph is None
            else {
                "hops": spec.graph.hops,
                "decay": spec.graph.decay,
                "seeds": spec.graph.seeds,
                "norm": spec.graph_norm,
            },
            "weights": {name: spec.weight(name) for name in ("vector", "keyword", "graph")},
            "candidates": spec.candidates,
            "fusion": spec.fusion,
            "rrf_k": spec.rrf_k,
            "rows": [r.to_json() for r in rows],
        }
        emit_json(out)
        return
    print_rows(rows, ndcg_k, recall_k)


COMMANDS = [hybrid_eval]
