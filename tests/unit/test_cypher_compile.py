"""The Cypher compiler: each planning rule gives the row plan (or upstream's logical plan) it
should, and each statement that cannot run is refused at compile time naming the construct and
where it was written."""

from __future__ import annotations

import pytest

from drsg.kernel.errors import QueryError, QuerySyntaxError, UsageError
from drsg.plan import expr as px
from drsg.plan import logical as lp
from drsg.plan.cypher import ast, rows
from drsg.plan.cypher.compile import Compiled, compile_query
from drsg.plan.cypher.parser import parse
from drsg.plan.cypher.statement import prepare
from drsg.plan.statements import parse_query


def compiled(text: str) -> Compiled:
    return compile_query(parse(text))


def ops(text: str) -> tuple[rows.Op, ...]:
    plan = compiled(text).plan
    assert isinstance(plan, rows.RowPlan)
    return plan.ops


def first_scan(text: str) -> rows.NodeScan:
    op = ops(text)[0]
    assert isinstance(op, rows.NodeScan)
    return op


# ---------------------------------------------------------------------------- sources


def test_a_key_equality_or_in_on_the_first_node_becomes_a_key_seek() -> None:
    assert first_scan('MATCH (n:P) WHERE key(n) = "ada" AND n.x = 1 RETURN n.x').source == lp.SeekKeys(("ada",))
    assert first_scan('MATCH (n) WHERE key(n) IN ["a", "b", "a"] RETURN n.x').source == lp.SeekKeys(("a", "b"))
    assert first_scan("MATCH (n) WHERE id(n) = 7 RETURN n.x").source == lp.SeekIds((7,))
    by_param = first_scan("MATCH (n) WHERE key(n) IN $keys RETURN n.x")
    assert by_param.source == lp.SeekKeys(()) and by_param.seek == ast.Parameter("keys")
    # a key test under OR is no seek: the label's scan, the predicate a filter
    scan = first_scan('MATCH (n:P) WHERE key(n) = "a" OR n.x = 1 RETURN n.x')
    assert scan.source == lp.ScanLabel("P")


def test_a_string_key_in_a_node_pattern_seeks_the_key_index() -> None:
    """Upstream's rule (graph.KEY_PROPERTY) in MATCH as in CREATE: ``{key: "k"}`` is the external key."""
    assert first_scan('MATCH (n:P {key: "ada"}) RETURN n').source == lp.SeekKeys(("ada",))
    assert first_scan("MATCH (n:P {key: 7}) RETURN n").source == lp.ScanLabel("P")  # not a key: a property


def test_a_label_scans_the_label_else_the_plane() -> None:
    labelled = first_scan("MATCH (n:P:Q) RETURN n.x")
    assert labelled.source == lp.ScanLabel("P") and labelled.node.labels == ("Q",)
    assert first_scan("MATCH (n) RETURN n.x").source == lp.ScanAll()


def test_a_node_bound_by_an_earlier_clause_is_continued_from_not_scanned_again() -> None:
    plan = ops("MATCH (a:P) WITH a MATCH (b)<-[:T]-(a:Q) RETURN b.x")
    scans = [op for op in plan if isinstance(op, rows.NodeScan)]
    assert len(scans) == 1
    argument = next(op for op in plan if isinstance(op, rows.Argument))
    assert argument.node == rows.NodeCheck("a", ("Q",))
    expand = next(op for op in plan if isinstance(op, rows.Expand))
    assert (expand.start, expand.direction, expand.end.variable) == ("a", "out", "b")  # walked from a, reversed


def test_relationships_of_one_match_are_unique_and_var_length_keeps_its_bounds() -> None:
    expands = [op for op in ops("MATCH (a)-[r]->(b), (b)-[s:T|U*2..]-(c) RETURN a.x") if isinstance(op, rows.Expand)]
    assert expands[0].unique_with == () and expands[1].unique_with == ("r",)
    assert (expands[1].types, expands[1].var_length, expands[1].min_hops, expands[1].max_hops) == (
        ("T", "U"),
        True,
        2,
        None,
    )


def test_search_hybrid_and_call_compile_to_the_plan_sources_with_upstreams_defaults() -> None:
    search = first_scan("SEARCH (d:Doc) NEAR [1.0, 0.0] RETURN d")
    assert search.source == lp.VectorTopK("Doc", "embedding", "Cosine", 10, (1.0, 0.0))
    keyword = first_scan('SEARCH (d:Doc) ON body MATCHING "graph" TOPK 3 RETURN d')
    assert keyword.source == lp.KeywordTopK("Doc", "body", "graph", 3)
    hybrid = first_scan('HYBRID (d:Doc) KEYWORD ON body MATCHING "x" GRAPH HOPS 1 RETURN d').source
    assert isinstance(hybrid, lp.Hybrid) and isinstance(hybrid.body, dict)
    assert hybrid.body["graph"] == {"hops": 1, "decay": 0.5, "seeds": 10}
    assert (hybrid.body["candidates"], hybrid.body["k"]) == (100, 10)
    call = first_scan("CALL pagerank() ON (n:P) RETURN n").source
    assert isinstance(call, lp.Algo) and (call.spec.damping, call.spec.max_iters) == (0.85, 20)
    deferred = first_scan("SEARCH (d:Doc) NEAR $v RETURN d")
    assert isinstance(deferred.deferred, ast.Search)  # built with the parameter when it runs


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("SEARCH (d:Doc) NEAR [1.0] TOPK 20000 RETURN d", "TOPK must be a whole number from 0 to 10000"),
        ("SEARCH (d:Doc) NEAR [1.0] METRIC manhattan RETURN d", "unknown metric"),
        ("CALL pagerank(speed: 2) RETURN n", "CALL pagerank has no argument 'speed'"),
    ],
)
def test_a_sources_values_are_checked_as_the_search_forms_check_them(text: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):  # the parser's QuerySyntaxError, or the compiler's QueryError
        compiled(text)


# ---------------------------------------------------------------------------- upstream's logical plan


def test_upstreams_subset_compiles_to_the_logical_plan_it_would_run() -> None:
    plan = compiled('MATCH (a)-[:KNOWS]->(b:P {x: 1}) WHERE key(a) = "k" AND b.age >= 3 RETURN b LIMIT 5').logical
    assert plan == lp.LogicalPlan(
        lp.SeekKeys(("k",)),
        (
            lp.Expand("Out", "KNOWS"),
            lp.Filter(px.HasLabel("P")),
            lp.Filter(px.Compare("Eq", px.Property("x"), px.Literal("Int", 1))),
            lp.Filter(px.Compare("Ge", px.Property("age"), px.Literal("Int", 3))),
            lp.Limit(5),
        ),
    )
    search = compiled("SEARCH (d:Doc) NEAR [1.0] RETURN d ORDER BY score() DESC").logical
    assert search == lp.LogicalPlan(
        lp.VectorTopK("Doc", "embedding", "Cosine", 10, (1.0,)), (lp.Sort((lp.SortKey(px.Score(), True),)),)
    )
    assert prepare("MATCH (n:P) RETURN *").explain() == {"source": {"ScanLabel": "P"}, "steps": []}


@pytest.mark.parametrize(
    "text",
    [
        "MATCH (a)-[:T]->(b)-[:T]->(c) RETURN c",  # two hops: the plan's walk may reuse an edge
        "MATCH (a)-[:T]-(b) RETURN b",  # undirected: the walk meets a self-loop twice
        "MATCH (n) WHERE n.name CONTAINS 'a' RETURN n",  # the plan's string tests promote numbers
        "MATCH (n) WHERE NOT n.x = 1 RETURN n",  # the plan's NOT of a missing value is true
        "MATCH (n) RETURN n ORDER BY n.x DESC",  # the plan's sort puts nulls last both ways
        "MATCH (n) RETURN n.x",  # a projection
        "MATCH (n) WHERE n.x = $x RETURN n",  # a parameter: the row plan reads it
    ],
)
def test_outside_where_the_two_executors_agree_there_is_no_logical_plan(text: str) -> None:
    result = compiled(text)
    assert result.logical is None
    assert result.to_json() == result.plan.to_json()  # --explain shows the row plan


# ---------------------------------------------------------------------------- projections


def test_aggregates_group_by_the_other_items_and_order_by_sees_the_projection() -> None:
    plan = ops("MATCH (n) RETURN n.city AS city, count(*) + 1 AS c ORDER BY c DESC LIMIT $top")
    aggregate = next(op for op in plan if isinstance(op, rows.Aggregate))
    assert aggregate.keys == (("city", ast.PropertyAccess(ast.Variable("n"), "city")),)
    assert [type(call).__name__ for _, call in aggregate.aggregates] == ["CountStar"]
    assert isinstance(plan[-1], rows.Limit) and plan[-1].count == ast.Parameter("top")
    assert compiled("MATCH (n) RETURN n.x AS x, count(*) AS c").columns == ("x", "c")


# ---------------------------------------------------------------------------- refusals


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("MATCH (n) RETURN m", "variable `m` is not defined at line 1, column 18"),
        ("MATCH (n) UNWIND [1] AS n RETURN n", "variable `n` at line 1, column 11 is a node already"),
        ("MATCH (n)-[n]->() RETURN 1", "variable `n` at line 1, column 10 is a node already"),
        ("MATCH (a)-[r]->(b), (c)-[r]->(d) RETURN 1", "`r` at line 1, column 24 is bound already; a MATCH binds"),
        ("MATCH (n) RETURN nosuch(n)", "unknown function nosuch() at line 1, column 18"),
        ("MATCH (n) RETURN size(n, 1)", "takes 1 argument"),
        ("MATCH (n) WHERE count(n) > 1 RETURN n", "aggregate count() in WHERE at line 1, column 17 is not allowed"),
        ("MATCH (n) RETURN sum(count(n))", "is nested in another"),
        ("MATCH p = shortestPath((a)-[*]->(b)) RETURN p", "shortestPath() at line 1, column 7 is not supported"),
        ("CREATE (a)-[:T]-(b)", "a created relationship at line 1, column 11 needs a direction"),
        ("CREATE (a)-[:T|U]->(b)", "needs exactly one type"),
        ("CREATE (a)-->(b)", "needs exactly one type"),
        ("CREATE (n) RETURN n AS OF 3", "AS OF at line 1, column 21 cannot pin a write"),
        ("RETURN 1 AS a UNION RETURN 2 AS b", "UNION at line 1, column 21 joins parts with different columns"),
        ("MATCH (n) WITH n.x RETURN 1", "WITH n.x at line 1, column 16 needs an alias"),
        ("MATCH (n) RETURN DISTINCT n.x AS x ORDER BY n.y", "ORDER BY at line 1, column 45 after RETURN DISTINCT"),
        ("MATCH (n) RETURN n SKIP -1", "SKIP at line 1, column 25 takes a non-negative whole number"),
        ("MATCH (n) RETURN n LIMIT 1.5", "LIMIT at line 1, column 26 takes a non-negative whole number"),
        ("MATCH (n) RETURN n.x, count(*) + n.y AS c", "`n` in the aggregating item c"),
        ("RETURN 1 AS a UNION RETURN 2 AS a UNION ALL RETURN 3 AS a", "UNION and UNION ALL"),
    ],
)
def test_what_cannot_run_is_refused_at_compile_time_naming_it_and_where(text: str, message: str) -> None:
    with pytest.raises(QueryError) as caught:
        compiled(text)
    assert message in caught.value.message
    assert "\n" not in caught.value.message


def test_a_reading_statement_without_return_is_a_syntax_error_pointing_at_it() -> None:
    with pytest.raises(QuerySyntaxError, match=r"^line 1, column 1: the statement ends without RETURN"):
        compiled("MATCH (n)")


def test_prepare_keeps_a_statement_compiled_by_its_text() -> None:
    text = "MATCH (n) WHERE n.x = $x RETURN n.y"
    assert prepare(text) is prepare(text)
    assert prepare(text).compiled.parameters == frozenset({"x"})


@pytest.mark.parametrize(
    "text",
    [
        "SEARCH (d:Doc) NEAR [1.0, 0.5] TOPK 3 RETURN d LIMIT 2",
        "SEARCH (d) ON vec NEAR [1.0] METRIC dot RETURN *",
        'SEARCH (d:Doc) ON body MATCHING "graph stores" TOPK 4 RETURN d',
        'HYBRID (d:Doc) VECTOR NEAR [1.0] KEYWORD ON body MATCHING "x" WEIGHT 2 GRAPH HOPS 2 DECAY 0.3 TOPK 5 RETURN d',
        'HYBRID (d:Doc) KEYWORD ON body MATCHING "x" CANDIDATES 50 FUSION rrf K 30 RETURN d',
        "CALL pagerank(damping: 0.5, iterations: 5) ON (n:P) RETURN n LIMIT 3",
        'CALL shortest_path(from: "a", to: "b", dir: "both") RETURN n',
        "CALL components() RETURN n",
    ],
)
def test_a_search_form_compiles_to_the_plan_the_search_statement_makes(text: str) -> None:
    assert compiled(text).logical == parse_query(text).logical


def test_each_where_term_filters_right_after_its_variables_are_bound() -> None:
    plan = ops("MATCH (a:P)-[:T]->(b) WHERE b.y = 2 AND a.x = 1 AND (a)-->(b) RETURN b.y")
    kinds = [type(op).__name__ for op in plan]
    assert kinds == ["NodeScan", "Filter", "Expand", "Filter", "Filter", "Project"]
    assert plan[1] == rows.Filter(ast.Binary("=", ast.PropertyAccess(ast.Variable("a"), "x"), ast.Literal(1)))


def test_a_walk_starts_at_a_seek_else_at_a_label_else_at_the_first_node() -> None:
    seek = ops("MATCH (a)-[:T]->(b)-[:U]->(c:L) WHERE key(b) = 'k' RETURN a.x")
    assert seek[0] == rows.NodeScan(rows.NodeCheck("b"), lp.SeekKeys(("k",)))
    expands = [(op.start, op.direction, op.end.variable) for op in seek if isinstance(op, rows.Expand)]
    assert expands[0][0] == "b" and {expands[0][2], expands[1][2]} == {"a", "c"}
    assert ("b", "in", "a") in expands  # walked backwards from b
    labelled = first_scan("MATCH (a)-[:T]->(b:L) RETURN a.x")
    assert labelled.source == lp.ScanLabel("L") and labelled.node.variable == "b"
    assert first_scan("MATCH (a)-[:T]->(b) RETURN a.x").node.variable == "a"


def test_explain_shows_the_row_plan_operator_by_operator() -> None:
    text = "MATCH (a:P)-[r:T*1..2]->(b) WHERE a.x = 1 RETURN b.y AS y, count(*) AS c ORDER BY c DESC LIMIT 3"
    plan = prepare(text).explain()
    assert isinstance(plan, dict) and plan["columns"] == ["y", "c"]
    assert plan["ops"] == [
        {"NodeScan": {"var": "a"}, "source": {"ScanLabel": "P"}},
        {"Filter": "(a.x = 1)"},
        {
            "Expand": {
                "from": "a",
                "rel": "r",
                "types": ["T"],
                "dir": "out",
                "min": 1,
                "max": 2,
                "to": {"var": "b"},
                "to_bound": False,
            }
        },
        {"Aggregate": {"keys": [["y", "b.y"]], "aggregates": [[" agg1", "count(*)"]]}},
        {"Project": {"items": [["y", "y"], ["c", " agg1"]], "keep": False}},
        {"Sort": [{"expr": "c", "descending": True}]},
        {"Limit": "3"},
    ]


def test_read_only_is_an_allow_list_of_clauses() -> None:
    """Every clause is a read or a write by name, and a clause on neither list counts as a write:
    a statement is read-only only when each clause is one that is known to read."""
    assert set(ast.READ_CLAUSES) | set(ast.WRITE_CLAUSES) == set(ast.CLAUSE_TYPES)
    assert not set(ast.READ_CLAUSES) & set(ast.WRITE_CLAUSES)
    assert not parse("MATCH (n) WITH n UNWIND [1] AS x RETURN n").writes
    assert parse("MATCH (n) SET n.x = 1").writes

    class Unknown:  # a clause the lists do not know yet
        pass

    made = ast.Query(
        (ast.SingleQuery((ast.Return(ast.Projection(star=True)), Unknown())),),
    )  # type: ignore[arg-type]  # not a Clause on purpose
    assert made.writes
