"""A graph algorithm call, as the plan language holds it (pure): which algorithm, over what, with what.

One :class:`AlgoSpec` behind every surface: JSON-RPC ``plane.algo``'s flat params
(:meth:`AlgoSpec.from_params`), upstream's plan source ``{"Algo": {"label": …, "algo": …}}``
(:meth:`AlgoSpec.from_plan_json`) and ``drsg algo``'s flags. Upstream's defaults; everything is
checked here, before a snapshot is opened, so a bad call is one :class:`UsageError` naming the fix
(exit 2, JSON-RPC -32602) and nothing runs. ``drsg.workers.algo`` runs it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from drsg.kernel.errors import UsageError
from drsg.kernel.values import MAX_ID

ALGOS = ("pagerank", "components", "shortest_path", "louvain")
DIRECTIONS = ("out", "in", "both")
DAMPING, MAX_ITERS, TOLERANCE = 0.85, 20, 1e-6  # upstream's PageRankOptions::default()
MAX_LEVELS, MIN_GAIN = 10, 1e-9  # upstream's LouvainOptions::default()
LIMIT = 100  # upstream's ALGO_LIMIT: rows a ranked or grouped answer returns
ITERS_CEILING = 10_000  # most PageRank iterations or Louvain levels one call may ask for

NodeRef = int | str  # an id, or an external key (the plan's {"Key": …} and the CLI's @key)


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_algo(name: Any) -> str:
    if name == "connected_components":  # upstream's alias in CALL
        return "components"
    if name not in ALGOS:
        raise UsageError(f"unknown algo {name!r:.40}; use one of {', '.join(ALGOS)}")
    return str(name)


def check_direction(direction: Any) -> str:
    if direction not in DIRECTIONS:
        raise UsageError(f"dir must be out, in or both, not {direction!r:.40}")
    return str(direction)


def check_pagerank(damping: Any, max_iters: Any, tolerance: Any) -> None:
    if not (_number(damping) and 0.0 <= damping <= 1.0):
        raise UsageError(f"damping must be a number from 0 to 1 (the classic is {DAMPING}), not {damping!r:.40}")
    if not (_whole(max_iters) and 1 <= max_iters <= ITERS_CEILING):
        raise UsageError(f"max_iters must be a whole number from 1 to {ITERS_CEILING}, not {max_iters!r:.40}")
    if not (_number(tolerance) and tolerance >= 0):
        raise UsageError(f"tolerance must be a number of 0 or more (default {TOLERANCE:g}), not {tolerance!r:.40}")


def check_louvain(max_levels: Any, min_gain: Any) -> None:
    if not (_whole(max_levels) and 1 <= max_levels <= ITERS_CEILING):
        raise UsageError(f"max_levels must be a whole number from 1 to {ITERS_CEILING}, not {max_levels!r:.40}")
    if not (_number(min_gain) and min_gain >= 0):
        raise UsageError(f"min_gain must be a number of 0 or more (default {MIN_GAIN:g}), not {min_gain!r:.40}")


def _ref(value: Any, what: str) -> NodeRef:
    if _whole(value) and 0 <= value <= MAX_ID:
        return int(value)
    if isinstance(value, str) and value:
        return value
    raise UsageError(f"{what} must be a node id or an external key, not {value!r:.40}")


@dataclass(frozen=True)
class AlgoSpec:
    algo: str
    label: str | None = None
    limit: int = LIMIT
    damping: float = DAMPING
    max_iters: int = MAX_ITERS
    tolerance: float = TOLERANCE
    src: NodeRef | None = None
    dst: NodeRef | None = None
    direction: str = "out"
    weight: str | None = None
    max_levels: int = MAX_LEVELS
    min_gain: float = MIN_GAIN

    def check(self) -> AlgoSpec:
        """The spec, every field checked (an unknown algo, a shortest_path without both ends, …)."""
        algo = check_algo(self.algo)
        if self.label is not None and (not isinstance(self.label, str) or not self.label):
            raise UsageError(f"label must be a non-empty string, not {self.label!r:.40}")
        check_pagerank(self.damping, self.max_iters, self.tolerance)
        check_louvain(self.max_levels, self.min_gain)
        check_direction(self.direction)
        if algo == "shortest_path":
            missing = [name for name, end in (("src", self.src), ("dst", self.dst)) if end is None]
            if missing:
                raise UsageError(
                    f"shortest_path needs src and dst (the two nodes' ids); {' and '.join(missing)} missing"
                )
            _ref(self.src, "src")
            _ref(self.dst, "dst")
        if self.weight is not None and (not isinstance(self.weight, str) or not self.weight):
            raise UsageError(f"weight must name an edge property, not {self.weight!r:.40}")
        return self if algo == self.algo else replace(self, algo=algo)

    def to_plan_json(self) -> dict[str, Any]:
        """Upstream's plan source for this call (what a ``CALL`` statement compiles to)."""
        algo: Any
        if self.algo == "pagerank":
            algo = {"PageRank": {"damping": self.damping, "max_iters": self.max_iters, "tolerance": self.tolerance}}
        elif self.algo == "components":
            algo = "ConnectedComponents"
        elif self.algo == "louvain":
            algo = {"Louvain": {"max_levels": self.max_levels, "min_gain": self.min_gain}}
        else:
            ends = [{"Id": end} if isinstance(end, int) else {"Key": end} for end in (self.src, self.dst)]
            direction = self.direction.capitalize()
            algo = {"ShortestPath": {"from": ends[0], "to": ends[1], "dir": direction, "weight": self.weight}}
        return {"Algo": {"label": self.label, "algo": algo}}

    @classmethod
    def from_params(cls, p: dict[str, Any]) -> AlgoSpec:
        """JSON-RPC ``plane.algo``'s params (upstream's names: ``dir``, ``src``, ``dst``, …)."""
        return cls(
            algo=p["algo"],
            label=p.get("label"),
            limit=int(p.get("limit", LIMIT)),
            damping=float(p.get("damping", DAMPING)),
            max_iters=p.get("max_iters", MAX_ITERS),
            tolerance=float(p.get("tolerance", TOLERANCE)),
            src=p.get("src"),
            dst=p.get("dst"),
            direction=p.get("dir", "out"),
            weight=p.get("weight"),
            max_levels=p.get("max_levels", MAX_LEVELS),
            min_gain=float(p.get("min_gain", MIN_GAIN)),
        ).check()

    @classmethod
    def from_plan_json(cls, body: Any) -> AlgoSpec:
        """Upstream's plan source body: ``{"label": …, "algo": {"PageRank": {…}} | "ConnectedComponents"
        | {"Louvain": {…}} | {"ShortestPath": {"from": {"Key": "a"} | {"Id": 7}, "to": …, "dir": "Out",
        "weight": null}}}``. Missing fields take upstream's defaults."""
        if not isinstance(body, dict) or "algo" not in body or set(body) - {"label", "algo"}:
            raise UsageError('Algo takes {"label": …, "algo": …}, e.g. {"algo": {"PageRank": {}}}')
        label, algo = body.get("label"), body["algo"]
        if algo == "ConnectedComponents":
            return cls("components", label).check()
        if not isinstance(algo, dict) or len(algo) != 1:
            raise UsageError(
                f"Algo's algo {algo!r:.60} is not one of PageRank, ConnectedComponents, Louvain, ShortestPath"
            )
        ((kind, args),) = algo.items()
        fields = _PLAN_FIELDS.get(kind)
        if fields is None:
            raise UsageError(f"unknown Algo {kind!r:.40}; use PageRank, ConnectedComponents, Louvain or ShortestPath")
        if not isinstance(args, dict) or set(args) - fields:
            raise UsageError(f"{kind} takes an object with {', '.join(sorted(fields))}")
        if kind == "PageRank":
            return cls(
                "pagerank",
                label,
                damping=args.get("damping", DAMPING),
                max_iters=args.get("max_iters", MAX_ITERS),
                tolerance=args.get("tolerance", TOLERANCE),
            ).check()
        if kind == "Louvain":
            return cls(
                "louvain", label, max_levels=args.get("max_levels", MAX_LEVELS), min_gain=args.get("min_gain", MIN_GAIN)
            ).check()
        direction = args.get("dir", "Out")
        return cls(
            "shortest_path",
            label,
            src=_plan_ref(args.get("from"), "from"),
            dst=_plan_ref(args.get("to"), "to"),
            direction=direction.lower() if isinstance(direction, str) else direction,
            weight=args.get("weight"),
        ).check()


_PLAN_FIELDS = {
    "PageRank": {"damping", "max_iters", "tolerance"},
    "Louvain": {"max_levels", "min_gain"},
    "ShortestPath": {"from", "to", "dir", "weight"},
}


def _plan_ref(value: Any, what: str) -> NodeRef | None:
    if value is None:
        return None
    if isinstance(value, dict) and len(value) == 1 and ("Key" in value or "Id" in value):
        return _ref(value.get("Key", value.get("Id")), f"ShortestPath's {what}")
    raise UsageError(f'ShortestPath\'s {what} is {{"Key": "a"}} or {{"Id": 7}}, not {value!r:.40}')
