"""Pass 2 — identity resolution (fine, super): one call decides which near-names are one entity.

Model-free first: keys equal after folding are one (the most frequent spelling survives, ties
lexicographically). Then containment pairs among the survivors — the folded inner key non-empty
and strictly inside a longer folded outer key (``Turing`` / ``Alan Turing``) — are proposed, except
where both labels are set and differ; at most 4 pairs per inner key and 200 in all. The model
answers which pairs are the same; silence keeps them apart. The longer name survives, absorbed
properties only fill gaps, edges are re-pointed, self-loops and duplicate edges removed. There is
no similarity threshold anywhere: the fold and the model decide.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from drsg.pipeline.digest.draft import Draft
from drsg.pipeline.digest.folding import collapse, fold, fold_names
from drsg.pipeline.digest.prompts import identity_messages
from drsg.pipeline.llm.calls import ModelCalls

MAX_PAIRS_PER_KEY = 4
MAX_PAIRS = 200


@dataclass
class IdentityReport:
    before: int = 0
    after: int = 0
    folded: int = 0
    merged: int = 0
    adjudicated: int = 0  # pairs the model was asked about
    linked: int = 0  # entities found to be an existing plane node under another name

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def resolve(
    draft: Draft, calls: ModelCalls, known: Callable[[Draft], list[tuple[str, str, str]]] | None = None
) -> tuple[IdentityReport, int]:
    """Merge entities that are one; returns the report and how many edges merged away.

    ``known(draft)`` proposes (entity, plane key, plane entity line) pairs: an entity the model
    says is that plane node takes its key, and so links to it instead of becoming a new node.
    They are asked in the same call, so the pass stays at most one call."""
    report = IdentityReport(before=len(draft.entities))
    counts = Counter({key: 1 for key in draft.entities})
    renames, report.folded = fold_names(counts)
    for absorbed, survivor in collapse(renames).items():
        draft.merge_entity(absorbed, survivor)
    pairs = candidate_pairs(draft)
    plane = (known(draft) if known is not None else [])[: max(0, MAX_PAIRS - len(pairs))]
    report.adjudicated = len(pairs) + len(plane)
    if pairs or plane:
        described = [_describe(draft, key) for key in sorted({k for pair in pairs for k in pair})]
        described += sorted({line for _, _, line in plane})
        described += [
            _describe(draft, key) for key in sorted({key for key, _, _ in plane} - {k for p in pairs for k in p})
        ]
        asked = pairs + [(key, other) for key, other, _ in plane]
        reply = calls.ask_json("identity", identity_messages(asked, described))
        accepted = _accepted(reply, set(asked))
        to_plane = {key: other for key, other, _ in plane if accepted.get(key) == other}
        merges = {inner: outer for inner, outer in accepted.items() if inner not in to_plane}
        for inner, outer in collapse(merges).items():
            if inner in draft.entities and outer in draft.entities:
                draft.merge_entity(inner, outer)
                report.merged += 1
        for key, other in to_plane.items():
            if key in draft.entities and other not in draft.entities:
                draft.rename_entity(key, other)
                report.linked += 1
    report.after = len(draft.entities)
    return report, draft.dedupe_relations()


def candidate_pairs(draft: Draft) -> list[tuple[str, str]]:
    folded = {key: fold(key) for key in draft.entities}
    keys = sorted(draft.entities)
    pairs: list[tuple[str, str]] = []
    for inner in keys:
        small = folded[inner]
        if not small:
            continue
        mine = 0
        for outer in keys:
            big = folded[outer]
            if outer == inner or len(big) <= len(small) or small not in big:
                continue
            a, b = draft.entities[inner].label, draft.entities[outer].label
            if a and b and a.casefold() != b.casefold():
                continue
            pairs.append((inner, outer))
            mine += 1
            if mine == MAX_PAIRS_PER_KEY or len(pairs) == MAX_PAIRS:
                break
        if len(pairs) == MAX_PAIRS:
            break
    return pairs


def _describe(draft: Draft, key: str) -> str:
    entity = draft.entities[key]
    return f"{key} [{entity.label}]: {entity.description[:160]}"


def _accepted(reply: dict[str, Any] | None, proposed: set[tuple[str, str]]) -> dict[str, str]:
    same = reply.get("same") if reply is not None else None
    merges: dict[str, str] = {}
    if not isinstance(same, list):
        return merges
    for item in same:
        if not isinstance(item, str) or "|" not in item:
            continue
        inner, _, outer = item.partition("|")
        pair = (inner.strip(), outer.strip())
        if pair in proposed and pair[0] not in merges:
            merges[pair[0]] = pair[1]
    return merges
