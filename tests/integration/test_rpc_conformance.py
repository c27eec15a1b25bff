"""Wire conformance: the running server against upstream's OpenRPC document and JSON-RPC 2.0.

* ``rpc.discover`` lists exactly the methods served, keeps upstream's params and components, and
  marks drsg's additions ``x-drsg``;
* every served method, called for real, answers in the shape its description declares (checked
  with ``jsonschema`` when installed, else drsg's own checker for the same subset);
* every required param, left out, and every param, given the wrong type, is -32602 — generated
  from the descriptions, so a new method is covered the day it is added;
* the examples of the JSON-RPC 2.0 specification (§7) get the specified answers.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from drsg.pipeline.catalog.connections import Connection, Connections
from drsg.surfaces.server.schema import upstream
from drsg.surfaces.server.schema import validate as drsg_validate
from tests.support.catalog_schema import make_sqlite
from tests.support.fake_openai import FakeOpenAI, Reply, chat_completion
from tests.support.server import RunningServer, paragraphs, start_server
from tests.support.static_server import serving

PLUGIN = Path(__file__).resolve().parents[1] / "data" / "plugins" / "echo.wat"

try:
    import jsonschema
except ImportError:  # not a dependency of drsg; the tests fall back to drsg's checker
    jsonschema = None

UPSTREAM = upstream()
UPSTREAM_NAMES = [m["name"] for m in UPSTREAM["methods"]]
#: upstream methods for features drsg does not have yet (a deliberate, reviewed list)
NOT_SERVED: set[str] = set()


def conforms(value: Any, schema: dict[str, Any]) -> str | None:
    if jsonschema is not None:
        try:
            jsonschema.validate(value, {**schema, "components": UPSTREAM["components"]})
        except jsonschema.ValidationError as exc:
            return str(exc.message)
        return None
    return drsg_validate(value, schema, "result")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RunningServer, dict[str, Any]]]:
    workdir = tmp_path_factory.mktemp("conformance")
    # plugin.install fetches from this loopback server, which only [fetch] allow_private admits
    artifacts = serving({"/echo.wasm": (200, {}, PLUGIN.read_bytes())})
    base = artifacts.__enter__()
    # plane.ask's model: every answer the same read-only plan
    chat = FakeOpenAI().start()
    plan = json.dumps({"plan": {"source": {"ScanLabel": "Doc"}}})
    chat.on("/chat/completions", lambda request: Reply(json=chat_completion(plan)))
    env = {"DRSG_PLUGINS_STORE_DIR": str(workdir / "plugins"), "DRSG_FETCH_ALLOW_PRIVATE": "127.0.0.1/32"}
    env |= {"DRSG_DIGEST_CHAT": chat.base_url, "DRSG_DIGEST_MODEL": "fake-chat"}
    env["DRSG_SERVER_CODE_ROOTS"] = str(workdir / "code-tree")  # code.grep/code.snippet read there (below)
    catalog_db = make_sqlite(workdir / "catalog.db")  # catalog.*: a real SQLite file's catalog
    Connections(workdir / "graph.drsg").add(Connection("confdb", str(catalog_db), "sqlite"))
    server = start_server(workdir / "graph.drsg", workdir, env=env)
    server.call("plane.create", {"name": "conf"})
    texts = paragraphs(3)
    ids: dict[str, Any] = {}
    for i, name in enumerate(("a", "b", "c")):
        node = server.call(
            "node.create",
            {
                "plane": "conf",
                "key": name,
                "labels": ["Doc"],
                "properties": {"body": texts[i], "embedding": {"$vector": [1.0, float(i), 0.25]}},
            },
        )
        ids[name] = node["id"]
    ids["ab"] = server.call("edge.create", {"plane": "conf", "src": "a", "dst": "b", "type": "CITES"})["id"]
    server.call("index.ensure", {"plane": "conf", "label": "Doc", "property": "body"})
    server.call("index.ensure", {"plane": "conf", "label": "Doc", "property": "embedding", "kind": "vector"})
    ids["head"] = server.head()
    ids["plugin_url"] = f"{base}/echo.wasm"
    yield server, ids
    assert server.stop() == 0
    artifacts.__exit__(None, None, None)
    chat.close()
    saved = [line for line in server.logs() if line["event"] == "index sidecars saved"]
    assert saved and saved[-1]["indexes"] >= 2  # the indexes were saved on the way out
    assert (workdir / "graph.drsg.hnsw").is_dir() and (workdir / "graph.drsg.bm25").is_dir()


@pytest.fixture(scope="module")
def document(served: tuple[RunningServer, dict[str, Any]]) -> dict[str, Any]:
    return served[0].call("rpc.discover")  # type: ignore[no-any-return]


def _methods(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {m["name"]: m for m in document["methods"]}


def valid_params(ids: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """A valid call of every method that takes params (read-only or harmless when it runs)."""
    a, b = ids["a"], ids["b"]
    return {
        "db.catalog": {"as_of": ids["head"]},
        "plane.list": {"as_of": ids["head"]},
        "plane.catalog": {"plane": "conf"},
        "node.get": {"plane": "conf", "id": a, "lean": True, "as_of": ids["head"]},
        "plane.neighbors": {
            "plane": "conf",
            "id": a,
            "direction": "out",
            "type": "CITES",
            "hydrate": True,
            "lean": True,
        },
        "plane.history": {"plane": "conf"},
        "plane.diff": {"plane": "conf", "from": 0, "to": ids["head"], "lean": True, "hidden": True},
        "plane.changes": {"plane": "conf", "after": 0, "limit": 10},
        **{
            f"code.{verb}": {"plane": "codeverbs", "symbol": "f"}
            for verb in ("context", "describe", "impact", "snippet")
        },
        "code.grep": {"plane": "codeverbs", "pattern": "return"},
        "code.trace": {"plane": "codeverbs", "from": "f", "to": "g"},
        "plane.search": {
            "plane": "conf",
            "property": "embedding",
            "query": [1.0, 1.0, 0.25],
            "label": "Doc",
            "k": 2,
            "metric": "cosine",
            "kind": "vector",
            "lean": True,
        },
        "plane.query": {
            "plane": "conf",
            "plan": {"source": {"ScanLabel": "Doc"}, "steps": [{"Limit": 2}]},
            "lean": True,
        },
        "plane.cypher": {
            "plane": "conf",
            "query": "MATCH (d:Doc)-[c:CITES]->(e) WHERE d.body <> $not RETURN d, c, e.body AS body LIMIT 2",
            "embed": "local",
            "params": {"not": ""},
            "lean": True,
        },
        "plane.hybrid": {
            "plane": "conf",
            "q": "vector index",
            "label": "Doc",
            "keyword_prop": "body",
            "graph_hops": 1,
            "graph_decay": 0.5,
            "w_keyword": 1.0,
            "w_graph": 0.5,
            "k": 2,
            "candidates": 10,
            "lean": True,
        },
        "plane.algo": {
            "plane": "conf",
            "algo": "shortest_path",
            "label": "Doc",
            "limit": 5,
            "damping": 0.85,
            "max_iters": 20,
            "tolerance": 1e-6,
            "src": a,
            "dst": b,
            "dir": "both",
            "weight": "w",
            "max_levels": 10,
            "min_gain": 1e-9,
            "as_of": ids["head"],
        },
        "plane.find": {
            "plane": "conf",
            "q": "vector",
            "limit": 5,
            "semantic": False,
            "as_of": ids["head"],
            "lean": True,
        },
        "plane.vectorize": {"plane": "vec", "embed": "local", "embed_model": "all-MiniLM-L6-v2", "metric": "dot"},
        "plane.indexes": {"plane": "conf"},
        "index.ensure": {"plane": "conf", "label": "Doc", "property": "body", "kind": "keyword", "language": "english"},
        "index.drop": {"plane": "conf", "label": "Nothing", "property": "none", "kind": "keyword"},
        "graph.seed": {"plane": "conf", "label": "Doc", "limit": 2, "order": "degree", "lean": True},
        "graph.expand": {"plane": "conf", "id": a, "direction": "both", "type": "CITES", "limit": 5, "lean": True},
        "node.create": {"plane": "conf", "key": "gen", "labels": ["Doc"], "properties": {"n": 1}},
        "node.update": {"plane": "conf", "id": b, "set": {"n": 2}, "unset": ["x"], "labels": ["Doc"]},
        "node.delete": {"plane": "conf", "key": "no-such-node"},
        "node.history": {"plane": "conf", "id": a, "lean": True},
        "edge.create": {"plane": "conf", "src": a, "dst": "b", "type": "CITES", "properties": {"w": 1}},
        "edge.update": {"plane": "conf", "edge": ids["ab"], "set": {"w": 2}, "unset": ["x"], "type": "CITES"},
        "edge.delete": {"plane": "conf", "edge": 999_999},
        "edge.get": {"plane": "conf", "edge": ids["ab"], "lean": True},
        "plane.create": {"name": "made-by-generated-test", "properties": {"k": "v"}},
        "plane.rename": {"plane": "conf", "to": "conf"},
        "plane.set_props": {"plane": "conf", "properties": {"k": "v"}},
        "plane.delete": {"plane": "no-such-plane"},
        # blank text: nothing to read, so no model is needed (the scripted-model tests are in test_server_digest)
        "digest.run": {"plane": "conf", "text": " ", "no_embed": True, "mode": "fine", "chunk_chars": 500},
        "plane.ask": {"plane": "conf", "question": "which docs?", "max_attempts": 2, "limit": 2, "dry_run": False},
        "digest.write": {
            "plane": "conf",
            "nodes": [{"key": "digested", "label": "Doc", "properties": {"n": 1}}],
            "edges": [{"src": "digested", "type": "CITES", "dst": "b", "properties": {}}],
            "source": "conformance",
        },
        "plugin.install": {"url": ids["plugin_url"]},
        "plugin.remove": {"name": "echo"},
        "catalog.index": {"connection": "confdb", "level": "full"},
        "catalog.find": {
            "connection": "confdb",
            "entity": "用户",
            "fields": ["密码"],
            "where": {"name": "张三"},
            "limit": 5,
        },
        "catalog.sql": {"connection": "confdb", "sql": "SELECT 1 AS one", "limit": 1},
        "catalog.list": {},
        "catalog.schema": {"connection": "confdb", "table": "orders"},
        "catalog.objects": {"connection": "confdb"},
        "catalog.columns": {"connection": "confdb", "table": "sys_user"},
        "catalog.impact": {"connection": "confdb", "table": "sys_user", "column": "id"},
        "catalog.refs": {"connection": "confdb", "table": "paid_orders"},
        "catalog.digest": {"connection": "confdb", "max_chars": 2000},
    }


# --------------------------------------------------------------------------- rpc.discover


def test_discover_lists_exactly_what_is_served(document: dict[str, Any]) -> None:
    served = set(_methods(document))
    upstream_names = set(UPSTREAM_NAMES)
    assert served | NOT_SERVED >= upstream_names
    assert not served & NOT_SERVED
    assert document["components"] == UPSTREAM["components"]
    assert document["openrpc"] == UPSTREAM["openrpc"]
    assert set(UPSTREAM["info"]["x-error-codes"].items()) <= set(document["info"]["x-error-codes"].items())
    for name, method in _methods(document).items():
        if name not in upstream_names:
            assert method.get("x-drsg") is True, f"{name} is drsg's own and must say so"


def test_upstream_methods_keep_upstreams_params(document: dict[str, Any]) -> None:
    ours = _methods(document)
    for theirs in UPSTREAM["methods"]:
        if theirs["name"] not in ours:
            continue
        method = ours[theirs["name"]]
        if not method["result"].get("x-drsg"):  # drsg corrects upstream's where it is wrong, and says so
            assert method["result"] == theirs["result"], theirs["name"]
        assert method.get("x-access") == theirs.get("x-access"), theirs["name"]
        mine = {p["name"]: p for p in method["params"]}
        for param in theirs["params"]:
            got = mine.get(param["name"])
            assert got is not None, f"{theirs['name']} dropped upstream's param {param['name']}"
            assert bool(got.get("required")) == bool(param.get("required")), (theirs["name"], param["name"])
            if not got.get("x-drsg"):
                assert got == param, (theirs["name"], param["name"])
        for name, param in mine.items():
            if name not in {p["name"] for p in theirs["params"]}:
                assert param.get("x-drsg") is True and not param.get("required"), (theirs["name"], name)


# --------------------------------------------------------------------------- result shapes


def test_every_method_answers_in_its_declared_shape(
    served: tuple[RunningServer, dict[str, Any]], document: dict[str, Any]
) -> None:
    server, ids = served
    params = valid_params(ids)
    results: list[tuple[str, Any]] = []

    def call(method: str, p: dict[str, Any] | None = None) -> Any:
        result = server.call(method, p)
        results.append((method, result))
        return result

    call("rpc.discover")
    call("db.stats")
    for method in ("db.catalog", "plane.list", "plane.catalog", "node.get", "plane.neighbors", "plane.history"):
        call(method, params[method])
    call("node.get", {"plane": "conf", "key": "nobody"})  # the null branch
    call("plane.neighbors", {"plane": "conf", "id": ids["a"]})  # id pairs
    call("plane.search", params["plane.search"])
    keyword = {"plane": "conf", "label": "Doc", "property": "body", "query": "vector index", "kind": "keyword"}
    call("plane.search", keyword)
    call("plane.query", params["plane.query"])
    cited = call("plane.cypher", params["plane.cypher"])
    assert (cited["columns"], cited["count"]) == (["d", "c", "body"], 1) and "write" not in cited
    untouched = call("plane.cypher", {"plane": "conf", "query": 'MATCH (d:Doc {body: "none"}) SET d.x = 1'})
    assert untouched["write"] is True and untouched["props_set"] == 0 and untouched["count"] == 0
    call("plane.hybrid", params["plane.hybrid"])
    assert call("plane.algo", params["plane.algo"])["path"]["nodes"] == [ids["a"], ids["b"]]
    assert call("plane.algo", {"plane": "conf", "algo": "shortest_path", "src": ids["b"], "dst": ids["a"]}) == {
        "algo": "shortest_path",
        "found": False,
        "path": None,
    }
    found = call("plane.find", params["plane.find"])
    assert found["mode"] == "text" and found["nodes"] and all("match" in n for n in found["nodes"])
    assert call("plane.find", {"plane": "conf", "q": "cites"})["edges"][0]["match"] == "type"
    # the plane's vectors are 3-dim: the local model's query cannot rank them, so text answers, saying why
    assert call("plane.find", {"plane": "conf", "q": "vector", "semantic": True})["note"]
    call("plane.create", {"name": "vec"})
    call(
        "node.create",
        {
            "plane": "vec",
            "key": "v",
            "labels": ["Note"],
            "properties": {"text": "Time travel reads an earlier commit."},
        },
    )
    stats = call("plane.vectorize", params["plane.vectorize"])
    assert stats["embedded"] == stats["unique"] == 1 and stats["labels"] == ["Note"]
    assert call("plane.vectorize", {"plane": "vec"})["current"] == 1  # the same embedder: nothing to do
    for algo in ("pagerank", "components", "louvain"):
        assert call("plane.algo", {"plane": "conf", "algo": algo, "limit": 2})["count"] >= 1
    assert call("plane.ask", params["plane.ask"])["count"] == 2
    knn = {"VectorTopK": {"label": "Doc", "property": "embedding", "query": [1, 0, 0.25], "k": 2, "metric": "Cosine"}}
    assert call("plane.query", {"plane": "conf", "plan": {"source": knn}})[0]["score"] > 0.9
    for method in ("plane.indexes", "index.ensure", "graph.seed", "graph.expand", "node.history", "edge.get"):
        call(method, params[method])
    call("graph.seed", {"plane": "conf"})
    made = call("node.create", params["node.create"])
    call("node.update", {"plane": "conf", "key": "gen", "set": {"n": 3}})
    edge = call("edge.create", params["edge.create"])
    call("edge.update", {"plane": "conf", "edge": edge["id"], "set": {"w": 5}})
    call("edge.get", {"plane": "conf", "edge": 424242})  # the null branch
    call("edge.delete", {"plane": "conf", "edge": edge["id"]})
    call("node.delete", {"plane": "conf", "id": made["id"]})
    changed = call("plane.diff", {"plane": "conf", "from": ids["head"], "to": server.head()})
    assert [c["seq"] for c in call("plane.changes", {"plane": "conf", "after": ids["head"]})["commits"]]
    assert changed["counts"]["nodes_created"] == 0 and changed["counts"]["edges_created"] == 0  # made, then deleted
    call("index.ensure", {"plane": "conf", "label": "Doc", "property": "title"})
    call("index.drop", {"plane": "conf", "label": "Doc", "property": "title", "kind": "keyword"})
    call("plane.create", {"name": "shapes", "properties": {"a": 1}})
    call("plane.rename", {"plane": "shapes", "to": "shapes2"})
    call("plane.set_props", {"plane": "shapes2", "properties": {"b": 2}})
    call("plane.delete", {"plane": "shapes2"})
    call("digest.run", params["digest.run"])
    call("digest.write", params["digest.write"])
    tree = server.db.parent / "code-tree"  # code.*: a code plane written by hand, its tree beside it
    tree.mkdir()
    (tree / "mod.py").write_text("def f():\n    return g()\n\n\ndef g():\n    return 1\n")
    call("plane.create", {"name": "codeverbs", "properties": {"synced_root": str(tree)}})
    for key, line in (("mod.f", 1), ("mod.g", 5)):
        props = {"file": "mod.py", "line": line}
        call("node.create", {"plane": "codeverbs", "key": key, "labels": ["Function"], "properties": props})
    call(
        "edge.create",
        {"plane": "codeverbs", "src": "mod.f", "dst": "mod.g", "type": "CALLS", "properties": {"line": 2}},
    )
    verbs = {"plane": "codeverbs"}
    assert call("code.context", {**verbs, "symbol": "f"})["callees"] == [
        {"type": "CALLS", "direction": "out", "key": "mod.g", "at": "mod.py:2"}
    ]
    assert call("code.describe", {**verbs, "symbol": "mod.g"})["props"] == {"file": "mod.py", "line": "5"}
    assert [hit["at"] for hit in call("code.grep", {**verbs, "pattern": "return"})["hits"]] == ["mod.py:2", "mod.py:6"]
    assert call("code.trace", {**verbs, "from": "g", "to": "f"})["reversed"] is True
    assert call("code.impact", {**verbs, "symbol": "g", "depth": 1})["total"] == 1
    assert call("code.snippet", {**verbs, "symbol": "g", "lines": 2})["text"] == "def g():\n    return 1"
    assert call("plugin.list") == [] and call("plugin.catalog") == []
    assert call("plugin.install", params["plugin.install"])["replaced"] is None
    assert [entry["name"] for entry in call("plugin.list")] == ["echo"]
    assert call("plugin.remove", params["plugin.remove"])["removed"]["version"] == "1.0.0"
    for method in ("catalog.index", "catalog.find", "catalog.sql"):
        call(method, params[method])
    (listed,) = call("catalog.list", params["catalog.list"])
    for method in ("catalog.schema", "catalog.objects", "catalog.columns", "catalog.impact", "catalog.refs"):
        call(method, params[method])
    assert "sys_user" in call("catalog.digest", params["catalog.digest"])
    assert listed["name"] == "confdb" and listed["plane"] == "catalog_confdb" and "password" not in listed

    declared = _methods(document)
    assert {m for m, _ in results} == set(declared), "every served method needs a call above"
    for method, result in results:
        problem = conforms(result, declared[method]["result"]["schema"])
        assert problem is None, f"{method}: {problem}\n{json.dumps(result)[:500]}"
        if method in ("plane.search", "plane.query"):
            for row in result:
                assert conforms(row, {"$ref": "#/components/schemas/NodeRecord"}) is None
                assert isinstance(row.get("score", 0.0), float | int)
        if method == "index.ensure":
            assert {"kind", "label", "property"} <= set(result)
        if method == "plane.indexes":
            assert set(result) == {"vector", "keyword"}


# --------------------------------------------------------------------------- generated param checks


def _wrong_value(schema: dict[str, Any]) -> Any:
    """A value of a JSON type the param does not take."""
    for candidate in ("text", 12345, True, [1], {"a": 1}, 1.5):
        if drsg_validate(candidate, schema) is not None:
            return candidate
    raise AssertionError(f"{schema} accepts anything")


def test_missing_required_params_are_32602(
    served: tuple[RunningServer, dict[str, Any]], document: dict[str, Any]
) -> None:
    server, ids = served
    params = valid_params(ids)
    head = server.head()
    checked = 0
    for name, method in _methods(document).items():
        for param in method["params"]:
            if not param.get("required"):
                continue
            sent = {k: v for k, v in params[name].items() if k != param["name"]}
            error = server.error(name, sent)
            assert error["code"] == -32602 and param["name"] in error["message"], (name, param["name"], error)
            checked += 1
    assert checked >= 30
    assert server.head() == head  # nothing was written


def test_wrongly_typed_params_are_32602(served: tuple[RunningServer, dict[str, Any]], document: dict[str, Any]) -> None:
    server, ids = served
    params = valid_params(ids)
    head = server.head()
    checked = 0
    for name, method in _methods(document).items():
        for param in method["params"]:
            wrong = _wrong_value(param["schema"])
            assert drsg_validate(wrong, param["schema"]) is not None, (name, param["name"], wrong)
            error = server.error(name, {**params[name], param["name"]: wrong})
            assert error["code"] == -32602 and repr(param["name"]) in error["message"], (name, param["name"], error)
            checked += 1
        if "enum" in json.dumps([p["schema"] for p in method["params"]]):
            for param in method["params"]:
                if "enum" in param["schema"]:
                    error = server.error(name, {**params[name], param["name"]: "not-one-of-them"})
                    assert error["code"] == -32602, (name, param["name"])
    assert checked >= 100
    assert server.head() == head


def test_unknown_params_are_refused(served: tuple[RunningServer, dict[str, Any]]) -> None:
    server, ids = served
    for smuggled in ({"embed": "https://attacker.example/v1"}, {"api_key": "sk-..."}, {"embed_key_env": "HOME"}):
        error = server.error("plane.search", {**valid_params(ids)["plane.search"], **smuggled})
        assert error["code"] == -32602 and "has no param" in error["message"]


def test_positional_params_follow_the_declared_order(served: tuple[RunningServer, dict[str, Any]]) -> None:
    server, ids = served
    assert server.call("node.get", ["conf", ids["a"]])["external_key"] == "a"
    assert server.call("node.get", ["conf", None, "b"])["id"] == ids["b"]
    hits = server.call("plane.search", ["conf", "embedding", [1.0, 2.0, 0.25], "Doc", 1])
    assert [h["external_key"] for h in hits] == ["c"]
    assert server.error("plane.delete", ["a", "b"])["code"] == -32602  # more than it takes


# --------------------------------------------------------------------------- JSON-RPC 2.0 §7


def _post(server: RunningServer, body: str) -> tuple[int, Any]:
    resp = server.post(body)
    return resp.status, (resp.json() if resp.body else None)


def test_the_specifications_examples(served: tuple[RunningServer, dict[str, Any]]) -> None:
    server, _ = served
    _, answer = _post(server, '{"jsonrpc": "2.0", "method": "foobar, "params": "bar", "baz]')
    assert answer == {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": answer["error"]["message"]}}
    _, answer = _post(server, '{"jsonrpc": "2.0", "method": 1, "params": "bar"}')
    assert answer["id"] is None and answer["error"]["code"] == -32600
    _, answer = _post(server, '[{"jsonrpc": "2.0", "method": "db.stats", "id": "1"},{"jsonrpc": "2.0", "method"]')
    assert isinstance(answer, dict) and answer["error"]["code"] == -32700
    _, answer = _post(server, "[]")
    assert isinstance(answer, dict) and answer["error"]["code"] == -32600
    _, answer = _post(server, "[1]")
    assert [a["error"]["code"] for a in answer] == [-32600]
    _, answer = _post(server, "[1,2,3]")
    assert [a["error"]["code"] for a in answer] == [-32600] * 3 and all(a["id"] is None for a in answer)

    mixed = [
        {"jsonrpc": "2.0", "method": "db.stats", "id": "1"},
        {"jsonrpc": "2.0", "method": "plane.list"},  # a notification: no answer
        {"jsonrpc": "2.0", "method": "node.get", "params": {"plane": "conf", "key": "a"}, "id": "2"},
        {"foo": "boo"},
        {"jsonrpc": "2.0", "method": "foo.get", "params": {"name": "myself"}, "id": "5"},
        {"jsonrpc": "2.0", "method": "db.stats", "id": 9.5},
        {"jsonrpc": "2.0", "method": "db.stats", "id": None},
    ]
    _, answer = _post(server, json.dumps(mixed))
    assert [a["id"] for a in answer] == ["1", "2", None, "5", 9.5, None]
    assert ["result" in a for a in answer] == [True, True, False, False, True, True]
    assert [a["error"]["code"] for a in answer if "error" in a] == [-32600, -32601]

    notifications = [{"jsonrpc": "2.0", "method": "db.stats"}, {"jsonrpc": "2.0", "method": "no.such", "params": [1]}]
    assert _post(server, json.dumps(notifications)) == (204, None)
    assert _post(server, json.dumps(notifications[1])) == (204, None)


def test_a_notification_still_runs(served: tuple[RunningServer, dict[str, Any]]) -> None:
    server, _ = served
    status, _ = _post(
        server, json.dumps({"jsonrpc": "2.0", "method": "node.create", "params": {"plane": "conf", "key": "quiet"}})
    )
    assert status == 204
    assert server.call("node.get", {"plane": "conf", "key": "quiet"})["external_key"] == "quiet"


def test_errors_carry_upstreams_codes(served: tuple[RunningServer, dict[str, Any]], tmp_path: Path) -> None:
    server, _ = served
    assert server.rpc("db.stats", token=None)["error"]["code"] == -32001
    conflict = server.error("plane.create", {"name": "conf"})
    assert conflict["code"] == -32000 and conflict["data"] == {"error": "Conflict"}
    codes = {int(code) for code in UPSTREAM["info"]["x-error-codes"]}
    assert {-32700, -32600, -32601, -32602, -32000, -32001, -32002} <= codes
