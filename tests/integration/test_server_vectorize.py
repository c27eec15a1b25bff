"""JSON-RPC `plane.vectorize` on a running `drsg serve`.

The operator's embedder is a scripted OpenAI-compatible service on loopback that answers only the
server's own key (from the server's environment): vectorizing the sample plane with it embeds every
node with text, declares a vector index on `embedding` per label, reports the tokens the service
counted, and a second run embeds nothing. The `local` preset embeds another plane with upstream's
text rule (a parsed fact: `key (Labels)` and its string properties; any other node: its string
properties; `_` properties never). A base URL, an unknown preset and a missing key are refused and
write nothing.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.fake_openai import FakeOpenAI
from tests.support.sample import SAMPLE
from tests.support.server import RunningServer, cli, start_server

KEY = "sk-the-servers-own"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RunningServer, FakeOpenAI]]:
    workdir = tmp_path_factory.mktemp("vectorize")
    db = workdir / "graph.drsg"
    assert cli(db, "import", str(SAMPLE), "--plane", "pioneers", "--create-plane").returncode == 0
    with FakeOpenAI(dims=8, api_key=KEY) as fake:
        args = ["--embed", fake.base_url, "--embed-model", "fake-embedding", "--embed-key-env", "VECTORIZE_KEY"]
        server = start_server(db, workdir, env={"VECTORIZE_KEY": KEY, "OPENAI_API_KEY": ""}, args=args)
        yield server, fake
        assert server.stop() == 0


def _stamp(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _nodes(server: RunningServer, plane: str) -> list[dict[str, Any]]:
    return server.call("plane.query", {"plane": plane, "plan": {"source": "ScanAll"}})  # type: ignore[no-any-return]


def test_the_operators_embedder_with_the_servers_key(world: tuple[RunningServer, FakeOpenAI]) -> None:
    server, fake = world
    before = fake.usage["/embeddings"]["prompt_tokens"]
    stats = server.call("plane.vectorize", {"plane": "pioneers"})
    nodes = _nodes(server, "pioneers")
    assert stats["embedded"] == len(nodes) == stats["unique"] and stats["current"] == 0 and stats["empty"] == 0
    assert stats["tokens"] == fake.usage["/embeddings"]["prompt_tokens"] - before > 0
    assert stats["labels"] == sorted({label for n in nodes for label in n["labels"]})
    assert all(len(n["properties"]["embedding"]["$vector"]) == 8 for n in nodes)
    assert {r.headers.get("authorization") for r in fake.requests_to("/embeddings")} == {f"Bearer {KEY}"}
    indexes = server.call("plane.indexes", {"plane": "pioneers"})["vector"]
    assert sorted(i["label"] for i in indexes if i["property"] == "embedding") == stats["labels"]
    calls = len(fake.requests_to("/embeddings"))
    again = server.call("plane.vectorize", {"plane": "pioneers", "metric": "l2"})
    assert again == {"embedded": 0, "unique": 0, "tokens": 0, "current": len(nodes), "empty": 0, "labels": []}
    assert len(fake.requests_to("/embeddings")) == calls  # unchanged texts cost no request


def test_the_local_preset_and_upstreams_text_rule(world: tuple[RunningServer, FakeOpenAI]) -> None:
    server, fake = world
    server.call("plane.create", {"name": "notes"})
    made = [
        {"key": "plain", "labels": ["Note"], "properties": {"title": "Logs", "body": "One log.", "n": 3, "_src": "x"}},
        {"key": "pkg.f", "labels": ["Function"], "properties": {"signature": "def f()", "_generated_by": "py@1"}},
        {"key": "bare", "labels": ["Note"], "properties": {"n": 1}},
    ]
    for node in made:
        server.call("node.create", {"plane": "notes", **node})
    calls = len(fake.requests_to("/embeddings"))
    stats = server.call("plane.vectorize", {"plane": "notes", "embed": "local", "metric": "dot"})
    assert (stats["embedded"], stats["empty"], stats["tokens"], stats["labels"]) == (2, 1, 0, ["Function", "Note"])
    assert len(fake.requests_to("/embeddings")) == calls  # the local model, not the operator's service
    by_key = {n["external_key"]: n["properties"] for n in _nodes(server, "notes")}
    assert len(by_key["plain"]["embedding"]["$vector"]) == 384
    assert by_key["plain"]["_embedded_from"] == _stamp("title: Logs\nbody: One log.")
    assert by_key["pkg.f"]["_embedded_from"] == _stamp("pkg.f (Function)\nsignature: def f()")
    assert "embedding" not in by_key["bare"]
    indexes = server.call("plane.indexes", {"plane": "notes"})["vector"]
    assert {(i["label"], i["metric"]) for i in indexes} == {("Note", "dot"), ("Function", "dot")}


@pytest.mark.parametrize(
    ("params", "code", "says"),
    [
        ({"embed": "https://attacker.example/v1"}, -32602, "not a base URL"),
        ({"embed": "url"}, -32602, "not a base URL"),
        ({"embed": "deepseek"}, -32602, "takes a preset"),
        ({"embed": "openai"}, -32000, "OPENAI_API_KEY"),  # the server has no key for it: never the caller's
        ({"api_key": "sk-caller"}, -32602, "has no param"),
        ({"metric": "manhattan"}, -32602, "'metric'"),
    ],
)
def test_refused_and_nothing_written(
    world: tuple[RunningServer, FakeOpenAI], params: dict[str, Any], code: int, says: str
) -> None:
    server, _ = world
    head = server.head()
    error = server.error("plane.vectorize", {"plane": "pioneers", **params})
    assert error["code"] == code and says in error["message"], error
    assert server.head() == head


def test_no_such_plane(world: tuple[RunningServer, FakeOpenAI], tmp_path: Path) -> None:
    server, _ = world
    error = server.error("plane.vectorize", {"plane": "nope"})
    assert error["code"] == -32602 and "no plane named 'nope'" in error["message"]
