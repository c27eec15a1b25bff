"""A scripted chat model for digest tests, served by :class:`FakeOpenAI` on loopback.

It answers the digest's four kinds of prompt the way a model would, from a small *world* the test
defines: extraction finds the world's entities by the names written in the passage (so "Turing"
and "Alan Turing" come back as two keys, labels and edge types come back in the variants the
world says the document uses); vocabulary reconciliation groups the synonyms the world lists;
identity resolution confirms pairs that name one world entity; refinement returns the entity's
full facts. Every call is counted by kind. Without a world it extracts capitalised phrases, which
is enough to measure calls and tokens on a long real document.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tests.support.fake_openai import FakeOpenAI, Reply, Request, chat_completion

_DOCUMENT = re.compile(r"<document>\n?(.*?)\n?</document>", re.S)
_PHRASE = re.compile(r"\b([A-Z][a-zA-Z]{2,}(?:\s+[A-Z][a-zA-Z]{2,}){0,2})\b")


@dataclass
class WorldEntity:
    names: list[str]  # how the document may write it; the first is the full name
    labels: list[str]  # label as extracted, per name (cycled)
    props: dict[str, Any] = field(default_factory=dict)
    refined: dict[str, Any] = field(default_factory=dict)  # what a re-read adds
    description: str = ""
    missed_in: list[str] = field(default_factory=list)  # passages with these words: the model misses it


@dataclass
class WorldRelation:
    src: str  # full names
    dst: str
    types: list[str]  # the type as extracted, cycled per mention


@dataclass
class World:
    entities: list[WorldEntity]
    relations: list[WorldRelation] = field(default_factory=list)
    synonyms: list[list[str]] = field(default_factory=list)  # label / type groups, canonical first

    def by_name(self, name: str) -> WorldEntity | None:
        return next((e for e in self.entities if name in e.names), None)


class ScriptedModel:
    def __init__(self, world: World | None = None) -> None:
        self.world = world
        self.calls: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._mentions: Counter[tuple[str, str]] = Counter()
        #: kind -> function(request) -> Reply | None, to misbehave on purpose (None: answer normally)
        self.override: dict[str, Callable[[Request], Reply | None]] = {}

    def install(self, fake: FakeOpenAI) -> ScriptedModel:
        fake.on("/chat/completions", self.handle)
        return self

    def handle(self, request: Request) -> Reply:
        messages = request.json["messages"]
        system = messages[0]["content"]
        kind = (
            "extract"
            if system.startswith("You build a knowledge graph")
            else "vocabulary"
            if system.startswith("You reconcile")
            else "identity"
            if system.startswith("You resolve entity identity")
            else "refine"
            if system.startswith("You refine one entity")
            else "other"
        )
        if len(messages) > 2 and kind == "extract":
            kind = "repair"
        with self._lock:
            self.calls[kind] += 1
        special = self.override.get(kind)
        if special is not None:
            reply = special(request)
            if reply is not None:
                return reply
        answer = getattr(self, f"_{kind if kind != 'repair' else 'extract'}")(messages)
        return Reply(json=chat_completion(json.dumps(answer, ensure_ascii=False)))

    # ------------------------------------------------------------------ the four prompts

    def _extract(self, messages: list[dict[str, str]]) -> dict[str, Any]:
        found = _DOCUMENT.search(messages[1]["content"])
        passage = found.group(1) if found else ""
        if self.world is None:
            return _capitalised(passage)
        entities, keys = [], {}
        for entity in self.world.entities:
            if any(word in passage for word in entity.missed_in):
                continue
            for i, name in enumerate(entity.names):
                if re.search(rf"(?<!\w){re.escape(name)}(?!\w)", passage):
                    keys[entity.names[0]] = name
                    label = entity.labels[i % len(entity.labels)]
                    entities.append(
                        {"key": name, "label": label, "properties": entity.props, "description": entity.description}
                    )
                    break
        relations = []
        for rel in self.world.relations:
            if rel.src in keys and rel.dst in keys:
                with self._lock:
                    kind = rel.types[self._mentions[rel.src, rel.dst] % len(rel.types)]
                    self._mentions[rel.src, rel.dst] += 1
                relations.append({"src": keys[rel.src], "dst": keys[rel.dst], "type": kind})
        return {"entities": entities, "relations": relations}

    def _vocabulary(self, messages: list[dict[str, str]]) -> dict[str, Any]:
        given = {line.rsplit("  (", 1)[0] for line in messages[1]["content"].splitlines()[1:]}
        groups = []
        for group in self.world.synonyms if self.world else []:
            members = [n for n in group if n in given]
            if len(members) >= 2:
                groups.append(members)
        return {"groups": groups}

    def _identity(self, messages: list[dict[str, str]]) -> dict[str, Any]:
        pairs_text = messages[1]["content"].split("\n\nentities:")[0].splitlines()[1:]
        same = []
        for line in pairs_text:
            inner, _, outer = line.partition("|")
            a = self.world.by_name(inner) if self.world else None
            if a is not None and a is (self.world.by_name(outer) if self.world else None):
                same.append(line)
        return {"same": same}

    def _refine(self, messages: list[dict[str, str]]) -> dict[str, Any]:
        key = messages[1]["content"].splitlines()[0].removeprefix("Entity: ")
        entity = self.world.by_name(key) if self.world else None
        if entity is None:
            return {"properties": {}}
        return {"properties": {**entity.props, **entity.refined}, "description": entity.description}

    def _other(self, messages: list[dict[str, str]]) -> dict[str, Any]:
        return {}


def _capitalised(passage: str) -> dict[str, Any]:
    """Without a world: capitalised phrases are entities; neighbours in a sentence are related."""
    entities: dict[str, dict[str, Any]] = {}
    relations = []
    for sentence in re.split(r"(?<=[.!?])\s+", passage):
        names = list(dict.fromkeys(m.group(1) for m in _PHRASE.finditer(sentence)))
        for name in names:
            label = "Organization" if name.isupper() or name.endswith(("Foundation", "Inc")) else "Concept"
            entities.setdefault(name, {"key": name, "label": label, "properties": {}, "description": sentence[:120]})
        relations += [{"src": a, "dst": b, "type": "RELATED_TO"} for a, b in itertools.pairwise(names)]
    return {"entities": list(entities.values()), "relations": relations}
