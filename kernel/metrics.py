"""The vector metrics: the one table of their names (pure, kernel-level).

Kept in the kernel because two layers that may import only the kernel need it: the store checks a
vector index's metric when it is declared, and the plan language writes metrics into plan JSON in
upstream's serde spelling (``"Cosine"``). The maths lives with the searches (drsg.workers).
"""

from __future__ import annotations

from drsg.kernel.errors import BadValue

#: Metric name (as flags, settings and index declarations spell it) -> its spelling in plan JSON.
PLAN_NAMES: dict[str, str] = {"cosine": "Cosine", "dot": "Dot", "l2": "L2"}
METRICS: tuple[str, ...] = tuple(PLAN_NAMES)


def check_metric(metric: str) -> str:
    """The metric's name, whichever case it came in (``"Cosine"`` from plan JSON is ``"cosine"``);
    BadValue for an unknown one."""
    name = metric.lower()
    if name not in PLAN_NAMES:
        raise BadValue(f"unknown metric {metric!r}; use one of {', '.join(METRICS)}")
    return name


def plan_metric(metric: str) -> str:
    """The metric as plan JSON spells it (``"cosine"`` -> ``"Cosine"``); BadValue for an unknown one."""
    return PLAN_NAMES[check_metric(metric)]
