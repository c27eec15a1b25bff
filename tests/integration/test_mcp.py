"""The MCP server through the MCP SDK's own client: `drsg mcp` over stdio and `/mcp` on `drsg serve`
over Streamable HTTP. Every tool is called on a real database (the sample graph, a keyword index,
a scripted chat model on loopback for `ask` and the digest); errors come back as MCP tool errors;
a wrong token, a missing one and a foreign Host are refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

from tests.support.catalog_schema import SECRET, make_sqlite
from tests.support.code_tasks import CODE_TOOLS
from tests.support.fake_openai import FakeOpenAI, Reply, chat_completion
from tests.support.mcp import PARITY_TOOLS, call, env_for, over_http, over_stdio, refused
from tests.support.pioneers import PIONEERS
from tests.support.sample import SAMPLE, WORKED_AT
from tests.support.server import TOKEN, clean_env, cli, start_server

pytestmark = pytest.mark.usefixtures("pioneers_model")  # chat answers about the pioneers' world

TOOLS = {
    "list_planes",
    "describe_plane",
    "get_node",
    "history",
    "traverse",
    "search",
    "hybrid",
    "ask",
    "query",
    "cypher",
    "algo",
    "diff",
    "digest_preview",
    "digest_apply",
    "changes_since",
    "catalog_list",
    "find",
    "stats",
}


def make_db(workdir: Path) -> Path:
    """seq 2 the sample graph; 3 a keyword index; 4 ada gets a long title and a `_` property;
    5 dijkstra deleted; then an SQLite database's catalog (the seed's schema) in its own plane."""
    db = workdir / "graph.drsg"
    app = make_sqlite(workdir / "app.db")
    for args in (
        ("import", str(SAMPLE), "--plane", "pioneers", "--create-plane"),
        ("index", "keyword", "Person", "note", "--plane", "pioneers"),
        ("node", "put", "ada", "--plane", "pioneers", "-P", f'title="{"Countess " * 400}"', "-P", '_secret_note="x"'),
        ("node", "delete", "@dijkstra", "--plane", "pioneers"),
        ("catalog", "add", "app", str(app)),
        ("catalog", "index", "app"),
    ):
        ran = cli(db, *args)
        assert ran.returncode == 0, ran.stderr
    return db


async def exercise(session: ClientSession, fake: FakeOpenAI, *, stdio: bool, workdir: Path) -> set[str]:
    """Call every tool, good calls and bad; returns the tools called."""
    listed = {t.name for t in (await session.list_tools()).tools}
    listed -= PARITY_TOOLS - TOOLS  # issue 39's parity tools: test_mcp_parity.py calls each
    assert listed == TOOLS | CODE_TOOLS  # the code tools: test_code_verbs_mcp.py
    called: set[str] = set()

    async def ok(tool: str, args: dict[str, Any]) -> Any:
        called.add(tool)
        return await call(session, tool, args)

    planes = await ok("list_planes", {})
    assert {p["name"] for p in planes} == {"startup", "pioneers", "catalog_app"}
    described = await ok("describe_plane", {"plane": "pioneers"})
    assert "Person" in described["labels"] and described["indexes"]["keyword"][0]["property"] == "note"

    ada = await ok("get_node", {"plane": "pioneers", "key": "ada"})
    title = ada["properties"]["title"]
    assert title.startswith("Countess Countess") and title.endswith("more characters]") and "[cut: " in title
    assert "_secret_note" not in ada["properties"]
    shown = await ok("get_node", {"plane": "pioneers", "key": "ada", "hidden": True})
    assert shown["properties"]["_secret_note"] == "x"
    old = await ok("get_node", {"plane": "pioneers", "key": "ada", "as_of": 2})
    assert "title" not in old["properties"]
    versions = await ok("history", {"plane": "pioneers", "key": "dijkstra"})
    assert [v["deleted"] for v in versions] == [False, True]

    around = await ok("traverse", {"plane": "pioneers", "id": ada["id"], "direction": "out"})
    assert around["edges"] and all(e["src"] == ada["id"] for e in around["edges"])
    query = {"plane": "pioneers", "property": "note", "query": "algorithm", "kind": "keyword", "label": "Person"}
    hits = await ok("search", query)
    assert '"external_key":"ada"' in json.dumps(hits, separators=(",", ":"))
    fused = await ok(
        "hybrid", {"plane": "pioneers", "q": "algorithm", "label": "Person", "keyword_prop": "note", "k": 3}
    )
    assert "ada" in json.dumps(fused)
    plan = await ok("query", {"plane": "pioneers", "plan": {"source": {"SeekKeys": ["ada", "turing"]}}})
    assert "turing" in json.dumps(plan)
    rows = await ok(
        "cypher",
        {"plane": "pioneers", "query": "MATCH (p:Person {name: $n}) RETURN key(p)", "params": {"n": "Ada Lovelace"}},
    )
    assert rows["rows"] == [["ada"]] and rows["nodes"][0]["external_key"] == "ada"

    ranked = await ok("algo", {"plane": "pioneers", "algo": "pagerank", "limit": 3})
    assert ranked["count"] > 3 and len(ranked["results"]) == 3
    assert ranked["results"][0]["score"] >= ranked["results"][-1]["score"]
    turing = await ok("get_node", {"plane": "pioneers", "key": "turing"})
    route = await ok("algo", {"plane": "pioneers", "algo": "shortest_path", "src": ada["id"], "dst": ada["id"]})
    assert route == {"algo": "shortest_path", "found": True, "path": {"nodes": [ada["id"]], "edges": [], "cost": 0.0}}
    grouped = await ok("algo", {"plane": "pioneers", "algo": "components", "as_of": 2})
    assert {row["id"] for row in grouped["results"]} >= {ada["id"], turing["id"]}
    fake.script("/chat/completions", Reply(json=chat_completion(json.dumps({"plan": WORKED_AT}))))
    answer = await ok("ask", {"plane": "pioneers", "question": "where did people work?"})
    assert "WORKED_AT" in json.dumps(answer)

    change = await ok("diff", {"plane": "pioneers", "from_seq": 3, "to_seq": 5})
    assert change["counts"]["nodes_deleted"] == 1 and change["counts"]["nodes_changed"] == 1
    assert change["nodes"]["changed"][0]["changed"] == ["title"]  # `_secret_note` hidden
    since = await ok("changes_since", {"plane": "pioneers", "seq": 3})
    head = (await call(session, "stats", {}))["commit_seq"]  # (the catalog's commits came after 5)
    assert [c["seq"] for c in since["commits"]] == [4, 5] and since["next"] == head

    if stdio:
        doc = workdir / "pioneers.md"
        doc.write_text(PIONEERS)
        proposal = await ok("digest_preview", {"plane": "pioneers", "path": str(doc)})
    else:
        text = await refused(session, "digest_preview", {"plane": "pioneers", "path": "/etc/passwd"})
        assert "stdio server only" in text
        proposal = await ok("digest_preview", {"plane": "pioneers", "text": PIONEERS, "source": "pioneers.md"})
    keys = sorted(n["key"] for n in proposal["nodes"])
    assert "Alan Turing" in keys
    chosen = [n for n in proposal["nodes"] if n["key"] in ("Alan Turing", "Bletchley Park")]
    edges = [e for e in proposal["edges"] if {e["src"], e["dst"]} <= {"Alan Turing", "Bletchley Park"}]
    stats_before = await ok("stats", {})
    calls = len(fake.requests_to("/chat/completions"))
    written = await ok(
        "digest_apply",
        {"plane": "pioneers", "nodes": chosen, "edges": edges, **{k: proposal[k] for k in ("source", "run", "model")}},
    )
    assert written["nodes_written"] + written["nodes_updated"] == 2
    assert len(fake.requests_to("/chat/completions")) == calls  # no model call to write
    assert (await ok("stats", {}))["commit_seq"] == stats_before["commit_seq"] + 1

    # a source tree and a code file: parsed over stdio as `drsg digest` parses them; never over HTTP
    tree = workdir / "tree"
    (tree / "pkg").mkdir(parents=True, exist_ok=True)
    (tree / "pkg" / "__init__.py").write_text("")
    (tree / "pkg" / "core.py").write_text(
        "def helper():\n    return 1\n\nclass Engine:\n    def run(self):\n        helper()\n"
    )
    if stdio:
        parsed = await ok("digest_preview", {"plane": "code", "path": str(tree)})
        keys = {n["key"] for n in parsed["nodes"]}
        assert keys == {"pkg", "pkg.core", "pkg.core.helper", "pkg.core.Engine", "pkg.core.Engine.run"}, keys
        assert all(n["properties"]["_generated_by"].startswith("py@") for n in parsed["nodes"])
        assert parsed["model"] is None and parsed["report"]["parsed"]["nodes"] == len(parsed["nodes"])
        one = await ok("digest_preview", {"plane": "code", "path": str(tree / "pkg" / "core.py")})
        assert {n["key"] for n in one["nodes"]} == keys - {"pkg"}  # its keys as the tree names them
        assert one["source"] == str(tree / "pkg" / "core.py")
        assert len(fake.requests_to("/chat/completions")) == calls  # code asks no model
        chosen = {"nodes": parsed["nodes"], "edges": parsed["edges"], "source": parsed["source"]}
        written = await ok("digest_apply", {"plane": "code", **chosen})
        assert written["nodes_written"] == len(parsed["nodes"])
    else:
        for local in (tree, tree / "pkg" / "core.py"):
            text = await refused(session, "digest_preview", {"plane": "code", "path": str(local)})
            assert "stdio server only" in text

    (conn,) = await ok("catalog_list", {})
    assert conn["name"] == "app" and conn["engine"] == "sqlite" and conn["plane"] == "catalog_app"
    found = await ok("find", {"entity": "用户", "fields": ["密码"], "where": {"name": "张三"}})
    assert found["table"] == "sys_user" and found["rows"] == [["[REDACTED]"]] and found["statements"] == 1
    assert SECRET not in json.dumps(found, ensure_ascii=False)
    assert "missing_predicate" in json.dumps(await ok("find", {"entity": "用户", "fields": ["密码"]}))

    # errors: one line each, as MCP tool errors, nothing written
    head = (await ok("stats", {}))["commit_seq"]
    assert "no plane named 'nope'" in await refused(session, "get_node", {"plane": "nope", "key": "ada"})
    assert "error -32602" in await refused(session, "get_node", {"plane": "pioneers"})
    assert "beyond the head" in await refused(session, "diff", {"plane": "pioneers", "from_seq": 1, "to_seq": 999})
    too_few = await refused(session, "changes_since", {"plane": "pioneers", "limit": 0})
    assert "error -32602" in too_few and "'limit'" in too_few
    assert "exactly one" in await refused(session, "digest_preview", {"plane": "pioneers"})
    no_dst = await refused(session, "algo", {"plane": "pioneers", "algo": "shortest_path", "src": 1})
    assert "error -32602" in no_dst and "needs src and dst" in no_dst
    assert "Unknown tool: drop_everything" in await refused(session, "drop_everything", {})
    assert (await ok("stats", {}))["commit_seq"] == head
    return called


def test_every_tool_over_stdio(tmp_path: Path, fake: FakeOpenAI) -> None:
    db = make_db(tmp_path)

    async def run() -> set[str]:
        async with over_stdio(db, fake, tmp_path) as session:
            return await exercise(session, fake, stdio=True, workdir=tmp_path)

    assert anyio.run(run) == TOOLS


def test_every_tool_over_http_and_the_token(tmp_path: Path, fake: FakeOpenAI) -> None:
    db = make_db(tmp_path)
    server = start_server(db, tmp_path, env={**env_for(fake), "DRSG_SERVER_MCP_MAX_CONCURRENT": "1"})
    url = f"http://127.0.0.1:{server.port}/mcp"

    async def run() -> set[str]:
        async with over_http(url, TOKEN) as session:
            called = await exercise(session, fake, stdio=False, workdir=tmp_path)
            # one call at a time: two slow asks take twice as long as one
            slow = Reply(json=chat_completion(json.dumps({"plan": WORKED_AT})), delay=0.6)
            fake.script("/chat/completions", slow, slow)
            started = anyio.current_time()
            async with anyio.create_task_group() as group:
                for _ in range(2):
                    group.start_soon(call, session, "ask", {"plane": "pioneers", "question": "where?"})
            assert anyio.current_time() - started >= 1.2
            return called

    async def wrong(token: str | None) -> str:
        with pytest.raises(BaseException) as caught:
            async with over_http(url, token):
                pass
        found = [e for e in _leaves(caught.value) if isinstance(e, MCPError)]
        assert found, caught.value
        return str(found[0])

    try:
        assert anyio.run(run) == TOOLS
        assert "the token is wrong" in anyio.run(wrong, "not-the-token")
        assert "send the token" in anyio.run(wrong, None)
        foreign = server.post(b"{}", path="/mcp", headers={"Host": "drsg.example:80"})
        assert foreign.status == 403 and b"loopback host names only" in foreign.body
    finally:
        assert server.stop() == 0


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]


def test_the_entry_drsg_init_writes_starts_a_working_server(tmp_path: Path) -> None:
    """`drsg init` writes `.mcp.json`; the command it names is what an agent runs: run exactly that."""
    from tests.support.git_tree import commit_tree

    repo = tmp_path / "proj"
    commit_tree(repo, {"pkg/__init__.py": "", "pkg/core.py": "def helper():\n    return 1\n"})
    made = cli(repo / "graph.drsg", "init", str(repo), "--code-only")
    assert made.returncode == 0, made.stderr
    entry = json.loads((repo / ".mcp.json").read_text())["mcpServers"]["drsg"]
    params = StdioServerParameters(command=entry["command"], args=entry["args"], env=clean_env(), cwd=repo)

    async def run() -> Any:
        with (tmp_path / "init-mcp.err").open("w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                planes = await call(session, "list_planes", {})
                helper = await call(session, "get_node", {"plane": "proj", "key": "pkg.core.helper"})
                return planes, helper

    planes, helper = anyio.run(run)
    proj = next(p for p in planes if p["name"] == "proj")
    assert proj["nodes"] > 0 and "synced" in proj  # a code plane says what it was read beside
    assert helper["external_key"] == "pkg.core.helper"
