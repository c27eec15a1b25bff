"""Chat models through the real `openai` client against the scripted server: presets, keys,
retries, timeouts and answers that are not what a chat completion should be."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from drsg.kernel import settings as settings_mod
from drsg.kernel.errors import ChatError, ChatUnavailable, ConfigError
from drsg.models.chat.providers import CHAT_PRESETS, chat_identity, get_chat
from drsg.models.chat.remote import RemoteChatModel
from drsg.models.service import RetryPolicy
from tests.support.fake_openai import FakeOpenAI, Reply, chat_completion, error, malformed

KEY = "sk-chat-secret-123"
FAST = RetryPolicy(attempts=4, base_delay=0.01, max_delay=0.05, max_wait=5)
HELLO = [{"role": "user", "content": "hello there"}]


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(api_key=KEY) as server:
        yield server


@pytest.fixture
def no_keys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for var in ("OPENAI_API_KEY", "DEEPSEEK_API_KEY", "DASHSCOPE_API_KEY", "DRSG_CONFIG", "MY_CHAT_KEY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def chat(fake: FakeOpenAI, **kw: object) -> RemoteChatModel:
    return RemoteChatModel("url", "fake-chat", fake.base_url, KEY, "MY_CHAT_KEY", retry=kw.pop("retry", FAST), **kw)  # type: ignore[arg-type]


def test_presets_match_upstream(no_keys: Path) -> None:
    assert {n: (p.base_url, p.key_env, p.model) for n, p in CHAT_PRESETS.items() if n != "url"} == {
        "openai": ("https://api.openai.com/v1", "OPENAI_API_KEY", "gpt-4o-mini"),
        "deepseek": ("https://api.deepseek.com", "DEEPSEEK_API_KEY", "deepseek-chat"),
        "qwen": ("https://dashscope.aliyuncs.com/compatible-mode/v1", "DASHSCOPE_API_KEY", "qwen-plus"),
        "ollama": ("http://localhost:11434/v1", None, "llama3.1"),
    }
    assert chat_identity("deepseek") == "deepseek:deepseek-chat"
    assert chat_identity("http://127.0.0.1:9/v1", "m") == "url:m"
    assert get_chat("ollama").identity() == "ollama:llama3.1"  # no key needed


def test_missing_keys_and_bad_choices_are_one_line_config_errors(no_keys: Path) -> None:
    cases = {
        ("deepseek", None, None, None): "the deepseek chat model needs DEEPSEEK_API_KEY; export it or put it under "
        "[llm] in drsg.toml",
        ("gemini", None, None, None): "unknown chat provider 'gemini'; choose one of openai, deepseek, qwen",
        ("url", None, None, None): "the url chat provider needs a base URL (--chat-url",
        ("url", None, "http://h/v1", None): "the url chat provider needs a model name (--model)",
        ("ftp://h", "m", None, None): "unknown chat provider",
        ("openai", None, None, "DRSG_TOKEN"): "one of drsg's own settings",
        ("openai", None, None, "BAD VAR"): "is not an environment variable name",
    }
    for (name, model, url, key_env), message in cases.items():
        with pytest.raises(ConfigError, match=None) as caught:
            get_chat(name, model, url, key_env)
        assert message in str(caught.value) and "\n" not in str(caught.value)


def test_keys_come_from_the_environment_then_the_llm_table(no_keys: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (no_keys / "drsg.toml").write_text('[llm]\nDEEPSEEK_API_KEY = "sk-from-config"\n[digest]\nchat = "deepseek"\n')
    loaded = settings_mod.load(str(no_keys / "drsg.toml"))
    assert loaded["digest.chat"] == "deepseek" and loaded["digest.mode"] == "fine"
    assert get_chat("deepseek", settings=loaded)._service._secret == "sk-from-config"
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-from-env")
    assert get_chat("deepseek", settings=loaded)._service._secret == "sk-from-env"
    (no_keys / "bad.toml").write_text('[digest]\nmode = "extreme"\n')
    with pytest.raises(ConfigError, match=r"digest\.mode"):
        settings_mod.load(str(no_keys / "bad.toml"))


def test_answer_and_token_accounting(fake: FakeOpenAI) -> None:
    model = chat(fake)
    fake.script("/chat/completions", Reply(json=chat_completion('{"ok": true}')))
    answer = model.complete(HELLO)
    assert answer.text == '{"ok": true}' and answer.finish_reason == "stop" and not answer.cut_off
    sent = fake.requests_to("/chat/completions")[0]
    assert sent.json["temperature"] == 0 and sent.json["max_tokens"] == 8192 and sent.json["model"] == "fake-chat"
    assert sent.headers["authorization"] == f"Bearer {KEY}"
    usage = fake.usage["/chat/completions"]
    assert (model.prompt_tokens, model.completion_tokens) == (usage["prompt_tokens"], usage["completion_tokens"])
    fake.script("/chat/completions", Reply(json=chat_completion('{"a": ', finish_reason="length")))
    assert model.complete(HELLO).cut_off


def test_429_500_and_dropped_connections_are_retried(fake: FakeOpenAI) -> None:
    model = chat(fake, retry=RetryPolicy(attempts=5, base_delay=0.01, max_delay=0.05, max_wait=5))
    fake.script(
        "/chat/completions",
        error(429, retry_after=0.05),
        error(500),
        Reply(drop=True),
        Reply(json=chat_completion("cut short, after headers that promised more"), truncate=20),
        Reply(json=chat_completion("fine")),
    )
    assert model.complete(HELLO).text == "fine"
    assert model.requests == 5 and model.calls == 1


def test_a_slow_model_times_out_and_gives_up_with_a_clear_error(fake: FakeOpenAI) -> None:
    model = chat(fake, timeout=0.3, retry=RetryPolicy(attempts=2, base_delay=0.01, max_wait=1))
    fake.script(
        "/chat/completions",
        Reply(json=chat_completion("late"), delay=1.5),
        Reply(json=chat_completion("late"), delay=1.5),
    )
    start = time.monotonic()
    with pytest.raises(ChatUnavailable) as caught:
        model.complete(HELLO)
    assert time.monotonic() - start < 1.5
    assert "failed after 2 requests (last: no answer within 0.3 s); try again later" in str(caught.value)


def test_refusals_fail_at_once_and_never_show_the_key(fake: FakeOpenAI) -> None:
    model = chat(fake)
    fake.script("/chat/completions", error(401, f"bad key {KEY}"))
    with pytest.raises(ConfigError) as refused:
        model.complete(HELLO)
    assert "refused the key (HTTP 401)" in str(refused.value) and "check MY_CHAT_KEY" in str(refused.value)
    assert KEY not in str(refused.value)
    fake.script("/chat/completions", error(404, "no such model"))
    with pytest.raises(ChatError, match="check the model name 'fake-chat'"):
        model.complete(HELLO)
    assert len(fake.requests_to("/chat/completions")) == 2


def test_envelopes_that_are_not_chat_completions_are_errors(fake: FakeOpenAI) -> None:
    model = chat(fake)
    fake.script("/chat/completions", malformed('{"choices": [{"mess'), Reply(json={"choices": []}))
    with pytest.raises(ChatError, match="malformed body"):
        model.complete(HELLO)
    with pytest.raises(ChatError, match="without a choice"):
        model.complete(HELLO)
