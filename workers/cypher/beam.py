"""BEAM: a vector-guided traversal step (upstream's ``ExpandBeam``).

From each row's node, ``depth`` hops along ``dir`` [:TYPE] edges; at each hop only the ``width``
nodes whose ``ON`` property (a vector) is nearest the ``NEAR`` vector by the metric go on (nodes
without a vector of that size are passed over, as a search skips them; a node is met once per
row). The row's variable is bound to each node kept at the last hop, with ``hops()`` the depth
and ``score()`` its similarity (higher is nearer: cosine, dot, minus the Euclidean distance).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable

from drsg.kernel.errors import BadValue, QueryError
from drsg.kernel.metrics import check_metric
from drsg.plan.cypher import ast, rows
from drsg.plan.cypher.functions import similarity
from drsg.plan.cypher.graph import HOPS, SCORE, CypherValue, GraphView, NodeRef, Row
from drsg.plan.cypher.sources import numbers_of
from drsg.plan.cypher.values import type_name
from drsg.store.snapshot import Snapshot
from drsg.workers.cypher.rec import Rec

#: most nodes one hop of a beam may keep, and most hops
MAX_WIDTH = 10_000
MAX_DEPTH = 16


def beam(
    op: rows.Beam,
    recs: list[Rec],
    snap: Snapshot,
    plane: int,
    graph: GraphView,
    value: Callable[[ast.Expr, Row], CypherValue],
    tick: Callable[[int], None],
) -> list[Rec]:
    """The rows ``op`` keeps from ``recs`` (``value`` evaluates an expression, ``tick`` counts work
    against the statement's limits)."""
    near = value(op.near, {})
    query = numbers_of(near)
    if not query:
        raise QueryError(f"BEAM NEAR takes a list of numbers (a vector), not {type_name(near)}")
    width, depth = _whole(value, op.width, "WIDTH", MAX_WIDTH), _whole(value, op.depth, "DEPTH", MAX_DEPTH)
    try:
        metric = check_metric(op.metric)
    except BadValue as exc:
        raise QueryError(f"BEAM: {exc.message}") from None
    types = () if op.edge_type is None else (op.edge_type,)
    out: list[Rec] = []
    for rec in recs:
        start = rec.values.get(op.variable)
        if start is None:
            continue
        if not isinstance(start, NodeRef):
            raise QueryError(f"BEAM ({op.variable}) needs a node, not {type_name(start)}")
        frontier: list[tuple[float, int]] = [(0.0, start.id)]
        visited = {start.id}
        for _ in range(depth):
            scored: list[tuple[float, int]] = []
            for _, node in frontier:
                for edge_type in types or (None,):
                    for neighbor in snap.neighbors(plane, node, op.direction, edge_type):
                        tick(1)
                        other = neighbor.node
                        if other in visited:
                            continue
                        visited.add(other)
                        vector = numbers_of(graph.properties(other).get(op.property))
                        if vector is None or len(vector) != len(query):
                            continue
                        score = similarity(metric, vector, query)
                        scored.append((score, other))
            frontier = heapq.nlargest(width, scored, key=lambda pair: (pair[0], -pair[1]))
            if not frontier:
                break
        else:
            for score, node in frontier:
                ref = NodeRef(node)
                values = rec.values | {op.variable: ref, HOPS: depth, SCORE: score}
                out.append(Rec(values, rec.seen | {ref}))
    return out


def _whole(value_of: Callable[[ast.Expr, Row], CypherValue], expr: ast.Expr, what: str, most: int) -> int:
    value = value_of(expr, {})
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= most:
        raise QueryError(f"BEAM {what} takes a whole number from 1 to {most}, not {value!r:.40}")
    return value
