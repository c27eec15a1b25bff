"""Upstream's statement sources — SEARCH, HYBRID, CALL — as logical-plan sources (pure).

Each builds the same :class:`~drsg.plan.logical.Source` the SEARCH/HYBRID/CALL forms of
:mod:`drsg.plan.query`, :mod:`drsg.plan.hybrid` and :mod:`drsg.plan.call` build, through the same
specs and checks (``HybridSpec.check``, ``AlgoSpec.check``, ``check_metric``, ``MAX_K``), with
upstream's defaults. The values in the clause (``NEAR``, ``TOPK``, a weight, an algorithm's
argument) are literals or parameters: ``value`` reads them (at compile time with no parameters,
else when the statement runs with its parameters).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import Any, cast

from drsg.kernel.errors import BadValue, QueryError, UsageError
from drsg.kernel.metrics import check_metric, plan_metric
from drsg.kernel.values import Vector
from drsg.plan.algo import AlgoSpec, check_algo
from drsg.plan.call import ARGS
from drsg.plan.cypher import ast
from drsg.plan.cypher.check import literal_value
from drsg.plan.cypher.graph import CypherValue
from drsg.plan.hybrid import DEFAULT_WEIGHTS, GraphPart, HybridSpec, KeywordPart, VectorPart
from drsg.plan.logical import MAX_K, Algo, Hybrid, KeywordTopK, Source, VectorTopK

SourceClause = ast.Search | ast.HybridSearch | ast.CallAlgo
#: an expression's value (a literal, or a parameter's value)
Read = Callable[[ast.Expr], CypherValue]


def reader(params: Mapping[str, Any]) -> Read:
    """A clause's values: a literal's, or a parameter's from ``params`` (JSON values)."""

    def value(expr: ast.Expr) -> CypherValue:
        if isinstance(expr, ast.Parameter):
            if expr.name not in params:
                raise QueryError(f"parameter ${expr.name} has no value; pass it with --param {expr.name}=<json>")
            return cast(CypherValue, params[expr.name])
        return literal_value(expr)

    return value


def where(node: ast.Search | ast.HybridSearch | ast.CallAlgo) -> str:
    line, column = node.at
    return f" (line {line}, column {column})" if line else ""


def build_source(clause: SourceClause, value: Read) -> Source:
    """The plan source ``clause`` compiles to; a QueryError naming the clause for a bad value."""
    name = type(clause).__name__.upper().replace("HYBRIDSEARCH", "HYBRID").replace("CALLALGO", "CALL")
    if isinstance(clause, ast.CallAlgo):
        name = f"CALL {clause.algorithm.lower()}"
    try:
        match clause:
            case ast.Search():
                return _search(clause, value)
            case ast.HybridSearch():
                return _hybrid(clause, value)
            case ast.CallAlgo():
                return _call(clause, value)
    except (UsageError, BadValue) as exc:
        if isinstance(exc, QueryError):
            raise
        raise QueryError(f"{name}{where(clause)}: {exc.message}") from None


def _count(expr: ast.Expr | None, default: int, what: str, value: Read) -> int:
    if expr is None:
        return default
    got = value(expr)
    if not isinstance(got, int) or isinstance(got, bool) or not 0 <= got <= MAX_K:
        raise QueryError(f"{what} must be a whole number from 0 to {MAX_K}, not {got!r:.40}")
    return got


def _number(expr: ast.Expr | None, default: float, what: str, value: Read) -> float:
    if expr is None:
        return default
    got = value(expr)
    if not isinstance(got, int | float) or isinstance(got, bool):
        raise QueryError(f"{what} must be a number, not {got!r:.40}")
    return float(got)


def _near(expr: ast.Expr, value: Read) -> tuple[tuple[float, ...] | None, str | None]:
    """NEAR's value: a text to embed, or a vector's numbers."""
    got = value(expr)
    if isinstance(got, str):
        return None, got
    numbers = numbers_of(got)
    if numbers:
        return tuple(numbers), None
    raise QueryError(f"NEAR takes a text or a list of numbers, not {got!r:.40}")


def numbers_of(value: CypherValue) -> list[float] | None:
    """A list of numbers as floats (a vector); None for any other value (an integer past a float's
    range too: a ``$parameter`` may hold one, and ``float()`` of it raises)."""
    if not isinstance(value, list):
        return None
    numbers = [v for v in value if isinstance(v, int | float) and not isinstance(v, bool)]
    if len(numbers) != len(value) or any(isinstance(v, int) and abs(v) > _LARGEST for v in numbers):
        return None
    return [float(v) for v in numbers]


#: the largest integer a float holds (past it, ``float(n)`` raises OverflowError)
_LARGEST = int(sys.float_info.max)


def _search(clause: ast.Search, value: Read) -> Source:
    k = _count(clause.topk, 10, "TOPK", value)
    if clause.matching is not None:
        text = value(clause.matching)
        if not isinstance(text, str):
            raise QueryError(f"MATCHING takes a text, not {text!r:.40}")
        if clause.label is None or clause.property is None:
            raise QueryError('a keyword SEARCH needs a label and ON: SEARCH (d:Doc) ON body MATCHING "…"')
        return KeywordTopK(clause.label, clause.property, text, k)
    if clause.near is None:
        raise QueryError("SEARCH needs NEAR or MATCHING")
    query, text = _near(clause.near, value)
    metric = plan_metric(clause.metric or "cosine")
    return VectorTopK(clause.label, clause.property or "embedding", metric, k, query, text)


def _hybrid(clause: ast.HybridSearch, value: Read) -> Source:
    weights = dict(DEFAULT_WEIGHTS)
    parts: dict[str, Any] = {"label": clause.label}
    weighted = False
    if clause.vector is not None:
        query, text = _near(clause.vector.near, value)
        near: Vector | str = Vector.of(list(query)) if query is not None else text or ""
        metric = check_metric(clause.vector.metric or "cosine")
        parts["vector"] = VectorPart(clause.vector.property or "embedding", near, metric)
        if clause.vector.weight is not None:
            weights["vector"], weighted = _number(clause.vector.weight, 1.0, "VECTOR WEIGHT", value), True
    if clause.keyword is not None:
        matching = value(clause.keyword.matching)
        if not isinstance(matching, str):
            raise QueryError(f"KEYWORD MATCHING takes a text, not {matching!r:.40}")
        parts["keyword"] = KeywordPart(clause.keyword.property, matching)
        if clause.keyword.weight is not None:
            weights["keyword"], weighted = _number(clause.keyword.weight, 1.0, "KEYWORD WEIGHT", value), True
    if clause.graph is not None:
        hops = _count(clause.graph.hops, 0, "GRAPH HOPS", value)
        decay = _number(clause.graph.decay, 0.5, "DECAY", value)
        parts["graph"] = GraphPart(hops, decay, _count(clause.graph.seeds, 10, "SEEDS", value))
        if clause.graph.weight is not None:
            weights["graph"], weighted = _number(clause.graph.weight, 0.5, "GRAPH WEIGHT", value), True
    if clause.candidates is not None:
        parts["candidates"] = max(1, _count(clause.candidates, 100, "CANDIDATES", value))  # upstream clamps
    parts["k"] = _count(clause.topk, 10, "TOPK", value)
    if clause.fusion is not None:
        parts["fusion"] = clause.fusion.lower()
        if clause.fusion_k is not None:
            parts["rrf_k"] = _count(clause.fusion_k, 60, "FUSION K", value)
    use_profile = not weighted and clause.fusion is None
    spec = HybridSpec(**parts, weights=weights, use_profile=use_profile).check()
    return Hybrid(spec.to_plan_json()["Hybrid"])


def _call(clause: ast.CallAlgo, value: Read) -> Source:
    algo = check_algo(clause.algorithm.lower())
    known = ARGS[algo]
    fields: dict[str, Any] = {}
    for arg, expr in clause.args:
        if arg not in known:
            names = ", ".join(known) or "none"
            raise QueryError(f"CALL {algo} has no argument {arg!r}; its arguments: {names}")
        fields[known[arg]] = value(expr)
    if isinstance(fields.get("direction"), str):
        fields["direction"] = fields["direction"].lower()
    if algo == "shortest_path" and not {"src", "dst"} <= set(fields):
        raise QueryError('CALL shortest_path needs from: and to: (a "key" or an id each)')
    return Algo(AlgoSpec(algo, clause.label, **fields).check())
