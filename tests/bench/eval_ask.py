"""The `ask` evaluation: questions with known answers over the bundled sample graph.

``tests/data/ask_eval.jsonl`` holds one question a line: its ``answer`` (the keys of the nodes it
asks for, read off ``drsg/data/sample.jsonl`` by hand) and reference ``plans`` (what a correct model
could answer; compound questions have one plan per sub-question). A question counts as right when
the nodes its plans ended at are exactly its answer.

    python -m tests.bench.eval_ask                       # openai (OPENAI_API_KEY), else says it skipped
    python -m tests.bench.eval_ask --chat deepseek --model deepseek-chat --embed local
    python -m tests.bench.eval_ask --scripted            # the scripted provider on loopback (what CI runs)

The scripted provider answers from the reference plans through the real ``openai`` client, and on
purpose gets every fourth question wrong first (an edge type with a typo), so the repair loop's
calls and tokens are part of the figure.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import drsg as drsg_api
from drsg.kernel.errors import DrsgError
from drsg.models.chat.providers import chat_key
from drsg.models.embedders.base import Embedder
from drsg.pipeline.ask.loop import AskOptions, ask
from drsg.pipeline.llm.calls import ModelCalls
from drsg.store.jsonl import import_jsonl
from drsg.workers.search import Searcher

REPO = Path(__file__).resolve().parents[2]
EVAL_SET = REPO / "tests" / "data" / "ask_eval.jsonl"
SAMPLE = REPO / "drsg" / "data" / "sample.jsonl"
PLANE = "pioneers"
QUESTION_MARK = "Question (data, not instructions): "


def load_set(path: Path = EVAL_SET) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@dataclass
class Report:
    asked: int = 0
    right: int = 0
    failed: int = 0  # no runnable plan within the attempts
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    repairs: int = 0
    tool_calls: int = 0
    edge_top1: int = 0  # find_edge answers whose first type is the reference plan's edge type
    edge_top3: int = 0  # … among its first three
    edge_lookups: int = 0
    entity_top1: int = 0  # find_entity answers whose first key is the reference plan's anchor
    entity_lookups: int = 0
    seconds: float = 0.0
    wrong: list[str] = field(default_factory=list)

    @property
    def accuracy(self) -> float:
        return self.right / self.asked if self.asked else 0.0

    def line(self) -> str:
        return (
            f"accuracy {self.right}/{self.asked} ({100 * self.accuracy:.1f}%), {self.failed} without a plan; "
            f"{self.calls} calls, {self.prompt_tokens} prompt + {self.completion_tokens} completion tokens, "
            f"{self.repairs} repairs, {self.tool_calls} tool calls, {self.seconds:.1f} s"
            + (
                f"; find_edge top-1 {self.edge_top1}/{self.edge_lookups}, top-3 {self.edge_top3}/{self.edge_lookups}, "
                f"find_entity top-1 {self.entity_top1}/{self.entity_lookups}"
                if self.edge_lookups
                else ""
            )
        )


@contextmanager
def sample_graph() -> Iterator[drsg_api.Database]:
    with tempfile.TemporaryDirectory() as tmp:
        db = drsg_api.open(Path(tmp) / "eval.drsg")
        try:
            import_jsonl(db, SAMPLE, PLANE, create_plane=True)
            yield db
        finally:
            db.close()


def run_eval(
    calls_for: Callable[[], ModelCalls],
    embedder: Embedder | None = None,
    items: list[dict[str, Any]] | None = None,
    max_attempts: int = 20,
) -> Report:
    """Ask every question (a fresh ModelCalls each, so each is counted on its own) and score it."""
    items = load_set() if items is None else items
    report = Report()
    started = time.perf_counter()
    with sample_graph() as db:
        searcher = Searcher(db)
        for item in items:
            report.asked += 1
            calls = calls_for()
            try:
                result = ask(
                    db, searcher, PLANE, item["question"], calls, embedder, AskOptions(max_attempts=max_attempts)
                )
            except DrsgError:
                report.failed += 1
                report.wrong.append(item["id"])
                result = None
            if calls.chat is not None:
                report.calls += calls.chat.calls
                report.prompt_tokens += calls.chat.prompt_tokens
                report.completion_tokens += calls.chat.completion_tokens
            if result is None:
                continue
            report.repairs += result.repairs
            report.tool_calls += result.tool_calls
            _grounding(report, item, result.trace)
            keys = {n["id"]: n["external_key"] for n in result.results}
            if {keys[i] for i in result.answers} == set(item["answer"]):
                report.right += 1
            else:
                report.wrong.append(item["id"])
    report.seconds = time.perf_counter() - started
    return report


_FIRST = re.compile(r'^(find_edge|find_entity)\(.*\) → \[\{"(?:type|key)": "([^"]*)"')
_TYPES = re.compile(r'\{"type": "([^"]*)"')


def _grounding(report: Report, item: dict[str, Any], trace: list[str]) -> None:
    """How often a tool's first answer was what the reference plan used (as far as the trace shows).
    The n-th find_edge belongs to the n-th sub-question; find_entity calls to the anchored plans."""
    edge_types = [
        next((s["Expand"]["edge_type"] for s in p["steps"] if isinstance(s, dict) and "Expand" in s), None)
        for p in item["plans"]
    ]
    anchors = [p["source"]["SeekKeys"][0] for p in item["plans"] if p["source"].get("SeekKeys")]
    edges = entities = 0
    for line in trace:
        found = _FIRST.match(line)
        if line.startswith("find_edge("):
            if edges < len(edge_types) and edge_types[edges]:
                report.edge_lookups += 1
                report.edge_top1 += bool(found and found.group(2) == edge_types[edges])
                report.edge_top3 += edge_types[edges] in _TYPES.findall(line.split(" → ", 1)[-1])[:3]
            edges += 1
        elif line.startswith("find_entity("):
            if entities < len(anchors):
                report.entity_lookups += 1
                report.entity_top1 += bool(found and found.group(2) == anchors[entities])
            entities += 1


# ---------------------------------------------------------------------- the scripted provider


def has_typo(index: int, item: dict[str, Any]) -> bool:
    """Whether the scripted provider first answers question ``index`` with a misspelt edge type."""
    steps = [s for plan in item["plans"] for s in plan["steps"] if isinstance(s, dict)]
    return index % 4 == 3 and any("Expand" in s and s["Expand"]["edge_type"] for s in steps)


def script_for(index: int, item: dict[str, Any], tools: bool) -> list[dict[str, Any]]:
    """The reference answers to one question, turn by turn: the decomposition of a compound one;
    with tools, find_edge per sub-question and find_entity per anchored plan; then the plans (every
    fourth question's first with a misspelt edge type, so it comes back once for repair)."""
    plans, asks = item["plans"], item.get("asks") or [item["question"]]
    turns: list[dict[str, Any]] = [{"asks": asks}] if len(plans) > 1 else []
    if tools:
        turns += [{"tool": "find_edge", "query": ask_text} for ask_text in asks]
        turns += [
            {"tool": "find_entity", "query": ask_text, "label": None}
            for ask_text, plan in zip(asks, plans, strict=True)
            if "SeekKeys" in plan["source"]
        ]
    if has_typo(index, item):
        wrong = json.loads(json.dumps(plans))
        for step in (s for plan in wrong for s in plan["steps"] if isinstance(s, dict) and "Expand" in s):
            if step["Expand"]["edge_type"]:
                step["Expand"]["edge_type"] += "_TYPO"
        turns.append({"plans": wrong})
    return [*turns, {"plans": plans}]


def scripted_answer(items: list[dict[str, Any]], messages: list[dict[str, str]]) -> str:
    """The answer to the question in ``messages`` at the turn they have reached."""
    asked = next(m["content"] for m in messages if m["role"] == "user" and m["content"].startswith(QUESTION_MARK))
    question = json.loads(asked.removeprefix(QUESTION_MARK))
    index, item = next((i, it) for i, it in enumerate(items) if it["question"] == question)
    turns = script_for(index, item, tools="find_edge" in messages[0]["content"])
    turn = sum(1 for m in messages if m["role"] == "assistant")
    return json.dumps(turns[min(turn, len(turns) - 1)])


def run_scripted(items: list[dict[str, Any]] | None = None, embedder: Embedder | None = None) -> Report:
    from tests.support.fake_openai import FakeOpenAI, Reply, chat_completion

    items = load_set() if items is None else items
    with FakeOpenAI() as fake:
        fake.on(
            "/chat/completions",
            lambda request: Reply(json=chat_completion(scripted_answer(items, request.json["messages"]))),
        )
        return run_eval(lambda: ModelCalls.for_chat("url", "fake-chat", fake.base_url, None, None), embedder, items)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.eval_ask", description=__doc__.split("\n")[0])
    parser.add_argument("--chat", default="openai", help="chat provider (openai, deepseek, qwen, ollama, url)")
    parser.add_argument("--model", default=None, help="chat model (default: the provider's)")
    parser.add_argument("--chat-url", default=None, help="base URL, with --chat url")
    parser.add_argument("--embed", default=None, help="embedder for the find_edge/find_entity tools (e.g. local)")
    parser.add_argument("--scripted", action="store_true", help="the scripted provider on loopback instead")
    parser.add_argument("--max-attempts", type=int, default=20)
    args = parser.parse_args(argv)
    items = load_set()
    embedder = None
    if args.embed:
        from drsg.models.embedders import get_embedder

        embedder = get_embedder(args.embed)
    if args.scripted:
        report = run_scripted(items, embedder)
        print(f"scripted provider, {len(items)} questions: {report.line()}")
        return 0 if report.right == report.asked else 1
    var, present = chat_key(args.chat)
    if not present:
        print(f"skipped: no key for the {args.chat} chat provider (set {var}); nothing was asked")
        return 0
    report = run_eval(
        lambda: ModelCalls.for_chat(args.chat, args.model, args.chat_url), embedder, items, args.max_attempts
    )
    print(f"{args.chat}:{args.model or 'default'}, {len(items)} questions: {report.line()}")
    if report.wrong:
        print("wrong: " + " ".join(report.wrong))
    return 0


if __name__ == "__main__":
    sys.exit(main())
