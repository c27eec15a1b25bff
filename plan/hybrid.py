"""The hybrid query: its spec, defaults and validation, the HYBRID form, and the ``Hybrid`` plan source (pure).

    HYBRID (d[:Label]) [VECTOR [ON prop] NEAR <"text" | [1.0, 2.0] | $param> [METRIC m] [WEIGHT w]]
        [KEYWORD ON prop MATCHING "text" [WEIGHT w]] [GRAPH HOPS n [DECAY d] [SEEDS s] [WEIGHT w]]
        [CANDIDATES n] [TOPK k] [FUSION minmax|rrf|dbsf [K n]] [RETURN d|*] [LIMIT n] [AS OF …]

Parts come in any order, each at most once, with at least one of VECTOR or KEYWORD; KEYWORD needs
a label. Defaults (upstream's): CANDIDATES 100, TOPK 10, DECAY 0.5, SEEDS 10, weights vector 1.0,
keyword 1.0, graph 0.5. :class:`HybridSpec` is the one description of a hybrid query, whichever
surface made it (this form, CLI flags, RPC params, plan JSON); drsg.workers.hybrid runs it. Its
plan source follows upstream's serde shape::

    {"Hybrid": {"label", "vector": {"property", "query"|"query_text", "metric"} | null,
                "keyword": {"property", "query"} | null, "graph": {"hops", "decay", "seeds"} | null,
                "weights": {"vector", "keyword", "graph"}, "candidates", "k"}}

plus ``"fusion"`` (and ``"rrf_k"``) when a fusion other than minmax is asked for, and
``"graph_norm"`` when it is not ``range``. The plan owns the fusions' names; their maths is in
drsg.workers.fusion. The statements are read by the Cypher front end (``drsg.plan.cypher``);
:func:`drsg.plan.statements.parse_query` makes a SEARCH, HYBRID or CALL statement's plan with it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from drsg.kernel.errors import UsageError
from drsg.kernel.metrics import check_metric, plan_metric
from drsg.kernel.values import Vector
from drsg.plan.logical import Hybrid, VectorTopK
from drsg.plan.query import Plan

DEFAULT_CANDIDATES = 100
DEFAULT_K = 10
DEFAULT_SEEDS = 10
DEFAULT_DECAY = 0.5
DEFAULT_WEIGHTS = {"vector": 1.0, "keyword": 1.0, "graph": 0.5}
CHANNELS = ("vector", "keyword", "graph")
FUSIONS = ("minmax", "rrf", "dbsf")
DEFAULT_RRF_K = 60
#: How the graph channel's decay^hops is normalised: by its range [0, 1], or min-max (upstream's).
GRAPH_NORMS = ("range", "minmax")


#: the largest weight a channel may carry: shares are at most 1 (rrf, min-max) or a few (dbsf), so
#: three channels at 1e6 stay finite where two at 1e308 made a score of Infinity (not JSON)
MAX_WEIGHT = 1e6


@dataclass(frozen=True)
class VectorPart:
    prop: str
    query: Vector | str  # a string is embedded by the caller's embedder
    metric: str = "cosine"


@dataclass(frozen=True)
class KeywordPart:
    prop: str
    text: str


@dataclass(frozen=True)
class GraphPart:
    hops: int
    decay: float = DEFAULT_DECAY
    seeds: int = DEFAULT_SEEDS


@dataclass(frozen=True)
class HybridSpec:
    """One hybrid query; ``Hybrid`` plan-source JSON in and out (upstream's shape, plus
    ``fusion``, ``rrf_k`` and ``graph_norm``, and ``query_text`` for a text vector query)."""

    label: str | None = None
    vector: VectorPart | None = None
    keyword: KeywordPart | None = None
    graph: GraphPart | None = None
    weights: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_WEIGHTS))
    candidates: int = DEFAULT_CANDIDATES
    k: int = DEFAULT_K
    fusion: str = "minmax"
    rrf_k: int = DEFAULT_RRF_K
    graph_norm: str = "range"
    #: the query named no weight and no fusion: the plane's fusion profile for its (label, vector
    #: property, keyword property), when there is one, decides them (:meth:`FusionProfile.apply`)
    use_profile: bool = False

    def check(self) -> HybridSpec:
        """Raise a one-line UsageError for a query that cannot run."""
        if self.label is not None and (not isinstance(self.label, str) or not self.label):
            raise UsageError(f"the hybrid label must be a label's name or null, not {self.label!r:.40}")
        if self.vector is None and self.keyword is None:
            raise UsageError("hybrid needs a vector or a keyword channel: name --vector PROP and/or --keyword PROP")
        if self.keyword is not None and not self.label:
            raise UsageError("the keyword channel needs a label (--label L): a BM25 index is declared per label")
        if self.vector is not None:
            check_metric(self.vector.metric)
        if self.graph is not None:
            if self.graph.hops < 0:
                raise UsageError("graph hops must be ≥ 0")
            if not 0.0 <= self.graph.decay <= 1.0:
                raise UsageError(f"graph decay must be in [0, 1], not {self.graph.decay}")
            if self.graph.seeds < 1:
                raise UsageError("graph seeds must be ≥ 1")
        if self.candidates < 1:
            raise UsageError("candidates must be ≥ 1")
        if self.k < 0:
            raise UsageError("k must be ≥ 0")
        if self.fusion not in FUSIONS:
            raise UsageError(f"unknown fusion {self.fusion!r}; use one of {', '.join(FUSIONS)}")
        if self.graph_norm not in GRAPH_NORMS:
            raise UsageError(f"unknown graph normalisation {self.graph_norm!r}; use one of {', '.join(GRAPH_NORMS)}")
        if self.rrf_k < 0:
            raise UsageError("rrf k must be ≥ 0")
        for name in CHANNELS:
            w = self.weights.get(name, DEFAULT_WEIGHTS[name])
            if isinstance(w, bool) or not isinstance(w, int | float) or not -MAX_WEIGHT <= w <= MAX_WEIGHT:
                raise UsageError(f"the {name} weight must be a number from -{MAX_WEIGHT:,.0f} to {MAX_WEIGHT:,.0f}")
        return self

    def weight(self, name: str) -> float:
        return float(self.weights.get(name, DEFAULT_WEIGHTS[name]))

    def to_plan_json(self) -> dict[str, Any]:
        vector: dict[str, Any] | None = None
        if self.vector is not None:
            vector = {"property": self.vector.prop, "metric": plan_metric(self.vector.metric)}
            if isinstance(self.vector.query, Vector):
                vector["query"] = self.vector.query.tolist()
            else:
                vector["query_text"] = self.vector.query
        body: dict[str, Any] = {
            "label": self.label,
            "vector": vector,
            "keyword": None if self.keyword is None else {"property": self.keyword.prop, "query": self.keyword.text},
            "graph": None
            if self.graph is None
            else {"hops": self.graph.hops, "decay": self.graph.decay, "seeds": self.graph.seeds},
            "weights": {name: self.weight(name) for name in CHANNELS},
            "candidates": self.candidates,
            "k": self.k,
        }
        if self.fusion != "minmax":
            body["fusion"] = self.fusion
            if self.fusion == "rrf":
                body["rrf_k"] = self.rrf_k
        if self.graph_norm != "range":
            body["graph_norm"] = self.graph_norm
        if self.use_profile:
            body["profile"] = True
        return {"Hybrid": body}

    @classmethod
    def from_plan_json(cls, body: object) -> HybridSpec:
        """Read a ``Hybrid`` source body (the value under ``"Hybrid"``)."""
        if not isinstance(body, dict):
            raise UsageError("a Hybrid source is an object with vector, keyword, graph, weights, candidates, k")
        try:
            v, kw, g = body.get("vector"), body.get("keyword"), body.get("graph")
            vector = None
            if v is not None:
                if "query" in v:
                    query: Vector | str = Vector.of(v["query"])
                elif "query_text" in v:
                    query = str(v["query_text"])
                else:
                    raise UsageError('the Hybrid vector channel needs "query" (numbers) or "query_text"')
                vector = VectorPart(str(v.get("property", "embedding")), query, str(v.get("metric", "Cosine")).lower())
            keyword = None if kw is None else KeywordPart(str(kw["property"]), str(kw["query"]))
            graph = None
            if g is not None:
                graph = GraphPart(
                    int(g["hops"]), float(g.get("decay", DEFAULT_DECAY)), int(g.get("seeds", DEFAULT_SEEDS))
                )
            weights = dict(DEFAULT_WEIGHTS)
            weights.update({str(n): float(w) for n, w in (body.get("weights") or {}).items()})
            spec = cls(
                label=body.get("label"),
                vector=vector,
                keyword=keyword,
                graph=graph,
                weights=weights,
                candidates=int(body.get("candidates", DEFAULT_CANDIDATES)),
                k=int(body.get("k", DEFAULT_K)),
                fusion=str(body.get("fusion", "minmax")),
                rrf_k=int(body.get("rrf_k", DEFAULT_RRF_K)),
                graph_norm=str(body.get("graph_norm", "range")),
                use_profile=body.get("profile") is True,
            )
        except (KeyError, TypeError, ValueError, AttributeError, OverflowError) as exc:
            raise UsageError(f"bad Hybrid source ({exc.__class__.__name__}: {exc})") from None
        return spec.check()


@dataclass(frozen=True)
class FusionProfile:
    """How a plane fuses the hybrid queries over one (label, vector property, keyword property):
    what ``hybrid-eval --fit --save`` chose, recorded by a ``fusion.set`` commit. A query that names
    no weight and no fusion (:attr:`HybridSpec.use_profile`) takes the profile's fusion, RRF k,
    weights and candidate pool, and, when the query has a graph channel, its hops and decay.
    ``fit`` says how it was chosen (folds, seed, queries, the held-out scores); it is reported,
    never used."""

    fusion: str = "minmax"
    rrf_k: int = DEFAULT_RRF_K
    weights: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_WEIGHTS))
    candidates: int = DEFAULT_CANDIDATES
    graph_hops: int | None = None
    graph_decay: float | None = None
    fit: dict[str, Any] = field(default_factory=dict)

    def apply(self, spec: HybridSpec) -> HybridSpec:
        graph = spec.graph
        if graph is not None and self.graph_hops is not None:
            decay = graph.decay if self.graph_decay is None else self.graph_decay
            graph = GraphPart(self.graph_hops, decay, graph.seeds)
        return replace(
            spec,
            fusion=self.fusion,
            rrf_k=self.rrf_k,
            weights=dict(self.weights),
            candidates=self.candidates,
            graph=graph,
            use_profile=False,
        )

    def describe(self) -> str:
        """One line: ``rrf k=30, weights vector 0.7 keyword 0.3 graph 0.1, 200 candidates, 1 hop decay 0.5``."""
        fusion = f"rrf k={self.rrf_k}" if self.fusion == "rrf" else self.fusion
        weights = " ".join(f"{name} {self.weights.get(name, 0.0):g}" for name in CHANNELS)
        graph = "" if self.graph_hops is None else f", {self.graph_hops} hop(s) decay {self.graph_decay:g}"
        return f"{fusion}, weights {weights}, {self.candidates} candidates{graph}"

    def to_json(self) -> dict[str, Any]:
        graph = None if self.graph_hops is None else {"hops": self.graph_hops, "decay": self.graph_decay}
        return {
            "fusion": self.fusion,
            "rrf_k": self.rrf_k,
            "weights": {name: float(self.weights.get(name, 0.0)) for name in CHANNELS},
            "candidates": self.candidates,
            "graph": graph,
            "fit": self.fit,
        }

    @classmethod
    def from_json(cls, obj: Any) -> FusionProfile:
        """A profile as a ``fusion.set`` commit records it; a malformed one is a one-line UsageError."""
        try:
            if not isinstance(obj, dict):
                raise TypeError("not an object")
            graph = obj.get("graph")
            weights = {str(n): float(w) for n, w in dict(obj.get("weights") or {}).items()}
            profile = cls(
                fusion=str(obj.get("fusion", "minmax")),
                rrf_k=int(obj.get("rrf_k", DEFAULT_RRF_K)),
                weights={name: weights.get(name, 0.0) for name in CHANNELS},
                candidates=int(obj.get("candidates", DEFAULT_CANDIDATES)),
                graph_hops=None if graph is None else int(graph["hops"]),
                graph_decay=None if graph is None else float(graph["decay"]),
                fit=dict(obj.get("fit") or {}),
            )
        except (KeyError, TypeError, ValueError, OverflowError) as exc:
            raise UsageError(f"a malformed fusion profile ({exc.__class__.__name__}: {exc}); set it again") from None
        spec = HybridSpec(
            label="L",
            vector=VectorPart("v", "x"),
            keyword=KeywordPart("k", "x"),
            graph=None if profile.graph_hops is None else GraphPart(profile.graph_hops, profile.graph_decay or 0.0),
        )
        try:
            profile.apply(spec).check()  # the same bounds a query's own fusion is held to
        except UsageError as exc:
            raise UsageError(f"a malformed fusion profile: {exc.message}; set it again") from None
        return profile


def text_property(plan: Plan) -> str | None:
    """The vector property whose embedder must embed the plan's query text (a ``VectorTopK`` or
    ``Hybrid`` source with ``query_text``), or None when the plan has no text to embed."""
    match plan.logical.source:
        case VectorTopK(property=prop, query_text=str()):
            return prop
        case Hybrid(body=dict(body)):  # a body as written: HybridSpec reads it where the plan runs
            vector = body.get("vector")
            if isinstance(vector, dict) and "query_text" in vector:
                return str(vector.get("property") or "embedding")
    return None
