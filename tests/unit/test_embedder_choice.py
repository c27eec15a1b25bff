"""The one embedder-choice rule (`drsg.pipeline.embedder_choice`): named, else recorded, else
configured, else local; a named one that is not the recorded one is refused. Real LMDB files;
the clients are built, never called (no request leaves the process)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from drsg.kernel.errors import ConfigError, UsageError
from drsg.kernel.settings import Settings, load
from drsg.models.embedders import LocalEmbedder, RemoteEmbedder
from drsg.pipeline.embedder_choice import (
    EmbedderCache,
    EmbedderChoice,
    choose_embedder,
    configured_choice,
    named_embedder,
    same_space,
)
from drsg.store.database import Database

LOCAL = "local:all-MiniLM-L6-v2"


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    database = Database(tmp_path / "graph.drsg")
    database.write(lambda tx: tx.create_plane("docs"))
    try:
        yield database
    finally:
        database.close()


@pytest.fixture
def settings(monkeypatch: pytest.MonkeyPatch) -> Settings:
    for var in ("OPENAI_API_KEY", "DASHSCOPE_API_KEY", "MY_KEY"):
        monkeypatch.delenv(var, raising=False)
    return load(environ={})


def _record(db: Database, identity: str, prop: str = "embedding") -> None:
    db.write(lambda tx: tx.set_plane_props("docs", {f"_embedder:{prop}": identity}))


def test_nothing_recorded_nothing_given_is_the_local_model(db: Database, settings: Settings) -> None:
    assert isinstance(choose_embedder(db, "docs", "embedding", settings), LocalEmbedder)


def test_the_configured_one_beats_the_default(db: Database, settings: Settings) -> None:
    made = choose_embedder(db, "docs", "embedding", settings, configured=EmbedderChoice("ollama"))
    assert made.identity() == "ollama:nomic-embed-text"


def test_the_recorded_one_beats_the_configured_one(db: Database, settings: Settings) -> None:
    _record(db, LOCAL)
    made = choose_embedder(db, "docs", "embedding", settings, configured=EmbedderChoice("ollama"))
    assert made.identity() == LOCAL
    _record(db, "ollama:all-minilm@64")  # a recorded model and dimensions are rebuilt as they were
    made = choose_embedder(db, "docs", "embedding", settings, configured=EmbedderChoice("local"))
    assert made.identity() == "ollama:all-minilm@64"


def test_the_named_one_beats_the_recorded_one_only_when_it_is_the_same(db: Database, settings: Settings) -> None:
    _record(db, "ollama:nomic-embed-text")
    same = choose_embedder(db, "docs", "embedding", settings, named=EmbedderChoice("OLLAMA"))
    assert same.identity() == "ollama:nomic-embed-text"
    for purpose, says in (("query", "another vector space. Drop --embed"), ("write", "would mix two vector spaces")):
        with pytest.raises(UsageError) as refused:
            choose_embedder(db, "docs", "embedding", settings, named=EmbedderChoice("local"), purpose=purpose)  # type: ignore[arg-type]
        message = str(refused.value)
        assert says in message and "ollama:nomic-embed-text" in message and LOCAL in message
        assert "\n" not in message


def test_a_named_one_is_used_where_nothing_is_recorded(db: Database, settings: Settings) -> None:
    made = choose_embedder(db, "docs", "other", settings, named=EmbedderChoice("ollama", "all-minilm"))
    assert made.identity() == "ollama:all-minilm"


def test_a_key_variable_alone_names_no_embedder(
    db: Database, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    _record(db, "openai:text-embedding-3-small")
    with pytest.raises(ConfigError, match="needs MY_KEY"):  # the recorded preset, with the key named
        choose_embedder(db, "docs", "embedding", settings, named=EmbedderChoice(key_env="MY_KEY"))
    monkeypatch.setenv("MY_KEY", "sk-test")
    made = choose_embedder(db, "docs", "embedding", settings, named=EmbedderChoice(key_env="MY_KEY"))
    assert isinstance(made, RemoteEmbedder) and made.identity() == "openai:text-embedding-3-small"
    assert made.key_env == "MY_KEY"


def test_the_configured_key_goes_with_the_same_provider_only(
    db: Database, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-preset")
    _record(db, "openai:text-embedding-3-small")
    mine = choose_embedder(db, "docs", "embedding", settings, configured=EmbedderChoice("openai", key_env="MY_KEY"))
    assert isinstance(mine, RemoteEmbedder) and mine.key_env == "MY_KEY"
    other = choose_embedder(db, "docs", "embedding", settings, configured=EmbedderChoice("qwen", key_env="MY_KEY"))
    assert isinstance(other, RemoteEmbedder) and other.key_env == "OPENAI_API_KEY"


def test_a_recorded_url_service_needs_the_configured_one_to_name_it(db: Database, settings: Settings) -> None:
    _record(db, "url:e5-small")
    for purpose, says in (("query", "query with a vector"), ("write", "would mix two vector spaces")):
        with pytest.raises(UsageError, match="name that service") as refused:
            choose_embedder(db, "docs", "embedding", settings, purpose=purpose)  # type: ignore[arg-type]
        assert says in str(refused.value)
    service = EmbedderChoice("http://127.0.0.1:9/v1", "e5-small")
    made = choose_embedder(db, "docs", "embedding", settings, configured=service)
    assert made.identity() == "url:e5-small"
    with pytest.raises(UsageError, match="the configured one"):
        choose_embedder(db, "docs", "embedding", settings, configured=EmbedderChoice("http://127.0.0.1:9/v1", "other"))


def test_a_bad_name_is_the_registrys_config_error(db: Database, settings: Settings) -> None:
    with pytest.raises(ConfigError, match="unknown embedder"):
        choose_embedder(db, "docs", "embedding", settings, named=EmbedderChoice("cohere"))


def test_the_cache_builds_each_choice_once_across_threads(db: Database, settings: Settings) -> None:
    cache = EmbedderCache()
    made: list[object] = []

    def pick() -> None:
        made.append(
            choose_embedder(db, "docs", "embedding", settings, configured=EmbedderChoice("ollama"), cache=cache)
        )

    threads = [threading.Thread(target=pick) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(made) == 8 and len({id(m) for m in made}) == 1 and len(cache) == 1
    _record(db, "ollama:nomic-embed-text@32")  # another dimension: another entry
    assert choose_embedder(db, "docs", "embedding", settings, cache=cache) is not made[0]
    assert len(cache) == 2


def test_configured_choice_reads_only_what_was_set(monkeypatch: pytest.MonkeyPatch) -> None:
    assert configured_choice(load(environ={})) is None  # embed_provider at its default: the recorded one
    given = load(environ={"DRSG_DIGEST_EMBED_PROVIDER": "ollama", "DRSG_DIGEST_EMBED_KEY_ENV": "MY_KEY"})
    assert configured_choice(given) == EmbedderChoice("ollama", None, None, "MY_KEY")


def test_named_embedder_and_same_space(db: Database, settings: Settings) -> None:
    _record(db, LOCAL)
    assert same_space(db, "docs", "embedding", named_embedder(None, settings))
    assert not same_space(db, "docs", "embedding", named_embedder(EmbedderChoice("ollama"), settings))
    assert not same_space(db, "docs", "other", named_embedder(None, settings))
