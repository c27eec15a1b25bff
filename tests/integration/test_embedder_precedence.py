"""The one embedder-choice precedence, where the CLI and the server used to disagree: named, else
the plane's recorded embedder, else the configured one (`serve --embed…`, `[digest] embed_provider`),
else local. Real LMDB files, a real `drsg serve`, the real local model; the configured service is
the scripted OpenAI-compatible server on loopback, so whether it was asked is seen."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from drsg.store.database import Database
from tests.support.cli import Drsg
from tests.support.fake_openai import FakeOpenAI
from tests.support.server import cli, paragraphs, start_server

TEXTS = paragraphs(6)


def _docs(path: Path, prop: str = "body", extra: Callable[[int], dict[str, object]] | None = None) -> Path:
    with path.open("w") as fh:
        for i, text in enumerate(TEXTS):
            props: dict[str, object] = {prop: text, **(extra(i) if extra else {})}
            fh.write(json.dumps({"labels": ["Doc"], "external_key": f"p{i}", "properties": props}) + "\n")
    return path


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(dims=8) as server:
        yield server


def test_the_server_queries_with_the_recorded_embedder_not_its_configured_one(tmp_path: Path, fake: FakeOpenAI) -> None:
    """Before: `serve --embed` beat the plane's recorded embedder, and a text query on vectors
    another embedder wrote was refused ("but this server embeds with url:fake-embed")."""
    db = tmp_path / "graph.drsg"
    assert cli(db, "import", str(_docs(tmp_path / "docs.jsonl")), "--plane", "docs", "--create-plane").returncode == 0
    done = cli(db, "vectorize", "--plane", "docs", "--label", "Doc", "--from", "body")  # local, recorded
    assert done.returncode == 0, done.stderr
    server = start_server(db, tmp_path, args=["--embed", fake.base_url, "--embed-model", "fake-embed"])
    try:
        hits = server.call(
            "plane.search",
            {"plane": "docs", "property": "embedding", "query": TEXTS[3], "label": "Doc", "k": 1, "kind": "vector"},
        )
        assert [hit["node"]["external_key"] if "node" in hit else hit["external_key"] for hit in hits] == ["p3"]
        assert fake.requests_to("/embeddings") == []  # the configured service was never asked
        other = server.call("plane.create", {"name": "fresh"})  # nothing recorded: the configured one
        assert other is not None
        server.call("node.create", {"plane": "fresh", "key": "a", "labels": ["Doc"], "properties": {"body": "x y"}})
        stats = server.call("plane.vectorize", {"plane": "fresh"})
        assert stats["embedded"] == 1 and len(fake.requests_to("/embeddings")) == 1
    finally:
        assert server.stop() == 0


def test_the_cli_queries_with_the_configured_embedder_when_none_is_recorded(
    drsg: Drsg, tmp_path: Path, fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: the CLI never read `[digest] embed_provider` for a query; vectors that no embedder was
    recorded for were queried with the local model (384 dimensions against 8)."""
    vectors = _docs(tmp_path / "raw.jsonl", extra=lambda i: {"vec": {"$vector": [float(i + 1)] + [0.5] * 7}})
    assert drsg("import", str(vectors), "--plane", "raw", "--create-plane").code == 0
    monkeypatch.setenv("DRSG_DIGEST_EMBED_PROVIDER", fake.base_url)
    monkeypatch.setenv("DRSG_DIGEST_EMBED_MODEL", "fake-embed")
    ran = drsg("search", 'SEARCH (d:Doc) ON vec NEAR "time travel" TOPK 2', "-p", "raw", "--json")
    assert ran.code == 0, ran.err
    assert len(ran.json_lines()) == 2
    assert [t for r in fake.requests_to("/embeddings") for t in r.inputs] == ["time travel"]


def test_the_cli_digest_keeps_to_the_recorded_embedder_over_the_configured_one(
    drsg: Drsg, db_path: Path, tmp_path: Path, fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: `[digest] embed_provider` counted as if --embed had named it, so a plane whose vectors
    the local model wrote was refused ("… another vector space")."""
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "mod.py").write_text('def greet(name):\n    """Say hello."""\n    return f"hello {name}"\n')
    ran = drsg("digest", str(tree), "--code-only", "--apply", "-p", "code")
    assert ran.code == 0, ran.err
    with Database(db_path, create=False) as db:  # the plane's vectors, as the local model records them
        db.write(lambda tx: tx.set_plane_props("code", {"_embedder:embedding": "local:all-MiniLM-L6-v2"}))
    monkeypatch.setenv("DRSG_DIGEST_EMBED_PROVIDER", fake.base_url)
    monkeypatch.setenv("DRSG_DIGEST_EMBED_MODEL", "fake-embed")
    (tree / "mod.py").write_text('def greet(name):\n    """Say hello, loudly."""\n    return f"HELLO {name}"\n')
    again = drsg("digest", str(tree), "--code-only", "--apply", "-p", "code")
    assert again.code == 0, again.err
    assert fake.requests_to("/embeddings") == []
