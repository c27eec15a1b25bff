"""Indexes and search: `index ensure|keyword|list|drop`, `search`, `query`."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Literal

import click
import structlog

from drsg.api.results import Hit
from drsg.kernel.errors import UsageError
from drsg.kernel.languages import LANGUAGES, canonical_language
from drsg.kernel.metrics import METRICS, check_metric
from drsg.kernel.values import Json
from drsg.models.providers import EmbedderChoice
from drsg.plan.logical import VectorTopK
from drsg.plan.query import Plan, parse_plan_json
from drsg.plan.statements import parse_query
from drsg.store.database import Database
from drsg.store.intents import Intent, answered
from drsg.surfaces.cli.context import Context, emit_json
from drsg.surfaces.cli.options import embed_options, json_option, json_pairs, plane_option
from drsg.workers.manager import IndexSet

if TYPE_CHECKING:  # the embedder stack (≈0.02 s) loads where a text is embedded, not for a NEAR [vector]
    from drsg.models.embedders.base import Embedder

log = structlog.get_logger("drsg.surfaces.cli")
Purpose = Literal["query", "write"]


@click.group("index")
def index() -> None:
    """Vector (HNSW) and keyword (BM25) indexes, declared on (label, property) pairs."""


def _declare(
    obj: Context,
    plane: str,
    names: tuple[str, ...],
    kind: str,
    options: dict[str, Any],
    default: str | None,
) -> list[tuple[str, str]]:
    """Declare a ``kind`` index with ``options`` on what ``names`` stand for — upstream's positional
    rule: LABEL PROPERTY = one pair; PROPERTY = every label carrying it; nothing = ``default`` on
    every label carrying it — as one intent (``index.ensure``), build it now, and return the pairs;
    says so when no label carries the property."""
    if len(names) > 2:
        raise click.UsageError("at most two names: LABEL PROPERTY")
    if not names and default is None:
        raise UsageError("name a LABEL and PROPERTY, or a PROPERTY to index on every label carrying it")
    label, prop = (names[0], names[1]) if len(names) == 2 else (None, names[0] if names else str(default))
    args: dict[str, Json] = {"plane": plane, "kind": kind, "label": label, "property": prop, "options": options}
    with obj.open(write=True) as db:
        declared = answered(db.submit(Intent("index.ensure", args), {"via": "cli"}), "pairs")
        _build(db)
    pairs = [(str(each), str(prop)) for each, prop in declared]
    if not pairs:
        click.echo(f"no label in plane '{plane}' carries `{prop}` — nothing to index")
    return pairs


@index.command("ensure")
@click.argument("names", nargs=-1, metavar="[LABEL] [PROPERTY]")
@plane_option
@click.option("--metric", type=click.Choice(METRICS), default="cosine", show_default=True)
@click.pass_obj
def index_ensure(obj: Context, names: tuple[str, ...], plane: str, metric: str) -> None:
    """Declare a vector index. LABEL PROPERTY: one pair; PROPERTY: every label carrying it;
    nothing: `embedding` on every label. Idempotent; a different metric is an error."""
    pairs = _declare(obj, plane, names, "vector", {"metric": check_metric(metric)}, "embedding")
    if pairs:
        for label, prop in pairs:
            click.echo(f"ensured vector index on {label}.{prop}")
        click.echo(f"{len(pairs)} label(s) indexed")


@index.command("keyword")
@click.argument("names", nargs=-1, required=True, metavar="LABEL|PROPERTY [PROPERTY]")
@plane_option
@click.option("--lang", default="english", show_default=True, help=f"Analyser language: {', '.join(LANGUAGES)}.")
@click.pass_obj
def index_keyword(obj: Context, names: tuple[str, ...], plane: str, lang: str) -> None:
    """Declare a keyword (BM25) index. LABEL PROPERTY: one pair; PROPERTY: every label carrying it."""
    language = canonical_language(lang)
    for label, prop in _declare(obj, plane, names, "keyword", {"language": language}, None):
        click.echo(f"ensured keyword index on {label}.{prop} ({language.capitalize()})")


@index.command("list")
@plane_option
@json_option
@click.pass_obj
def index_list(obj: Context, plane: str, as_json: bool) -> None:
    """List the plane's declared indexes (upstream's plane.indexes shape with --json), each vector
    index with the search breadth (ef) it calibrated and the recall@10 it measured there."""
    with obj.open(write=False) as db:
        with db.snapshot() as snap:
            decls = snap.indexes(snap.plane(plane).id)
            obj.say_synced(db, plane, as_json)
        with open_indexes(db) as indexes:
            indexes.catch_up()
            figures = [indexes.recall(d) for d in decls]
            listed = indexes.listing(decls)
    if as_json:
        emit_json(listed)
        return
    for d, f in zip(decls, figures, strict=True):
        detail = f"{d.metric}, {d.dims or '?'} dims" if d.kind == "vector" else d.language
        measured = f"\tef {f['ef']}, recall@10 {_recall_text(f['recall'])}" if f else ""
        click.echo(f"{d.kind}\t{d.label}.{d.prop}\t({detail}){measured}")


def _recall_text(recall: float | None) -> str:
    return "not measured (empty)" if recall is None else f"{recall:.3f}"


@index.command("drop")
@click.argument("label")
@click.argument("prop", metavar="PROPERTY")
@plane_option
@click.option("--kind", type=click.Choice(["vector", "keyword"]), default="vector", show_default=True)
@click.pass_obj
def index_drop(obj: Context, label: str, prop: str, plane: str, kind: str) -> None:
    """Drop a declared index (its sidecar is removed on the next catch-up)."""
    with obj.open(write=True) as db:
        dropped = Intent("index.drop", {"plane": plane, "kind": kind, "label": label, "property": prop})
        db.submit(dropped, {"via": "cli"})
        _build(db)
    click.echo(f"dropped {kind} index on {label}.{prop}")


def _build(db: Database) -> None:
    """Bring the sidecars up to date now, so the next command starts warm."""
    with open_indexes(db) as indexes:
        indexes.catch_up()


@contextmanager
def open_indexes(db: Database) -> Iterator[IndexSet]:
    settings = click.get_current_context().obj.settings
    indexes = IndexSet(
        db,
        ef_search=settings.integer("index.ef_search"),
        recall_target=settings.number("index.recall_target"),
    )
    yield indexes
    try:
        indexes.save()  # sidecars live beside the database, not in it: read commands save them too
    except OSError as exc:
        log.warning("could not save index sidecars; the next command will catch up again", reason=str(exc))


def embed_choice(
    embed: str | None, model: str | None = None, url: str | None = None, key_env: str | None = None
) -> EmbedderChoice:
    """The --embed, --embed-model, --embed-url, --embed-key-env flags as one choice."""
    return EmbedderChoice(embed, model, url, key_env)


def query_embedder(
    obj: Context, db: Database, plane: str, prop: str, embed: EmbedderChoice, purpose: Purpose = "query"
) -> Embedder:
    """The embedder for ``prop``'s vectors by the one rule (drsg.pipeline.embedder_choice): --embed's,
    else the one recorded with them, else `[digest] embed_provider`'s, else local; an --embed other
    than the recorded one is an error (two vector spaces do not compare)."""
    from drsg.pipeline.embedder_choice import choose_embedder, configured_choice

    configured = configured_choice(obj.settings)
    return choose_embedder(db, plane, prop, obj.settings, named=embed, configured=configured, purpose=purpose)


def _print_hits(hits: list[Hit], as_json: bool) -> None:
    if as_json:
        for hit in hits:
            emit_json(hit.to_json())
        return
    click.echo(f"{len(hits)} result(s)")
    for hit in hits:
        name = hit.node.key if hit.node.key is not None else f"#{hit.node.id}"
        score = f"{hit.score:.4f}" if hit.score is not None else "-"
        click.echo(f"  {score}\t{name}\t[{', '.join(hit.node.labels)}]")


def _run(obj: Context, plane: str, plan: Plan, embed: EmbedderChoice, as_json: bool) -> None:
    with obj.open(write=False) as db:
        hits = db.plane(plane).query(plan, embed=embed)  # a text query: the embedder that wrote the vectors
        obj.say_synced(db, plane, as_json)
        hint = None if hits else _no_vectors_hint(db, plane, plan)
    _print_hits(hits, as_json)
    if hint:
        click.echo(hint, err=True)


def _no_vectors_hint(db: Database, plane: str, plan: Plan) -> str | None:
    """Why a NEAR search found nothing, when it is that no node holds a vector to compare: the fix."""
    vector = plan.logical.source
    if not isinstance(vector, VectorTopK):
        return None
    from drsg.workers.hybrid import holds_vectors  # numpy: loaded by the search already, not by every command here

    label, prop = vector.label, vector.property
    with db.snapshot() as snap:
        found = snap.find_plane(plane)
        if found is None or holds_vectors(snap, found.id, label, prop):
            return None
    whose, only = (f"{label} node", f" --label {label}") if label else ("node", "")
    return (
        f"hint: no {whose} in plane {plane!r} holds a vector in {prop!r}; embed a text property first: "
        f"`drsg vectorize --plane {plane}{only} --from TEXT_PROPERTY --into {prop}`"
    )


@click.command("search")
@click.argument("statement")
@plane_option
@click.option("--param", "params", multiple=True, metavar="NAME=JSON", help="A $parameter's value.")
@embed_options
@json_option
@click.pass_obj
def search(
    obj: Context,
    statement: str,
    plane: str,
    params: tuple[str, ...],
    embed: str | None,
    embed_model: str | None,
    embed_url: str | None,
    embed_key_env: str | None,
    as_json: bool,
) -> None:
    """Run a SEARCH, HYBRID or CALL statement (vector NEAR, keyword MATCHING, fused, or an algorithm),
    optionally AS OF a commit. Read as Cypher: other Cypher runs with `drsg cypher`.

    \b
    SEARCH (v:Doc) ON embedding NEAR [0.1, 0.2] METRIC cosine TOPK 5
    SEARCH (d:Doc) ON body MATCHING "graph database" TOPK 10 AS OF 42
    HYBRID (d:Doc) VECTOR ON embedding NEAR "time travel" KEYWORD ON body MATCHING "time travel" GRAPH HOPS 1
    """
    plan = parse_query(statement, json_pairs(params, "--param", "q='[0.1, 0.2]'"))
    _run(obj, plane, plan, embed_choice(embed, embed_model, embed_url, embed_key_env), as_json)


@click.command("query")
@click.argument("plan", metavar="PLAN_JSON|-")
@plane_option
@embed_options
@json_option
@click.pass_obj
def query(
    obj: Context,
    plan: str,
    plane: str,
    embed: str | None,
    embed_model: str | None,
    embed_url: str | None,
    embed_key_env: str | None,
    as_json: bool,
) -> None:
    """Run a logical plan (upstream's JSON: VectorTopK, KeywordTopK, ScanAll, ScanLabel, SeekIds,
    SeekKeys sources; Expand, ExpandVar, Filter, Distinct, Sort, Skip and Limit steps).
    `-` reads the plan from standard input."""
    text = sys.stdin.read() if plan == "-" else plan
    _run(obj, plane, parse_plan_json(text), embed_choice(embed, embed_model, embed_url, embed_key_env), as_json)


@click.command("vectorize")
@plane_option
@click.option("--label", "-l", default=None, metavar="LABEL", help="Only nodes with this label.")
@click.option("--from", "source", required=True, metavar="PROPERTY", help="The text property to embed.")
@click.option("--into", default="embedding", show_default=True, metavar="PROPERTY", help="Where the vector goes.")
@embed_options
@click.option(
    "--metric",
    type=click.Choice(METRICS),
    default="cosine",
    show_default=True,
    help="Metric of the vector index ensured afterwards.",
)
@click.option("--batch", default=64, show_default=True, type=click.IntRange(1, 4096), help="Texts per request.")
@json_option
@click.pass_obj
def vectorize_cmd(
    obj: Context,
    plane: str,
    label: str | None,
    source: str,
    into: str,
    embed: str | None,
    embed_model: str | None,
    embed_url: str | None,
    embed_key_env: str | None,
    metric: str,
    batch: int,
    as_json: bool,
) -> None:
    """Embed a text property into a vector property for every node whose text changed, then
    ensure a vector index on it for each label embedded."""
    choice = embed_choice(embed, embed_model, embed_url, embed_key_env)  # default: the one that wrote `into`
    with obj.open(write=True) as db:
        p = db.plane(plane)
        if sys.stderr.isatty():
            with click.progressbar(length=1, label="embedding", file=sys.stderr) as bar:

                def progress(done: int, total: int) -> None:
                    bar.length = total
                    bar.update(done - bar.pos)

                report = p.vectorize(
                    source, into, label=label, metric=metric, embed=choice, batch=batch, progress=progress
                )
        else:
            report = p.vectorize(source, into, label=label, metric=metric, embed=choice, batch=batch)
    if as_json:
        emit_json(report.to_json())
        return
    click.echo(
        f"embedded {report.embedded} node(s) with {report.embedder}; {report.unchanged} already current, "
        f"{report.no_text} without text"
    )
    for name in sorted(report.labels):
        click.echo(f"ensured vector index on {name}.{into}")


COMMANDS = [index, search, query, vectorize_cmd]
