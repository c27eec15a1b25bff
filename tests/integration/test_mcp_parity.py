"""Issue 39 item 3, MCP parity, through the MCP SDK's own client over stdio (`drsg mcp`) and Streamable
HTTP (`/mcp` on `drsg serve`): `traverse` by hops from an id or a key, the write tools (`write_nodes`,
`write_edges`, `create_plane`, `drop_plane`) with their writes read back through the CLI, `digest` of a
directory (stdio) with `apply`, the catalog's verbs over a real SQLite database and its compact digest as
a resource and a prompt; and on a read-only server every write tool refused in one line, nothing written."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.session import ClientSession

from tests.support.catalog_schema import SECRET, make_sqlite
from tests.support.fake_openai import FakeOpenAI
from tests.support.mcp import PARITY_TOOLS, call, env_for, over_http, over_stdio, refused
from tests.support.pioneers import PIONEERS
from tests.support.sample import SAMPLE
from tests.support.server import TOKEN, cli, start_server

pytestmark = pytest.mark.usefixtures("pioneers_model")  # chat answers about the pioneers' world

READ_ONLY = "--read-only"


def make_db(workdir: Path) -> Path:
    """The sample graph in `pioneers`; an SQLite database's catalog in `catalog_app`."""
    db = workdir / "graph.drsg"
    app = make_sqlite(workdir / "app.db")
    for args in (
        ("import", str(SAMPLE), "--plane", "pioneers", "--create-plane"),
        ("catalog", "add", "app", str(app)),
        ("catalog", "index", "app"),
    ):
        ran = cli(db, *args)
        assert ran.returncode == 0, ran.stderr
    return db


def reachable(start: str, low: int, high: int, direction: str) -> set[str]:
    """The keys `low`..`high` hops from `start`, worked out from the sample file itself (walks: a node
    may be reached again), not through drsg."""
    nexts: dict[str, set[str]] = defaultdict(set)
    for line in SAMPLE.read_text().splitlines():
        row = json.loads(line)
        if "src_key" in row:
            if direction in ("out", "both"):
                nexts[row["src_key"]].add(row["dst_key"])
            if direction in ("in", "both"):
                nexts[row["dst_key"]].add(row["src_key"])
    frontier, found = {start}, {start} if low == 0 else set()
    for hop in range(1, high + 1):
        frontier = {n for f in frontier for n in nexts[f]}
        if hop >= low:
            found |= frontier
    return found


async def head(session: ClientSession) -> int:
    seq: int = (await call(session, "stats", {}))["commit_seq"]
    return seq


async def exercise(session: ClientSession, *, stdio: bool, workdir: Path) -> None:
    listed = {t.name for t in (await session.list_tools()).tools}
    assert listed >= PARITY_TOOLS

    # traverse: from a key or an id, by hops, checked against the file's own edges
    for direction, low, high in (("out", 1, 2), ("both", 0, 2), ("in", 1, 1)):
        args = {"plane": "pioneers", "from_key": "ada", "direction": direction, "min": low, "max": high}
        walked = await call(session, "traverse", args)
        assert {n["external_key"] for n in walked["nodes"]} == reachable("ada", low, high, direction), direction
        assert walked["count"] == len(walked["nodes"]) and walked["truncated"] is False
    ada = await call(session, "get_node", {"plane": "pioneers", "key": "ada"})
    typed = await call(session, "traverse", {"plane": "pioneers", "from_id": ada["id"], "edge_type": "WROTE_ABOUT"})
    assert [n["external_key"] for n in typed["nodes"]] == ["analytical_engine"] and typed["from"]["key"] == "ada"
    cut = await call(session, "traverse", {"plane": "pioneers", "from_key": "ada", "max": 3, "limit": 2})
    assert cut["count"] == 2 and cut["truncated"] is True
    around = await call(session, "traverse", {"plane": "pioneers", "id": ada["id"], "direction": "out"})
    assert around["edges"] and all(e["src"] == ada["id"] for e in around["edges"])  # the id-only call, as before
    assert "≤ 6" in await refused(session, "traverse", {"plane": "pioneers", "from_key": "ada", "max": 7})
    assert "exactly one" in await refused(session, "traverse", {"plane": "pioneers", "from_key": "ada", "from_id": 1})
    assert "no node with key 'nobody'" in await refused(
        session, "traverse", {"plane": "pioneers", "from_key": "nobody"}
    )

    # writes: a plane, nodes by key (create, then an upsert), edges by key, refusals that write nothing
    made = await call(session, "create_plane", {"name": "team", "properties": {"about": "who works with whom"}})
    assert made["name"] == "team"
    people = [
        {"key": "ann", "labels": ["Person"], "properties": {"name": "Ann", "age": 41}},
        {"key": "bob", "labels": ["Person"], "properties": {"name": "Bob"}},
        {"key": "eve", "labels": ["Person"]},
    ]
    wrote = await call(session, "write_nodes", {"plane": "team", "nodes": people})
    assert wrote["written"] == 3 and [n["key"] for n in wrote["nodes"]] == ["ann", "bob", "eve"]
    assert {n["op"] for n in wrote["nodes"]} == {"created"}
    before = await head(session)
    again = await refused(session, "write_nodes", {"plane": "team", "nodes": [*people[:1], {"key": "zed"}]})
    assert "write 1 of 2 (node.put)" in again and "'ann' already exists" in again  # one commit: zed not written
    bad = await refused(session, "write_nodes", {"plane": "team", "nodes": [{"key": "x", "props": {}}]})
    assert "has no field 'props'" in bad
    assert "twice" in await refused(session, "write_nodes", {"plane": "team", "nodes": [{"key": "q"}, {"key": "q"}]})
    assert "no plane named" in await refused(session, "write_nodes", {"plane": "nope", "nodes": [{"key": "q"}]})
    links = [
        {"src_key": "ann", "dst_key": "bob", "type": "MENTORS", "properties": {"since": 2020}},
        {"src_key": "bob", "dst_key": "zed", "type": "KNOWS"},
    ]
    missing = await refused(session, "write_edges", {"plane": "team", "edges": links})
    assert "write 2 of 2 (edge.create): no dst node with key 'zed'" in missing  # nor the first edge
    assert await head(session) == before  # every refusal above wrote nothing (zed included)
    upsert = [{"key": "ann", "properties": {"age": 42}}, {"key": "zed", "labels": ["Person"]}]
    upserted = await call(session, "write_nodes", {"plane": "team", "nodes": upsert, "mode": "update"})
    assert [(n["key"], n["op"]) for n in upserted["nodes"]] == [("ann", "updated"), ("zed", "created")]
    assert upserted["nodes"][0]["id"] == wrote["nodes"][0]["id"]  # the same node, merged
    linked = await call(session, "write_edges", {"plane": "team", "edges": links})
    assert linked["written"] == 2 and [e["type"] for e in linked["edges"]] == ["MENTORS", "KNOWS"]

    await call(session, "create_plane", {"name": "scratch"})
    before = await head(session)
    unconfirmed = await refused(session, "drop_plane", {"plane": "scratch"})
    assert "pass confirm: true" in unconfirmed and await head(session) == before
    assert (await call(session, "drop_plane", {"plane": "scratch", "confirm": True}))["deleted"] is True
    assert "scratch" not in {p["name"] for p in await call(session, "list_planes", {})}

    # digest: a source tree over stdio (proposal, then applied); text over HTTP, a path refused
    tree = workdir / "tree"
    (tree / "pkg").mkdir(parents=True, exist_ok=True)
    (tree / "pkg" / "__init__.py").write_text("")
    (tree / "pkg" / "core.py").write_text("def helper():\n    return 1\n\ndef main():\n    helper()\n")
    before = await head(session)
    if stdio:
        proposal = await call(session, "digest", {"plane": "code", "path": str(tree)})
        assert {n["key"] for n in proposal["nodes"]} == {"pkg", "pkg.core", "pkg.core.helper", "pkg.core.main"}
        assert await head(session) == before  # apply defaults to false
        applied = await call(session, "digest", {"plane": "code", "path": str(tree), "apply": True})
        assert applied["applied"] is True and applied["written"]["nodes_written"] == 4
        helper = await call(session, "get_node", {"plane": "code", "key": "pkg.core.helper"})
        assert helper["external_key"] == "pkg.core.helper"
    else:
        assert "stdio server only" in await refused(session, "digest", {"plane": "code", "path": str(tree)})
        text = {"plane": "prose", "text": PIONEERS, "source": "pioneers.md", "no_embed": True, "link": False}
        proposal = await call(session, "digest", text)
        assert "Alan Turing" in {n["key"] for n in proposal["nodes"]} and await head(session) == before
        applied = await call(session, "digest", {"plane": "prose", "text": PIONEERS, "apply": True})
        assert applied["written"]["nodes_written"] == len(proposal["nodes"])
        assert await head(session) == before + 1  # one commit

    where = {"path": str(tree)} if stdio else {"text": PIONEERS}
    preset = await refused(session, "digest", {"plane": "code", **where, "chat": "http://127.0.0.1:9/v1"})
    assert "error -32602" in preset and "'chat'" in preset  # digest.run's presets only, never a URL

    # the catalog's verbs: the CLI's answers, over a real SQLite database
    objects = await call(session, "catalog_objects", {})
    assert {o["name"] for o in objects} >= {"sys_user", "orders", "paid_orders"}
    cols = await call(session, "catalog_columns", {"table": "sys_user"})
    password = next(c for c in cols["columns"] if c["name"] == "password")
    assert password["sensitive"] is True and "enum_sample" not in password
    assert cols == json.loads(cli(workdir / "graph.drsg", "catalog", "columns", "sys_user", "--json").stdout)
    schema = await call(session, "catalog_schema", {"table": "orders"})
    assert schema["tables"][0]["foreign_keys"][0]["references"] == "sys_user"
    rows = await call(session, "catalog_sql", {"sql": "SELECT name, password FROM sys_user ORDER BY id"})
    assert rows["rows"][0] == ["张三", "[REDACTED]"] and SECRET not in json.dumps(rows, ensure_ascii=False)
    assert "only a read-only SELECT" in await refused(session, "catalog_sql", {"sql": "DELETE FROM sys_user"})
    impact = await call(session, "catalog_impact", {"table": "sys_user", "column": "id"})
    assert {fk["table"] for fk in impact["foreign_keys"]} == {"orders"} and "paid_orders" in impact["views"]
    refs = await call(session, "catalog_refs", {"table": "paid_orders"})
    assert set(refs["reads"]) == {"orders", "sys_user"}
    assert "no table or view 'nope'" in await refused(session, "catalog_columns", {"table": "nope"})

    # the compact digest before any call: a listed resource, a template, a prompt
    expected = cli(workdir / "graph.drsg", "catalog", "digest").stdout.rstrip("\n")
    uris = {str(r.uri) for r in (await session.list_resources()).resources}
    assert "drsg://catalog/app/digest" in uris
    templates = {t.uri_template for t in (await session.list_resource_templates()).resource_templates}
    assert "drsg://catalog/{connection}/digest" in templates
    read = await session.read_resource("drsg://catalog/app/digest")
    assert read.contents[0].text == expected and "sys_user" in expected  # type: ignore[union-attr]
    prompts = {p.name for p in (await session.list_prompts()).prompts}
    assert "catalog_digest" in prompts
    prompt = await session.get_prompt("catalog_digest", {})
    assert expected in prompt.messages[0].content.text  # type: ignore[union-attr]


async def refuse_writes(session: ClientSession) -> None:
    """A read-only server: each write tool refused in one line naming the setting; reads still answer."""
    before = await head(session)
    calls: list[tuple[str, dict[str, Any]]] = [
        ("write_nodes", {"plane": "pioneers", "nodes": [{"key": "x"}]}),
        ("write_edges", {"plane": "pioneers", "edges": [{"src_key": "ada", "dst_key": "turing", "type": "KNEW"}]}),
        ("create_plane", {"name": "more"}),
        ("drop_plane", {"plane": "pioneers", "confirm": True}),
        ("drop_plane", {"plane": "pioneers"}),
        ("digest", {"plane": "pioneers", "text": "Ada met Babbage.", "apply": True}),
        ("digest_apply", {"plane": "pioneers", "nodes": [{"key": "y", "label": "Thing", "properties": {}}]}),
        ("cypher", {"plane": "pioneers", "query": "CREATE (:Thing {name: 'z'})"}),
    ]
    for tool, args in calls:
        text = await refused(session, tool, args)
        assert "error -32001" in text and READ_ONLY in text and "read_only" in text, (tool, text)
    assert await head(session) == before
    walked = await call(session, "traverse", {"plane": "pioneers", "from_key": "ada", "max": 1})
    assert walked["count"] > 0
    assert (await call(session, "cypher", {"plane": "pioneers", "query": "MATCH (p:Person) RETURN count(p)"}))["rows"]


def written_through_the_cli(db: Path, *, stdio: bool) -> None:
    """What the tools wrote, read back by `drsg` itself."""
    exported = cli(db, "export", "--plane", "team")
    assert exported.returncode == 0, exported.stderr
    rows = [json.loads(line) for line in exported.stdout.splitlines()]
    nodes = {r["external_key"]: r for r in rows if "external_key" in r}
    assert set(nodes) == {"ann", "bob", "eve", "zed"}
    assert nodes["ann"]["properties"] == {"name": "Ann", "age": 42}  # merged by the upsert
    assert sorted((r["src_key"], r["type"], r["dst_key"]) for r in rows if "src_key" in r) == [
        ("ann", "MENTORS", "bob"),
        ("bob", "KNOWS", "zed"),
    ]
    planes = cli(db, "plane", "list", "--json")
    names = {json.loads(line)["name"] for line in planes.stdout.splitlines()}
    assert "scratch" not in names and {"team", "code" if stdio else "prose"} <= names


def test_parity_over_stdio(tmp_path: Path, fake: FakeOpenAI) -> None:
    db = make_db(tmp_path)

    async def run() -> None:
        async with over_stdio(db, fake, tmp_path) as session:
            await exercise(session, stdio=True, workdir=tmp_path)
        async with over_stdio(db, fake, tmp_path, args=(READ_ONLY,)) as session:
            await refuse_writes(session)

    anyio.run(run)
    written_through_the_cli(db, stdio=True)


def test_parity_over_http(tmp_path: Path, fake: FakeOpenAI) -> None:
    db = make_db(tmp_path)
    server = start_server(db, tmp_path, env=env_for(fake))
    try:
        anyio.run(_over_http, f"http://127.0.0.1:{server.port}/mcp", tmp_path)
    finally:
        assert server.stop() == 0
    written_through_the_cli(db, stdio=False)
    locked = start_server(db, tmp_path, name="locked", args=[READ_ONLY])  # `serve --read-only`
    try:
        anyio.run(_refuse_over_http, f"http://127.0.0.1:{locked.port}/mcp")
        rpc = locked.rpc("node.create", {"plane": "team", "key": "nope"})  # JSON-RPC refuses it the same way
        assert rpc["error"]["code"] == -32001 and READ_ONLY in rpc["error"]["message"]
    finally:
        assert locked.stop() == 0


async def _over_http(url: str, workdir: Path) -> None:
    async with over_http(url, TOKEN) as session:
        await exercise(session, stdio=False, workdir=workdir)


async def _refuse_over_http(url: str) -> None:
    async with over_http(url, TOKEN) as session:
        await refuse_writes(session)
