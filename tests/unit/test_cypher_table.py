"""`drsg cypher`'s table: each value as Cypher writes it, the rows boxed under their columns, the
`N rows` line and a write's counts — checked on answers built by field."""

from __future__ import annotations

from drsg.kernel.values import Vector
from drsg.store.records import Edge, Node
from drsg.surfaces.cli.cypher import cell, counts_line, render, table
from drsg.workers.cypher.result import CypherResult, Path, WriteCounts

ADA = Node(0, 1, "ada", ["Person"], {"name": "Ada", "born": 1815})
BOB = Node(0, 2, None, ["Person", "Engineer"], {})
KNOWS = Edge(0, 7, 1, 2, "KNOWS", {"since": 1833})


def test_scalars_as_cypher_writes_them() -> None:
    assert [cell(v) for v in (None, True, False, 3, -4)] == ["null", "true", "false", "3", "-4"]
    assert [cell(v) for v in (1.0, 2.5, 1e20, float("nan"), float("-inf"))] == [
        "1.0",
        "2.5",
        "1e+20",
        "NaN",
        "-Infinity",
    ]
    assert cell('say "hi"\n') == '"say \\"hi\\"\\n"'  # quoted, one line
    assert cell([1, "a", None]) == '[1, "a", null]'
    assert cell({"k": 1, "odd key": [2.0]}) == "{k: 1, `odd key`: [2.0]}"


def test_nodes_relationships_and_paths() -> None:
    assert cell(ADA) == '(#1:Person {name: "Ada", born: 1815})'
    assert cell(BOB) == "(#2:Person:Engineer)"
    assert cell(KNOWS) == "[#7:KNOWS {since: 1833}]"
    walked = '(#1:Person {name: "Ada", born: 1815})-[#7:KNOWS {since: 1833}]->(#2:Person:Engineer)'
    assert cell(Path((ADA, BOB), (KNOWS,))) == walked
    assert cell(Path((BOB, ADA), (KNOWS,))).startswith("(#2:Person:Engineer)<-[#7:KNOWS")  # walked against it
    doc = Node(0, 3, None, ["Doc"], {"embedding": Vector.of([1, 2, 3])})
    assert cell(doc) == "(#3:Doc {embedding: vector(3 dims)})"


def test_the_rows_boxed_under_their_columns() -> None:
    result = CypherResult(("p.name", "n"), (("Ada", 1), ("Bob", 22)))
    assert table(result) == [
        "+--------+----+",
        "| p.name | n  |",
        "+--------+----+",
        '| "Ada"  | 1  |',
        '| "Bob"  | 22 |',
        "+--------+----+",
    ]
    assert render(result)[-1] == "2 rows"
    assert render(CypherResult(("x",), ((1,),)))[-1] == "1 row"
    assert render(CypherResult(("x",), ())) == ["+---+", "| x |", "+---+", "+---+", "0 rows"]


def test_a_writes_counts() -> None:
    counts = WriteCounts(nodes_created=2, edges_created=1, props_set=3)
    assert counts_line(counts) == "created 2 nodes, 1 edge; set 3 properties"
    gone = WriteCounts(nodes_deleted=1, edges_deleted=2, labels_removed=1, props_removed=1, labels_added=1)
    assert counts_line(gone) == "deleted 1 node, 2 edges; added 1 label; removed 1 label, 1 property"
    assert counts_line(WriteCounts()) == "no changes"
    # a write without RETURN: the counts alone; with RETURN: the rows, then the counts
    assert render(CypherResult((), (), counts=counts, seq=9)) == ["created 2 nodes, 1 edge; set 3 properties (seq 9)"]
    returned = render(CypherResult(("n",), ((ADA,),), counts=WriteCounts(nodes_created=1), seq=10))
    assert returned[-2:] == ["1 row", "created 1 node (seq 10)"]
