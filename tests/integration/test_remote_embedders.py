"""Remote embedders through the real ``openai`` client against the scripted server on loopback.

The server misbehaves on purpose: 429s and 500s with Retry-After, malformed and truncated bodies,
dropped connections, slow replies, wrong vector counts and sizes, NaN. Every bad answer must end in
a clear drsg error, never in vectors; the API key must never show up in an error or a log line.
"""

from __future__ import annotations

import base64
import json
import logging
import struct
import time
import traceback
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import openai
import pytest
import structlog

from drsg.kernel.errors import ConfigError
from drsg.models.embedders import (
    BadEmbeddingResponse,
    EmbedderError,
    EmbedderUnavailable,
    RemoteEmbedder,
    RetryPolicy,
    get_embedder,
)
from tests.support.fake_openai import (
    FakeOpenAI,
    Reply,
    Request,
    chat_completion,
    chat_stream,
    count_tokens,
    embeddings_body,
    error,
    fake_vector,
    malformed,
)

KEY = "sk-test-8c1f0e5b2d9a4e7f"
DIMS = 8
TEXTS = [
    "Ada Lovelace wrote the first published algorithm.",
    "Grace Hopper popularised machine-independent programming languages.",
    "Edsger Dijkstra found shortest paths in graphs.",
]


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(dims=DIMS, api_key=KEY) as server:
        yield server


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    for var in ("OPENAI_API_KEY", "DASHSCOPE_API_KEY", "DRSG_CONFIG"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.chdir(tmp_path)
    return tmp_path


class Sleeps(list[float]):
    """Records the backoff sleeps instead of sleeping (the retry tests stay fast)."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def make(fake: FakeOpenAI, **kw: object) -> tuple[RemoteEmbedder, Sleeps]:
    sleeps = Sleeps()
    policy = kw.pop("retry", RetryPolicy(attempts=4, base_delay=0.01, max_delay=0.05, max_wait=5))
    embedder = RemoteEmbedder(
        "openai",
        "text-embedding-3-small",
        fake.base_url,
        KEY,
        "OPENAI_API_KEY",
        retry=policy,  # type: ignore[arg-type]
        sleep=sleeps,
        rng=lambda: 1.0,
        **kw,  # type: ignore[arg-type]
    )
    return embedder, sleeps


def expected(texts: list[str]) -> np.ndarray:
    return np.array([fake_vector(t, DIMS) for t in texts], dtype=np.float32)


def got(vectors: list) -> np.ndarray:  # type: ignore[type-arg]
    return np.array([v.tolist() for v in vectors], dtype=np.float32)


# --------------------------------------------------------------------------- happy paths


def test_happy_path_through_get_embedder(fake: FakeOpenAI, env: Path) -> None:
    embedder = get_embedder("openai", base_url=fake.base_url)
    vectors = embedder.embed(TEXTS)
    assert np.array_equal(got(vectors), expected(TEXTS))
    assert embedder.dims == DIMS and embedder.identity() == "openai:text-embedding-3-small"
    (request,) = fake.requests_to("/embeddings")
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.json == {"model": "text-embedding-3-small", "input": TEXTS, "encoding_format": "float"}
    assert isinstance(embedder, RemoteEmbedder)
    assert embedder.tokens == sum(count_tokens(t) for t in TEXTS) == fake.usage["/embeddings"]["prompt_tokens"]


def test_batches_are_split_and_reassembled_in_order(fake: FakeOpenAI) -> None:
    texts = [f"Sentence number {i} about graphs and vectors." for i in range(10)]
    embedder, _ = make(fake, batch_size=4)
    assert np.array_equal(got(embedder.embed(texts)), expected(texts))
    assert [len(r.inputs) for r in fake.requests_to("/embeddings")] == [4, 4, 2]
    assert embedder.requests == 3


def test_items_out_of_order_are_put_back_by_index(fake: FakeOpenAI) -> None:
    def shuffled(req: Request) -> Reply:
        body = embeddings_body(req, DIMS)
        body["data"].reverse()
        return Reply(json=body)

    fake.script("/embeddings", shuffled)
    embedder, _ = make(fake)
    assert np.array_equal(got(embedder.embed(TEXTS)), expected(TEXTS))


def test_base64_vectors_are_accepted(fake: FakeOpenAI) -> None:
    def as_base64(req: Request) -> Reply:
        body = embeddings_body(req, DIMS)
        for item in body["data"]:
            item["embedding"] = base64.b64encode(struct.pack(f"<{DIMS}f", *item["embedding"])).decode()
        return Reply(json=body)

    fake.script("/embeddings", as_base64)
    embedder, _ = make(fake)
    assert np.array_equal(got(embedder.embed(TEXTS)), expected(TEXTS))


@pytest.mark.parametrize(("name", "var"), [("qwen", "DASHSCOPE_API_KEY"), ("ollama", None)])
def test_other_providers_use_their_key(name: str, var: str | None, env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeOpenAI(dims=DIMS, api_key=KEY if var else "no-key") as server:
        if var:
            monkeypatch.setenv(var, KEY)
        embedder = get_embedder(name, base_url=server.base_url)
        assert np.array_equal(got(embedder.embed(TEXTS)), expected(TEXTS))
        assert server.requests_to("/embeddings")[0].json["model"] == embedder.model


def test_url_embedder_with_key_from_drsg_toml(fake: FakeOpenAI, env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    (env / "drsg.toml").write_text(f'[llm]\nMY_SERVICE_KEY = "{KEY}"\n')
    embedder = get_embedder(fake.base_url, model="e5-small", key_env="MY_SERVICE_KEY")
    assert embedder.identity() == "url:e5-small"
    assert np.array_equal(got(embedder.embed(TEXTS)), expected(TEXTS))


# --------------------------------------------------------------------------- retries


def test_429_with_retry_after_then_success(fake: FakeOpenAI) -> None:
    fake.script("/embeddings", error(429, retry_after=0.2))
    embedder, sleeps = make(fake)
    assert np.array_equal(got(embedder.embed(TEXTS)), expected(TEXTS))
    assert sleeps == [0.2], "Retry-After must be honoured exactly"
    assert len(fake.requests_to("/embeddings")) == 2


def test_retry_after_ms_and_real_sleeping(fake: FakeOpenAI) -> None:
    fake.script("/embeddings", error(429, retry_after_ms=150), error(503, retry_after="0.1"))
    embedder = RemoteEmbedder("openai", "m", fake.base_url, KEY, retry=RetryPolicy(attempts=3, max_wait=2))
    started = time.monotonic()
    assert np.array_equal(got(embedder.embed(TEXTS)), expected(TEXTS))
    assert 0.25 <= time.monotonic() - started < 2
    times = [r.at for r in fake.requests_to("/embeddings")]
    assert times[1] - times[0] >= 0.15 and times[2] - times[1] >= 0.1


def test_500_then_success_backs_off(fake: FakeOpenAI) -> None:
    fake.script("/embeddings", error(500), error(502))
    embedder, sleeps = make(fake)
    assert np.array_equal(got(embedder.embed(TEXTS)), expected(TEXTS))
    assert sleeps == [0.01, 0.02]  # base_delay doubling (rng pinned to the top of the jitter)


def test_persistent_500_is_a_clear_error(fake: FakeOpenAI) -> None:
    fake.on("/embeddings", lambda req: error(500, "the model is overloaded"))
    embedder, sleeps = make(fake)
    with pytest.raises(EmbedderUnavailable) as caught:
        embedder.embed(TEXTS)
    message = str(caught.value)
    assert message == (
        f"the openai embedder at http://127.0.0.1:{fake.port} failed after 4 requests (last: HTTP 500); try again later"
    )
    assert len(fake.requests_to("/embeddings")) == 4 and len(sleeps) == 3


def test_retry_after_past_the_budget_gives_up_at_once(fake: FakeOpenAI) -> None:
    fake.script("/embeddings", error(429, retry_after=3600))
    embedder, sleeps = make(fake)
    with pytest.raises(EmbedderUnavailable, match=r"asked to wait 3600 s, past the 5 s retry budget"):
        embedder.embed(TEXTS)
    assert sleeps == [] and len(fake.requests_to("/embeddings")) == 1


def test_total_wait_is_capped(fake: FakeOpenAI) -> None:
    fake.on("/embeddings", lambda req: error(503))
    policy = RetryPolicy(attempts=50, base_delay=0.1, max_delay=0.4, max_wait=1.0)
    embedder, sleeps = make(fake, retry=policy)
    with pytest.raises(EmbedderUnavailable):
        embedder.embed(TEXTS)
    assert sum(sleeps) <= 1.0 and len(sleeps) < 10


def test_truncated_body_and_dropped_connection_are_retried(fake: FakeOpenAI) -> None:
    def truncated(req: Request) -> Reply:
        return Reply(json=embeddings_body(req, DIMS), truncate=40)

    fake.script("/embeddings", truncated, Reply(drop=True))
    embedder, sleeps = make(fake)
    assert np.array_equal(got(embedder.embed(TEXTS)), expected(TEXTS))
    assert len(sleeps) == 2 and len(fake.requests_to("/embeddings")) == 3


def test_slow_reply_past_the_timeout_is_retried(fake: FakeOpenAI) -> None:
    fake.script("/embeddings", lambda req: Reply(json=embeddings_body(req, DIMS), delay=3))
    embedder, sleeps = make(fake, timeout=0.3)
    started = time.monotonic()
    assert np.array_equal(got(embedder.embed(TEXTS)), expected(TEXTS))
    assert time.monotonic() - started < 2.5 and len(sleeps) == 1


def test_always_slow_is_a_timeout_error(fake: FakeOpenAI) -> None:
    fake.on("/embeddings", lambda req: Reply(json=embeddings_body(req, DIMS), delay=3))
    embedder, _ = make(fake, timeout=0.2, retry=RetryPolicy(attempts=2, base_delay=0.01, max_wait=1))
    with pytest.raises(EmbedderUnavailable, match=r"failed after 2 requests \(last: no answer within 0.2 s\)"):
        embedder.embed(TEXTS)


# --------------------------------------------------------------------------- bad answers


def _tampered(change):  # type: ignore[no-untyped-def]
    def handler(req: Request) -> Reply:
        body = embeddings_body(req, DIMS)
        change(body)
        return Reply(json=body)

    return handler


def _nan(body: dict) -> None:  # type: ignore[type-arg]
    body["data"][1]["embedding"][3] = float("nan")


def _mixed_dims(body: dict) -> None:  # type: ignore[type-arg]
    body["data"][2]["embedding"].append(0.5)


def _strings(body: dict) -> None:  # type: ignore[type-arg]
    body["data"][0]["embedding"] = [str(x) for x in body["data"][0]["embedding"]]


def _duplicate_index(body: dict) -> None:  # type: ignore[type-arg]
    body["data"][1]["index"] = 0


def _too_big(body: dict) -> None:  # type: ignore[type-arg]
    body["data"][0]["embedding"][0] = 1e300


@pytest.mark.parametrize(
    ("step", "problem"),
    [
        (malformed(), r"answered with malformed JSON \(\d+ bytes\)"),
        (malformed("<html>502 Bad Gateway</html>"), "malformed JSON"),
        (malformed('{"data": ' + "[" * 100_000 + "]" * 100_000 + "}"), "malformed JSON"),  # past Python's reader
        (Reply(json={"object": "list"}), "without a `data` list"),
        (Reply(json=[1, 2, 3]), "without a `data` list"),
        (
            lambda req: Reply(json={**embeddings_body(req, DIMS), "data": embeddings_body(req, DIMS)["data"][:2]}),
            "returned 2 vectors for 3 texts",
        ),
        (_tampered(_nan), r"non-finite numbers"),
        (_tampered(_too_big), r"non-finite numbers"),
        (_tampered(_mixed_dims), r"vectors of different sizes \(8, 9\)"),
        (_tampered(_strings), "something other than numbers"),
        (_tampered(_duplicate_index), "bad or repeated index 0"),
        (lambda req: Reply(json={"data": [{"index": i} for i in range(3)]}), "without an embedding"),
    ],
)
def test_bad_answers_are_errors_never_vectors(fake: FakeOpenAI, step: object, problem: str) -> None:
    fake.script("/embeddings", step)  # type: ignore[arg-type]
    embedder, sleeps = make(fake)
    with pytest.raises(BadEmbeddingResponse, match=problem) as caught:
        embedder.embed(TEXTS)
    assert str(caught.value).startswith(f"the openai embedder at http://127.0.0.1:{fake.port} ")
    assert str(caught.value).endswith("; no vectors were stored")
    assert len(fake.requests_to("/embeddings")) == 1 and sleeps == []  # a wrong answer is not retried


def test_vector_size_must_not_change_between_batches(fake: FakeOpenAI) -> None:
    fake.script("/embeddings", lambda req: Reply(json=embeddings_body(req, DIMS)))
    fake.script("/embeddings", lambda req: Reply(json=embeddings_body(req, DIMS + 4)))
    embedder, _ = make(fake, batch_size=2)
    with pytest.raises(BadEmbeddingResponse, match="returned 12-dim vectors where 8 dims were expected"):
        embedder.embed(TEXTS)
    embedder, _ = make(fake, dimensions=16)  # asked for 16, the fake gives 8
    assert embedder.identity() == "openai:text-embedding-3-small@16"
    with pytest.raises(BadEmbeddingResponse, match="returned 8-dim vectors where 16 dims were expected"):
        embedder.embed(TEXTS)
    assert fake.requests_to("/embeddings")[-1].json["dimensions"] == 16


def test_rejected_request_is_not_retried(fake: FakeOpenAI) -> None:
    fake.script("/embeddings", error(400, "input[1] is too long: 9000 tokens, the limit is 8192"))
    embedder, sleeps = make(fake)
    with pytest.raises(EmbedderError, match=r"rejected the request \(HTTP 400\) \(input\[1\] is too long"):
        embedder.embed(TEXTS)
    assert sleeps == []
    fake.script("/embeddings", error(404, "The model `nope` does not exist"))
    with pytest.raises(EmbedderError, match=r"answered 404 .* check the model name 'text-embedding-3-small'"):
        embedder.embed(TEXTS)


# --------------------------------------------------------------------------- the key stays secret


def test_refused_key_names_the_variable_and_never_the_key(fake: FakeOpenAI, env: Path) -> None:
    fake.script("/embeddings", error(401, f"Incorrect API key provided: {KEY}. Find your key at ..."))
    embedder = get_embedder("openai", base_url=fake.base_url)
    with pytest.raises(ConfigError) as caught:
        embedder.embed(TEXTS)
    message = str(caught.value)
    assert "refused the key (HTTP 401)" in message and "check OPENAI_API_KEY" in message
    assert "Incorrect API key provided: ***" in message
    assert KEY not in message and KEY not in "".join(traceback.format_exception(caught.value))


def test_key_never_appears_in_errors_or_logs(
    fake: FakeOpenAI, env: Path, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    fake.script("/embeddings", error(429, f"slow down {KEY}", retry_after=0.01), malformed(KEY))
    fake.on("/embeddings", lambda req: error(500, f"key {KEY} broke us"))
    embedder = get_embedder("openai", base_url=fake.base_url, retry=RetryPolicy(attempts=2, base_delay=0.01))
    caplog.set_level(logging.DEBUG)
    seen: list[str] = [repr(embedder), str(vars(embedder).get("base_url"))]
    with structlog.testing.capture_logs() as logs:
        for _ in range(2):
            try:
                embedder.embed(TEXTS)
            except EmbedderError as exc:
                seen += [str(exc), repr(exc), "".join(traceback.format_exception(exc))]
    assert len(seen) == 2 + 2 * 3
    assert logs and logs[0]["event"] == "embedder retry" and logs[0]["problem"] == "HTTP 429"
    assert "HTTP Request: POST" in caplog.text  # the client libraries did log, at debug level
    seen += [json.dumps(logs), caplog.text, *capsys.readouterr()]
    leaked = [text for text in seen if KEY in text]
    assert not leaked


def test_missing_key_message(env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(ConfigError, match=r"^the openai embedder needs OPENAI_API_KEY; export it or put it under"):
        get_embedder("openai")


# --------------------------------------------------------------------------- the fake server itself (reused for chat)


def test_fake_serves_chat_and_counts_tokens(fake: FakeOpenAI) -> None:
    fake.script("/chat/completions", Reply(json=chat_completion("Paris is the capital of France.")))
    fake.script(
        "/chat/completions",
        Reply(json=chat_completion(None, tool_calls=[{"name": "find_entity", "arguments": {"q": "x"}}])),
    )
    client = openai.OpenAI(base_url=fake.base_url, api_key=KEY, max_retries=0)
    messages = [{"role": "user", "content": "What is the capital of France?"}]
    answer = client.chat.completions.create(model="m", messages=messages)  # type: ignore[arg-type]
    assert answer.choices[0].message.content == "Paris is the capital of France."
    assert answer.usage is not None and (answer.usage.prompt_tokens, answer.usage.completion_tokens) == (7, 7)
    tools = client.chat.completions.create(model="m", messages=messages)  # type: ignore[arg-type]
    call = tools.choices[0].message.tool_calls[0]  # type: ignore[index]
    assert call.function.name == "find_entity" and json.loads(call.function.arguments) == {"q": "x"}  # type: ignore[union-attr]
    assert fake.usage["/chat/completions"] == {"requests": 2, "prompt_tokens": 14, "completion_tokens": 7}
    with pytest.raises(openai.BadRequestError, match="nothing scripted"):
        client.chat.completions.create(model="m", messages=messages)  # type: ignore[arg-type]


def test_fake_streams_chat(fake: FakeOpenAI) -> None:
    fake.script("/chat/completions", chat_stream(["Hel", "lo", " there"], event_delay=0.01))
    client = openai.OpenAI(base_url=fake.base_url, api_key=KEY, max_retries=0)
    stream = client.chat.completions.create(
        model="m",
        messages=[{"role": "user", "content": "hi"}],
        stream=True,
    )
    pieces = [c.choices[0].delta.content for c in stream if c.choices and c.choices[0].delta.content]
    assert "".join(pieces) == "Hello there"
    assert fake.pending("/chat/completions") == 0


def test_fake_refuses_a_wrong_key(fake: FakeOpenAI) -> None:
    client = openai.OpenAI(base_url=fake.base_url, api_key="sk-wrong", max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        client.embeddings.create(model="m", input=["x"])
    assert fake.requests[0].headers["authorization"] == "Bearer sk-wrong"
