"""`hybrid-eval`: nDCG and recall of a judged query set, per channel and fused."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import click

from drsg.kernel.errors import BadValue, UsageError
from drsg.kernel.values import Vector
from drsg.plan.hybrid import FusionProfile, HybridSpec
from drsg.store.database import Database
from drsg.store.records import FusionDecl
from drsg.store.transaction import WriteTx
from drsg.surfaces.cli.context import Context, emit_json
from drsg.surfaces.cli.hybrid import hybrid_options, spec_from
from drsg.surfaces.cli.options import embed_options, json_option, plane_option
from drsg.surfaces.cli.search import embed_choice, open_indexes, query_embedder
from drsg.workers.evaluation import Qrels, Query, Row, evaluate_hybrid, parse_qrels, parse_queries
from drsg.workers.fitting import ROWS, Evaluator, Fit, Space, fit
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
@click.option("--fit", "do_fit", is_flag=True, help="Choose the fusion by cross-validation over the judged queries.")
@click.option("--folds", type=click.IntRange(2, 50), default=5, show_default=True, help="Cross-validation folds.")
@click.option("--seed", type=int, default=0, show_default=True, help="How the queries are dealt into folds.")
@click.option(
    "--save", is_flag=True, help="With --fit: record the fusion fitted on every query as the plane's profile."
)
@click.option("--force", is_flag=True, help="With --save: save even when it does not beat the best single channel.")
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
    do_fit: bool,
    folds: int,
    seed: int,
    save: bool,
    force: bool,
    embed: str | None,
    embed_model: str | None,
    embed_url: str | None,
    embed_key_env: str | None,
    as_json: bool,
    **options: Any,
) -> None:
    """Evaluate hybrid retrieval on judged queries: nDCG@10 (graded) and recall@100 for each
    channel alone, each with the graph channel (--graph-hops), and fused — with `hybrid`'s weight
    and fusion flags, and beside them the plane's fusion profile when it has one. QRELS is
    TREC-style (`qid 0 doc_key relevance`, doc_key = a node's external key); --queries is JSONL
    ({"id": "q1", "text": "…"}).

    --fit chooses the fusion (min-max, DBSF or RRF and its k, the weights, the candidate pool, the
    graph's hops and decay) by coordinate ascent, cross-validated over --folds: each fold is scored
    by what the others chose, so the figures are held out. --save records the fusion fitted on
    every query as the plane's fusion profile (a commit), which `hybrid`, HYBRID and plane.hybrid
    then use when a query names no weight or fusion; a fit that does not beat the best single
    channel is not saved without --force.

    \b
    drsg hybrid-eval qrels.txt --queries queries.jsonl -p wordnet --label Synset \\
        --vector embedding --keyword gloss --graph-hops 1 --fit --save
    """
    if save and not do_fit:
        raise UsageError("--save records a fitted fusion: add --fit")
    judged = parse_qrels(_lines(qrels), qrels)
    queries = [q for q in parse_queries(_lines(queries_path), queries_path) if q.id in judged]
    missing = sorted(set(judged) - {q.id for q in queries})
    if missing:
        raise UsageError(f"{len(missing)} judged query id(s) have no text in {queries_path}, e.g. {missing[0]!r}")
    if not queries:
        raise UsageError("no query has a judgment: nothing to evaluate")
    spec = replace(spec_from("", max(ndcg_k, recall_k), options), use_profile=False)  # texts filled in per query
    if do_fit and (spec.vector is None or spec.keyword is None):
        raise UsageError("--fit fuses the vector and keyword channels: name both --vector PROP and --keyword PROP")
    with obj.open(write=save) as db:
        vectors: dict[str, Vector] | None = None
        if spec.vector is not None:  # every query embedded once, up front, by the vectors' embedder
            choice = embed_choice(embed, embed_model, embed_url, embed_key_env)
            embedder = query_embedder(obj, db, plane, spec.vector.prop, choice)
            made = embedder.embed([q.text for q in queries])
            vectors = {q.id: v for q, v in zip(queries, made, strict=True)}
        with open_indexes(db) as indexes:
            searcher = Searcher(db, indexes)
            if do_fit:
                assert vectors is not None
                relevant = [q for q in queries if any(r > 0 for r in judged[q.id].values())]
                found = _fit(searcher, plane, spec, relevant, vectors, judged, ndcg_k, recall_k, folds, seed)
                saved = _save(db, plane, spec, found) if save and (found.beats_best_single or force) else None
                _report_fit(found, spec, ndcg_k, recall_k, save, saved, as_json)
                return
            profile = _profile(db, plane, spec)
            rows = evaluate_hybrid(
                searcher, plane, spec, queries, vectors, judged, ndcg_k, recall_k, profile=profile is not None
            )
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
            "profile": None if profile is None else profile.to_json(),
            "rows": [r.to_json() for r in rows],
        }
        emit_json(out)
        return
    print_rows(rows, ndcg_k, recall_k)
    if profile is not None:
        fused = FusionProfile.from_json(profile.profile).describe()
        click.echo(f"profile: set at commit {profile.since}: {fused}")


def _profile(db: Database, plane: str, spec: HybridSpec) -> FusionDecl | None:
    if spec.label is None or spec.vector is None or spec.keyword is None:
        return None
    with db.snapshot() as snap:
        return snap.fusion_profile(snap.plane(plane).id, spec.label, spec.vector.prop, spec.keyword.prop)


def _fit(
    searcher: Searcher,
    plane: str,
    spec: HybridSpec,
    queries: list[Query],
    vectors: dict[str, Vector],
    judged: Qrels,
    ndcg_k: int,
    recall_k: int,
    folds: int,
    seed: int,
) -> Fit:
    if len(queries) < folds:
        raise UsageError(f"{len(queries)} judged queries cannot make {folds} folds; lower --folds or judge more")
    space = Space()
    if not sys.stderr.isatty():
        evaluator = Evaluator(searcher, plane, spec, queries, vectors, judged, space, ndcg_k, recall_k)
        return fit(evaluator, folds, seed, space)
    with click.progressbar(length=1, label="reading the channels", file=sys.stderr) as bar:

        def progress(done: int, total: int) -> None:
            bar.length = total
            bar.update(done - bar.pos)

        evaluator = Evaluator(searcher, plane, spec, queries, vectors, judged, space, ndcg_k, recall_k, progress)
    with click.progressbar(length=folds + 1, label="fitting", file=sys.stderr) as bar:
        return fit(evaluator, folds, seed, space, lambda done, total: bar.update(done - bar.pos))


def _save(db: Database, plane: str, spec: HybridSpec, found: Fit) -> FusionDecl:
    assert spec.label is not None and spec.vector is not None and spec.keyword is not None
    profile = found.point.profile(found.record()).to_json()
    label, vector, keyword = spec.label, spec.vector.prop, spec.keyword.prop

    def set_profile(tx: WriteTx) -> FusionDecl:
        return tx.set_fusion_profile(tx.plane(plane), label, vector, keyword, profile)

    return db.write(set_profile, {"via": "hybrid-eval"}).value


def _report_fit(
    found: Fit, spec: HybridSpec, ndcg_k: int, recall_k: int, save: bool, saved: FusionDecl | None, as_json: bool
) -> None:
    if not found.beats_best_single:
        what = "not saved: add --force to save it anyway" if save and saved is None else "fusion is not a win here"
        click.echo(
            f"warning: the fitted fusion does not beat {found.best_single} alone on held-out queries "
            f"({found.overall['fitted'][0]:.4f} vs {found.overall[found.best_single][0]:.4f}); {what}",
            err=True,
        )
    if as_json:
        out = found.to_json() | {"ndcg_k": ndcg_k, "recall_k": recall_k}
        out["saved"] = None if saved is None else {"since": saved.since}
        emit_json(out)
        return
    click.echo(
        f"fit: {found.queries} queries, {len(found.folds)} folds, seed {found.seed}, {found.evaluated} fusions scored"
    )
    click.echo(f"{'fold':<5} {'queries':>7}  " + "  ".join(f"{name:>8}" for name in ROWS) + "  chosen")
    for fold in found.folds:
        scores = "  ".join(f"{fold.rows[name][0]:>8.4f}" for name in ROWS)
        click.echo(f"{fold.fold:<5} {fold.queries:>7}  {scores}  {fold.point.profile({}).describe()}")
    click.echo(f"held out, every query: nDCG@{ndcg_k}, recall@{recall_k}")
    for name in ROWS:
        ndcg, recall = found.overall[name]
        click.echo(f"  {name:<9} {ndcg:.4f}  {recall:.4f}")
    click.echo(f"fitted vs {found.best_single} alone (the best single channel): {found.gain:+.1%} nDCG@{ndcg_k}")
    click.echo(f"chosen on every query: {found.point.profile({}).describe()}")
    if saved is not None:
        click.echo(
            f"saved: the fusion profile for {saved.label} ({saved.vector} + {saved.keyword}), commit {saved.since}"
        )


COMMANDS = [hybrid_eval]
