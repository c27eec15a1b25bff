"""`plane.ask` over JSON-RPC: a real `drsg serve` process, the real `openai` client inside it, and
the scripted model on loopback in this process."""

from __future__ import annotations

import json

from tests.support.fake_openai import FakeOpenAI, Reply, chat_completion
from tests.support.sample import ADA_WROTE, WORKED_AT
from tests.support.server import RunningServer


def script(fake: FakeOpenAI, *answers: object) -> None:
    fake.script("/chat/completions", *[Reply(json=chat_completion(json.dumps(a))) for a in answers])


def test_ask_returns_upstreams_result_and_writes_nothing(served: RunningServer, fake: FakeOpenAI) -> None:
    head = served.head()
    script(fake, {"asks": ["where?", "what?"]}, {"plans": [WORKED_AT, ADA_WROTE]})
    result = served.call("plane.ask", {"plane": "pioneers", "question": "where did people work, what did ada write?"})
    assert {"plans", "ran", "attempts", "results", "edges", "count", "trace"} <= set(result)
    assert result["ran"] is True and result["attempts"] == 2 and len(result["plans"]) == 2
    assert result["count"] == len(result["results"]) == 10  # 4 places + analytical engine + 5 people
    assert {e["type"] for e in result["edges"]} == {"WORKED_AT", "WROTE_ABOUT"}
    assert result["trace"][1] == "decompose → 2 ask(s): where? | what?"
    assert result["usage"]["calls"] == 2 and result["usage"]["prompt_tokens"] > 0
    assert served.head() == head


def test_dry_run_and_the_failure_message(served: RunningServer, fake: FakeOpenAI) -> None:
    script(fake, {"plan": WORKED_AT})
    dry = served.call("plane.ask", {"plane": "pioneers", "question": "where?", "dry_run": True})
    assert dry["ran"] is False and dry["results"] == [] and dry["count"] == 0
    script(fake, "no idea", "still no idea")
    error = served.error("plane.ask", {"plane": "pioneers", "question": "?", "max_attempts": 2})
    assert error["code"] == -32000
    assert error["message"].startswith("couldn't produce a runnable plan after 2 steps: the answer is not one JSON")
    assert error["data"]["trace"][1].startswith("answer refused: the answer is not one JSON object")


def test_a_request_never_picks_a_url_a_key_or_an_embedding_model(served: RunningServer, fake: FakeOpenAI) -> None:
    calls = len(fake.requests_to("/chat/completions"))
    for extra in ({"provider": "http://evil.example/v1"}, {"embed_model": "x"}, {"api_key": "sk-x"}):
        error = served.error("plane.ask", {"plane": "pioneers", "question": "who?"} | extra)
        assert error["code"] == -32602, (extra, error)
    assert len(fake.requests_to("/chat/completions")) == calls


def test_embed_provider_turns_the_tools_on_with_the_servers_embedder(served: RunningServer, fake: FakeOpenAI) -> None:
    script(fake, {"tool": "find_edge", "query": "worked at"}, {"plan": WORKED_AT})
    result = served.call("plane.ask", {"plane": "pioneers", "question": "where?", "embed_provider": "local"})
    assert result["usage"]["tool_calls"] == 1 and result["trace"][1].startswith('find_edge("worked at") → [{"type": ')
    script(fake, {"tool": "find_edge", "query": "worked at"}, {"plan": WORKED_AT})
    without = served.call("plane.ask", {"plane": "pioneers", "question": "where?"})
    assert without["usage"]["refused"] == 1 and without["usage"]["tool_calls"] == 0
