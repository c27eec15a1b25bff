"""The parser choice's measurement (docs/cypher.md, "Why lark"): the same statements through
drsg's lark grammar and through graphglot's openCypher/Neo4j parser, counted as parsed or not and
timed (mean µs per statement, best of 5 rounds). graphglot is not a dependency: install it beside
to run this (``.venv/bin/pip install graphglot``). Run: ``.venv/bin/python -m tests.bench.cypher_parsers``."""

from __future__ import annotations

import time
from collections.abc import Callable

#: openCypher 9 constructs (issue 36's list)
OPENCYPHER = [
    "MATCH (n) RETURN n",
    "MATCH (a:Person {name: 'Ann'})-[r:KNOWS]->(b) WHERE a.age > 30 RETURN b.name AS name",
    "MATCH (a)-[:A|B]-(b), (c)<-[:C]-(a) RETURN a, b, c",
    "OPTIONAL MATCH (a)-->(b) RETURN a, b",
    "MATCH p = (a)-[*1..3]->(b) RETURN p, length(p)",
    "MATCH (a)-[*]->(b) MATCH (b)-[*2]->(c) MATCH (c)-[*..4]->(d) MATCH (d)-[*2..]->(e) RETURN e",
    "UNWIND [1, 2, 3] AS x WITH x WHERE x > 1 RETURN x ORDER BY x DESC SKIP 1 LIMIT 2",
    "MATCH (n) RETURN DISTINCT n.city AS city, count(*) AS c, count(DISTINCT n.age)",
    "MATCH (n) RETURN *",
    "MATCH (n:A) RETURN n.x UNION MATCH (n:B) RETURN n.x",
    "MATCH (n:A) RETURN n.x UNION ALL MATCH (n:B) RETURN n.x",
    "CREATE (a:Person {name: 'Ann'})-[:KNOWS {since: 2020}]->(b:Person {name: 'Bob'})",
    "MERGE (a:Person {name: $name}) ON CREATE SET a.created = 1 ON MATCH SET a.seen = a.seen + 1",
    "MATCH (a) SET a.x = 1, a += {y: 2}, a:Tagged",
    "MATCH (a) SET a = {x: 1}",
    "MATCH (a) REMOVE a.x, a:Tagged",
    "MATCH (a) DETACH DELETE a",
    "MATCH (a)-[r]->() DELETE r",
    "RETURN 1 + 2 * 3 ^ 2 - -4 % 3 / 2",
    "RETURN NOT a = b OR c XOR d AND e",
    "RETURN 1 < 2 <= 3, 'ab' STARTS WITH 'a', 'ab' ENDS WITH 'b', 'ab' CONTAINS 'x', 'a' =~ 'a.*'",
    "RETURN x IN [1, 2], y IS NULL, z IS NOT NULL",
    "RETURN 0x1F, 0o17, 1e3, .5, 'it\\'s', \"tab\\tnew\\nline\\u00e9\", true, FALSE, null",
    "RETURN [1, 2, 3][0], [1, 2, 3][1..2], {a: 1, b: [2]}.a, $param, $0",
    "RETURN CASE n.x WHEN 1 THEN 'one' ELSE 'other' END, CASE WHEN n.x > 1 THEN 1 END",
    "RETURN [x IN range(1, 10) WHERE x % 2 = 0 | x * x], all(x IN [1] WHERE x > 0)",
    "RETURN any(x IN l WHERE x = 1), none(x IN l WHERE x = 1), single(x IN l WHERE x = 1)",
    "MATCH (a), (b) WHERE (a)-[:KNOWS]->(b) AND NOT (b)-->(a) RETURN a",
    "RETURN toUpper(n.name), n:Person, size(labels(n))",
    "MATCH (`weird name`:`Odd Label`) RETURN `weird name`.`odd key`",
    "// a comment\nMATCH (n) /* and another */ RETURN n;",
    "match (n) return n limit 1",
    "EXPLAIN MATCH (n) RETURN n",
]
#: upstream's own forms (reference/upstream-drsg.md §1b), which only a grammar drsg owns can know
UPSTREAM = [
    "SEARCH (d:Doc) ON embedding NEAR [0.1, 0.2] METRIC cosine TOPK 5 RETURN d",
    'SEARCH (d:Doc) ON body MATCHING "graph store" TOPK 3 -[:CITES]->(e) WHERE e.year > 2000 RETURN e',
    "SEARCH (d) NEAR $q RETURN d LIMIT 3 AS OF 42",
    'HYBRID (d:Doc) VECTOR NEAR "text" WEIGHT 0.7 KEYWORD ON body MATCHING "text" GRAPH HOPS 1 TOPK 5 RETURN d',
    'HYBRID (d:Doc) KEYWORD ON body MATCHING "x" FUSION rrf K 60 CANDIDATES 50 RETURN d',
    "CALL pagerank(damping: 0.85, iterations: 20) ON (n:Person) RETURN n ORDER BY score() DESC LIMIT 10",
    'CALL shortest_path(from: "a", to: "b") RETURN n',
    "MATCH (a:Doc) BEAM (a) OUT :CITES NEAR [0.1, 0.2] WIDTH 3 DEPTH 2 RETURN a",
    'MATCH (n) RETURN n AS OF "2026-01-02T03:04:05Z"',
    "MATCH (n) RETURN n AS OF TIME 1767323045000",
]
STATEMENTS = OPENCYPHER + UPSTREAM


def measure(name: str, parse: Callable[[str], object], rounds: int = 5) -> None:
    parsed = []
    for text in STATEMENTS:
        try:
            parse(text)
            parsed.append(text)
        except Exception:  # a parser's failure is what is counted
            pass
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for text in parsed:
            parse(text)
        best = min(best, time.perf_counter() - start)
    up = sum(t in parsed for t in UPSTREAM)
    mean = best / max(len(parsed), 1) * 1e6
    print(
        f"{name}: {len(parsed)}/{len(STATEMENTS)} parse ({len(parsed) - up}/{len(OPENCYPHER)} openCypher,"
        f" {up}/{len(UPSTREAM)} upstream); {mean:.0f} µs per statement"
    )


def main() -> None:
    from lark import Lark

    from drsg.plan.cypher import parser, tables

    start = time.perf_counter()
    parser._lark()
    loaded = time.perf_counter() - start
    start = time.perf_counter()
    Lark(tables.GRAMMAR.read_text(encoding="utf-8"), **tables.OPTIONS)
    built = time.perf_counter() - start
    print(f"lark: the parse tables load in {loaded:.2f} s ({built:.2f} s to build them; once per process)")
    measure("drsg lark (uncached)", parser.parse.__wrapped__)
    try:
        from graphglot.dialect import Dialect  # type: ignore[import-not-found]
    except ImportError:
        print("graphglot is not installed: pip install graphglot to compare")
        return
    neo4j = Dialect.get_or_raise("neo4j")
    measure("graphglot (neo4j dialect)", neo4j.parse)


if __name__ == "__main__":
    main()
