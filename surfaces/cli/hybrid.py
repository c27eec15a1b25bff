"""`hybrid`: vector + keyword + graph retrieval fused into one ranking (upstream's output lines)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from drsg.api.results import Hit
from drsg.kernel.asof import AsOf
from drsg.kernel.metrics import METRICS
from drsg.plan.hybrid import (
    CHANNELS,
    DEFAULT_CANDIDATES,
    DEFAULT_DECAY,
    DEFAULT_K,
    DEFAULT_RRF_K,
    DEFAULT_SEEDS,
    DEFAULT_WEIGHTS,
    FUSIONS,
    GRAPH_NORMS,
    FusionProfile,
    GraphPart,
    HybridSpec,
    KeywordPart,
    VectorPart,
)
from drsg.surfaces.cli.context import Context, emit_json
from drsg.surfaces.cli.options import as_of_option, embed_options, json_option, plane_option
from drsg.surfaces.cli.search import embed_choice
from drsg.workers.hybrid import vector_similarity

F = TypeVar("F", bound=Callable[..., Any])


def _raw(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def hybrid_options(fn: F) -> F:
    """The channel, weight and fusion flags `hybrid` and `hybrid-eval` share (read by :func:`spec_from`)."""
    options = [
        click.option(
            "--label", "-l", default=None, metavar="LABEL", help="Only nodes with this label (keyword needs it)."
        ),
        click.option("--vector", "vector_prop", default=None, metavar="PROP", help="The vector channel, over PROP."),
        click.option(
            "--keyword", "keyword_prop", default=None, metavar="PROP", help="The keyword (BM25) channel, over PROP."
        ),
        click.option("--metric", type=click.Choice(METRICS), default="cosine", show_default=True),
        click.option(
            "--graph-hops", type=click.IntRange(0, 64), default=None, metavar="N", help="The graph channel: N hops."
        ),
        click.option("--graph-decay", type=click.FloatRange(0.0, 1.0), default=DEFAULT_DECAY, show_default=True),
        click.option(
            "--graph-seeds",
            type=click.IntRange(1),
            default=DEFAULT_SEEDS,
            show_default=True,
            help="Top hits of each channel the graph expands from.",
        ),
        click.option(
            "--graph-norm",
            type=click.Choice(GRAPH_NORMS),
            default="range",
            show_default=True,
            help="range: decay^hops as is (a 1-hop neighbour keeps `decay`); minmax: upstream's (1-hop → 0 at 1 hop).",
        ),
        click.option(
            "--candidates",
            type=click.IntRange(1),
            default=DEFAULT_CANDIDATES,
            show_default=True,
            help="Hits per channel.",
        ),
        click.option("--w-vector", type=float, default=None, help=f"{_UNLESS} {DEFAULT_WEIGHTS['vector']:g})."),
        click.option("--w-keyword", type=float, default=None, help=f"{_UNLESS} {DEFAULT_WEIGHTS['keyword']:g})."),
        click.option("--w-graph", type=float, default=None, help=f"{_UNLESS} {DEFAULT_WEIGHTS['graph']:g})."),
        click.option(
            "--fusion",
            type=click.Choice(FUSIONS),
            default=None,
            help="minmax weighted sum (upstream's, the default unless the plane has a fusion profile), rrf "
            "(reciprocal rank), dbsf (distribution-based score fusion).",
        ),
        click.option("--rrf-k", type=click.IntRange(0), default=None, help=f"RRF's k (default {DEFAULT_RRF_K})."),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


_UNLESS = "Weight (with no weight or fusion flag, the plane's fusion profile decides; else"
_FUSING = ("w_vector", "w_keyword", "w_graph", "fusion", "rrf_k")


def spec_from(text: str, k: int, options: dict[str, Any]) -> HybridSpec:
    """A checked HybridSpec from :func:`hybrid_options`' values (``text`` is the query for both
    channels). With no weight and no fusion flag, the plane's fusion profile decides them (if set)."""
    o = {**options}
    use_profile = all(o[name] is None for name in _FUSING)
    for name in CHANNELS:
        o[f"w_{name}"] = DEFAULT_WEIGHTS[name] if o[f"w_{name}"] is None else o[f"w_{name}"]
    o["fusion"] = o["fusion"] or "minmax"
    o["rrf_k"] = DEFAULT_RRF_K if o["rrf_k"] is None else o["rrf_k"]
    return HybridSpec(
        label=o["label"],
        vector=None if o["vector_prop"] is None else VectorPart(o["vector_prop"], text, o["metric"]),
        keyword=None if o["keyword_prop"] is None else KeywordPart(o["keyword_prop"], text),
        graph=None if o["graph_hops"] is None else GraphPart(o["graph_hops"], o["graph_decay"], o["graph_seeds"]),
        weights={"vector": o["w_vector"], "keyword": o["w_keyword"], "graph": o["w_graph"]},
        candidates=o["candidates"],
        k=k,
        fusion=o["fusion"],
        rrf_k=o["rrf_k"],
        graph_norm=o["graph_norm"],
        use_profile=use_profile,
    ).check()


def print_hits(hits: list[Hit], as_json: bool, explain: bool = False, spec: HybridSpec | None = None) -> None:
    """One line per hit: fused score, name, each channel's raw score — ``v`` the vector similarity
    (as `search NEAR` prints it; JSON's ``channels.vector`` keeps upstream's distance), ``k`` BM25,
    ``g`` decay^hops from the nearest seed."""
    if as_json:
        for hit in hits:
            out = hit.to_json()
            if explain:
                out["explanation"] = hit.explanation
            emit_json(out)
        return
    click.echo(f"hybrid: {len(hits)} results")
    profile = hits[0].profile if hits else None
    if explain and profile is not None:
        fused = FusionProfile.from_json(profile.profile).describe()
        where = f"{profile.label} ({profile.vector} + {profile.keyword})"
        click.echo(f"  fusion profile for {where}, set at commit {profile.since}: {fused}")
    if explain and spec is not None and spec.graph is not None:
        # every seed scores g 1: the channel lifts the seeds' neighbours, it cannot order the seeds
        decay = "decay" if profile is not None else f"{spec.graph.decay:g}"  # a profile may set its own
        click.echo(
            f"  g: 1 for a seed (the top {spec.graph.seeds} vector and top {spec.graph.seeds} keyword hits), "
            f"{decay}^hops for a node that many hops from one; alike for every seed, so it "
            "lifts their neighbours and leaves the seeds' order to the other channels"
        )
    metric = spec.vector.metric if spec is not None and spec.vector is not None else "cosine"
    for hit in hits:
        name = hit.node.key if hit.node.key is not None else f"#{hit.node.id}"
        ch = hit.channels
        distance = ch.get("vector")
        v = None if distance is None else vector_similarity(metric, distance)
        raw = f"v={_raw(v)} k={_raw(ch.get('keyword'))} g={_raw(ch.get('graph'))}"
        click.echo(f"  {hit.score or 0.0:.4f}\t{name}\t[{raw}]")
        if explain:
            click.echo(f"      {hit.explanation}")


@click.command("hybrid")
@click.argument("text", metavar='"QUERY"')
@plane_option
@hybrid_options
@click.option("--k", "k", type=click.IntRange(0), default=DEFAULT_K, show_default=True, help="Results returned.")
@as_of_option
@embed_options
@click.option("--explain", is_flag=True, help="Show how each fused score was made.")
@json_option
@click.pass_obj
def hybrid(
    obj: Context,
    text: str,
    plane: str,
    k: int,
    as_of: AsOf | None,
    embed: str | None,
    embed_model: str | None,
    embed_url: str | None,
    embed_key_env: str | None,
    explain: bool,
    as_json: bool,
    **options: Any,
) -> None:
    """Hybrid retrieval: a channel is on when its property is named (--vector, --keyword), the
    graph channel with --graph-hops. Channels are min-max normalised (the graph channel by its
    range [0, 1], so a one-hop neighbour keeps `decay`; --graph-norm minmax for upstream's) and
    summed with weights (vector 1, keyword 1, graph 0.5) — or, when no weight or fusion flag is
    given, as the plane's fusion profile for (--label, --vector, --keyword) says (`hybrid-eval --fit
    --save` sets one; --explain names it). The text is embedded with the embedder recorded with the
    vectors (local by default); another --embed is an error.

    \b
    drsg hybrid "how does time-travel work" -p social --label Doc \\
        --vector embedding --keyword body --graph-hops 1 --k 10
    """
    spec = spec_from(text, k, options)
    choice = embed_choice(embed, embed_model, embed_url, embed_key_env)
    with obj.open(write=False) as db:  # a channel that cannot run is an error here (the API's strict query)
        hits = db.plane(plane).hybrid(text, spec=spec, as_of=as_of, embed=choice)
        obj.say_synced(db, plane, as_json)
    print_hits(hits, as_json, explain, spec)


COMMANDS = [hybrid]
