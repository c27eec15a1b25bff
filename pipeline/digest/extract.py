"""Extraction (upstream's Phase B): one chat call per chunk, from a bounded pool, in chunk order.

An answer the token limit cut off (``finish_reason == "length"``) splits its chunk in half and
extracts each half (recursively, down to a floor). An answer that is not valid JSON gets one
repair request; if that fails too the chunk contributes nothing and a note says so — malformed
output is never written. A chunk whose calls fail past the retry budget fails the digest, after
the other chunks finish, so their answers are cached and a re-run costs only what failed.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from drsg.kernel.errors import ChatError
from drsg.pipeline.digest.chunking import split_in_half
from drsg.pipeline.digest.prompts import extract_messages, repair_messages
from drsg.pipeline.digest.schema import Extraction, parse_extraction
from drsg.pipeline.llm.answers import MalformedAnswer
from drsg.pipeline.llm.calls import ModelCalls

MIN_SPLIT_CHARS = 64  # below this a cut-off answer is not split again
MAX_SPLIT_DEPTH = 6


@dataclass
class ChunkResult:
    index: int
    extraction: Extraction = field(default_factory=Extraction)
    notes: list[str] = field(default_factory=list)
    error: ChatError | None = None


def extract_all(
    calls: ModelCalls,
    chunks: list[str],
    contexts: list[list[str]],
    concurrency: int,
    progress: Callable[[int], None] | None = None,
) -> list[ChunkResult]:
    """Extract every chunk; results in chunk order. ``contexts[i]`` is chunk i's EXISTING ENTITIES;
    ``progress`` hears how many chunks are done."""
    workers = max(1, min(concurrency, len(chunks)))
    results: list[ChunkResult] = []
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="drsg-extract") as pool:
        futures = [pool.submit(_one, calls, i, text, contexts[i]) for i, text in enumerate(chunks)]
        for future in futures:
            results.append(future.result())
            if progress is not None:
                progress(len(results))
    return results


def _one(calls: ModelCalls, index: int, text: str, context: list[str]) -> ChunkResult:
    result = ChunkResult(index)
    try:
        result.extraction = _extract(calls, text, context, result.notes, index, 0)
    except ChatError as exc:
        result.error = exc
    return result


def _extract(calls: ModelCalls, text: str, context: list[str], notes: list[str], index: int, depth: int) -> Extraction:
    key, hit = calls.cached("extract", text)
    if hit is not None:
        return parse_extraction(hit)
    messages = extract_messages(text, context)
    answer = calls.complete(messages)
    if not answer.cut_off:
        try:
            found = parse_extraction(answer.text)
        except MalformedAnswer as exc:
            answer = calls.complete(repair_messages(messages, answer.text, str(exc)))
            found = None
        if found is None and not answer.cut_off:
            try:
                found = parse_extraction(answer.text)
            except MalformedAnswer as exc:
                notes.append(f"chunk {index + 1}: the model's answer was not valid JSON twice ({exc}); nothing kept")
                return Extraction()
        if found is not None:
            calls.remember(key, _serialise(found))
            return found
    # Cut off by the token limit: read each half on its own.
    if len(text) < MIN_SPLIT_CHARS or depth >= MAX_SPLIT_DEPTH:
        notes.append(f"chunk {index + 1}: the answer hit the token limit even for {len(text)} characters; skipped")
        return Extraction()
    left, right = split_in_half(text)
    merged = Extraction()
    for half in (left, right):
        if half:
            part = _extract(calls, half, context, notes, index, depth + 1)
            merged.entities.extend(part.entities)
            merged.relations.extend(part.relations)
            merged.dropped += part.dropped
    calls.remember(key, _serialise(merged))
    return merged


def _serialise(found: Extraction) -> str:
    """The validated extraction as JSON the schema reads back unchanged (what the cache keeps)."""
    return json.dumps(
        {
            "entities": [
                {"key": e.key, "label": e.label, "properties": e.props, "description": e.description}
                for e in found.entities
            ],
            "relations": [
                {"src": r.src, "dst": r.dst, "type": r.type, "properties": r.props, "description": r.description}
                for r in found.relations
            ],
        },
        ensure_ascii=False,
    )
