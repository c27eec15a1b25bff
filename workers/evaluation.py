"""Retrieval evaluation: nDCG@k (graded relevance), recall@k, TREC qrels and JSONL query files,
and running a hybrid query set per channel and fused.

Metrics follow ``trec_eval``'s conventions: the gain of a document is its relevance grade (linear,
not ``2^rel − 1``), discounted by ``log2(rank + 1)`` with ranks from 1; the ideal ranking is the
judged documents sorted by grade; a document without a judgment (or judged 0) gains nothing. A
query without any relevant judgment is left out of the means (as ``trec_eval`` does), and a query
in the qrels that was not run scores 0.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from drsg.kernel.errors import BadValue
from drsg.kernel.values import Vector
from drsg.plan.hybrid import KeywordPart, VectorPart
from drsg.store.records import Node
from drsg.workers.hybrid import hybrid

Qrels = dict[str, dict[str, int]]  # query id → document key → relevance grade


# --------------------------------------------------------------------------- the metrics


def dcg(gains: Sequence[float]) -> float:
    """Discounted cumulative gain of gains in rank order (rank 1 undiscounted)."""
    return sum(g / math.log2(i + 2) for i, g in enumerate(gains) if g)


def ndcg_at_k(ranked: Sequence[str], judged: Mapping[str, int], k: int = 10) -> float:
    """nDCG@k of one ranking against graded judgments; 0.0 when nothing is relevant."""
    if k < 1:
        raise ValueError("k must be ≥ 1")
    ideal = dcg(sorted((r for r in judged.values() if r > 0), reverse=True)[:k])
    if ideal == 0.0:
        return 0.0
    seen: set[str] = set()
    gains: list[float] = []
    for doc in ranked[:k]:
        gains.append(0.0 if doc in seen else float(max(judged.get(doc, 0), 0)))
        seen.add(doc)  # a document listed twice counts once
    return dcg(gains) / ideal


def recall_at_k(ranked: Sequence[str], judged: Mapping[str, int], k: int = 100) -> float:
    """Share of the relevant (grade > 0) documents found in the top ``k``; 0.0 when none exists."""
    if k < 1:
        raise ValueError("k must be ≥ 1")
    relevant = {doc for doc, r in judged.items() if r > 0}
    if not relevant:
        return 0.0
    return len(relevant.intersection(ranked[:k])) / len(relevant)


@dataclass(frozen=True)
class Scores:
    """Mean metrics of one run over the judged queries."""

    ndcg: float
    recall: float
    queries: int
    per_query: dict[str, tuple[float, float]] = field(default_factory=dict, compare=False)


def score_run(run: Mapping[str, Sequence[str]], qrels: Qrels, ndcg_k: int = 10, recall_k: int = 100) -> Scores:
    """Mean nDCG@``ndcg_k`` and recall@``recall_k`` over the qrels' queries with a relevant document."""
    per_query: dict[str, tuple[float, float]] = {}
    for qid, judged in qrels.items():
        if not any(r > 0 for r in judged.values()):
            continue
        ranked = run.get(qid, [])
        per_query[qid] = (ndcg_at_k(ranked, judged, ndcg_k), recall_at_k(ranked, judged, recall_k))
    n = len(per_query)
    if n == 0:
        return Scores(0.0, 0.0, 0, per_query)
    return Scores(
        sum(v[0] for v in per_query.values()) / n,
        sum(v[1] for v in per_query.values()) / n,
        n,
        per_query,
    )


# --------------------------------------------------------------------------- the files


def parse_qrels(lines: Iterable[str], source: str = "qrels") -> Qrels:
    """TREC qrels: ``qid iteration doc_key relevance`` per line (whitespace separated; the
    iteration column is ignored; blank lines and ``#`` comments skipped). A repeated pair keeps the
    last grade."""
    out: Qrels = {}
    for number, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split()
        if len(parts) != 4:
            raise BadValue(f"{source} line {number}: expected `qid 0 doc_key relevance`, got {line!r}")
        qid, _, doc, grade = parts
        try:
            out.setdefault(qid, {})[doc] = int(grade)
        except ValueError:
            raise BadValue(f"{source} line {number}: relevance {grade!r} is not an integer") from None
    return out


@dataclass(frozen=True)
class Query:
    id: str
    text: str


def parse_queries(lines: Iterable[str], source: str = "queries") -> list[Query]:
    """JSONL, one ``{"id": "q1", "text": "…"}`` per line; ids must be unique."""
    out: list[Query] = []
    seen: set[str] = set()
    for number, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except ValueError as exc:
            raise BadValue(f"{source} line {number}: not JSON ({exc})") from None
        if not isinstance(obj, dict) or not isinstance(obj.get("text"), str) or "id" not in obj:
            raise BadValue(f'{source} line {number}: expected {{"id": "q1", "text": "…"}}')
        qid = str(obj["id"])
        if qid in seen:
            raise BadValue(f"{source} line {number}: query id {qid!r} appears twice")
        seen.add(qid)
        out.append(Query(qid, obj["text"]))
    return out


# --------------------------------------------------------------------------- hybrid runs


def doc_key(node: Node) -> str:
    """How qrels name a node: its external key, else its id."""
    return node.key if node.key is not None else str(node.id)


@dataclass(frozen=True)
class Config:
    """One row of an evaluation: which channels run (the rest of the spec is shared)."""

    name: str
    vector: bool
    keyword: bool
    graph: bool


def configs(has_vector: bool, has_keyword: bool, has_graph: bool) -> list[Config]:
    """Each channel alone, each with the graph, then the fusion of everything available."""
    out: list[Config] = []
    if has_vector:
        out.append(Config("vector", True, False, False))
    if has_keyword:
        out.append(Config("keyword", False, True, False))
    if has_graph:
        if has_vector:
            out.append(Config("vector+graph", True, False, True))
        if has_keyword:
            out.append(Config("keyword+graph", False, True, True))
    if has_vector and has_keyword:
        out.append(Config("vector+keyword", True, True, False))
        if has_graph:
            out.append(Config("vector+keyword+graph", True, True, True))
    return out


@dataclass(frozen=True)
class Row:
    config: Config
    scores: Scores

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.config.name,
            "channels": [c for c in ("vector", "keyword", "graph") if getattr(self.config, c)],
            "ndcg": self.scores.ndcg,
            "recall": self.scores.recall,
            "queries": self.scores.queries,
        }


def evaluate_hybrid(
    searcher: Any,
    plane: str,
    spec: Any,
    queries: Sequence[Query],
    vectors: Mapping[str, Vector] | None,
    qrels: Qrels,
    ndcg_k: int = 10,
    recall_k: int = 100,
    profile: bool = False,
) -> list[Row]:
    """Run every query under each channel configuration of ``spec`` (a HybridSpec naming all the
    channels wanted; its vector query is replaced by ``vectors[query id]``, its keyword text by the
    query's text) and score the rankings, with ``spec``'s own weights and fusion; ``profile``: and
    once more, every channel fused as the plane's fusion profile says (the row ``profile``).
    Results are ranked to depth ``max(ndcg_k, recall_k)``."""
    depth = max(ndcg_k, recall_k, spec.k)
    rows: list[Row] = []
    has = (spec.vector is not None, spec.keyword is not None, spec.graph is not None)
    runs = [(c, False) for c in configs(*has)]
    if profile:
        runs.append((Config("profile", *has), True))
    for config, use_profile in runs:
        run: dict[str, list[str]] = {}
        for query in queries:
            vector = None
            if config.vector:
                assert vectors is not None and spec.vector is not None
                vector = VectorPart(spec.vector.prop, vectors[query.id], spec.vector.metric)
            keyword = KeywordPart(spec.keyword.prop, query.text) if config.keyword else None
            one = replace(
                spec,
                vector=vector,
                keyword=keyword,
                graph=spec.graph if config.graph else None,
                k=depth,
                use_profile=use_profile,
            )
            hits = hybrid(searcher, plane, one)
            run[query.id] = [doc_key(h.node) for h in hits]
        rows.append(Row(config, score_run(run, qrels, ndcg_k, recall_k)))
    return rows
