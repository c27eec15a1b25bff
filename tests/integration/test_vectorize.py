"""`drsg vectorize` and text NEAR queries, with the real local embedder and a remote one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli import Drsg
from tests.support.fake_openai import FakeOpenAI

SEED = Path(__file__).resolve().parents[1] / "data" / "ai_native_en.txt"


def _docs(tmp_path: Path, count: int = 25) -> tuple[Path, list[str]]:
    paragraphs = [p.strip() for p in SEED.read_text().split("\n\n") if len(p.strip()) > 60][:count]
    f = tmp_path / "docs.jsonl"
    with f.open("w") as fh:
        for i, text in enumerate(paragraphs):
            fh.write(json.dumps({"labels": ["Doc"], "external_key": f"p{i}", "properties": {"body": text}}) + "\n")
    return f, paragraphs


def test_vectorize_locally_then_search_by_text(drsg: Drsg, tmp_path: Path) -> None:
    f, paragraphs = _docs(tmp_path)
    assert drsg("import", str(f), "--plane", "docs", "--create-plane").code == 0
    ran = drsg("vectorize", "--plane", "docs", "--label", "Doc", "--from", "body")
    assert ran.code == 0, ran.err
    assert ran.lines() == [
        f"embedded {len(paragraphs)} node(s) with local:all-MiniLM-L6-v2; 0 already current, 0 without text",
        "ensured vector index on Doc.embedding",
    ]
    listed = drsg("index", "list", "-p", "docs", "--json").json_lines()[0]
    assert listed["vector"] == [
        {"label": "Doc", "property": "embedding", "metric": "cosine", "dims": 384, "ef": 64, "recall": 1.0}
    ]
    # A paragraph's own text finds it first; a paraphrase of a topic finds a paragraph about it.
    own = drsg(
        "search", f"SEARCH (d:Doc) ON embedding NEAR {json.dumps(paragraphs[4])} TOPK 3", "-p", "docs", "--json"
    ).json_lines()
    assert own[0]["external_key"] == "p4" and own[0]["score"] > 0.99
    for question, expected in [
        ("natural language questions answered by generating a query plan", {"p13", "p15", "p16"}),
        ("merging several ranking signals into one list", {"p9", "p10", "p12"}),
        ("an LLM reads documents and extracts entities and relations", {"p17", "p20"}),
    ]:
        top = drsg("search", f"SEARCH (d:Doc) NEAR {json.dumps(question)} TOPK 1", "-p", "docs", "--json")
        assert top.json_lines()[0]["external_key"] in expected, (question, top.out)
    node = drsg("get", "@p4", "-p", "docs", "--json").json_lines()[0]
    assert len(node["properties"]["embedding"]["$vector"]) == 384
    assert len(node["properties"]["_embedded_from"]) == 16 and node["properties"]["_embedded_by"].startswith("local:")
    plane = drsg("plane", "show", "docs", "--json").json_lines()[0]
    assert plane["properties"]["_embedder:embedding"] == "local:all-MiniLM-L6-v2"

    again = drsg("vectorize", "--plane", "docs", "--from", "body", "--json").json_lines()[0]
    assert again["embedded"] == 0 and again["current"] == len(paragraphs)
    assert drsg("node", "put", "p4", "-p", "docs", "-P", "body=Time travel reads any commit.").code == 0
    once = drsg("vectorize", "--plane", "docs", "--from", "body", "--json").json_lines()[0]
    assert once["embedded"] == 1 and once["current"] == len(paragraphs) - 1


def test_remote_embedder_through_the_openai_client(drsg: Drsg, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f, paragraphs = _docs(tmp_path, 10)
    assert drsg("import", str(f), "--plane", "docs", "--create-plane").code == 0
    monkeypatch.delenv("MY_EMBED_KEY", raising=False)
    with FakeOpenAI(dims=16, api_key="sk-test-secret") as fake:
        remote = ("--embed", fake.base_url, "--embed-model", "fake-embed", "--embed-key-env", "MY_EMBED_KEY")
        missing = drsg("vectorize", "-p", "docs", "--from", "body", "--into", "remote", *remote)
        assert missing.code == 2 and "needs MY_EMBED_KEY" in missing.err
        assert fake.requests_to("/embeddings") == []  # refused before any request
        monkeypatch.setenv("MY_EMBED_KEY", "sk-test-secret")
        done = drsg("vectorize", "-p", "docs", "--from", "body", "--into", "remote", "--json", *remote)
        assert done.code == 0, done.err
        assert done.json_lines()[0]["embedded"] == len(paragraphs)
        sent = fake.requests_to("/embeddings")
        assert sorted(t for r in sent for t in r.inputs) == sorted(paragraphs)
        assert all(r.headers.get("authorization") == "Bearer sk-test-secret" for r in sent)
        hits = drsg(
            "search",
            f"SEARCH (d:Doc) ON remote NEAR {json.dumps(paragraphs[2])} TOPK 1",
            "-p",
            "docs",
            "--json",
            *remote,
        )
        assert hits.json_lines()[0]["external_key"] == "p2"
        log = drsg("log", "--json").out
        assert "sk-test-secret" not in log and "fake-embed" in log  # the model is recorded; the key never is
    mixed = drsg("vectorize", "-p", "docs", "--from", "body", "--into", "remote")  # local into a remote space
    assert mixed.code == 2 and "would mix two vector spaces" in mixed.err
