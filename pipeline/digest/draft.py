"""The draft graph a digest builds before anything is written (pure; no I/O).

Chunk extractions are merged in chunk order (upstream's Phase C): the first non-empty label wins,
properties fill gaps only (the first chunk that states a property keeps it), the first non-empty
description wins, relations are deduplicated on (src, dst, type) with the first kept. Each entity
remembers which chunks produced it (the refinement pass reads the others). The clean-up passes
then rename labels and types and merge entities *in the draft*; ``as_written`` keeps the
document's form of every renamed name (``_label_as_written``, ``_type_as_written``,
``_key_as_written``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from drsg.pipeline.digest.schema import Extraction


@dataclass
class Entity:
    key: str
    label: str
    props: dict[str, Any]
    description: str
    chunks: set[int] = field(default_factory=set)
    as_written: dict[str, str] = field(default_factory=dict)

    def fill(self, props: dict[str, Any]) -> None:
        for name, value in props.items():
            self.props.setdefault(name, value)


@dataclass
class Relation:
    src: str
    dst: str
    type: str
    props: dict[str, Any]
    description: str
    as_written: dict[str, str] = field(default_factory=dict)

    @property
    def triple(self) -> tuple[str, str, str]:
        return (self.src, self.type, self.dst)


@dataclass
class Draft:
    entities: dict[str, Entity] = field(default_factory=dict)  # by key, in first-mention order
    relations: list[Relation] = field(default_factory=list)
    dropped_items: int = 0  # extracted items that did not fit the schema

    @classmethod
    def merge(cls, extractions: Iterable[tuple[int, Extraction]]) -> Draft:
        """Merge per-chunk extractions, given as (chunk index, extraction) in chunk order."""
        draft = cls()
        for chunk, found in extractions:
            draft.dropped_items += found.dropped
            for item in found.entities:
                entity = draft.entities.get(item.key)
                if entity is None:
                    entity = draft.entities[item.key] = Entity(item.key, item.label, dict(item.props), item.description)
                else:
                    entity.label = entity.label or item.label
                    entity.description = entity.description or item.description
                    entity.fill(item.props)
                entity.chunks.add(chunk)
            for rel in found.relations:
                draft.relations.append(Relation(rel.src, rel.dst, rel.type, dict(rel.props), rel.description))
                # An endpoint named only in a relation still came from this chunk.
                for key in (rel.src, rel.dst):
                    if key in draft.entities:
                        draft.entities[key].chunks.add(chunk)
        draft.dedupe_relations()
        return draft

    def dedupe_relations(self) -> int:
        """Drop self-loops and repeated (src, type, dst) triples, keeping the first; returns how many."""
        seen: set[tuple[str, str, str]] = set()
        kept: list[Relation] = []
        for rel in self.relations:
            if rel.src == rel.dst or rel.triple in seen:
                continue
            seen.add(rel.triple)
            kept.append(rel)
        removed = len(self.relations) - len(kept)
        self.relations = kept
        return removed

    def rename_labels(self, renames: dict[str, str]) -> int:
        changed = 0
        for entity in self.entities.values():
            new = renames.get(entity.label)
            if new is not None and new != entity.label:
                entity.as_written.setdefault("_label_as_written", entity.label)
                entity.label = new
                changed += 1
        return changed

    def rename_types(self, renames: dict[str, str]) -> int:
        changed = 0
        for rel in self.relations:
            new = renames.get(rel.type)
            if new is not None and new != rel.type:
                rel.as_written.setdefault("_type_as_written", rel.type)
                rel.type = new
                changed += 1
        return changed

    def rename_entity(self, old: str, new: str) -> None:
        """Give entity ``old`` the key ``new`` (a plane node it was found to be), re-pointing edges."""
        entity = self.entities.pop(old)
        entity.key = new
        entity.as_written["_key_as_written"] = old
        self.entities[new] = entity
        self._repoint(old, new)

    def merge_entity(self, absorbed: str, survivor: str) -> None:
        """Fold entity ``absorbed`` into ``survivor``: fill gaps, re-point edges (dedupe after)."""
        gone = self.entities.pop(absorbed)
        keep = self.entities[survivor]
        keep.label = keep.label or gone.label
        keep.description = keep.description or gone.description
        keep.fill(gone.props)
        keep.chunks |= gone.chunks
        keep.as_written["_key_as_written"] = absorbed
        self._repoint(absorbed, survivor)

    def _repoint(self, old: str, new: str) -> None:
        for rel in self.relations:
            if rel.src == old:
                rel.src = new
            if rel.dst == old:
                rel.dst = new
