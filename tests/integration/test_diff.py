"""`drsg diff` and `plane.diff`: the CLI's text and JSON, its one-line errors, and the RPC method
on a real server."""

from __future__ import annotations

import json
from pathlib import Path

from drsg.kernel.asof import format_ms
from tests.support.cli import Drsg
from tests.support.server import start_server

SAMPLE = Path(__file__).resolve().parents[2] / "drsg" / "data" / "sample.jsonl"


def _history(drsg: Drsg) -> None:
    """seq 2: the sample import; 3: ada gets a title; 4: dijkstra deleted (with his edge)."""
    assert drsg("import", str(SAMPLE), "--plane", "pioneers", "--create-plane").code == 0
    assert drsg("node", "put", "ada", "--plane", "pioneers", "-P", 'title="Countess"').code == 0
    assert drsg("node", "delete", "@dijkstra", "--plane", "pioneers").code == 0


def test_cli_lists_what_changed_between_two_seqs(drsg: Drsg) -> None:
    _history(drsg)
    ran = drsg("diff", "2", "4", "--plane", "pioneers")
    assert ran.code == 0, ran.err
    lines = ran.lines()
    assert lines[0] == "plane 'pioneers': seq 2 -> seq 4 (2 commits read)"
    assert "- node #8 @dijkstra:Person" in lines
    assert "~ node #1 @ada:Person" in lines
    assert "    title: (absent) -> 'Countess'" in lines
    assert lines[-1] == "0 nodes created, 1 deleted, 1 changed; 0 edges created, 1 deleted, 0 changed"

    data = json.loads(drsg("diff", "2", "4", "--plane", "pioneers", "--json").out)
    assert data["counts"] == {
        "nodes_created": 0,
        "nodes_deleted": 1,
        "nodes_changed": 1,
        "edges_created": 0,
        "edges_deleted": 1,
        "edges_changed": 0,
    }
    (change,) = data["nodes"]["changed"]
    assert change["changed"] == ["title"]
    assert "title" not in change["before"]["properties"]
    assert change["after"]["properties"]["title"] == "Countess"
    # reversed ends: the same change seen backwards
    back = json.loads(drsg("diff", "4", "2", "--plane", "pioneers", "--json").out)
    assert [n["external_key"] for n in back["nodes"]["created"]] == ["dijkstra"]
    # from the empty start: the whole import
    start = json.loads(drsg("diff", "0", "2", "--plane", "pioneers", "--json").out)
    assert start["counts"]["nodes_created"] == 21 and start["counts"]["edges_created"] == 18


def test_cli_takes_times_and_refuses_bad_ends_in_one_line(drsg: Drsg, db_path: Path) -> None:
    _history(drsg)
    log = [json.loads(line) for line in drsg("log", "--json").lines()]
    by_time = json.loads(
        drsg("diff", f"TIME {log[1]['ts']}", f"TIME {log[3]['ts']}", "--plane", "pioneers", "--json").out
    )
    assert by_time["from"] == 2 and by_time["to"] == 4
    rfc = json.loads(drsg("diff", format_ms(log[1]["ts"]), format_ms(log[3]["ts"]), "-p", "pioneers", "--json").out)
    assert (rfc["from"], rfc["to"]) == (2, 4)
    for args, code, words in [
        (("diff", "2", "99", "--plane", "pioneers"), 2, "beyond the head"),
        (("diff", "2", "3", "--plane", "nope"), 1, "no plane named 'nope'"),
        (("diff", "x", "3", "--plane", "pioneers"), 2, "cannot read 'x'"),
    ]:
        ran = drsg(*args)
        assert ran.code == code, (args, ran.err)
        assert words in ran.err and ran.err.count("\n") == 1 and ran.out == ""


def test_a_dropped_plane_is_refused_with_what_to_do(drsg: Drsg) -> None:
    _history(drsg)
    assert drsg("plane", "drop", "pioneers").code == 0
    ran = drsg("diff", "2", "5", "--plane", "pioneers")
    assert ran.code == 1 and "was dropped before seq 5" in ran.err


def test_plane_diff_over_json_rpc(drsg: Drsg, db_path: Path, tmp_path: Path) -> None:
    _history(drsg)
    server = start_server(db_path, tmp_path)
    try:
        got = server.call("plane.diff", {"plane": "pioneers", "from": 2, "to": 4})
        cli = json.loads(drsg("diff", "2", "4", "--plane", "pioneers", "--json").out)
        assert {k: got[k] for k in cli} == cli
        error = server.error("plane.diff", {"plane": "pioneers", "from": "yesterday", "to": 4})
        assert error["code"] == -32602 and "param 'from'" in error["message"]
        error = server.error("plane.diff", {"plane": "pioneers", "to": 4})
        assert error["code"] == -32602
        discovered = {m["name"] for m in server.call("rpc.discover")["methods"]}
        assert "plane.diff" in discovered
    finally:
        assert server.stop() == 0
