"""The `ask` evaluation set through the scripted provider (the real `openai` client on loopback)."""

from __future__ import annotations

import pytest

from tests.bench import eval_ask


def test_the_set_is_big_enough_and_well_formed() -> None:
    items = eval_ask.load_set()
    assert len(items) >= 50
    assert len({item["id"] for item in items}) == len({item["question"] for item in items}) == len(items)
    assert sum(len(item["plans"]) > 1 for item in items) >= 3  # compound questions, for decomposition
    assert all(item["answer"] for item in items)


def test_every_question_is_answered_right_with_its_repairs_counted() -> None:
    items = eval_ask.load_set()
    report = eval_ask.run_scripted(items)
    assert report.wrong == [] and report.right == report.asked == len(items)
    compound = sum(len(item["plans"]) > 1 for item in items)
    typos = sum(eval_ask.has_typo(i, item) for i, item in enumerate(items))
    assert report.repairs == typos > 0
    assert report.calls == len(items) + compound + typos
    assert report.prompt_tokens > 0 and report.completion_tokens > 0


def test_a_wrong_answer_is_scored_wrong() -> None:
    every = eval_ask.load_set()
    items = every[:6]  # one-node answers, each answered with a whole label's scan: never the same set
    shifted = [dict(item, plans=every[26 + i]["plans"]) for i, item in enumerate(items)]
    report = eval_ask.run_scripted(shifted)
    assert report.right == 0 and len(report.wrong) == len(items)


def test_the_command_skips_without_a_key(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("DEEPSEEK_API_KEY", raising=False)
    assert eval_ask.main(["--chat", "deepseek"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("skipped: no key for the deepseek chat provider (set DEEPSEEK_API_KEY)")
    assert len(out.splitlines()) == 1


def test_with_tools_the_grounding_is_measured() -> None:
    from drsg.models.embedders import get_embedder

    every = eval_ask.load_set()
    items = every[:8] + [item for item in every if len(item["plans"]) > 1]
    report = eval_ask.run_scripted(items, get_embedder("local"))
    assert report.wrong == [] and report.right == len(items)
    scripted_tools = sum(
        "tool" in turn for i, item in enumerate(items) for turn in eval_ask.script_for(i, item, tools=True)
    )
    assert report.tool_calls == scripted_tools
    anchored = sum("SeekKeys" in plan["source"] for item in items for plan in item["plans"])
    assert report.entity_lookups == anchored and 0 < report.entity_top1 <= anchored
    assert report.edge_lookups > 0 and report.edge_top1 <= report.edge_top3 <= report.edge_lookups
