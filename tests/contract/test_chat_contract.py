"""The ChatModel port's contract (models/chat/base.py), held by every backend.

``ChatContract`` is the abstract suite; it is run against the OpenAI-compatible backend (the scripted
server on loopback, through the real ``openai`` client, misbehaving on purpose: rate limits, server
errors, dropped connections, bodies that are not chat completions) and against the scripted double
``drsg.models.testing`` ships.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from drsg.kernel.errors import ChatError, ChatUnavailable
from drsg.models.chat.base import ChatAnswer, ChatModel, Message
from drsg.models.chat.remote import RemoteChatModel
from drsg.models.service import RetryPolicy
from drsg.models.testing import ScriptedChatModel, count_tokens
from tests.support.fake_openai import FakeOpenAI, Reply, Request, chat_completion, error, malformed

#: a model whose every answer is ``reply(messages)``, stopping for ``finish_reason``
Factory = Callable[..., ChatModel]

PROMPT: list[Message] = [
    {"role": "system", "content": "You build a knowledge graph. Answer with one JSON object."},
    {"role": "user", "content": "Ada Lovelace wrote the first published algorithm."},
]


def transcript(messages: list[Message]) -> str:
    return " | ".join(f"{m['role']}: {m['content']}" for m in messages)


class ChatContract:
    """What every ChatModel does. A subclass provides three fixtures: ``answering`` (a factory of
    models that answer ``reply(messages)``), ``unavailable`` (a model whose service keeps failing)
    and ``garbled`` (a model that answers with something that is not an answer)."""

    @pytest.fixture
    def answering(self) -> Factory:
        raise NotImplementedError("a backend's suite provides its models")

    @pytest.fixture
    def unavailable(self) -> ChatModel:
        raise NotImplementedError("a backend's suite provides its models")

    @pytest.fixture
    def garbled(self) -> ChatModel:
        raise NotImplementedError("a backend's suite provides its models")

    def test_identity_is_name_and_model(self, answering: Factory) -> None:
        model = answering(transcript)
        assert isinstance(model, ChatModel) and model.name and model.model
        assert model.identity() == f"{model.name}:{model.model}"
        model.complete(PROMPT)
        assert model.identity() == f"{model.name}:{model.model}"

    def test_the_answer_is_the_models_text_with_its_cost(self, answering: Factory) -> None:
        model = answering(lambda messages: '{"entities": []}')
        answer = model.complete(PROMPT)
        assert isinstance(answer, ChatAnswer)
        assert (answer.text, answer.finish_reason, answer.cut_off) == ('{"entities": []}', "stop", False)
        assert type(answer.prompt_tokens) is int and answer.prompt_tokens > 0
        assert type(answer.completion_tokens) is int and answer.completion_tokens > 0
        counted = (model.calls, model.prompt_tokens, model.completion_tokens)
        assert counted == (1, answer.prompt_tokens, answer.completion_tokens)

    def test_the_model_reads_every_message_in_order(self, answering: Factory) -> None:
        model = answering(transcript)
        assert model.complete(PROMPT).text == transcript(PROMPT)
        turns = [*PROMPT, {"role": "assistant", "content": "{"}, {"role": "user", "content": "Repair it."}]
        assert model.complete(turns).text == transcript(turns)

    def test_the_counters_sum_every_answer(self, answering: Factory) -> None:
        model = answering(transcript)
        answers = [model.complete(PROMPT[: i + 1]) for i in range(2)] + [model.complete(PROMPT)]
        assert model.calls == 3
        assert model.prompt_tokens == sum(a.prompt_tokens for a in answers)
        assert model.completion_tokens == sum(a.completion_tokens for a in answers)

    def test_an_answer_cut_off_by_the_token_limit_says_so(self, answering: Factory) -> None:
        model = answering(lambda messages: '{"entities": [{"key": ', finish_reason="length")
        answer = model.complete(PROMPT)
        assert answer.cut_off and answer.finish_reason == "length" and answer.text == '{"entities": [{"key": '
        assert model.calls == 1

    def test_a_service_that_keeps_failing_is_unavailable_and_costs_nothing(self, unavailable: ChatModel) -> None:
        with pytest.raises(ChatUnavailable) as caught:
            unavailable.complete(PROMPT)
        assert str(caught.value) and "\n" not in str(caught.value)
        assert (unavailable.calls, unavailable.prompt_tokens, unavailable.completion_tokens) == (0, 0, 0)

    def test_an_answer_that_is_not_one_is_a_chat_error(self, garbled: ChatModel) -> None:
        with pytest.raises(ChatError) as caught:
            garbled.complete(PROMPT)
        assert not isinstance(caught.value, ChatUnavailable)  # asking again will not help
        assert str(caught.value) and "\n" not in str(caught.value)
        assert (garbled.calls, garbled.prompt_tokens, garbled.completion_tokens) == (0, 0, 0)

    def test_calls_from_many_threads_each_get_their_own_answer(self, answering: Factory) -> None:
        model = answering(transcript)
        prompts = [[{"role": "user", "content": f"question {i}: who wrote algorithm {i}?"}] for i in range(24)]
        with ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(model.complete, prompts))
        assert [a.text for a in answers] == [transcript(p) for p in prompts]
        assert model.calls == 24 and model.prompt_tokens == sum(a.prompt_tokens for a in answers)
        assert model.completion_tokens == sum(a.completion_tokens for a in answers)


FAST = RetryPolicy(attempts=3, base_delay=0.01, max_delay=0.02, max_wait=2)
KEY = "sk-contract-chat"


class TestRemoteChatModel(ChatContract):
    @pytest.fixture
    def fake(self) -> Iterator[FakeOpenAI]:
        with FakeOpenAI(api_key=KEY) as server:
            yield server

    def remote(self, fake: FakeOpenAI) -> RemoteChatModel:
        return RemoteChatModel("url", "fake-chat", fake.base_url, KEY, "MY_CHAT_KEY", retry=FAST)

    @pytest.fixture
    def answering(self, fake: FakeOpenAI) -> Factory:
        def make(reply: Callable[[list[Message]], str], finish_reason: str = "stop") -> ChatModel:
            def answer(request: Request) -> Reply:
                return Reply(json=chat_completion(reply(request.json["messages"]), finish_reason=finish_reason))

            fake.on("/chat/completions", answer)
            return self.remote(fake)

        return make

    @pytest.fixture(
        params=[
            error(429, retry_after=0.01),
            error(500),
            error(503, retry_after=60),  # asks to wait past the retry budget
            Reply(drop=True),
            Reply(json=chat_completion("cut short after its headers"), truncate=12),
        ],
        ids=["429", "500", "503 wait too long", "dropped", "truncated"],
    )
    def unavailable(self, fake: FakeOpenAI, request: pytest.FixtureRequest) -> ChatModel:
        fake.on("/chat/completions", lambda _: request.param)
        return self.remote(fake)

    @pytest.fixture(
        params=[
            malformed('{"choices": [{"mess'),
            Reply(json={"choices": []}),
            Reply(json={"object": "chat.completion"}),
            Reply(json={"choices": [{"message": {"role": "assistant", "content": ["not", "text"]}}]}),
            Reply(json=["a", "list"]),
            error(400, "unsupported parameter"),
        ],
        ids=["malformed JSON", "no choice", "no choices", "content not text", "not an object", "400"],
    )
    def garbled(self, fake: FakeOpenAI, request: pytest.FixtureRequest) -> ChatModel:
        fake.on("/chat/completions", lambda _: request.param)
        return self.remote(fake)

    def test_rate_limits_and_server_errors_are_retried_then_answered(self, fake: FakeOpenAI) -> None:
        fake.script("/chat/completions", error(429, retry_after=0.01), error(500), Reply(json=chat_completion("ok")))
        model = self.remote(fake)
        answer = model.complete(PROMPT)
        assert answer.text == "ok" and model.requests == 3 and model.calls == 1
        # the same prompt went out three times; only the answered request is counted
        assert model.prompt_tokens == answer.prompt_tokens == fake.usage["/chat/completions"]["prompt_tokens"] / 3

    def test_max_tokens_and_temperature_are_sent(self, answering: Factory, fake: FakeOpenAI) -> None:
        model = answering(transcript)
        model.complete(PROMPT)
        model.complete(PROMPT, max_tokens=50)
        sent = [(r.json["max_tokens"], r.json["temperature"]) for r in fake.requests_to("/chat/completions")]
        assert sent == [(8192, 0), (50, 0)]


class TestScriptedChatModel(ChatContract):
    @pytest.fixture
    def answering(self) -> Factory:
        def make(reply: Callable[[list[Message]], str], finish_reason: str = "stop") -> ChatModel:
            def answer(messages: list[Message]) -> ChatAnswer:
                text = reply(messages)
                prompt = sum(count_tokens(m["content"]) for m in messages)
                return ChatAnswer(text, finish_reason, prompt, count_tokens(text))

            return ScriptedChatModel(answer)

        return make

    @pytest.fixture
    def unavailable(self) -> ChatModel:
        return ScriptedChatModel([ChatUnavailable("the scripted service is down; try again later")])

    @pytest.fixture(params=["scripted error", "script ran out"])
    def garbled(self, request: pytest.FixtureRequest) -> ChatModel:
        if request.param == "scripted error":
            return ScriptedChatModel([ChatError("the scripted model answered without a choice")])
        return ScriptedChatModel([])

    def test_a_list_script_is_taken_in_order_and_ends(self) -> None:
        cut = ChatAnswer('{"a": ', "length", 3, 2)
        model = ScriptedChatModel(["first", ChatUnavailable("down"), cut])
        assert model.complete(PROMPT).text == "first" and model.remaining == 2
        with pytest.raises(ChatUnavailable, match="down"):
            model.complete(PROMPT)
        assert model.complete(PROMPT) is cut
        with pytest.raises(ChatError, match="no answer scripted for call 4"):
            model.complete(PROMPT)
        assert model.prompts == [PROMPT] * 4 and model.calls == 2 and model.remaining == 0
        prompt = sum(count_tokens(m["content"]) for m in PROMPT)
        assert (model.prompt_tokens, model.completion_tokens) == (prompt + 3, 3)

    def test_a_text_answer_costs_the_stand_in_tokenizers_count(self) -> None:
        answer = ScriptedChatModel(lambda messages: "Ada, Countess of Lovelace.").complete(PROMPT)
        assert (answer.prompt_tokens, answer.completion_tokens) == (sum(count_tokens(m["content"]) for m in PROMPT), 6)

    def test_the_recorded_prompts_are_copies(self) -> None:
        messages = [dict(m) for m in PROMPT]
        model = ScriptedChatModel(["ok"])
        model.complete(messages)
        messages[1]["content"] = "changed afterwards"
        assert model.prompts == [PROMPT]

    def test_a_single_string_is_not_a_script(self) -> None:
        with pytest.raises(TypeError, match="put one answer in a list"):
            ScriptedChatModel("one answer")
