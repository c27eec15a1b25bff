"""A plane records the identity of the embedder that made a vector property; a text query on it is
embedded by that embedder again, rebuilt from its preset (the CLI and the server share this)."""

from __future__ import annotations

import pytest

from drsg.models.embedders.registry import get_embedder, recorded_preset


@pytest.mark.parametrize(
    ("identity", "preset"),
    [
        ("local:all-MiniLM-L6-v2", ("local", None, None)),
        ("openai:text-embedding-3-small", ("openai", "text-embedding-3-small", None)),
        ("qwen:text-embedding-v4@512", ("qwen", "text-embedding-v4", 512)),
        ("ollama:nomic-embed-text", ("ollama", "nomic-embed-text", None)),
        ("url:my-model", None),  # a base URL was needed, and it is not recorded
        ("mystery:model", None),
    ],
)
def test_recorded_identities_name_their_preset(identity: str, preset: tuple[str, str | None, int | None]) -> None:
    assert recorded_preset(identity) == preset


def test_the_preset_rebuilds_the_same_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")  # the client is built, never called
    made = get_embedder("openai", "text-embedding-3-large", dimensions=256)
    preset = recorded_preset(made.identity())
    assert preset is not None
    name, model, dims = preset
    assert (
        get_embedder(name, model, dimensions=dims).identity() == made.identity() == "openai:text-embedding-3-large@256"
    )
