"""The conformance suite's own machinery (tests/support/cypher_scenarios.py): every scenario file
loads, and the comparison tells apart what openCypher tells apart (1 and 1.0, a label, a path's
direction, the order of rows when it matters) and nothing more (node ids, the order of labels and
keys, the order of rows when it does not)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cypher_scenarios import ScenarioFileError, compare, load_all, load_file, parse_table, parse_value

NODE_A = {"id": 7, "labels": ["B", "A"], "properties": {"name": "a", "n": 1}}
NODE_B = {"id": 9, "labels": [], "properties": {}}
EDGE = {"id": 3, "type": "T", "src": 7, "dst": 9, "properties": {"w": 0.5}}


def test_every_scenario_file_loads_with_unique_ids_and_enough_scenarios() -> None:
    scenarios = load_all()
    ids = [s.id for s in scenarios]
    assert len(ids) == len(set(ids))
    assert len(scenarios) >= 250
    assert all(s.result is not None or s.error is not None for s in scenarios)


def test_a_matching_answer_passes_in_any_order() -> None:
    table = parse_table("""
        | n | x | p |
        | (:A:B {n: 1, name: 'a'}) | [1, 2.5, 'x', null, true] | <(:A:B {name: 'a', n: 1})-[:T {w: 0.5}]->()> |
        | () | {k: [1]} | null |
    """)
    path = {"nodes": [NODE_A, NODE_B], "edges": [EDGE]}
    rows = [[NODE_B, {"k": [1]}, None], [NODE_A, [1, 2.5, "x", None, True], path]]
    assert compare(table, ["n", "x", "p"], rows) is None


@pytest.mark.parametrize(
    ("cell", "answer"),
    [
        ("1", 1.0),
        ("1.0", 1),
        ("true", 1),
        ("1", True),
        ("'1'", 1),
        ("[1, 2]", [2, 1]),
        ("{a: 1}", {"a": 1, "b": None}),
        ("(:A {name: 'a', n: 1})", NODE_A),
        ("(:A:B {name: 'a'})", NODE_A),
        ("[:U {w: 0.5}]", EDGE),
        ("<(:A:B {name: 'a', n: 1})<-[:T {w: 0.5}]-()>", {"nodes": [NODE_A, NODE_B], "edges": [EDGE]}),
        ("null", "null"),
        ("NaN", 1.0),
    ],
)
def test_a_different_value_fails(cell: str, answer: object) -> None:
    table = parse_table(f"| x |\n| {cell} |")
    differs = compare(table, ["x"], [[answer]])
    assert differs is not None and "rows differ" in differs


def test_nan_and_infinity_match_themselves() -> None:
    table = parse_table("| a | b | c |\n| NaN | Infinity | -Infinity |")
    assert compare(table, ["a", "b", "c"], [[float("nan"), float("inf"), float("-inf")]]) is None


def test_order_matters_only_when_asked_and_columns_always() -> None:
    text = "| x |\n| 1 |\n| 2 |"
    assert compare(parse_table(text), ["x"], [[2], [1]]) is None
    assert compare(parse_table(text, ordered=True), ["x"], [[2], [1]]) is not None
    assert compare(parse_table(text), ["x"], [[1], [1], [2]]) is not None  # a bag, not a set
    assert compare(parse_table(text), ["y"], [[1], [2]]) is not None


def test_string_escapes_in_cells() -> None:
    assert parse_value(r"'it\'s \\ a\tb'") == ("str", "it's \\ a\tb")
    assert parse_value("'a | b'") == ("str", "a | b")


def test_a_malformed_scenario_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    for text in [
        "- name: x\n  query: RETURN 1\n",  # neither result nor error
        "- name: x\n  query: RETURN 1\n  result: '| a |'\n  colums: [a]\n",  # unknown key
        "- name: x\n  query: RETURN 1\n  error: {class: ValueError}\n",
        '- name: x\n  query: RETURN 1\n  result: "| a |\\n| 1 | 2 |"\n',  # too many cells
        "- name: x\n  query: RETURN 1\n  result: '| a || b |'\n",  # an empty column name
        "- {name: x, query: RETURN 1, result: '| a |'}\n- {name: x, query: RETURN 2, result: '| a |'}\n",
    ]:
        path.write_text(text)
        with pytest.raises(ScenarioFileError):
            load_file(path)


def test_setup_is_split_into_statements_at_a_semicolon_ending_a_line(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(
        "- name: x\n  setup: |\n    CREATE (:A {s: 'a;b'});\n    CREATE (:B)\n  query: RETURN 1\n  result: '| 1 |'\n"
    )
    assert load_file(path)[0].setup == ("CREATE (:A {s: 'a;b'})", "CREATE (:B)")
