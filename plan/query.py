"""A checked logical plan and the AS OF it runs at (:class:`Plan`), read from its wire JSON (pure).

The SEARCH, HYBRID and CALL statements that compile to one are read by the Cypher front end
(:func:`drsg.plan.statements.parse_query`). Plans follow upstream's serde shape:
``{"source": {"VectorTopK": {...}}, "steps": [{"Limit": n}]}``.
A ``NEAR "text"`` query carries the text until a surface embeds it (``query_text`` in the source).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from drsg.kernel.asof import AsOf
from drsg.kernel.errors import UsageError
from drsg.kernel.values import Json
from drsg.plan.logical import MAX_K as MAX_K  # re-exported: the bound surfaces check their params against
from drsg.plan.logical import (
    Algo,
    Distinct,
    Expand,
    ExpandVar,
    Filter,
    Hybrid,
    KeywordTopK,
    Limit,
    LogicalPlan,
    ScanAll,
    ScanLabel,
    SeekIds,
    SeekKeys,
    Skip,
    Sort,
    Source,
    Step,
    VectorTopK,
    parse_plan,
    parse_source,
    parse_step,
)

_SOURCE_TYPES = (ScanAll, ScanLabel, SeekIds, SeekKeys, VectorTopK, KeywordTopK, Hybrid, Algo)
_STEP_TYPES = (Expand, ExpandVar, Filter, Distinct, Sort, Skip, Limit)


@dataclass(frozen=True, slots=True, init=False)
class Plan:
    """A checked logical plan and the AS OF it runs at. ``logical`` is the typed plan every consumer
    runs; ``source`` and ``steps`` are its wire JSON (upstream's serde shape), for a surface to show.
    Made from typed parts, or from wire JSON, which is checked (:func:`drsg.plan.logical.parse_source`)."""

    logical: LogicalPlan
    as_of: AsOf | None

    def __init__(self, source: Source | Json, steps: Sequence[Step | Json] = (), as_of: AsOf | None = None) -> None:
        typed = source if isinstance(source, _SOURCE_TYPES) else parse_source(source)
        parsed = tuple(s if isinstance(s, _STEP_TYPES) else parse_step(s, MAX_K) for s in steps)
        object.__setattr__(self, "logical", LogicalPlan(typed, parsed))
        object.__setattr__(self, "as_of", as_of)

    @classmethod
    def of(cls, logical: LogicalPlan, as_of: AsOf | None = None) -> Plan:
        return cls(logical.source, logical.steps, as_of)

    @property
    def source(self) -> Json:
        return self.logical.source.to_json()

    @property
    def steps(self) -> list[Json]:
        return [step.to_json() for step in self.logical.steps]

    def to_json(self) -> dict[str, Json]:
        return self.logical.to_json()


def parse_plan_json(text: str) -> Plan:
    """Read upstream's logical-plan JSON (``{"source": …, "steps": […]}``)."""
    try:
        obj = json.loads(text)
    except (ValueError, RecursionError) as exc:
        reason = "it nests too deeply" if isinstance(exc, RecursionError) else str(exc)
        raise UsageError(f'the plan is not valid JSON ({reason}); pass {{"source": …, "steps": […]}}') from None
    return plan_from_json(obj)


def plan_from_json(obj: Any, as_of: AsOf | None = None) -> Plan:
    """A logical plan from its JSON, checked against upstream's shape: each source with the fields of
    its kind and their types, ``k`` and step counts in [0, MAX_K]. A malformed plan is one UsageError
    naming the field, never a failure where the plan runs."""
    return Plan.of(parse_plan(obj), as_of)
