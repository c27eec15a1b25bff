"""Graph algorithms through every surface, on a real database: `drsg algo`, JSON-RPC `plane.algo` on a
running `drsg serve`, and the plan source ``{"Algo": …}`` (`drsg query`, `plane.query`).

The graph: a -> b -> c (weights 1, 1) and a -> c (weight 5), then, in a later commit, c -> d.
AS OF the earlier commit d stands alone; a bad call is one line with exit 2 / -32602 and writes
nothing.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.server import RunningServer, cli, start_server


@pytest.fixture(scope="module")
def graph(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, Any]]]:
    workdir = tmp_path_factory.mktemp("algo")
    db = workdir / "graph.drsg"
    assert cli(db, "plane", "create", "g").returncode == 0
    for key, label in (("a", "Hub"), ("b", "Hub"), ("c", "Hub"), ("d", "Leaf")):
        assert cli(db, "node", "put", key, "--plane", "g", "-l", label).returncode == 0
    for src, dst, w in (("a", "b", "1"), ("b", "c", "1"), ("a", "c", "5")):
        assert cli(db, "edge", "put", f"@{src}", f"@{dst}", "R", "--plane", "g", "-P", f"w={w}").returncode == 0
    before = _head(db)
    assert cli(db, "edge", "put", "@c", "@d", "R", "--plane", "g", "-P", 'w="heavy"').returncode == 0
    ids = {k: json.loads(cli(db, "get", f"@{k}", "--plane", "g", "--json").stdout)["id"] for k in "abcd"}
    yield db, {"before": before, **ids}


def _head(db: Path) -> int:
    return int(json.loads(cli(db, "log", "--json").stdout.splitlines()[-1])["seq"])


def _json(db: Path, *args: str) -> Any:
    ran = cli(db, *args, "--json")
    assert ran.returncode == 0, ran.stderr
    return json.loads(ran.stdout)


def test_cli_algorithms_and_as_of(graph: tuple[Path, dict[str, Any]]) -> None:
    db, ids = graph
    now = _json(db, "algo", "components", "--plane", "g")
    assert now["count"] == 1 and {r["component"] for r in now["results"]} == {ids["a"]}
    then = _json(db, "algo", "components", "--plane", "g", "--as-of", str(ids["before"]))
    assert then["count"] == 2 and {r["id"]: r["component"] for r in then["results"]}[ids["d"]] == ids["d"]
    hubs = _json(db, "algo", "pagerank", "--plane", "g", "--label", "Hub")
    assert hubs["count"] == 3 and hubs["results"][0]["id"] == ids["c"]  # c collects a's and b's rank
    weighted = _json(
        db, "algo", "shortest_path", "--plane", "g", "--src", "@a", "--dst", "@c", "--weight", "w", "--label", "Hub"
    )
    assert weighted["path"] == {
        "nodes": [ids["a"], ids["b"], ids["c"]],
        "edges": weighted["path"]["edges"],
        "cost": 2.0,
    }
    unit = _json(db, "algo", "shortest_path", "--plane", "g", "--src", "@a", "--dst", "@c")
    assert unit["path"]["nodes"] == [ids["a"], ids["c"]] and unit["path"]["cost"] == 1.0
    backwards = _json(db, "algo", "shortest_path", "--plane", "g", "--src", "@d", "--dst", "@a", "--dir", "in")
    assert backwards["path"]["nodes"] == [ids["d"], ids["c"], ids["a"]]
    assert _json(db, "algo", "shortest_path", "--plane", "g", "--src", "@d", "--dst", "@a")["found"] is False
    text = cli(db, "algo", "shortest_path", "--plane", "g", "--src", "@a", "--dst", "@d")
    assert text.returncode == 0 and text.stdout.splitlines() == ["path: cost 2, 2 hop(s)", "  a -> c -> d"]


@pytest.mark.parametrize(
    ("args", "fix"),
    [
        (["bogus"], "'bogus' is not one of"),
        (["shortest_path", "--src", "@a"], "shortest_path needs src and dst"),
        (["pagerank", "--damping", "-0.5"], "damping must be a number from 0 to 1"),
        (["shortest_path", "--src", "@a", "--dst", "@d", "--weight", "w"], "not a number of 0 or more"),
        (["louvain", "--min-gain", "-1"], "min_gain must be a number of 0 or more"),
    ],
)
def test_cli_bad_calls_are_one_line_exit_2(graph: tuple[Path, dict[str, Any]], args: list[str], fix: str) -> None:
    db, _ = graph
    head = _head(db)
    ran = cli(db, "algo", *args, "--plane", "g")
    assert ran.returncode == 2, ran.stderr
    assert fix in ran.stderr and len(ran.stderr.strip().splitlines()) == 1 and "Traceback" not in ran.stderr
    assert _head(db) == head


def test_plan_source_algo(graph: tuple[Path, dict[str, Any]]) -> None:
    db, ids = graph
    plan = {"source": {"Algo": {"label": None, "algo": {"PageRank": {"damping": 0.85}}}}, "steps": [{"Limit": 2}]}
    rows = [
        json.loads(line) for line in cli(db, "query", json.dumps(plan), "--plane", "g", "--json").stdout.splitlines()
    ]
    assert len(rows) == 2 and rows[0]["score"] >= rows[1]["score"]
    path = {"ShortestPath": {"from": {"Key": "a"}, "to": {"Id": ids["d"]}, "dir": "Out", "weight": None}}
    ran = cli(db, "query", json.dumps({"source": {"Algo": {"label": None, "algo": path}}}), "--plane", "g", "--json")
    assert ran.returncode == 0, ran.stderr
    hops = [json.loads(line) for line in ran.stdout.splitlines()]
    assert [(h["external_key"], h["score"]) for h in hops] == [("a", 0.0), ("c", 1.0), ("d", 2.0)]
    groups = {"source": {"Algo": {"label": "Hub", "algo": "ConnectedComponents"}}}
    ran = cli(db, "query", json.dumps(groups), "--plane", "g", "--json")
    assert {json.loads(line)["score"] for line in ran.stdout.splitlines()} == {0.0}
    bad = cli(db, "query", json.dumps({"source": {"Algo": {"algo": {"PageRank": {"damping": 7}}}}}), "--plane", "g")
    assert bad.returncode == 2 and "damping must be a number from 0 to 1" in bad.stderr


@pytest.fixture(scope="module")
def server(graph: tuple[Path, dict[str, Any]]) -> Iterator[RunningServer]:
    db, _ = graph
    running = start_server(db, db.parent)
    yield running
    assert running.stop() == 0


def test_rpc_plane_algo(server: RunningServer, graph: tuple[Path, dict[str, Any]]) -> None:
    _, ids = graph
    ranked = server.call("plane.algo", {"plane": "g", "algo": "pagerank", "limit": 2})
    assert ranked["algo"] == "pagerank" and ranked["count"] == 4 and len(ranked["results"]) == 2
    assert set(ranked["results"][0]) == {"id", "score"}
    then = server.call("plane.algo", {"plane": "g", "algo": "louvain", "as_of": ids["before"]})
    assert then["count"] == 2 and {r["id"] for r in then["results"]} == {ids[k] for k in "abcd"}
    route = server.call("plane.algo", {"plane": "g", "algo": "shortest_path", "src": ids["a"], "dst": ids["d"]})
    assert route["found"] is True and route["path"]["nodes"] == [ids["a"], ids["c"], ids["d"]]
    plan = {"source": {"Algo": {"label": "Hub", "algo": {"Louvain": {"max_levels": 3, "min_gain": 1e-9}}}}}
    assert {row["external_key"] for row in server.call("plane.query", {"plane": "g", "plan": plan})} == {"a", "b", "c"}


@pytest.mark.parametrize(
    ("params", "fix"),
    [
        ({"algo": "bogus"}, "'algo'"),
        ({"algo": "shortest_path", "src": 1}, "needs src and dst"),
        ({"algo": "pagerank", "damping": -0.1}, "damping must be a number from 0 to 1"),
        ({"algo": "shortest_path", "src": 1, "dst": 4, "weight": "w"}, "not a number of 0 or more"),
        ({"algo": "pagerank", "limit": 0}, "'limit'"),
    ],
)
def test_rpc_bad_calls_are_32602(server: RunningServer, params: dict[str, Any], fix: str) -> None:
    head = server.head()
    if params.get("dst") == 4:  # the ids of a and d, whatever the store numbered them
        params = {**params, "src": server.call("node.get", {"plane": "g", "key": "a"})["id"]}
        params["dst"] = server.call("node.get", {"plane": "g", "key": "d"})["id"]
    error = server.error("plane.algo", {"plane": "g", **params})
    assert error["code"] == -32602 and fix in error["message"] and "\n" not in error["message"]
    assert server.head() == head


def test_call_statements_through_drsg_search(graph: tuple[Path, dict[str, Any]]) -> None:
    db, ids = graph
    ran = cli(db, "search", "CALL pagerank(damping: 0.85, iterations: 50) ON (n:Hub) LIMIT 2", "--plane", "g", "--json")
    assert ran.returncode == 0, ran.stderr
    rows = [json.loads(line) for line in ran.stdout.splitlines()]
    assert [r["external_key"] for r in rows][:1] == ["c"] and len(rows) == 2
    path = 'CALL shortest_path(from: "a", to: "d", dir: "out", weight: "w")'
    ran = cli(db, "search", path, "--plane", "g", "--json")
    assert ran.returncode == 2 and "not a number of 0 or more" in ran.stderr  # c -> d weighs "heavy"
    ran = cli(db, "search", f"CALL components() AS OF {ids['before']}", "--plane", "g", "--json")
    scores = {json.loads(line)["external_key"]: json.loads(line)["score"] for line in ran.stdout.splitlines()}
    assert scores == {"a": 0.0, "b": 0.0, "c": 0.0, "d": 1.0}  # dense group index, groups by smallest id
    for bad, says in (
        ("CALL bogus()", "unknown algo 'bogus'"),
        ("CALL pagerank(steps: 3)", "has no argument 'steps'; its arguments: damping, iterations, tolerance"),
        ('CALL shortest_path(from: "a")', "needs from: and to:"),
    ):
        ran = cli(db, "search", bad, "--plane", "g")
        assert ran.returncode == 2 and says in ran.stderr and len(ran.stderr.strip().splitlines()) == 1, ran.stderr


def test_graph_seed_by_pagerank(server: RunningServer, graph: tuple[Path, dict[str, Any]]) -> None:
    ranked = server.call("plane.algo", {"plane": "g", "algo": "pagerank", "label": "Hub", "limit": 2})
    seeded = server.call("graph.seed", {"plane": "g", "label": "Hub", "order": "pagerank", "limit": 2})
    assert [(n["id"], n["score"]) for n in seeded["nodes"]] == [(r["id"], r["score"]) for r in ranked["results"]]
    assert seeded["total"] == 3 and seeded["truncated"] is True
