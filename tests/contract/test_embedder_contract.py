"""The Embedder port's contract (models/embedders/base.py), held by every backend.

``EmbedderContract`` is the abstract suite; it is run against the local MiniLM, an OpenAI-compatible
service (the scripted server on loopback, through the real ``openai`` client, in batches of two so
every call spans several requests) and the in-memory double ``drsg.models.testing`` ships. The texts
are real: paragraphs of the Dr Strange manual, in English and in Chinese.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from drsg.kernel.errors import BadValue
from drsg.kernel.values import Vector
from drsg.models.embedders import Embedder, LocalEmbedder, RemoteEmbedder, RetryPolicy
from drsg.models.testing import BagOfWordsEmbedder
from tests.support.fake_openai import FakeOpenAI, fake_vector

DATA = Path(__file__).resolve().parents[1] / "data"


def paragraphs(name: str, count: int) -> list[str]:
    lines = [line.strip() for line in (DATA / name).read_text().splitlines()]
    return [line for line in lines if len(line) > 60][:count]


TEXTS = paragraphs("ai_native_en.txt", 7) + paragraphs("ai_native_zh.txt", 2)
BAD_INPUTS: list[object] = ["one string, not a list", [42], ["fine", ""], ["fine", "  \n\t"], [None], [b"bytes"]]


def matrix(vectors: list[Vector]) -> np.ndarray:
    return np.stack([np.frombuffer(v.data, dtype="<f4") for v in vectors])


class EmbedderContract:
    """What every Embedder does; a subclass provides the backend as the ``embedder`` fixture."""

    #: how close two computations of one vector must be (batching may change float rounding)
    atol = 1e-5

    @pytest.fixture
    def embedder(self) -> Embedder:
        raise NotImplementedError("a backend's suite provides its embedder")

    def test_is_an_embedder_with_a_stable_identity(self, embedder: Embedder) -> None:
        assert isinstance(embedder, Embedder)
        identity = embedder.identity()
        assert isinstance(identity, str) and identity.strip() == identity and "\n" not in identity
        assert identity.startswith(f"{embedder.name}:{embedder.model}") and embedder.name and embedder.model
        embedder.embed(TEXTS[:2])
        assert embedder.identity() == identity  # answers never change which vector space this is

    def test_one_finite_float32_vector_per_text_of_the_announced_size(self, embedder: Embedder) -> None:
        assert embedder.dims is None or embedder.dims > 0
        vectors = embedder.embed(TEXTS)
        assert len(vectors) == len(TEXTS) and all(isinstance(v, Vector) for v in vectors)
        assert {len(v.data) % 4 for v in vectors} == {0}
        assert {v.dims for v in vectors} == {embedder.dims}  # known once it answered, and the same for all
        assert np.isfinite(matrix(vectors)).all()

    def test_order_is_preserved(self, embedder: Embedder) -> None:
        forward = matrix(embedder.embed(TEXTS))
        backward = matrix(embedder.embed(TEXTS[::-1]))
        assert np.allclose(forward, backward[::-1], atol=self.atol)

    def test_a_batch_equals_its_texts_one_by_one(self, embedder: Embedder) -> None:
        batched = matrix(embedder.embed(TEXTS))
        alone = np.stack([matrix(embedder.embed([text]))[0] for text in TEXTS])
        assert np.allclose(batched, alone, atol=self.atol)

    def test_the_same_text_gets_the_same_vector(self, embedder: Embedder) -> None:
        first = embedder.embed([TEXTS[0], TEXTS[1], TEXTS[0]])
        assert first[0].data == first[2].data
        assert [v.data for v in embedder.embed(TEXTS[:2])] == [v.data for v in first[:2]]

    def test_different_texts_get_different_vectors(self, embedder: Embedder) -> None:
        m = matrix(embedder.embed(TEXTS))
        assert len({row.tobytes() for row in m}) == len(TEXTS)

    def test_no_text_no_vector(self, embedder: Embedder) -> None:
        assert embedder.embed([]) == []

    @pytest.mark.parametrize("bad", BAD_INPUTS, ids=repr)
    def test_bad_input_is_refused_with_bad_value(self, embedder: Embedder, bad: object) -> None:
        with pytest.raises(BadValue) as caught:
            embedder.embed(bad)  # type: ignore[arg-type]
        message = str(caught.value)
        assert message and "\n" not in message and "text" in message

    def test_long_and_unusual_texts_are_embedded(self, embedder: Embedder) -> None:
        texts = [" ".join(TEXTS) * 3, "—", "naïve café façade", "😀 emoji", "x"]
        vectors = embedder.embed(texts)
        assert len(vectors) == len(texts) and np.isfinite(matrix(vectors)).all()


class TestLocalEmbedder(EmbedderContract):
    @pytest.fixture
    def embedder(self) -> LocalEmbedder:
        return LocalEmbedder(batch_size=3)  # the model itself loads once per process


class TestRemoteEmbedder(EmbedderContract):
    atol = 0.0  # the service's numbers come back exactly

    @pytest.fixture
    def fake(self) -> Iterator[FakeOpenAI]:
        with FakeOpenAI(dims=8, api_key="sk-contract") as server:
            yield server

    @pytest.fixture
    def embedder(self, fake: FakeOpenAI) -> RemoteEmbedder:
        retry = RetryPolicy(attempts=2, base_delay=0.01, max_delay=0.01, max_wait=1)
        return RemoteEmbedder("url", "fake-embedding", fake.base_url, "sk-contract", batch_size=2, retry=retry)

    def test_the_vectors_are_the_services(self, embedder: RemoteEmbedder, fake: FakeOpenAI) -> None:
        served = np.array([fake_vector(text, 8) for text in TEXTS], dtype=np.float32)
        assert np.array_equal(matrix(embedder.embed(TEXTS)), served)
        assert [len(r.inputs) for r in fake.requests_to("/embeddings")] == [2, 2, 2, 2, 1]

    def test_refused_input_costs_no_request(self, embedder: RemoteEmbedder, fake: FakeOpenAI) -> None:
        for bad in BAD_INPUTS:
            with pytest.raises(BadValue):
                embedder.embed(bad)  # type: ignore[arg-type]
        assert embedder.embed([]) == [] and fake.requests == []


class TestBagOfWordsEmbedder(EmbedderContract):
    atol = 0.0  # one text, one computation

    @pytest.fixture
    def embedder(self) -> BagOfWordsEmbedder:
        return BagOfWordsEmbedder(dims=64)

    def test_texts_sharing_words_are_closer(self, embedder: BagOfWordsEmbedder) -> None:
        anchor, paraphrase, unrelated = matrix(
            embedder.embed(["the vector index on Doc", "a vector index for Doc nodes", "interest rates rose"])
        )
        assert float(anchor @ paraphrase) > float(anchor @ unrelated)
        assert np.allclose(np.linalg.norm(matrix(embedder.embed(TEXTS)), axis=1), 1.0, atol=1e-6)

    def test_records_its_batches(self, embedder: BagOfWordsEmbedder) -> None:
        embedder.embed(TEXTS[:2])
        embedder.embed([])
        embedder.embed(TEXTS[2:3])
        assert embedder.batches == [TEXTS[:2], TEXTS[2:3]]
        assert embedder.identity() == "testing:bag-of-words-64"
