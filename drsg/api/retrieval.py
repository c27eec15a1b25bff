"""What ``Plane.search``, ``hybrid``, ``query``, ``vectorize`` (and ``vectorize_nodes``) and ``ask`` do: the wiring the
surfaces did each for themselves, done once.

The embedder for a text query or a vectorize comes from the one rule
(drsg.pipeline.embedder_choice): the one named (``embed=EmbedderChoice(…)``), else the one the
plane recorded with the vectors, else the configured one (``[digest] embed_provider``), else the
local model; a named one that is not the recorded one is refused. Built embedders are kept per
database (a model loads once).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Literal

from drsg.api.results import AskAnswer, Hit, Vectorized
from drsg.kernel.asof import AsOf
from drsg.kernel.errors import UsageError
from drsg.kernel.values import Vector
from drsg.models.providers import ChatChoice, EmbedderChoice
from drsg.plan.hybrid import (
    DEFAULT_CANDIDATES,
    DEFAULT_DECAY,
    DEFAULT_K,
    DEFAULT_RRF_K,
    DEFAULT_SEEDS,
    DEFAULT_WEIGHTS,
    GraphPart,
    HybridSpec,
    KeywordPart,
    VectorPart,
)

# the embedder stack (drsg.models.embedders, drsg.pipeline.embedder_choice: ≈0.02 s) loads where a
# text is embedded, inside the functions that embed: a search NEAR a vector loads none of it
if TYPE_CHECKING:
    from drsg.api.host import Host, HostedPlane
    from drsg.kernel.settings import Settings
    from drsg.kernel.values import Json
    from drsg.models.chat.base import ChatModel
    from drsg.models.embedders.base import Embedder
    from drsg.pipeline.llm.cache import AnswerCache
    from drsg.pipeline.llm.calls import ModelCalls
    from drsg.plan.query import Plan
    from drsg.workers.search import Hit as WorkerHit


def embedder_for(
    plane: HostedPlane, prop: str, embed: EmbedderChoice | None, purpose: Literal["query", "write"]
) -> Embedder:
    """The embedder for ``prop``'s vector space in ``plane``, by the one rule."""
    return plane_embedder(plane.db, plane.name, prop, embed, purpose)


def plane_embedder(
    db: Host, plane: str, prop: str, embed: EmbedderChoice | None, purpose: Literal["query", "write"]
) -> Embedder:
    """:func:`embedder_for` by the plane's name: the configured step is the database's
    (:meth:`~drsg.api.database.Database.use_embedder`, else the settings'), built once per database."""
    from drsg.pipeline.embedder_choice import choose_embedder

    return choose_embedder(
        db.store,
        plane,
        prop,
        db.settings,
        named=embed,
        configured=db.configured_embedder,
        purpose=purpose,
        cache=db.embedders,
    )


def optional_plane_embedder(db: Host, plane: str, prop: str, purpose: Literal["query", "write"]) -> Embedder | None:
    """:func:`plane_embedder` when there are vectors to keep to (``prop``'s are recorded) or, to
    write them, one is configured; else None: the caller goes without (keywords alone)."""
    from drsg.pipeline.embedder_choice import optional_embedder

    return optional_embedder(
        db.store,
        plane,
        prop,
        db.settings,
        configured=db.configured_embedder,
        purpose=purpose,
        cache=db.embedders,
    )


def hit_of(hit: WorkerHit) -> Hit:
    """The public hit for a search's (a hybrid one carries its channels)."""
    from drsg.workers import search  # loaded by whatever searched

    if type(hit) is search.Hit:  # a plain search's: the hybrid module (fusion, its C part) need not load
        return Hit(hit.node, hit.score, wire=hit)
    from drsg.workers.hybrid import HybridHit

    if isinstance(hit, HybridHit):
        channels, normalised = dict(hit.channels), dict(hit.normalised)
        return Hit(hit.node, hit.score, channels, normalised, hit.hops, hit.explanation, hit.profile, hit)
    return Hit(hit.node, hit.score, wire=hit)


def search(
    plane: HostedPlane,
    query: str | Vector | Sequence[float],
    prop: str,
    keyword: bool,
    label: str | None,
    k: int,
    metric: str,
    as_of: AsOf | None,
    embed: EmbedderChoice | None,
) -> list[Hit]:
    searcher = plane.db.searcher
    if keyword:
        if not isinstance(query, str):
            raise UsageError("a keyword search takes text; pass a string, or keyword=False for a vector")
        if label is None:
            raise UsageError(f"a keyword search names the label whose {prop!r} is indexed; pass label=…")
        return [hit_of(hit) for hit in searcher.keyword(plane.name, label, prop, query, k, as_of)]
    if isinstance(query, str):
        vector = embedder_for(plane, prop, embed, "query").embed([query])[0]
    else:
        vector = query if isinstance(query, Vector) else Vector.of(query)
    return [hit_of(hit) for hit in searcher.vector(plane.name, label, prop, vector, metric, k, as_of)]


def query(
    plane: HostedPlane, statement: str | Plan, params: Mapping[str, Any] | None, embed: EmbedderChoice | None
) -> list[Hit]:
    """A SEARCH or HYBRID statement (``drsg search``'s), or a logical plan, its AS OF included."""
    from drsg.plan.hybrid import text_property
    from drsg.plan.statements import parse_query
    from drsg.workers.plans import run_plan

    plan = parse_query(statement, dict(params or {})) if isinstance(statement, str) else statement
    prop = text_property(plan)
    embedder = None if prop is None else embedder_for(plane, prop, embed, "query")

    def embed_text(text: str) -> Vector:
        assert embedder is not None  # only a plan with a text query asks
        return embedder.embed([text])[0]

    return [hit_of(hit) for hit in run_plan(plane.db.searcher, plane.name, plan, embed_text)]


def hybrid_spec(
    text: str,
    *,
    label: str | None = None,
    vector: str | None = None,
    keyword: str | None = None,
    graph_hops: int | None = None,
    graph_decay: float = DEFAULT_DECAY,
    graph_seeds: int = DEFAULT_SEEDS,
    metric: str = "cosine",
    k: int = DEFAULT_K,
    candidates: int = DEFAULT_CANDIDATES,
    weights: Mapping[str, float] | None = None,
    fusion: str | None = None,
    rrf_k: int | None = None,
    graph_norm: str = "range",
) -> HybridSpec:
    """A checked hybrid query: a channel is on when its property is named (``vector``,
    ``keyword``), the graph channel with ``graph_hops``. With no ``weights``, ``fusion`` or
    ``rrf_k``, the plane's fusion profile decides them, as ``drsg hybrid`` does."""
    return HybridSpec(
        label=label,
        vector=None if vector is None else VectorPart(vector, text, metric),
        keyword=None if keyword is None else KeywordPart(keyword, text),
        graph=None if graph_hops is None else GraphPart(graph_hops, graph_decay, graph_seeds),
        weights={**DEFAULT_WEIGHTS, **(weights or {})},
        candidates=candidates,
        k=k,
        fusion=fusion or "minmax",
        rrf_k=DEFAULT_RRF_K if rrf_k is None else rrf_k,
        graph_norm=graph_norm,
        use_profile=weights is None and fusion is None and rrf_k is None,
    ).check()


def hybrid(plane: HostedPlane, text: str, as_of: AsOf | None, options: Mapping[str, Any]) -> list[Hit]:
    from drsg.workers.hybrid import hybrid as run_hybrid

    options = dict(options)
    embed = options.pop("embed", None)
    strict = bool(options.pop("strict", True))
    given = options.pop("spec", None)
    spec = given.check() if isinstance(given, HybridSpec) else hybrid_spec(text, **options)
    if spec.vector is not None:  # embedded first, outside the query's snapshot
        embedded = embedder_for(plane, spec.vector.prop, embed, "query").embed([text])[0]
        spec = replace(spec, vector=VectorPart(spec.vector.prop, embedded, spec.vector.metric))
    hits = run_hybrid(plane.db.searcher, plane.name, spec, as_of=as_of, strict=strict)
    return [hit_of(hit) for hit in hits]


def vectorize(
    plane: HostedPlane,
    source: str,
    into: str,
    label: str | None,
    metric: str,
    embed: EmbedderChoice | None,
    batch: int,
    progress: Callable[[int, int], None] | None = None,
) -> Vectorized:
    from drsg.pipeline.vectorize import ensure_vector_indexes
    from drsg.pipeline.vectorize import vectorize as embed_plane

    store = plane.db.store
    embedder = embedder_for(plane, into, embed, "write")
    report = embed_plane(store, embedder, plane.name, source, into, label, batch, progress)
    ensure_vector_indexes(store, plane.name, report.labels, into, metric)
    plane.db.searcher.indexes.catch_up(plane=plane.id)  # built now: the next search starts warm
    return Vectorized.of(report, embedder.identity())


def vectorize_nodes(
    plane: HostedPlane, metric: str, embed: EmbedderChoice | None, origin: Mapping[str, Json] | None
) -> Vectorized:
    """Upstream's whole-plane vectorize (drsg.pipeline.vectorize_plane): every node's text into
    ``embedding``; each commit's origin is ``origin`` (default: the database's) with the embedder's
    identity."""
    from drsg.pipeline.vectorize_plane import INTO, vectorize_plane

    embedder = embedder_for(plane, INTO, embed, "write")
    identity = embedder.identity()
    report, tokens = vectorize_plane(
        plane.db.store, embedder, plane.name, metric, {**(origin or plane.db.origin), "embedder": identity}
    )
    plane.db.searcher.indexes.catch_up(plane=plane.id)  # built now: the next search starts warm
    return Vectorized.of(report, identity, tokens)


def ask(
    plane: HostedPlane,
    question: str,
    chat: ChatModel | ChatChoice | None,
    as_of: AsOf | None,
    dry_run: bool,
    embed: EmbedderChoice | Embedder | None,
    max_attempts: int | None = None,
    limit: int | None = None,
) -> AskAnswer:
    from drsg.models.embedders.base import Embedder
    from drsg.pipeline.ask.loop import AskOptions
    from drsg.pipeline.ask.loop import ask as run_ask
    from drsg.pipeline.embedder_choice import named_embedder

    db = plane.db
    settings = db.settings
    question = question.strip()
    if not question:
        raise UsageError("the question is empty; ask something, e.g. plane.ask('who …?')")
    calls = model_calls(chat, settings)
    options = AskOptions(
        dry_run=dry_run,
        max_attempts=settings.integer("ask.max_attempts") if max_attempts is None else max_attempts,
        limit=settings.integer("ask.limit") if limit is None else limit,
        as_of=as_of,
        masked=settings.strings("ask.masked"),
        max_rows=settings.integer("query.max_rows"),  # a Cypher answer runs bounded as `drsg cypher` does
        timeout=settings.optional_number("query.timeout_secs"),
    )
    if embed is None or isinstance(embed, Embedder):
        embedder = embed  # an embedder as it is (a server's: the plane's, by the one rule)
    else:
        embedder = named_embedder(embed, settings, cache=db.embedders)
    result = run_ask(db.store, db.searcher, plane.name, question, calls, embedder, options)
    wire = result.to_json(calls)
    return AskAnswer(
        result.question,
        tuple(result.plans),
        result.ran,
        tuple(result.results),
        tuple(result.answers),
        tuple(result.edges),
        tuple(result.bounds),
        tuple(result.trace),
        result.attempts,
        result.at,
        usage=wire["usage"],
        cypher=tuple(result.cypher),
        columns=tuple(result.columns),
        rows=tuple(tuple(row) for row in result.rows),
        wire=wire,
    )


def model_calls(
    chat: ChatModel | ChatChoice | None, settings: Settings, cache: AnswerCache | None = None
) -> ModelCalls:
    """The chat model's calls: a model as given, one named (its key read on the first call), else
    the ``digest.chat``/``digest.model`` settings'."""
    from drsg.pipeline.llm.calls import ModelCalls

    if chat is None:
        return ModelCalls.for_chat(
            settings.text("digest.chat"), settings.text("digest.model") or None, settings=settings, cache=cache
        )
    if isinstance(chat, ChatChoice):
        return ModelCalls.for_chat(chat.name, chat.model, chat.url, chat.key_env, settings, cache)
    model = chat
    return ModelCalls(model.identity(), lambda: model, cache)
