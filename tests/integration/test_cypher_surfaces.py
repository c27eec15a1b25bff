"""Cypher on every surface, on real parts: the Python API on a real LMDB file, `drsg cypher` (in
process and as a real subprocess), `plane.cypher` on a real `drsg serve` called as upstream's SDK
calls it, and the MCP `cypher` tool over the SDK's own client at `/mcp`. Each: a read and a write,
parameters, time travel (`as_of` against `AS OF`), lean vectors, and the errors with their exit or
JSON-RPC codes — after which nothing was written."""

from __future__ import annotations

import json
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

import drsg
from drsg.workers.cypher.result import CypherResult
from tests.support.cli import Drsg, head_seq
from tests.support.mcp import call, over_http, refused
from tests.support.server import TOKEN, RunningServer, clean_env, drsg_argv, start_server

CREATE = 'CREATE (a:Person {key: "ada", name: "Ada", born: 1815})-[:KNOWS {since: 1833}]->(b:Person {name: "Bob"})'
BORN_BEFORE = "MATCH (p:Person) WHERE p.born < $year RETURN p.name AS name"
VECTOR = {"e": {"$vector": [1, 2]}}


# --------------------------------------------------------------------------- the Python API


@pytest.fixture
def db(tmp_path: Path) -> Iterator[drsg.Database]:
    with drsg.open(tmp_path / "g.drsg") as opened:
        yield opened


def test_api_write_then_read_with_params(db: drsg.Database) -> None:
    plane = db.create_plane("social")
    made = plane.cypher(CREATE)
    assert isinstance(made, CypherResult) and made.write
    assert made.counts is not None and (made.counts.nodes_created, made.counts.edges_created) == (2, 1)
    assert made.seq == db.head()
    (commit,) = db.commits(made.seq, made.seq)
    assert commit.origin == {"via": "api"}  # one commit, said to be the API's
    assert plane.get("ada").props == {"name": "Ada", "born": 1815}  # `key:` is the external key
    found = plane.cypher(BORN_BEFORE, {"year": 1900})
    assert (found.columns, found.rows, found.write) == (("name",), (("Ada",),), False)
    assert plane.cypher(BORN_BEFORE, {"year": 1800}).rows == ()
    assert found.to_json()["count"] == 1 and found.seq == made.seq


def test_api_time_travel_by_argument_or_clause_not_both(db: drsg.Database) -> None:
    plane = db.create_plane("social")
    before = plane.cypher(CREATE).seq
    plane.cypher("MATCH (p:Person) SET p.seen = true")
    count = "MATCH (p:Person) WHERE p.seen RETURN count(p) AS n"
    assert plane.cypher(count).rows == ((2,),)
    assert plane.cypher(count, as_of=before).rows == ((0,),)
    assert plane.cypher(f"{count} AS OF {before}").rows == ((0,),)
    with pytest.raises(drsg.UsageError, match="AS OF"):
        plane.cypher(f"{count} AS OF {before}", as_of=before)
    head = db.head()
    with pytest.raises(drsg.UsageError, match="as_of"):
        plane.cypher('CREATE (:Person {name: "Eve"})', as_of=before)
    assert db.head() == head  # nothing written


def test_api_checks_parameters_and_refuses_bad_statements(db: drsg.Database) -> None:
    plane = db.create_plane("social")
    plane.cypher(CREATE)
    head = db.head()
    for bad in (float("nan"), 2**64, object(), {1: "a"}):
        with pytest.raises(drsg.BadValue, match=r"\$year"):
            plane.cypher(BORN_BEFORE, {"year": bad})
    with pytest.raises(drsg.QuerySyntaxError):
        plane.cypher("MATCH (p:Person RETURN p")
    two = 'SEARCH (a) ON p NEAR "x" RETURN a UNION SEARCH (a) ON q NEAR "y" RETURN a'
    with pytest.raises(drsg.UsageError, match="one vector property per statement"):
        plane.cypher(two)  # whose embedder would embed them? (a vector each runs: no text to embed)
    with pytest.raises(drsg.QueryError):
        plane.cypher("MATCH (p:Person) RETURN nosuchfunction(p)")
    with pytest.raises(drsg.QueryError):
        plane.cypher("MATCH (p:Person) CREATE (p)-[:KNOWS]->(:Person {name: 1 / 0})")
    assert db.head() == head  # a failed write wrote nothing
    plan = plane.explain_cypher(BORN_BEFORE)
    assert isinstance(plan, dict) and json.loads(json.dumps(plan)) == plan  # JSON, and nothing ran
    creating = 'CREATE (:Person {name: "Eve"})'
    shown = plane.cypher(f"EXPLAIN {creating}")  # the statement's own EXPLAIN: its plan as the answer
    assert (shown.columns, shown.rows, shown.write) == (("plan",), ((plane.explain_cypher(creating),),), False)
    assert db.head() == head


def test_api_limits_come_from_the_settings(tmp_path: Path) -> None:
    with drsg.open(tmp_path / "g.drsg", settings={"query.max_rows": 5}) as db:
        plane = db.create_plane("p")
        assert plane.cypher("UNWIND range(1, 5) AS i RETURN i").to_json()["count"] == 5
        with pytest.raises(drsg.QueryLimit, match="max_rows"):
            plane.cypher("UNWIND range(1, 50) AS i RETURN i")
        head = db.head()
        with pytest.raises(drsg.QueryLimit):
            plane.cypher("UNWIND range(1, 50) AS i CREATE (:N {i: i})")
        assert db.head() == head


# --------------------------------------------------------------------------- `drsg cypher`


def seed(drsg: Drsg) -> int:
    assert drsg("plane", "create", "social").code == 0
    made = drsg("cypher", CREATE, "--plane", "social")
    assert made.code == 0, made.err
    assert made.lines()[-1].startswith("created 2 nodes, 1 edge;"), made.out
    return head_seq(drsg)


def test_cli_write_read_table_and_json(drsg: Drsg) -> None:
    seq = seed(drsg)
    logged = drsg("log", "--from", str(seq), "--json").json_lines()
    assert [c["origin"]["via"] for c in logged] == ["cli"]
    shown = drsg("cypher", "MATCH (p:Person)-[k:KNOWS]->(f) RETURN p.name, k, f.name", "--plane", "social")
    assert shown.code == 0, shown.err
    assert [name.strip() for name in shown.lines()[1].split("|")[1:4]] == ["p.name", "k", "f.name"]
    assert '"Ada"' in shown.lines()[3] and "[#" in shown.lines()[3] and ":KNOWS {since: 1833}]" in shown.lines()[3]
    assert shown.lines()[-1] == "1 row"
    answer = drsg("cypher", BORN_BEFORE, "--plane", "social", "--param", "year=1900", "--json").json_lines()
    assert answer == [{"columns": ["name"], "rows": [["Ada"]], "nodes": answer[0]["nodes"], "edges": [], "count": 1}]
    assert [n["external_key"] for n in answer[0]["nodes"]] == ["ada"]
    assert head_seq(drsg) == seq  # a read wrote nothing


def test_cli_as_of_and_the_clause(drsg: Drsg) -> None:
    before = seed(drsg)
    assert drsg("cypher", "MATCH (p:Person) SET p.seen = 1", "--plane", "social").code == 0
    count = "MATCH (p:Person) RETURN sum(p.seen) AS n"
    as_json = ("--plane", "social", "--json")
    assert drsg("cypher", count, *as_json).json_lines()[0]["rows"] == [[2]]
    assert drsg("cypher", count, "--as-of", str(before), *as_json).json_lines()[0]["rows"] == [[0]]
    assert drsg("cypher", f"{count} AS OF {before}", *as_json).json_lines()[0]["rows"] == [[0]]
    both = drsg("cypher", f"{count} AS OF {before}", "--as-of", str(before), *as_json)
    assert both.code == 2 and both.err.startswith("error: ") and "AS OF" in both.err


def test_cli_explain_runs_and_opens_nothing(drsg: Drsg, db_path: Path) -> None:
    explained = drsg("cypher", BORN_BEFORE, "--explain", "--json")
    assert explained.code == 0, explained.err
    assert isinstance(json.loads(explained.out), dict)
    assert not db_path.exists()  # no database was made or opened
    wrote = drsg("cypher", 'CREATE (:Person {name: "Eve"})', "--explain")
    assert wrote.code == 0 and not db_path.exists()
    prefixed = drsg("cypher", 'EXPLAIN CREATE (:Person {name: "Eve"})', "--json")
    assert prefixed.code == 0 and json.loads(prefixed.out) == json.loads(wrote.out) and not db_path.exists()


def test_cli_errors_exit_codes_and_nothing_written(drsg: Drsg, monkeypatch: pytest.MonkeyPatch) -> None:
    seq = seed(drsg)
    broken = drsg("cypher", "MATCH (p:Person RETURN p", "--plane", "social")
    assert broken.code == 2 and broken.err.startswith("error: ") and "line 1" in broken.err
    unknown = drsg("cypher", "MATCH (p) RETURN nosuchfunction(p)", "--plane", "social")
    assert unknown.code == 2 and "nosuchfunction" in unknown.err and "\n" not in unknown.err.strip()
    monkeypatch.setenv("DRSG_QUERY_MAX_ROWS", "10")
    limited = drsg("cypher", "UNWIND range(1, 100) AS i CREATE (:N {i: i})", "--plane", "social")
    assert limited.code == 1 and "max_rows" in limited.err and "\n" not in limited.err.strip()
    assert head_seq(drsg) == seq


def test_cli_reads_the_statement_from_stdin_in_a_real_process(tmp_path: Path) -> None:
    db = tmp_path / "g.drsg"

    def run(*args: str, stdin: str) -> subprocess.CompletedProcess[str]:
        argv = [*drsg_argv(), "--db", str(db), "cypher", *args, "--plane", "startup"]
        return subprocess.run(argv, input=stdin, capture_output=True, text=True, env=clean_env(), timeout=120)

    reading = run("-", stdin="MATCH (n) RETURN n")
    assert reading.returncode == 1 and "no database" in reading.stderr  # a read never creates the file
    assert not db.exists()
    made = run("-", "--json", stdin='CREATE (:Doc {title: "one"}), (:Doc {title: "two"})\n')
    assert made.returncode == 0, made.stderr
    assert json.loads(made.stdout)["write"] is True and json.loads(made.stdout)["nodes_created"] == 2
    listed = run("-", "--json", "--param", "t=two", stdin="MATCH (d:Doc) WHERE d.title <> $t RETURN d.title")
    assert json.loads(listed.stdout)["rows"] == [["one"]]
    broken = run("-", stdin="RETURN 1 +")
    assert broken.returncode == 2 and broken.stderr.startswith("error: ")


# --------------------------------------------------------------------------- `plane.cypher` on `drsg serve`


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    workdir = tmp_path_factory.mktemp("cypher-rpc")
    running = start_server(workdir / "graph.drsg", workdir, env={"DRSG_QUERY_MAX_ROWS": "100"})
    yield running
    assert running.stop() == 0


def sdk_call(server: RunningServer, method: str, params: dict[str, Any], token: str = TOKEN) -> dict[str, Any]:
    """One call exactly as upstream's SDK makes it: urllib, params by name."""
    payload = {"jsonrpc": "2.0", "method": method, "id": 1, "params": params}
    request = urllib.request.Request(
        f"{server.url}/rpc",
        data=json.dumps(payload).encode(),
        headers={"content-type": "application/json", "authorization": f"Bearer {token}"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=30) as resp:
        return json.loads(resp.read())  # type: ignore[no-any-return]


def test_rpc_read_and_write_as_upstreams_sdk_checks_them(server: RunningServer) -> None:
    server.call("plane.create", {"name": "sdk"})
    query = 'CREATE (a:Person {key: "carol", age: 30})-[:KNOWS]->(b:Person {key: "dave"})'
    out = sdk_call(server, "plane.cypher", {"plane": "sdk", "query": query})["result"]
    assert out["write"] is True and (out["nodes_created"], out["edges_created"]) == (2, 1)
    commits = server.call("plane.changes", {"plane": "sdk", "after": server.head() - 1})["commits"]
    assert [c["via"] for c in commits] == ["rpc"]  # one commit, said to be the server's
    adults = {"plane": "sdk", "query": "MATCH (n:Person) WHERE n.age >= 18 RETURN n"}
    res = sdk_call(server, "plane.cypher", adults)["result"]
    assert res["count"] == 1 and res["nodes"][0]["external_key"] == "carol"
    assert res["columns"] == ["n"] and res["rows"][0][0]["properties"] == {"age": 30}
    older = {"plane": "sdk", "query": "MATCH (n:Person) WHERE n.age >= $min RETURN n", "params": {"min": 40}}
    assert sdk_call(server, "plane.cypher", older)["result"]["count"] == 0
    before = {"plane": "sdk", "query": f"MATCH (n:Person) RETURN count(n) AS c AS OF {server.head() - 1}"}
    assert server.call("plane.cypher", before)["rows"] == [[0]]  # the statement's AS OF: before the CREATE


def test_rpc_lean_vectors(server: RunningServer) -> None:
    server.call("plane.create", {"name": "vec"})
    server.call("node.create", {"plane": "vec", "key": "v", "labels": ["Doc"], "properties": VECTOR})
    read = {"plane": "vec", "query": "MATCH (d:Doc) RETURN d"}
    full = server.call("plane.cypher", read)
    assert full["nodes"][0]["properties"]["e"] == {"$vector": [1.0, 2.0]}
    lean = server.call("plane.cypher", {**read, "lean": True})
    assert lean["nodes"][0]["properties"]["e"] == lean["rows"][0][0]["properties"]["e"] == "$vector(2 dims, omitted)"


def test_rpc_errors_and_nothing_written(server: RunningServer) -> None:
    server.call("plane.create", {"name": "errs"})
    head = server.head()
    syntax = server.error("plane.cypher", {"plane": "errs", "query": "MATCH (n RETURN n"})
    assert syntax["code"] == -32602 and syntax["message"].startswith("line 1, column 10: expected")
    assert "\n" not in syntax["message"] and syntax["data"]["excerpt"].endswith("^")  # the caret, beside it
    assert syntax["data"]["error"] == "QuerySyntaxError"  # as every error's data names its class
    unknown = server.error("plane.cypher", {"plane": "errs", "query": "RETURN nosuchfunction(1)"})
    assert unknown["code"] == -32602 and "nosuchfunction" in unknown["message"]
    assert unknown["data"] == {"error": "QueryError"}
    too_big = server.error("plane.cypher", {"plane": "errs", "query": "RETURN $x", "params": {"x": 2**70}})
    assert too_big["code"] == -32602 and "$x" in too_big["message"]
    limited = server.error("plane.cypher", {"plane": "errs", "query": "UNWIND range(1, 500) AS i CREATE (:N {i: i})"})
    assert limited["code"] == -32000 and "max_rows" in limited["message"]
    url = server.error("plane.cypher", {"plane": "errs", "query": "RETURN 1", "embed": "http://example.invalid"})
    assert url["code"] == -32602 and "preset" in url["message"]
    # the gate: a caller the server refuses is refused a read and a write alike
    for query in ("RETURN 1", "CREATE (:N {i: 1})"):
        refused_call = sdk_call(server, "plane.cypher", {"plane": "errs", "query": query}, token="wrong")
        assert refused_call["error"]["code"] == -32001
    explained = server.call("plane.cypher", {"plane": "errs", "query": "EXPLAIN CREATE (:N {i: 1})"})
    assert explained["columns"] == ["plan"] and explained["count"] == 1 and "write" not in explained
    assert server.head() == head


def test_rpc_discover_serves_upstreams_method(server: RunningServer) -> None:
    methods = {m["name"]: m for m in server.call("rpc.discover")["methods"]}
    cypher = methods["plane.cypher"]
    assert cypher["x-access"] == "write" and "x-drsg" not in cypher
    assert [p["name"] for p in cypher["params"]] == ["plane", "query", "embed", "params", "lean"]


# --------------------------------------------------------------------------- the MCP `cypher` tool


def test_mcp_cypher_tool_reads_and_writes(server: RunningServer) -> None:
    server.call("plane.create", {"name": "mcp"})
    server.call("node.create", {"plane": "mcp", "key": "m", "labels": ["Doc"], "properties": VECTOR})

    async def scenario() -> None:
        async with over_http(f"{server.url}/mcp", TOKEN) as session:
            read = await call(session, "cypher", {"plane": "mcp", "query": "MATCH (d:Doc) RETURN d, key(d) AS k"})
            assert read["columns"] == ["d", "k"] and read["rows"][0][1] == "m"
            assert read["nodes"][0]["properties"]["e"] == "$vector(2 dims, omitted)"  # lean by default
            made = await call(session, "cypher", {"plane": "mcp", "query": "CREATE (:Doc {n: $n})", "params": {"n": 2}})
            assert made["write"] is True and made["nodes_created"] == 1
            text = await refused(session, "cypher", {"plane": "mcp", "query": "MATCH (n RETURN n"})
            assert "error -32602: line 1, column 10: expected" in text

    anyio.run(scenario)
    assert server.call("plane.cypher", {"plane": "mcp", "query": "MATCH (d:Doc) RETURN count(*)"})["rows"] == [[2]]
