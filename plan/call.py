"""The CALL statement: a graph algorithm as a query's source (pure), upstream's syntax.

    CALL pagerank(damping: 0.85, iterations: 20, tolerance: 1e-6) [ON (n[:Label])]
    CALL components()                         (alias connected_components)
    CALL louvain(max_levels: 10, min_gain: 1e-9)
    CALL shortest_path(from: "key" | id, to: "key" | id, dir: "out" | "in" | "both", weight: "prop")
        … [RETURN n|*] [LIMIT n] [AS OF <seq | "RFC3339" | TIME ms>]

The Cypher front end reads it (``drsg.plan.cypher``: the grammar, then ``sources.py`` builds the
source with these arguments) as the plan source ``{"Algo": …}``
(:meth:`drsg.plan.algo.AlgoSpec.to_plan_json`); ``score()`` is the rank, the dense 0-based group
index, or the position on the path. An unknown algorithm or argument is an error naming the ones
there are.
"""

from __future__ import annotations

#: each algorithm's CALL arguments → AlgoSpec's fields (upstream's names: pagerank's `iterations`)
ARGS = {
    "pagerank": {"damping": "damping", "iterations": "max_iters", "tolerance": "tolerance"},
    "components": {},
    "louvain": {"max_levels": "max_levels", "min_gain": "min_gain"},
    "shortest_path": {"from": "src", "to": "dst", "dir": "direction", "weight": "weight"},
}
