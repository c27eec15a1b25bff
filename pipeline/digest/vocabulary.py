"""Pass 1 — vocabulary reconciliation (every mode): label and edge-type sets canonicalised as sets.

First a model-free fold (case and separator variants are one name; the plane's own spelling
survives if it has one, else the most frequent, ties lexicographically). If two or more names
survive, the model sees the set once per vocabulary, with counts, and groups synonyms: at most two
calls however large the document. Only names it was given count; a name claimed by an earlier
group is not re-claimed; singleton groups are ignored; rename chains collapse and cycles break.
An unreadable reply merges nothing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

from drsg.pipeline.digest.draft import Draft
from drsg.pipeline.digest.folding import collapse, fold, fold_names, tally
from drsg.pipeline.digest.prompts import vocabulary_messages
from drsg.pipeline.llm.calls import ModelCalls

MAX_NAMES = 400


@dataclass
class VocabularyReport:
    before: int = 0
    after: int = 0
    folded: int = 0
    merged: int = 0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def reconcile(
    draft: Draft, calls: ModelCalls, plane_labels: Iterable[str] = (), plane_types: Iterable[str] = ()
) -> tuple[VocabularyReport, VocabularyReport, int]:
    """Reconcile labels, then edge types; returns both reports and how many edges merged away.

    ``plane_labels`` / ``plane_types``: the names the plane already uses. A fold group that matches
    one takes the plane's spelling (``person`` joins an existing ``Person``), so documents digested
    into one plane share its vocabulary; the model still sees only the document's names."""
    labels = _reconcile("labels", tally(e.label for e in draft.entities.values()), calls, plane_labels)
    draft.rename_labels(labels[1])
    types = _reconcile("edge types", tally(r.type for r in draft.relations), calls, plane_types)
    draft.rename_types(types[1])
    merged_relations = draft.dedupe_relations()
    return labels[0], types[0], merged_relations


def _reconcile(
    kind: str, counts: Counter[str], calls: ModelCalls, known: Iterable[str] = ()
) -> tuple[VocabularyReport, dict[str, str]]:
    report = VocabularyReport(before=len(counts))
    renames, report.folded = fold_names(counts)
    spelled = {fold(name): name for name in sorted(known, reverse=True)}  # ties: the smallest spelling
    for name in counts:
        survivor = renames.get(name, name)
        theirs = spelled.get(fold(survivor))
        if theirs is not None and theirs != survivor:
            renames[name] = theirs
    report.folded = len(renames)
    survivors: Counter[str] = Counter()
    for name, count in counts.items():
        survivors[renames.get(name, name)] += count
    if len(survivors) >= 2:
        # the most frequent names, so one prompt stays bounded however wild the extraction was
        ordered = sorted(survivors.items(), key=lambda item: (-item[1], item[0]))[:MAX_NAMES]
        reply = calls.ask_json(f"vocabulary:{kind}", vocabulary_messages(kind, ordered))
        synonyms = _groups(reply, set(survivors))
        report.merged = len(synonyms)
        renames.update(synonyms)
        renames = {old: new for old, new in renames.items() if old != new}
    final = collapse(renames)
    report.after = len({final.get(name, name) for name in counts})
    return report, final


def _groups(reply: dict[str, Any] | None, given: set[str]) -> dict[str, str]:
    """alias → canonical from the model's groups, keeping only names it was given."""
    renames: dict[str, str] = {}
    claimed: set[str] = set()
    groups = reply.get("groups") if reply is not None else None
    if not isinstance(groups, list):
        return renames
    for group in groups:
        if not isinstance(group, list):
            continue
        members = [n for n in group if isinstance(n, str) and n in given and n not in claimed]
        members = list(dict.fromkeys(members))
        if len(members) < 2:
            continue
        canonical, *aliases = members
        claimed.update(members)
        renames.update({alias: canonical for alias in aliases})
    return renames
