"""A user's mistake is one line saying what was wrong and how to fix it, exit code 2, nothing written
— click's own usage errors included. (The internal errors these used to be are named per case.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli import Drsg

HUGE = "99999999999999999999999"  # past 64 bits: struct.error before
DEEP = "[" * 600 + "]" * 600  # RecursionError / msgpack's nesting limit before


@pytest.fixture
def seeded(drsg: Drsg) -> None:
    assert drsg("plane", "create", "p").code == 0
    assert drsg("node", "put", "a", "--plane", "p").code == 0


CASES = {
    "get a huge id": (("get", HUGE, "--plane", "p"), "node id 99999999999999999999999 is out of range"),
    "neighbors of a huge id": (("neighbors", HUGE, "--plane", "p"), "out of range"),
    "delete a huge id": (("node", "delete", HUGE, "--plane", "p"), "out of range"),
    "an edge to a huge id": (("edge", "put", "@a", HUGE, "X", "--plane", "p"), "out of range"),
    "delete a huge edge id": (("edge", "delete", HUGE, "--plane", "p"), "edge id 99999999999999999999999"),
    "a property nested 600 deep": (("node", "put", "b", "--plane", "p", "-P", f"x={DEEP}"), "nest"),
    "--props nested 600 deep": (("node", "put", "b", "--plane", "p", "--props", f'{{"x": {DEEP}}}'), "nest"),
    "a property name past 400 bytes": (("node", "put", "b", "--plane", "p", "-P", "n" * 401 + "=1"), "400 bytes"),
    "an unknown command": (("nosuch",), "No such command 'nosuch'; see `"),
    "an unknown option": (("node", "put", "--bogus"), "No such option '--bogus'; see `"),
    "a missing argument": (("search",), "Missing argument 'STATEMENT'; see `"),
    "a bad choice": (("hybrid", "x", "--plane", "p", "--fusion", "zz"), "'zz' is not one of"),
    "a folder to import": (("import", "/tmp", "--plane", "p"), "is a directory"),
    # plans and statements: KeyError, TypeError, OverflowError and JSONDecodeError before
    "SeekIds given an object": (("query", '{"source":{"SeekIds":{"ids":[1]}}}', "-p", "p"), "SeekIds takes a list"),
    "k given text": (("query", '{"source":{"VectorTopK":{"query":[1],"k":"x"}}}', "-p", "p"), "k must be a whole"),
    "k of 1e309": (("query", '{"source":{"VectorTopK":{"query":[1],"k":1e309}}}', "-p", "p"), "k must be a whole"),
    "a null label": (("query", '{"source":{"ScanLabel":null}}', "-p", "p"), "label must be a non-empty string"),
    "a negative k": (
        ("query", '{"source":{"KeywordTopK":{"label":"A","property":"b","query":"x","k":-3}}}', "-p", "p"),
        "k must be a whole number from 0",
    ),
    "a Hybrid k of 1e309": (("query", '{"source":{"Hybrid":{"k":1e309}}}', "-p", "p"), "bad Hybrid source"),
    "a plan nested past reading": (("query", "[" * 3000 + "]" * 3000, "-p", "p"), "nests too deeply"),
    "an unknown escape": (("search", 'SEARCH (d:A) ON b MATCHING "a\\qb"', "-p", "p"), "unknown escape \\q"),
}


@pytest.mark.parametrize(("args", "says"), CASES.values(), ids=list(CASES))
def test_a_mistake_is_one_line_and_exit_2_and_writes_nothing(
    drsg: Drsg, seeded: None, args: tuple[str, ...], says: str
) -> None:
    before = drsg("log", "--json").out
    ran = drsg(*args)
    assert ran.code == 2, ran.err
    assert says in ran.err
    assert len(ran.err.strip().splitlines()) == 1 and ran.err.startswith("error: "), ran.err
    assert "internal error" not in ran.err
    assert drsg("log", "--json").out == before


def test_a_deeply_nested_import_line_is_a_bad_line(drsg: Drsg, seeded: None, tmp_path: Path) -> None:
    source = tmp_path / "deep.jsonl"
    source.write_text('{"labels": ["X"], "properties": {"a": ' + "[" * 5000 + "]" * 5000 + "}}\n")
    ran = drsg("import", str(source), "--plane", "p")
    assert ran.code == 2 and "line 1: lists and maps nest too deeply to read" in ran.err
    source.with_name("shallower.jsonl").write_text('{"labels": ["X"], "properties": {"a": ' + DEEP + "}}\n")
    ran = drsg("import", str(source.with_name("shallower.jsonl")), "--plane", "p")
    assert ran.code == 2 and "nest deeper than 100 levels" in ran.err


def test_import_reads_a_device_or_a_pipe(drsg: Drsg, seeded: None) -> None:
    ran = drsg("import", "/dev/null", "--plane", "p")
    assert ran.code == 0 and "imported 0 node(s)" in ran.out  # it said "no such file" before


def test_an_empty_file_is_refused_not_made_a_new_database(drsg: Drsg, tmp_path: Path) -> None:
    empty = tmp_path / "empty.drsg"
    empty.write_bytes(b"")
    for args in (("check",), ("rebuild",), ("stats",), ("node", "put", "x")):
        ran = drsg(*args, db=empty)
        assert ran.code == 1 and "is empty (0 bytes), not a drsg database" in ran.err, (args, ran.err)
    assert empty.stat().st_size == 0  # rebuild used to report success and make an empty database of it
