"""`digest.run` / `digest.write` over JSON-RPC: a real `drsg serve` process, the real `openai`
client inside it, and the scripted model on loopback in this process."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.fake_openai import FakeOpenAI
from tests.support.pioneers import PIONEERS, WORLD
from tests.support.scripted_model import ScriptedModel
from tests.support.server import RunningServer, start_server


@pytest.fixture(scope="module")
def model() -> Iterator[tuple[FakeOpenAI, ScriptedModel]]:
    with FakeOpenAI() as fake:
        yield fake, ScriptedModel(WORLD).install(fake)


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory, model: tuple[FakeOpenAI, ScriptedModel]
) -> Iterator[RunningServer]:
    fake, _ = model
    workdir = tmp_path_factory.mktemp("serve-digest")
    env = {"DRSG_DIGEST_CHAT": fake.base_url, "DRSG_DIGEST_MODEL": "fake-chat", "DRSG_DIGEST_CONCURRENCY": "2"}
    running = start_server(workdir / "graph.drsg", Path(workdir), env=env)
    yield running
    assert running.stop() == 0


def test_run_proposes_then_write_applies_with_no_model_call(
    served: RunningServer, model: tuple[FakeOpenAI, ScriptedModel]
) -> None:
    fake, scripted = model
    head = served.head()
    params = {"plane": "pioneers", "text": PIONEERS, "chunk_chars": 200, "no_embed": True, "source": "pioneers.md"}
    proposal = served.call("digest.run", params)
    assert served.head() == head  # nothing written
    assert proposal["report"]["chunks"] == 4 and proposal["report"]["chat_requests"] == 4 + 3
    assert scripted.calls["extract"] == 4
    keys = {n["key"] for n in proposal["nodes"]}
    assert "Alan Turing" in keys and "Turing" not in keys
    assert proposal["model"] == "url:fake-chat" and proposal["source"] == "pioneers.md"

    calls = len(fake.requests_to("/chat/completions"))
    written = served.call(
        "digest.write",
        {k: proposal[k] for k in ("nodes", "edges", "source", "run", "model")} | {"plane": "pioneers"},
    )
    assert written["nodes_written"] == len(proposal["nodes"]) and written["edges_written"] == len(proposal["edges"])
    assert len(fake.requests_to("/chat/completions")) == calls
    assert served.head() == head + 1  # one commit
    turing = served.call("node.get", {"plane": "pioneers", "key": "Alan Turing"})
    assert turing["properties"]["_key_as_written"] == "Turing"
    assert turing["properties"]["_source"]["$value"] == "pioneers.md"

    again = served.call("digest.run", params)  # unchanged text: every answer from the cache
    assert again["report"]["chat_requests"] == 0 and again["report"]["linked"] == len(proposal["nodes"])
    assert len(fake.requests_to("/chat/completions")) == calls
    rewritten = served.call(
        "digest.write", {k: again[k] for k in ("nodes", "edges", "source", "run", "model")} | {"plane": "pioneers"}
    )
    assert rewritten["nodes_written"] == 0 and rewritten["edges_written"] == 0
    assert served.head() == head + 1


def test_requests_cannot_choose_urls_keys_or_embedders(
    served: RunningServer, model: tuple[FakeOpenAI, ScriptedModel]
) -> None:
    fake, _ = model
    before = len(fake.requests)
    base = {"plane": "x", "text": "Ada Lovelace wrote notes."}
    for extra, fragment in (
        ({"chat": "http://169.254.169.254/latest"}, "'chat' must be one of"),
        ({"embed": "openai"}, "`embed` is not accepted"),
        ({"embed_model": "m"}, "`embed_model` is not accepted"),
        ({"mode": "extreme"}, "mode"),
    ):
        error = served.error("digest.run", base | extra)
        assert error["code"] == -32602 and fragment in error["message"], (extra, error)
    for bad in ({"plane": "x", "nodes": ["ada"]}, {"plane": "x", "nodes": [{"key": ""}]}, {"plane": "x"}):
        assert served.error("digest.write", bad)["code"] == -32602
    assert len(fake.requests) == before


def test_reading_a_directory_is_local_only_and_plane_reads_say_what_they_were_read_from(tmp_path: Path) -> None:
    import subprocess
    import sys

    from tests.support.git_tree import commit_tree

    root = tmp_path / "repo"
    head = commit_tree(root, {"a.py": "def a():\n    pass\n\ndef b():\n    a()\n"})
    (root / "a.py").write_text("def a():\n    return 1\n\ndef b():\n    a()\n")
    db = tmp_path / "graph.drsg"
    cli = [str(Path(sys.executable).with_name("drsg")), "--db", str(db)]
    subprocess.run([*cli, "digest", str(root), "--code-only", "--apply", "-p", "code"], check=True, capture_output=True)
    running = start_server(db, tmp_path)
    try:
        line = (
            f"synced: commit {head[:12]} — parsed from a working tree with 1 modified and 0 untracked, so the "
            "graph holds what that commit does not"
        )
        node = running.call("node.get", {"plane": "code", "key": "a.b"})
        assert node["synced"] == line
        neighbors = running.rpc("plane.neighbors", {"plane": "code", "id": node["id"]})
        assert isinstance(neighbors["result"], list) and neighbors["synced"] == line  # the array keeps its shape
        assert "synced" not in running.call("db.stats", {})
        for name in ("path", "dir"):
            error = running.error("digest.run", {"plane": "code", "text": "x", name: str(root)})
            assert error["code"] == -32602 and f"has no param {name!r}" in error["message"]
    finally:
        assert running.stop() == 0
