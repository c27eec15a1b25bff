"""Pass 3 — per-entity refinement (super): re-read each entity with every passage that mentions it.

Eligibility is model-free: a chunk mentions an entity when it holds all the tokens of its key
(English keyword analysis, so stemming and stopwords apply); an entity is eligible when some
mentioning chunk did not produce it — otherwise there is nothing new to read and it is skipped.
The model sees the key, its kind, its relations, its current properties and the passages (the
producing and the fresh ones, in document order), and answers ``{"properties", "description"}``.
Answers are applied in a fixed order (degree descending, fewer visible properties first, key)
whatever order they arrive in; a failed call leaves its entity untouched.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from typing import Any

from drsg.kernel.errors import ChatError
from drsg.pipeline.digest.draft import Draft
from drsg.pipeline.digest.prompts import refine_messages
from drsg.pipeline.digest.schema import clean_props, clean_text
from drsg.pipeline.llm.calls import ModelCalls
from drsg.workers.analysis import analyze


@dataclass
class RefineReport:
    eligible: int = 0
    refined: int = 0
    skipped_nothing_new: int = 0
    failed: int = 0
    props_added: int = 0
    props_revised: int = 0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def refine(
    draft: Draft,
    chunks: list[str],
    calls: ModelCalls,
    concurrency: int,
    progress: Callable[[int, int], None] | None = None,
) -> RefineReport:
    report = RefineReport()
    chunk_tokens = [set(analyze(text, "english")) for text in chunks]
    degree: dict[str, int] = {}
    for rel in draft.relations:
        degree[rel.src] = degree.get(rel.src, 0) + 1
        degree[rel.dst] = degree.get(rel.dst, 0) + 1
    work: list[tuple[str, list[int]]] = []
    for key, entity in draft.entities.items():
        tokens = set(analyze(key, "english"))
        mentions = {i for i, seen in enumerate(chunk_tokens) if tokens and tokens <= seen}
        if not mentions - entity.chunks:
            report.skipped_nothing_new += 1
            continue
        work.append((key, sorted(entity.chunks | mentions)))
    work.sort(key=lambda item: (-degree.get(item[0], 0), _visible(draft.entities[item[0]].props), item[0]))
    report.eligible = len(work)
    messages = [_messages(draft, key, [chunks[i] for i in context if i < len(chunks)]) for key, context in work]
    answers: list[dict[str, Any] | None] = []
    with ThreadPoolExecutor(max_workers=max(1, min(concurrency, len(work) or 1))) as pool:
        for answer in pool.map(lambda m: _ask(calls, m), messages):
            answers.append(answer)
            if progress is not None:
                progress(len(answers), len(messages))
    for (key, _), answer in zip(work, answers, strict=True):
        if answer is None:
            report.failed += 1
            continue
        entity = draft.entities[key]
        for name, value in clean_props(answer.get("properties")).items():
            if name not in entity.props:
                report.props_added += 1
            elif entity.props[name] != value:
                report.props_revised += 1
            entity.props[name] = value
        entity.description = clean_text(answer.get("description")) or entity.description
        report.refined += 1
    return report


def _ask(calls: ModelCalls, messages: list[dict[str, str]]) -> dict[str, Any] | None:
    try:
        return calls.ask_json("refine", messages)
    except ChatError:
        return None


def _messages(draft: Draft, key: str, passages: list[str]) -> list[dict[str, str]]:
    entity = draft.entities[key]
    relations = [f"{r.src} --{r.type}--> {r.dst}" for r in draft.relations if key in (r.src, r.dst)]
    props = [f"{name}: {str(value)[:200]}" for name, value in entity.props.items() if not name.startswith("_")]
    facts = f"Kind: {entity.label or 'Entity'}\nRelations:\n" + "\n".join(relations)
    facts += "\nProperties:\n" + "\n".join(props)
    if entity.description:
        facts += f"\nDescription: {entity.description}"
    return refine_messages(f"Entity: {key}", facts, passages)


def _visible(props: dict[str, Any]) -> int:
    return sum(1 for name in props if not name.startswith("_"))
