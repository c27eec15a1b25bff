"""Traversal plans over a real LMDB graph equal a brute-force oracle over the same edge list.

Hypothesis draws a small graph (nodes with labels A/B and an int ``n``, edges of types R/S) and a
plan (a scan or seek, then Expand, ExpandVar, Filter, Distinct, Sort, Skip and Limit steps); the
engine runs it through ``run_plan_subgraph`` against the database, the oracle walks Python lists
with the definitions of ``drsg.plan.traversal``'s docstring. Result node ids, in order, must match,
and so must the set of edges the walks took; a walk that holds more than ``MAX_ROWS`` rows is
refused by both (self-loops walked both ways multiply fast).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import hypothesis.strategies as st
from hypothesis import example, given, settings

import drsg as drsg_api
from drsg.kernel.errors import UsageError
from drsg.plan.query import plan_from_json
from drsg.workers.plans import run_plan_subgraph
from drsg.workers.search import Searcher
from drsg.workers.traverse import MAX_ROWS

Graph = tuple[list[tuple[str, int]], list[tuple[int, int, str]]]  # nodes (label, n); edges (src, dst, type)

graphs = st.integers(1, 7).flatmap(
    lambda size: st.tuples(
        st.lists(st.tuples(st.sampled_from("AB"), st.integers(0, 4)), min_size=size, max_size=size),
        st.lists(st.tuples(st.integers(0, size - 1), st.integers(0, size - 1), st.sampled_from("RS")), max_size=12),
    )
)
dirs = st.sampled_from(["Out", "In", "Both"])
types = st.sampled_from(["R", "S", None])
compare = st.builds(
    lambda op, n: {"Compare": {"op": op, "lhs": {"Property": "n"}, "rhs": {"Literal": {"Int": n}}}},
    st.sampled_from(["Eq", "Ne", "Lt", "Le", "Gt", "Ge"]),
    st.integers(0, 4),
)
exprs = st.one_of(compare, st.builds(lambda label: {"HasLabel": label}, st.sampled_from("AB")), st.just("Hops"))
predicates = st.one_of(
    compare,
    st.builds(lambda label: {"HasLabel": label}, st.sampled_from("ABC")),
    st.builds(lambda a, b: {"Logic": {"op": "Or", "lhs": a, "rhs": b}}, compare, compare),
    st.builds(lambda a: {"Not": a}, compare),
)
steps = st.one_of(
    st.builds(lambda d, t: {"Expand": {"dir": d, "edge_type": t}}, dirs, types),
    st.builds(
        lambda d, t, lo, extra: {"ExpandVar": {"dir": d, "edge_type": t, "min": lo, "max": lo + extra}},
        dirs,
        types,
        st.integers(0, 2),
        st.integers(0, 1),
    ),
    st.builds(lambda p: {"Filter": p}, predicates),
    st.just("Distinct"),
    st.builds(
        lambda e, d: {"Sort": [{"expr": {"Property": "n"}, "descending": d}, {"expr": e, "descending": False}]},
        exprs,
        st.booleans(),
    ),
    st.builds(lambda n: {"Skip": n}, st.integers(0, 3)),
    st.builds(lambda n: {"Limit": n}, st.integers(0, 5)),
)
sources = st.one_of(
    st.just("ScanAll"),
    st.builds(lambda label: {"ScanLabel": label}, st.sampled_from("AB")),
    st.builds(lambda keys: {"SeekKeys": keys}, st.lists(st.sampled_from(["n0", "n1", "n2", "nx"]), max_size=3)),
)


# ---------------------------------------------------------------------- the oracle

Walk = tuple[int, int, tuple[int, ...]]  # node index, hops, edge indexes taken


def oracle(graph: Graph, plan: dict[str, Any]) -> tuple[list[int], set[int]]:
    nodes, edges = graph
    source = plan["source"]
    if source == "ScanAll":
        rows: list[Walk] = [(i, 0, ()) for i in range(len(nodes))]
    elif "ScanLabel" in source:
        rows = [(i, 0, ()) for i, (label, _) in enumerate(nodes) if label == source["ScanLabel"]]
    else:
        rows = [(int(k[1:]), 0, ()) for k in source["SeekKeys"] if k[1:].isdigit() and int(k[1:]) < len(nodes)]
    for step in plan["steps"]:
        rows = oracle_step(nodes, edges, rows, step)
    return [i for i, _, _ in rows], {e for _, _, path in rows for e in path}


def adjacent(
    edges: list[tuple[int, int, str]], node: int, direction: str, edge_type: str | None
) -> list[tuple[int, int]]:
    """(edge index, other end) in the store's order: out-edges then in-edges, by type then id."""
    found = []
    for table in ("out", "in") if direction == "both" else (direction,):
        for e, (src, dst, t) in sorted(enumerate(edges), key=lambda ie: (ie[1][2], ie[0])):
            if edge_type is not None and t != edge_type:
                continue
            if table == "out" and src == node:
                found.append((e, dst))
            elif table == "in" and dst == node:
                found.append((e, src))
    return found


def oracle_step(
    nodes: list[tuple[str, int]], edges: list[tuple[int, int, str]], rows: list[Walk], step: Any
) -> list[Walk]:
    if step == "Distinct":
        seen: set[int] = set()
        out = []
        for row in rows:
            if row[0] not in seen:
                seen.add(row[0])
                out.append(row)
        return out
    ((name, body),) = step.items()
    if name == "Limit":
        return rows[:body]
    if name == "Skip":
        return rows[body:]
    if name == "Filter":
        return [r for r in rows if value(nodes, r, body) is True]
    if name == "Sort":
        for key in reversed(body):
            rows = sorted(
                rows, key=lambda r, key=key: sort_value(value(nodes, r, key["expr"])), reverse=key["descending"]
            )
        return rows
    low, high = (1, 1) if name == "Expand" else (body["min"], body["max"])
    direction = body["dir"].lower()
    out = list(rows) if low == 0 else []
    frontier = rows
    for hop in range(1, high + 1):
        step: list[Walk] = []
        for node, h, path in frontier:  # row by row: a refused walk is never built whole
            step.extend((other, h + 1, (*path, e)) for e, other in adjacent(edges, node, direction, body["edge_type"]))
            if len(step) + len(out) > MAX_ROWS:
                raise TooManyRows
        if hop >= low:
            out.extend(step)
        frontier = step
    return out


class TooManyRows(Exception):
    """The walk holds more than MAX_ROWS rows: the engine refuses it (a UsageError naming the fix)."""


def value(nodes: list[tuple[str, int]], row: Walk, expr: Any) -> Any:
    label, n = nodes[row[0]]
    if expr == "Hops":
        return row[1]
    ((kind, body),) = expr.items()
    if kind == "HasLabel":
        return label == body
    if kind == "Property":
        return n
    if kind == "Not":
        return value(nodes, row, body) is not True
    if kind == "Logic":
        return value(nodes, row, body["lhs"]) is True or value(nodes, row, body["rhs"]) is True
    lhs, rhs = n, body["rhs"]["Literal"]["Int"]
    return {"Eq": lhs == rhs, "Ne": lhs != rhs, "Lt": lhs < rhs, "Le": lhs <= rhs, "Gt": lhs > rhs, "Ge": lhs >= rhs}[
        body["op"]
    ]


def sort_value(v: Any) -> tuple[int, float]:
    # every value here is an int or a bool; bools sort after numbers (drsg.plan.traversal.sort_key)
    return (2, float(v)) if isinstance(v, bool) else (0, float(v))


# ---------------------------------------------------------------------- the engine


@settings(max_examples=120, deadline=None)
@given(graph=graphs, source=sources, plan_steps=st.lists(steps, max_size=5))
@example(  # CI's: 11 self-loops walked both ways, 22 rows a hop, past MAX_ROWS at the fourth
    graph=([("A", 0)], [(0, 0, "R")] * 11),
    source="ScanAll",
    plan_steps=[
        {"Expand": {"dir": "Both", "edge_type": "R"}},
        {"ExpandVar": {"dir": "Both", "edge_type": "R", "min": 2, "max": 3}},
    ],
)
def test_traversal_plans_equal_the_oracle(graph: Graph, source: Any, plan_steps: list[Any]) -> None:
    nodes, edges = graph
    with tempfile.TemporaryDirectory() as tmp:
        db = drsg_api.open(Path(tmp) / "g.drsg")
        try:

            def fill(tx: Any) -> list[int]:
                plane = tx.create_plane("p")
                ids = [tx.create_node(plane, f"n{i}", [label], {"n": n}).id for i, (label, n) in enumerate(nodes)]
                return [tx.link(plane, ids[s], ids[d], t).id for s, d, t in edges]

            edge_ids = db.write(fill).value
            plan = {"source": source, "steps": plan_steps}
            try:
                rows, _nodes, got_edges = run_plan_subgraph(Searcher(db), "p", plan_from_json(plan))
            except UsageError as exc:
                if f"passed {MAX_ROWS} rows at hop" not in str(exc):
                    raise
                refused = True
            else:
                refused = False
        finally:
            db.close()
    try:
        want_rows, want_edges = oracle(graph, plan)
    except TooManyRows:
        assert refused, "the walk holds more rows than MAX_ROWS, and the engine ran it"
        return
    assert not refused, "the engine refused a walk of fewer rows than MAX_ROWS"
    assert [int(r.node.key[1:]) for r in rows if r.node.key] == want_rows
    assert {e.id for e in got_edges} == {edge_ids[e] for e in want_edges}
