"""The code verbs as MCP tools, through the MCP SDK's own client over stdio (`drsg mcp`) and Streamable
HTTP (`/mcp` on `drsg serve`), on a real third-party package: click, copied from site-packages into
a git tree and digested by the built-in Python handler.

Three ground-truth tasks, each held against tests/support/py_calls.py (an `ast` call finder that
shares no code with drsg.pipeline.code): every caller of ``click.utils.echo`` with its `file:line`
(one `context` call), the impact report of ``click.utils.echo`` to depth 3 (one `impact` call), and
the 4-hop call chain from ``Command.main`` to ``_OptionParser`` (one `trace` call, named by the ends of
their keys). Precision, recall and the tool calls each took are printed (tests/bench/RESULTS.md
records them). The other tools — `describe`, `grep`, `snippet` — are checked against the files, and
a wrong name, an ambiguous one and a plane that holds no code are one-line tool errors.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import click
import pytest
from mcp.client.session import ClientSession

from tests.support.code_tasks import CODE_TOOLS, Score, copy_package, scored
from tests.support.fake_openai import FakeOpenAI
from tests.support.mcp import call, over_http, over_stdio, refused
from tests.support.py_calls import CallGraph, find_calls
from tests.support.server import TOKEN, cli, start_server

TARGET = "click.utils.echo"
CHAIN = ("Command.main", "_OptionParser")  # as an agent names them: the ends of their keys
FLOOR = 0.9  # the precision and recall each task must reach


class Tree:
    def __init__(self, root: Path, db: Path, truth: CallGraph) -> None:
        self.root, self.db, self.truth = root, db, truth


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Tree:
    work = tmp_path_factory.mktemp("click")
    package = copy_package(Path(click.__file__).parent, work / "src")
    db = work / "graph.drsg"
    for args in (("digest", str(package), "--plane", "click", "--apply"), ("plane", "create", "notes")):
        ran = cli(db, *args)
        assert ran.returncode == 0, ran.stderr
    return Tree(package, db, find_calls(package))


class Agent:
    """An MCP session that counts its tool calls."""

    def __init__(self, session: ClientSession) -> None:
        self.session, self.calls = session, 0

    async def ask(self, tool: str, args: dict[str, Any]) -> Any:
        self.calls += 1
        return await call(self.session, tool, {"plane": "click", **args})


def _site(truth: CallGraph, caller: str, callee: str, at: str) -> bool:
    """``at`` is a real site of ``caller`` calling ``callee``: its file, on a line the call is written."""
    file, _, line = at.rpartition(":")
    return file == truth.file_of(caller) and int(line) in truth.calls.get((caller, callee), [])


async def callers_task(agent: Agent, truth: CallGraph) -> tuple[Score, Score]:
    """Every caller of TARGET with its file:line, in one context call."""
    before = agent.calls
    answer = await agent.ask("context", {"symbol": TARGET})
    assert answer["key"] == TARGET and answer["at"] == f"utils.py:{truth.defs[TARGET].line}"
    assert answer["omitted"] == 0 and answer["synced"].startswith("synced: commit ")
    got = {site["key"]: site["at"] for site in answer["callers"]}
    callers = scored(got, truth.callers(TARGET), agent.calls - before)
    receipts = scored([k for k, at in got.items() if k in truth.defs and _site(truth, k, TARGET, at)], got, 0)
    return callers, receipts


async def impact_task(agent: Agent, truth: CallGraph) -> Score:
    """What reaches TARGET within 3 hops, each at its distance, in one impact call."""
    before = agent.calls
    answer = await agent.ask("impact", {"symbol": TARGET, "depth": 3})
    got = {(s["key"], level["distance"]) for level in answer["levels"] for s in level["symbols"]}
    assert answer["total"] == len(got)
    return scored(got, truth.reverse(TARGET, 3).items(), agent.calls - before)


async def chain_task(agent: Agent, truth: CallGraph) -> Score:
    """The shortest call chain between the CHAIN ends, in one trace call: each hop a real call, at a
    real site, and as short as the truth's shortest."""
    before = agent.calls
    answer = await agent.ask("trace", {"src": CHAIN[0], "dst": CHAIN[1]})
    assert answer["found"] and not answer["reversed"]
    shortest = truth.shortest(answer["from"], answer["to"])
    assert shortest is not None and 3 <= len(shortest) - 1 <= 4
    hops = [(h["caller"], h["callee"]) for h in answer["hops"]]
    assert [a for a, _ in hops] + [hops[-1][1]] == [answer["from"], *[b for _, b in hops]]  # a chain
    real = [hop for hop, h in zip(hops, answer["hops"], strict=True) if _site(truth, *hop, h["at"])]
    assert len(hops) == len(shortest) - 1
    return Score(len(hops), len(shortest) - 1, len(real), agent.calls - before)


async def exercise(session: ClientSession, tree: Tree) -> dict[str, Score]:
    listed = {t.name for t in (await session.list_tools()).tools}
    assert listed >= CODE_TOOLS
    agent = Agent(session)
    callers, receipts = await callers_task(agent, tree.truth)
    scores = {"callers": callers, "receipts": receipts}
    scores["impact"] = await impact_task(agent, tree.truth)
    scores["chain"] = await chain_task(agent, tree.truth)

    line = tree.truth.defs[TARGET].line
    described = await agent.ask("describe", {"symbol": TARGET})
    assert described["props"]["file"] == "utils.py" and described["props"]["line"] == str(line)
    assert described["props"]["signature"].startswith("def echo(")
    shown = await agent.ask("snippet", {"symbol": "utils.echo", "lines": 3})
    source = (tree.root / "utils.py").read_text().splitlines()
    assert shown["source"] == "file" and shown["start"] == line
    assert shown["text"].splitlines() == source[line - 1 : line + 2]
    found = await agent.ask("grep", {"pattern": "DEF ECHO(", "ignore_case": True})
    expected = [
        f"{p.relative_to(tree.root).as_posix()}:{n}"
        for p in sorted(tree.root.rglob("*.py"))
        for n, text in enumerate(p.read_text().splitlines(), 1)
        if "def echo(" in text.lower()
    ]
    assert [hit["at"] for hit in found["hits"]] == expected
    assert {"at": f"utils.py:{line}", "text": source[line - 1].strip(), "in": TARGET} in found["hits"]
    assert len((await agent.ask("grep", {"pattern": "self", "max_results": 7}))["hits"]) == 7

    ambiguous = await refused(session, "context", {"plane": "click", "symbol": "convert"})
    assert "names" in ambiguous and "click.types.Choice.convert" in ambiguous
    unknown = await refused(session, "describe", {"plane": "click", "symbol": "click.utils.ech0"})
    assert "nearest: click.utils.echo" in unknown
    assert "drsg digest DIR --plane notes --apply" in await refused(
        session, "impact", {"plane": "notes", "symbol": "x"}
    )
    assert "max_results" in await refused(session, "grep", {"plane": "click", "pattern": "x", "max_results": 500})
    return scores


def _check(scores: dict[str, Score], how: str) -> None:
    for task, score in scores.items():
        print(f"[{how}] {score.line(task)}")
        assert score.precision >= FLOOR and score.recall >= FLOOR, (how, task, score)
    assert [scores[t].calls for t in ("callers", "impact", "chain")] == [1, 1, 1]


def test_code_tools_over_stdio(tree: Tree, fake: FakeOpenAI, tmp_path: Path) -> None:
    async def run() -> dict[str, Score]:
        async with over_stdio(tree.db, fake, tmp_path) as session:
            return await exercise(session, tree)

    _check(anyio.run(run), "stdio")


def test_code_tools_over_streamable_http(tree: Tree, tmp_path: Path) -> None:
    # a served plane's tree is read only inside [server] code_roots (tests/integration/test_code_roots.py)
    server = start_server(tree.db, tmp_path, env={"DRSG_SERVER_CODE_ROOTS": str(tree.root.parent)})
    try:

        async def run() -> dict[str, Score]:
            async with over_http(f"http://127.0.0.1:{server.port}/mcp", TOKEN) as session:
                return await exercise(session, tree)

        _check(anyio.run(run), "http")
    finally:
        assert server.stop() == 0


def test_the_whole_call_graph_against_the_independent_finder(tree: Tree) -> None:
    """Every CALLS edge of the plane against every call the finder resolves: where the verbs' answers
    come from. (What the graph has beyond the finder is the handler's receiver typing — `x = C(); x.m()`
    — which the finder does not attempt; line: each edge's line is one of the pair's call sites.)"""
    import drsg

    with drsg.open(str(tree.db)) as db, db.snapshot() as snap:
        plane = snap.plane("click")
        edges = {}
        for edge in snap.edges(plane.id):
            if edge.type == "CALLS":
                src, dst = snap.node(plane.id, edge.src), snap.node(plane.id, edge.dst)
                assert src is not None and dst is not None
                edges[(src.key, dst.key)] = edge.props.get("line")
    score = scored(edges, tree.truth.calls, 0)
    print(score.line("every CALLS edge"))
    assert score.precision >= 0.95 and score.recall >= 0.95, score
    assert all(edges[pair] in tree.truth.calls[pair] for pair in set(edges) & set(tree.truth.calls))
