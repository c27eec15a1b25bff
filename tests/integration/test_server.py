"""`drsg serve` end to end: the real server in a subprocess, spoken to over real HTTP.

One server (module scope, token set, a 1 MiB body limit, a 1.5 s write timeout) serves most tests;
the tests about starting and stopping run servers of their own; the helpers are in
tests/support/server.py.
"""

from __future__ import annotations

import http.client
import json
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.server import TOKEN, Response, RunningServer, clean_env, cli, drsg_argv, paragraphs, start_server
from tests.support.waiting import wait_until


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    workdir = tmp_path_factory.mktemp("serve")
    running = start_server(
        workdir / "graph.drsg",
        workdir,
        env={"DRSG_SERVER_MAX_REQUEST_BYTES": "1M", "DRSG_SERVER_WRITE_TIMEOUT_SECS": "1.5"},
    )
    yield running
    assert running.stop() == 0


# --------------------------------------------------------------------------- the happy paths


def test_health_is_open_and_every_call_needs_the_token(server: RunningServer) -> None:
    health = server.get("/health")
    assert health.status == 200 and health.json()["status"] == "ok" and "log" not in health.json()  # embedded
    for token in (None, "wrong-token"):
        resp = server.post('{"jsonrpc":"2.0","id":7,"method":"db.stats"}', token=token)
        # upstream's answer: HTTP 200, error -32001 for the call's id (its SDKs read the code from the body)
        assert resp.status == 200 and resp.headers["WWW-Authenticate"].startswith("Bearer")
        assert resp.json()["error"]["code"] == -32001 and resp.json()["id"] == 7
    resp = server.post(
        '{"jsonrpc":"2.0","id":7,"method":"db.stats"}', token=None, headers={"Authorization": f"Basic {TOKEN}"}
    )
    assert resp.json()["error"]["code"] == -32001
    assert server.call("db.stats")["planes"] >= 1


def test_nodes_and_edges_round_trip(server: RunningServer) -> None:
    assert server.call("plane.create", {"name": "crud", "properties": {"topic": "people"}})["name"] == "crud"
    ada = server.call(
        "node.create",
        {"plane": "crud", "key": "ada", "labels": ["Person"], "properties": {"born": 1815, "v": {"$vector": [1, 0]}}},
    )
    assert ada["external_key"] == "ada" and ada["properties"]["v"] == {"$vector": [1.0, 0.0]}
    bob = server.call("node.create", {"plane": "crud", "key": "bob", "labels": ["Person"]})
    knows = server.call("edge.create", {"plane": "crud", "src": "ada", "dst": bob["id"], "type": "KNOWS"})
    assert (knows["src"], knows["dst"], knows["type"]) == (ada["id"], bob["id"], "KNOWS")

    assert server.call("node.get", {"plane": "crud", "key": "ada"}) == ada
    assert server.call("node.get", {"plane": "crud", "id": ada["id"], "lean": True})["properties"]["v"] == (
        "$vector(2 dims, omitted)"
    )
    assert server.call("node.get", {"plane": "crud", "key": "nobody"}) is None

    updated = server.call(
        "node.update", {"plane": "crud", "key": "ada", "set": {"name": "Ada"}, "unset": ["v"], "labels": ["Math"]}
    )
    assert updated["properties"] == {"born": 1815, "name": "Ada"} and updated["labels"] == ["Math"]
    edge = server.call("edge.update", {"plane": "crud", "edge": knows["id"], "set": {"since": 1833}, "type": "MET"})
    assert edge["type"] == "MET" and edge["properties"] == {"since": 1833}
    assert server.call("edge.get", {"plane": "crud", "edge": knows["id"]}) == edge

    assert server.call("plane.neighbors", {"plane": "crud", "id": ada["id"]}) == [
        {"node": bob["id"], "edge": edge["id"]}
    ]
    assert server.call("plane.neighbors", {"plane": "crud", "id": ada["id"], "direction": "in"}) == []
    hydrated = server.call("plane.neighbors", {"plane": "crud", "id": bob["id"], "direction": "both", "hydrate": True})
    assert hydrated[0]["node"]["external_key"] == "ada" and hydrated[0]["edge"]["type"] == "MET"

    assert server.call("node.delete", {"plane": "crud", "key": "ada"}) == {"deleted": True, "id": ada["id"]}
    assert server.call("edge.get", {"plane": "crud", "edge": knows["id"]}) is None  # cascaded
    assert server.call("node.delete", {"plane": "crud", "key": "ada"}) == {"deleted": False}
    assert server.call("edge.delete", {"plane": "crud", "edge": knows["id"]}) == {"deleted": False, "id": knows["id"]}

    dangling = server.error("edge.create", {"plane": "crud", "src": "ghost", "dst": bob["id"], "type": "KNOWS"})
    assert dangling["code"] == -32602 and "ghost" in dangling["message"]
    duplicate = server.error("node.create", {"plane": "crud", "key": "bob"})
    assert duplicate["code"] == -32000 and duplicate["data"] == {"error": "Conflict"}
    assert server.error("node.get", {"plane": "crud"})["code"] == -32602  # neither id nor key
    bad_value = server.error("node.create", {"plane": "crud", "properties": {"v": {"$vector": []}}})
    assert bad_value["code"] == -32602 and "$vector" in bad_value["message"]


def test_planes_and_a_deleted_plane(server: RunningServer) -> None:
    made = server.call("plane.create", {"name": "tmp"})
    server.call("node.create", {"plane": "tmp", "key": "x"})
    cards = {c["name"]: c for c in server.call("plane.list")}
    assert cards["tmp"] == {"id": made["id"], "name": "tmp", "nodes": 1, "edges": 0, "properties": {}}
    assert server.call("plane.rename", {"plane": "tmp", "to": "scratch"})["name"] == "scratch"
    props = server.call("plane.set_props", {"plane": "scratch", "properties": {"owner": "qa"}})
    assert props["properties"] == {"owner": "qa"}
    before_drop = server.head()
    assert server.call("plane.delete", {"plane": "scratch"}) == {"deleted": True, "id": made["id"]}

    assert "scratch" not in {c["name"] for c in server.call("plane.list")}
    for method, params in [
        ("node.get", {"plane": "scratch", "key": "x"}),
        ("node.create", {"plane": "scratch", "key": "y"}),
        ("plane.search", {"plane": "scratch", "property": "v", "query": [1.0]}),
        ("plane.delete", {"plane": "scratch"}),
    ]:
        error = server.error(method, params)
        assert error["code"] == -32602 and "no plane named 'scratch'" in error["message"], (method, error)
    # … but its past stays readable.
    assert server.call("node.get", {"plane": "scratch", "key": "x", "as_of": before_drop})["external_key"] == "x"
    assert server.error("plane.delete", {"plane": "startup"})["code"] == -32602


def test_as_of_reads_and_history(server: RunningServer) -> None:
    server.call("plane.create", {"name": "tt"})
    first = server.call("node.create", {"plane": "tt", "key": "n", "properties": {"v": 1}})
    after_create = server.head()
    time.sleep(0.01)
    ms_between = int(time.time() * 1000)
    time.sleep(0.01)
    server.call("node.update", {"plane": "tt", "key": "n", "set": {"v": 2}})
    head = server.head()

    assert server.call("node.get", {"plane": "tt", "key": "n"})["properties"] == {"v": 2}
    assert server.call("node.get", {"plane": "tt", "key": "n", "as_of": after_create})["properties"] == {"v": 1}
    assert server.call("node.get", {"plane": "tt", "key": "n", "as_of_ms": ms_between})["properties"] == {"v": 1}
    assert server.call("node.get", {"plane": "tt", "key": "n", "as_of": after_create - 1}) is None
    cards = {c["name"]: c for c in server.call("plane.list", {"as_of": after_create - 1})}
    assert cards["tt"]["nodes"] == 0

    beyond = server.error("node.get", {"plane": "tt", "key": "n", "as_of": head + 5})
    assert beyond["code"] == -32602 and "beyond the head" in beyond["message"]
    assert server.error("node.get", {"plane": "tt", "key": "n", "as_of_ms": 1000})["code"] == -32602
    assert server.error("node.get", {"plane": "tt", "key": "n", "as_of": 1, "as_of_ms": 1})["code"] == -32602
    assert server.error("node.get", {"plane": "tt", "key": "n", "as_of": 0})["code"] == -32602

    window = server.call("plane.history")
    assert window["oldest"] == 1 and window["latest"] == head and window["latest_ms"] >= window["oldest_ms"]
    versions = server.call("node.history", {"plane": "tt", "id": first["id"]})
    assert [v["record"]["properties"] for v in versions] == [{"v": 1}, {"v": 2}]
    assert [v["seq"] for v in versions] == [after_create, head]


def test_keyword_and_vector_search(server: RunningServer) -> None:
    server.call("plane.create", {"name": "docs"})
    texts = paragraphs(12)
    batch = [
        {
            "jsonrpc": "2.0",
            "id": i,
            "method": "node.create",
            "params": {
                "plane": "docs",
                "key": f"p{i}",
                "labels": ["Doc"],
                "properties": {"body": text, "v": {"$vector": [1.0, float(i), 0.5]}},
            },
        }
        for i, text in enumerate(texts)
    ]
    answers = server.post(json.dumps(batch)).json()
    assert [a["id"] for a in answers] == list(range(len(texts))) and all("result" in a for a in answers)
    before_more = server.head()

    ensured = server.call("index.ensure", {"plane": "docs", "label": "Doc", "property": "body"})
    assert ensured["kind"] == "keyword" and ensured["language"] == "english"
    vector = server.call(
        "index.ensure", {"plane": "docs", "label": "Doc", "property": "v", "kind": "vector", "metric": "cosine"}
    )
    assert (vector["kind"], vector["dims"]) == ("vector", 3)
    assert server.call("index.ensure", {"plane": "docs", "label": "Doc", "property": "body"}) == ensured  # idempotent
    listed = server.call("plane.indexes", {"plane": "docs"})
    measured = {key: listed["vector"][0].pop(key) for key in ("ef", "recall")}  # the index's calibration
    assert measured["ef"] >= 64 and 0.95 <= measured["recall"] <= 1
    assert listed == {
        "vector": [{"label": "Doc", "property": "v", "metric": "cosine", "dims": 3}],
        "keyword": [{"label": "Doc", "property": "body", "language": "english"}],
    }
    wrong = server.error("index.ensure", {"plane": "docs", "label": "Doc", "property": "v", "metric": "dot"})
    assert wrong["code"] == -32602 and "vector" in wrong["message"]

    word = "HNSW"
    expected = {f"p{i}" for i, t in enumerate(texts) if word.lower() in t.lower()}
    assert expected, "the seed text mentions HNSW"
    hits = server.call(
        "plane.search", {"plane": "docs", "label": "Doc", "property": "body", "query": word, "kind": "keyword", "k": 20}
    )
    assert {h["external_key"] for h in hits} == expected and all(h["score"] > 0 for h in hits)
    plan = {
        "source": {"KeywordTopK": {"label": "Doc", "property": "body", "query": word, "k": 20}},
        "steps": [{"Limit": 1}],
    }
    assert [r["external_key"] for r in server.call("plane.query", {"plane": "docs", "plan": plan})] == [
        hits[0]["external_key"]
    ]

    nearest = server.call(
        "plane.search", {"plane": "docs", "label": "Doc", "property": "v", "query": [1.0, 3.0, 0.5], "k": 3}
    )
    assert nearest[0]["external_key"] == "p3" and nearest[0]["score"] == pytest.approx(1.0, abs=1e-5)
    lean = server.call(
        "plane.search", {"plane": "docs", "property": "v", "query": [1.0, 3.0, 0.5], "k": 1, "lean": True}
    )
    assert lean[0]["properties"]["v"] == "$vector(3 dims, omitted)"

    # A node written after `before_more` is found now, not as of before it.
    server.call(
        "node.create", {"plane": "docs", "key": "late", "labels": ["Doc"], "properties": {"v": {"$vector": [0, 0, 1]}}}
    )
    query = {"plane": "docs", "label": "Doc", "property": "v", "query": [0.0, 0.0, 1.0], "k": 1}
    assert server.call("plane.search", query)[0]["external_key"] == "late"
    assert server.call("plane.search", {**query, "as_of": before_more})[0]["external_key"] != "late"
    mismatch = server.error("plane.search", {**query, "query": [1.0, 2.0]})
    assert mismatch["code"] == -32602 and "dims" in mismatch["message"]


def test_text_queries_use_the_embedder_the_plane_recorded(server: RunningServer, tmp_path: Path) -> None:
    """`drsg vectorize` (another process) embeds locally while the server runs; a text query to the
    server is embedded the same way, server-side, and finds the paragraph it paraphrases."""
    texts = paragraphs(8)
    server.call("plane.create", {"name": "sem"})
    for i, text in enumerate(texts):
        server.call("node.create", {"plane": "sem", "key": f"s{i}", "labels": ["Doc"], "properties": {"body": text}})
    ran = cli(server.db, "vectorize", "--plane", "sem", "--label", "Doc", "--from", "body")
    assert ran.returncode == 0, ran.stderr
    hits = server.call("plane.search", {"plane": "sem", "label": "Doc", "property": "embedding", "query": texts[2]})
    assert hits[0]["external_key"] == "s2" and hits[0]["score"] > 0.99
    refused = server.error(
        "plane.search",
        {"plane": "sem", "property": "embedding", "query": "x", "embed": "https://attacker.example/v1"},
    )
    assert refused["code"] == -32602 and "'embed'" in refused["message"]


def test_concurrent_writers_each_get_their_own_commit(server: RunningServer) -> None:
    before = server.head()
    made: list[int] = []

    def writer(t: int) -> None:
        for i in range(25):
            made.append(server.call("node.create", {"plane": "startup", "key": f"c{t}-{i}", "labels": ["C"]})["id"])

    threads = [threading.Thread(target=writer, args=(t,)) for t in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(made)) == 200 and server.head() == before + 200


def test_cli_writes_are_seen_by_the_running_server(server: RunningServer) -> None:
    before = server.head()
    ran = cli(server.db, "node", "put", "from-cli", "-l", "Cli", "-P", "n=1")
    assert ran.returncode == 0, ran.stderr
    assert server.head() == before + 1
    assert server.call("node.get", {"plane": "startup", "key": "from-cli"})["labels"] == ["Cli"]


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("body", "code"),
    [
        (b'{"jsonrpc": "2.0", "method": "db.stats", "id": 1', -32700),
        (b"\xff\xfe not utf-8", -32700),
        (b'{"jsonrpc":"2.0","id":1,"method":"db.stats","params":{"x":NaN}}', -32700),
        (b"[" * 100_000, -32700),
        (
            b'{"jsonrpc":"2.0","id":1,"method":"node.get","params":{"plane":"startup","id":1' + b"0" * 5000 + b"}}",
            -32700,
        ),
        (b"42", -32600),
        (b'"db.stats"', -32600),
        (b"[]", -32600),
        (b'{"method":"db.stats","id":1}', -32600),
        (b'{"jsonrpc":"1.0","method":"db.stats","id":1}', -32600),
        (b'{"jsonrpc":"2.0","method":7,"id":1}', -32600),
        (b'{"jsonrpc":"2.0","method":"db.stats","params":"x","id":1}', -32600),
        (b'{"jsonrpc":"2.0","method":"db.stats","id":{"a":1}}', -32600),
        (b'{"jsonrpc":"2.0","method":"db.drop_everything","id":1}', -32601),
        (b'{"jsonrpc":"2.0","method":"node.get","params":{"plane":"startup","id":"1"},"id":1}', -32602),
        (b'{"jsonrpc":"2.0","method":"node.get","params":{"plane":["startup"],"id":1},"id":1}', -32602),
        (b'{"jsonrpc":"2.0","method":"node.create","params":{"plane":"startup","labels":"Person"},"id":1}', -32602),
        (b'{"jsonrpc":"2.0","method":"node.create","params":{"key":"k"},"id":1}', -32602),
        (b'{"jsonrpc":"2.0","method":"node.create","params":{"plane":"startup","frobnicate":1},"id":1}', -32602),
        (
            b'{"jsonrpc":"2.0","method":"plane.search","params":{"plane":"startup","property":"v","query":[1],"k":0},"id":1}',
            -32602,
        ),
        (
            b'{"jsonrpc":"2.0","method":"node.create","params":{"plane":"startup","properties":{"a":'
            + b'{"b":' * 200
            + b"1"
            + b"}" * 200
            + b"}},"
            + b'"id":1}',
            -32602,
        ),
        (
            b'{"jsonrpc":"2.0","method":"node.create","params":{"plane":"startup","properties":{"n":99999999999999999999}},"id":1}',
            -32602,
        ),
        (
            b'{"jsonrpc":"2.0","method":"plane.query","params":{"plane":"startup","plan":{"source":{"KeywordTopK":{}}}},"id":1}',
            -32602,
        ),
        (
            b'{"jsonrpc":"2.0","method":"plane.query","params":{"plane":"startup","plan":{"source":{"Nope":1}}},"id":1}',
            -32602,
        ),
    ],
)
def test_malformed_requests_get_the_right_error(server: RunningServer, body: bytes, code: int) -> None:
    resp = server.post(body)
    assert resp.status == 200
    answer = resp.json()
    answer = answer[0] if isinstance(answer, list) else answer
    assert answer["error"]["code"] == code, answer
    assert server.get("/health").status == 200  # still serving


def test_a_huge_body_is_refused_without_being_read(server: RunningServer) -> None:
    with socket.create_connection((server.host, server.port), timeout=10) as sock:
        head = (
            f"POST /rpc HTTP/1.1\r\nHost: {server.host}:{server.port}\r\nAuthorization: Bearer {TOKEN}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {1 << 30}\r\n\r\n"
        )
        started = time.monotonic()
        sock.sendall(head.encode() + b"[" * 65536)
        received = b""
        while b"\r\n\r\n" not in received or not received.rstrip().endswith(b"}"):
            chunk = sock.recv(65536)
            if not chunk:
                break
            received += chunk
        assert time.monotonic() - started < 5
    assert received.startswith(b"HTTP/1.1 413")
    body = json.loads(received.split(b"\r\n\r\n", 1)[1])
    assert body["error"]["code"] == -32600 and "1048576" in body["error"]["message"]
    assert server.call("db.stats")["planes"] >= 1


def test_broken_http_is_answered_400_and_the_server_keeps_serving(server: RunningServer) -> None:
    for garbage in (
        b"GARBAGE\r\n\r\n",
        b"POST /rpc HTTP/1.1\r\nContent-Length: -5\r\n\r\n",
        b"\x00" * 100 + b"\r\n\r\n",
    ):
        with socket.create_connection((server.host, server.port), timeout=10) as sock:
            sock.sendall(garbage)
            assert sock.recv(65536).split(b"\r\n", 1)[0].endswith(b" 400 Bad Request"), garbage
    assert server.call("db.stats")["planes"] >= 1


def test_a_chunked_body_over_the_limit_is_cut_off(server: RunningServer) -> None:
    def chunks() -> Iterator[bytes]:
        for _ in range(40):
            yield b" " * 65536  # 2.5 MiB of whitespace, never declared up front

    conn = http.client.HTTPConnection(server.host, server.port, timeout=30)
    try:
        conn.request("POST", "/rpc", body=chunks(), headers={"Authorization": f"Bearer {TOKEN}"}, encode_chunked=True)
        resp = conn.getresponse()
        assert resp.status == 413 and json.loads(resp.read())["error"]["code"] == -32600
    except (BrokenPipeError, ConnectionResetError):
        pass  # the server may close before the client finished sending: refused either way
    finally:
        conn.close()
    big_but_allowed = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "node.create",
            "params": {"plane": "startup", "properties": {"t": "x" * 900_000}},
        }
    )
    assert "result" in server.post(big_but_allowed).json()


def test_cross_origin_browser_requests_are_refused(server: RunningServer) -> None:
    resp = server.post('{"jsonrpc":"2.0","id":1,"method":"db.stats"}', headers={"Origin": "https://evil.example"})
    assert resp.status == 403 and resp.json()["error"]["code"] == -32001
    same = server.post('{"jsonrpc":"2.0","id":1,"method":"db.stats"}', headers={"Origin": server.url})
    assert same.status == 200 and "result" in same.json()


HOLD_WRITER = """
import sys, lmdb
env = lmdb.open(sys.argv[1], subdir=False, max_dbs=20, lock=True)
txn = env.begin(write=True)
print("holding", flush=True)
sys.stdin.read()  # until the test closes our stdin
txn.abort()
"""


def test_a_write_that_cannot_get_the_writer_answers_32002_and_writes_nothing(server: RunningServer) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_WRITER, str(server.db)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert holder.stdin is not None and holder.stdout is not None
    try:
        assert holder.stdout.readline().strip() == "holding"
        started = time.monotonic()
        error = server.error("node.create", {"plane": "startup", "key": "too-late"})
        assert error["code"] == -32002 and "retry" in error["message"]
        assert time.monotonic() - started > 1.4  # the server's write_timeout_secs is 1.5
        assert server.call("node.get", {"plane": "startup", "key": "missing"}) is None  # reads go on meanwhile
        late = {"plane": "startup", "query": 'CREATE (:Late {key: "too-late-too"})'}
        assert server.error("plane.cypher", late)["code"] == -32002  # a Cypher write waits as every write does
        count = {"plane": "startup", "query": "MATCH (n:Late) RETURN count(n) AS n"}
        assert server.call("plane.cypher", count)["rows"] == [[0]]  # and a Cypher read goes on
    finally:
        holder.stdin.close()
        holder.wait(10)
    assert server.call("node.create", {"plane": "startup", "key": "in-time"})["external_key"] == "in-time"
    assert server.call("node.get", {"plane": "startup", "key": "too-late"}) is None
    assert server.call("node.get", {"plane": "startup", "key": "too-late-too"}) is None


def test_logs_are_json_lines_without_secrets(server: RunningServer) -> None:
    server.call("db.stats")
    lines = server.logs()
    assert lines and all({"event", "level", "timestamp"} <= set(line) for line in lines)
    access = [line for line in lines if line["event"] == "http" and line.get("rpc") == ["db.stats"]]
    assert access and {"status", "ms", "path", "method"} <= set(access[-1])
    assert TOKEN not in server.log_path.read_text()


# --------------------------------------------------------------------------- starting and stopping


def test_settings_from_drsg_toml_and_a_tokenless_server(tmp_path: Path) -> None:
    (tmp_path / "drsg.toml").write_text('[server]\ntoken = "from-config"\nmax_batch = 2\n')
    configured = start_server(tmp_path / "a.drsg", tmp_path, token=None, name="configured")
    try:
        configured.token = "from-config"
        assert configured.call("db.stats")["planes"] == 1
        assert configured.rpc("db.stats", token=None)["error"]["code"] == -32001
        three = json.dumps([{"jsonrpc": "2.0", "id": i, "method": "db.stats"} for i in range(3)])
        assert configured.post(three).json()["error"]["code"] == -32600
    finally:
        assert configured.stop() == 0

    (tmp_path / "drsg.toml").write_text("[server]\nnope = 1\n")
    ran = cli(tmp_path / "b.drsg", "--config", str(tmp_path / "drsg.toml"), "serve")
    assert ran.returncode == 2 and "unknown setting server.nope" in ran.stderr

    (tmp_path / "drsg.toml").unlink()
    open_server = start_server(tmp_path / "c.drsg", tmp_path, token=None, name="open")
    try:
        assert open_server.call("db.stats")["planes"] == 1  # loopback without a token: open
        rebound = open_server.post('{"jsonrpc":"2.0","id":1,"method":"db.stats"}', headers={"Host": "evil.example"})
        assert rebound.status == 403 and rebound.json()["error"]["code"] == -32001
    finally:
        assert open_server.stop() == 0


def test_refuses_a_public_address_without_a_token(tmp_path: Path) -> None:
    db = tmp_path / "g.drsg"
    ran = subprocess.run(
        [*drsg_argv(), "--db", str(db), "serve", "--addr", "0.0.0.0:7799"],
        capture_output=True,
        text=True,
        env=clean_env(),
        cwd=tmp_path,
        timeout=60,
    )
    assert ran.returncode == 2
    assert ran.stderr.strip().splitlines() == [
        "error: refusing to serve on 0.0.0.0:7799 without a token; set DRSG_TOKEN, or bind 127.0.0.1"
    ]
    assert not db.exists()


def test_a_taken_port_is_a_one_line_error(server: RunningServer, tmp_path: Path) -> None:
    ran = subprocess.run(
        [*drsg_argv(), "--db", str(tmp_path / "g.drsg"), "serve", "--addr", f"127.0.0.1:{server.port}"],
        capture_output=True,
        text=True,
        env=clean_env(),
        cwd=tmp_path,
        timeout=60,
    )
    assert ran.returncode == 1
    errors = [line for line in ran.stderr.splitlines() if line.startswith("error:")]
    assert errors == [f"error: cannot listen on 127.0.0.1:{server.port}: address already in use"]
    assert not (tmp_path / "g.drsg").exists()


def test_sigterm_lets_in_flight_requests_finish(tmp_path: Path) -> None:
    running = start_server(tmp_path / "g.drsg", tmp_path, name="graceful")
    count = 1000  # the most one batch may hold; one commit each, in order: long enough to catch mid-way
    batch = json.dumps(
        [
            {"jsonrpc": "2.0", "id": i, "method": "node.create", "params": {"plane": "startup", "key": f"k{i}"}}
            for i in range(count)
        ]
    )
    outcome: dict[str, Any] = {}

    def send() -> None:
        try:
            outcome["response"] = running.post(batch)
        except Exception as exc:  # reported by the assertion below
            outcome["error"] = exc

    head = running.head()
    sender = threading.Thread(target=send)
    sender.start()
    deadline = time.monotonic() + 30
    while running.head() < head + 20 and time.monotonic() < deadline:
        time.sleep(0.005)
    running.proc.send_signal(signal.SIGTERM)
    wait_until(lambda: not running.listening(), "the server to stop listening")
    sender.join(60)
    assert running.proc.wait(60) == 0
    assert "error" not in outcome, outcome.get("error")
    response: Response = outcome["response"]
    answers = response.json()
    assert response.status == 200 and len(answers) == count and all("result" in a for a in answers)
    events = [line["event"] for line in running.logs()]
    assert events.index("stopping") < events.index("stopped")
    stopping = next(line for line in running.logs() if line["event"] == "stopping")
    assert stopping["in_flight"] == 1
    ran = cli(running.db, "stats", "--json")
    assert json.loads(ran.stdout)["nodes"] == count
