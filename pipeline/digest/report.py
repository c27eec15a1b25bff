"""A digest's report: what the prose gave, what it cost, what each clean-up pass did and, for a tree
of code, what the parsers read. Built once per digest (``run.digest``), saved in a preview and read
back from it; ``to_json()`` is the ``report`` of ``drsg digest --json`` and ``digest.run``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any


@dataclass(frozen=True, slots=True)
class Usage:
    """What one digest spent: the difference between two readings of counters that only grow."""

    chat_requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    embed_tokens: int = 0
    cache_hits: int = 0

    def __sub__(self, start: Usage) -> Usage:
        return Usage(*(getattr(self, f.name) - getattr(start, f.name) for f in fields(self)))


@dataclass(frozen=True, slots=True)
class FilesRead:
    seen: int  # what drsg's floor left: the denominator
    read: int
    withheld: int
    not_claimed: int
    skipped: int


@dataclass(frozen=True, slots=True)
class ParsedFacts:
    nodes: int
    new: int  # nodes the plane does not hold yet
    edges: int


@dataclass(frozen=True, slots=True)
class Preprocessed:
    """One handler's share: its identity (``py@1.0.0``), the facts it gave and the files it read."""

    handler: str
    facts: int
    files: int


@dataclass(frozen=True, slots=True)
class CodeRead:
    """A tree's parsed side: the files, the facts in all, the parsed nodes and edges, each handler."""

    files: FilesRead
    facts: int
    parsed: ParsedFacts
    preprocessed: tuple[Preprocessed, ...]


@dataclass(frozen=True, slots=True)
class DigestReport:
    """``entities`` and ``linked``: the model's new and already-present nodes; ``passes``: each clean-up
    pass's counts by name (labels, edge_types, identity, refined); ``dropped_items``: counted only
    when there was prose; ``code``: only for a source with parsed facts."""

    chunks: int = 0
    entities: int = 0
    relations: int = 0
    linked: int = 0
    dropped_relations: int = 0
    merged_relations: int = 0
    usage: Usage = Usage()
    passes: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    dropped_items: int | None = None
    code: CodeRead | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "chunks": self.chunks,
            "entities": self.entities,
            "relations": self.relations,
            "linked": self.linked,
            "dropped_relations": self.dropped_relations,
            "merged_relations": self.merged_relations,
            **asdict(self.usage),
            "passes": {name: dict(counts) for name, counts in self.passes.items()},
        }
        if self.dropped_items is not None:
            out["dropped_items"] = self.dropped_items
        if self.code is not None:
            out["files"] = asdict(self.code.files)
            out["facts"] = self.code.facts
            out["parsed"] = asdict(self.code.parsed)
            out["preprocessed"] = [asdict(p) for p in self.code.preprocessed]
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> DigestReport:
        """A saved preview's report (what :meth:`to_json` wrote); an empty one for a proposal that had none."""
        if not data:
            return cls()
        code = None
        if "files" in data:
            code = CodeRead(
                FilesRead(**data["files"]),
                data["facts"],
                ParsedFacts(**data["parsed"]),
                tuple(Preprocessed(**p) for p in data["preprocessed"]),
            )
        return cls(
            **{
                f: data[f]
                for f in ("chunks", "entities", "relations", "linked", "dropped_relations", "merged_relations")
            },
            usage=Usage(**{f.name: data[f.name] for f in fields(Usage)}),
            passes=data["passes"],
            dropped_items=data.get("dropped_items"),
            code=code,
        )
