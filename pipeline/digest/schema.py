"""Reading a model's extraction answer as data (pure; no I/O).

The answer must be one JSON object ``{"entities": [...], "relations": [...]}``. A model's text is
untrusted input: it is read as one object by ``drsg.pipeline.llm.answers.json_object`` (fences,
prose and trailing commas tolerated), and then every item is checked against the schema below.
Items that do not fit are dropped and counted, never half-written; anything outside the schema
(extra fields, instructions, tool requests) is ignored. ``MalformedAnswer`` means nothing
usable could be read.

    entity   {"key": str, "label": str, "properties": {name: scalar | [scalar]}, "description": str}
    relation {"src": key, "dst": key, "type": "UPPER_SNAKE", "properties": {...}, "description": str}
"""

from __future__ import annotations

import math
import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any

from drsg.pipeline.llm.answers import json_object

MAX_KEY = 200  # characters
MAX_LABEL = 64
MAX_PROP_NAME = 64
MAX_PROPS = 32
MAX_TEXT = 2000  # one string property value
MAX_DESCRIPTION = 1000
MAX_LIST = 32
MAX_ITEMS = 500  # entities, and relations, kept from one answer (a runaway answer is cut, and counted)
RESERVED_PROPS = frozenset({"embedding", "description"})  # written by drsg, never by the model
_NOT_WORD = re.compile(r"[^0-9A-Za-z]+")


@dataclass(frozen=True)
class ExtractedEntity:
    key: str
    label: str
    props: dict[str, Any]
    description: str


@dataclass(frozen=True)
class ExtractedRelation:
    src: str
    dst: str
    type: str
    props: dict[str, Any]
    description: str


@dataclass
class Extraction:
    entities: list[ExtractedEntity] = field(default_factory=list)
    relations: list[ExtractedRelation] = field(default_factory=list)
    dropped: int = 0  # items that did not fit the schema


def parse_extraction(text: str) -> Extraction:
    found = json_object(text)
    out = Extraction()
    entities, relations = _list(found.get("entities")), _list(found.get("relations"))
    out.dropped += max(0, len(entities) - MAX_ITEMS) + max(0, len(relations) - MAX_ITEMS)
    for item in entities[:MAX_ITEMS]:
        entity = _entity(item)
        if entity is None:
            out.dropped += 1
        else:
            out.entities.append(entity)
    for item in relations[:MAX_ITEMS]:
        relation = _relation(item)
        if relation is None:
            out.dropped += 1
        else:
            out.relations.append(relation)
    return out


def clean_key(value: Any) -> str | None:
    """A key as the model wrote it, whitespace-normalised; ``None`` when it is not a usable key."""
    if not isinstance(value, str):
        return None
    text = " ".join(unicodedata.normalize("NFC", value).split())
    if not text or len(text) > MAX_KEY or any(unicodedata.category(ch) == "Cc" for ch in text):
        return None
    return text


def clean_label(value: Any) -> str:
    """A label: letters, digits and ``_`` only (``"Programming language"`` → ``ProgrammingLanguage``)."""
    if not isinstance(value, str):
        return ""
    words = [w for w in re.split(r"[^\w]+", value) if w]
    label = "".join(w[:1].upper() + w[1:] if not w[:1].isupper() else w for w in words)
    return label[:MAX_LABEL]


def clean_type(value: Any) -> str:
    """An edge type in UPPER_SNAKE (``"works at"`` → ``WORKS_AT``); empty when nothing is left."""
    if not isinstance(value, str):
        return ""
    words = [w for w in re.split(r"[^\w]+", unicodedata.normalize("NFC", value)) if w]
    return "_".join(w.upper() for w in words)[:MAX_LABEL]


def clean_props(value: Any) -> dict[str, Any]:
    """Scalar (or list-of-scalar) properties with plain names; reserved and ``_`` names dropped."""
    if not isinstance(value, dict):
        return {}
    out: dict[str, Any] = {}
    for raw_name, raw in value.items():
        name = _prop_name(raw_name)
        if name is None or name in out:
            continue
        cleaned = _list_value(raw) if isinstance(raw, list) else _scalar(raw)
        if cleaned is not None:
            out[name] = cleaned
        if len(out) == MAX_PROPS:
            break
    return out


def clean_text(value: Any, limit: int = MAX_DESCRIPTION) -> str:
    if not isinstance(value, str):
        return ""
    text = " ".join(value.split())
    return text[:limit]


def _entity(item: Any) -> ExtractedEntity | None:
    if not isinstance(item, dict):
        return None
    key = clean_key(item.get("key"))
    if key is None:
        return None
    return ExtractedEntity(
        key, clean_label(item.get("label")), clean_props(item.get("properties")), clean_text(item.get("description"))
    )


def _relation(item: Any) -> ExtractedRelation | None:
    if not isinstance(item, dict):
        return None
    src, dst = clean_key(item.get("src")), clean_key(item.get("dst"))
    kind = clean_type(item.get("type"))
    if src is None or dst is None or not kind:
        return None
    return ExtractedRelation(src, dst, kind, clean_props(item.get("properties")), clean_text(item.get("description")))


def _prop_name(value: Any) -> str | None:
    if not isinstance(value, str) or value.strip().startswith("_"):
        return None  # `_` names are drsg's provenance, never the model's
    name = _NOT_WORD.sub("_", value.strip()).strip("_")
    if not name or len(name) > MAX_PROP_NAME or name in RESERVED_PROPS:
        return None
    return name


def _scalar(value: Any) -> Any:
    if isinstance(value, bool) or value is None:
        return value if isinstance(value, bool) else None
    if isinstance(value, int):
        return value if -(2**63) <= value < 2**63 else str(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, str):
        text = clean_text(value, MAX_TEXT)
        return text or None
    return None  # objects are not properties


def _list_value(value: list[Any]) -> list[Any] | None:
    items = [s for s in (_scalar(v) for v in value[:MAX_LIST]) if s is not None]
    return items or None


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []
