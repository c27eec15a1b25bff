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
from drsg.pipeline.digest.calls import ModelCalls
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
    max_attempts: int = 6,
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
            keys = {n["id"]: n["external_key"] for n in result.results}
            if {keys[i] for i in result.answers} == set(item["answer"]):
                report.right += 1
            else:
                report.wrong.append(item["id"])
    report.seconds = time.perf_counter() - started
    return report


# ---------------------------------------------------------------------- the scripted provider


def has_typo(index: int, item: dict[str, Any]) -> bool:
    """Whether the scripted provider first answers question ``index`` with a misspelt edge type."""
    steps = [s for plan in item["plans"] for s in plan["steps"] if isinstance(s, dict)]
    return index % 4 == 3 and any("Expand" in s and s["Expand"]["edge_type"] for s in steps)


def scripted_answer(items: list[dict[str, Any]], messages: list[dict[str, str]]) -> str:
    """The reference answer to the question in ``messages``, turn by turn; every fourth question's
    first plan names an edge type with a typo, so it comes back once for repair."""
    asked = next(m["content"] for m in messages if m["role"] == "user" and m["content"].startswith(QUESTION_MARK))
    question = json.loads(asked.removeprefix(QUESTION_MARK))
    index, item = next((i, it) for i, it in enumerate(items) if it["question"] == question)
    turn = sum(1 for m in messages if m["role"] == "assistant")
    plans = item["plans"]
    if len(plans) > 1:
        if turn == 0:
            return json.dumps({"asks": [f"part {i + 1} of: {question}" for i in range(len(plans))]})
        turn -= 1
    if has_typo(index, item) and turn == 0:
        plans = json.loads(json.dumps(plans))
        for plan in plans:
            for step in plan["steps"]:
                if isinstance(step, dict) and "Expand" in step and step["Expand"]["edge_type"]:
                    step["Expand"]["edge_type"] += "_TYPO"
    return json.dumps({"plans": plans})


def run_scripted(items: list[dict[str, Any]] | None = None) -> Report:
    from tests.support.fake_openai import FakeOpenAI, Reply, chat_completion

    items = load_set() if items is None else items
    with FakeOpenAI() as fake:
        fake.on(
            "/chat/completions",
            lambda request: Reply(json=chat_completion(scripted_answer(items, request.json["messages"]))),
        )
        return run_eval(lambda: ModelCalls.for_chat("url", "fake-chat", fake.base_url, None, None), None, items)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.eval_ask", description=__doc__.split("\n")[0])
    parser.add_argument("--chat", default="openai", help="chat provider (openai, deepseek, qwen, ollama, url)")
    parser.add_argument("--model", default=None, help="chat model (default: the provider's)")
    parser.add_argument("--chat-url", default=None, help="base URL, with --chat url")
    parser.add_argument("--embed", default=None, help="embedder for the find_edge/find_entity tools (e.g. local)")
    parser.add_argument("--scripted", action="store_true", help="the scripted provider on loopback instead")
    parser.add_argument("--max-attempts", type=int, default=6)
    args = parser.parse_args(argv)
    items = load_set()
    if args.scripted:
        report = run_scripted(items)
        print(f"scripted provider, {len(items)} questions: {report.line()}")
        return 0 if report.right == report.asked else 1
    var, present = chat_key(args.chat)
    if not present:
        print(f"skipped: no key for the {args.chat} chat provider (set {var}); nothing was asked")
        return 0
    embedder = None
    if args.embed:
        from drsg.models.embedders import get_embedder

        embedder = get_embedder(args.embed)
    report = run_eval(
        lambda: ModelCalls.for_chat(args.chat, args.model, args.chat_url), embedder, items, args.max_attempts
    )
    print(f"{args.chat}:{args.model or 'default'}, {len(items)} questions: {report.line()}")
    if report.wrong:
        print("wrong: " + " ".join(report.wrong))
    return 0


if __name__ == "__main__":
    sys.exit(main())
