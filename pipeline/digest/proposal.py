"""What a digest proposes to write, saved as a preview and applied later with no model call.

A proposal holds final node and edge records (properties in drsg's value model, provenance
included), the report, and a *fingerprint* of everything that decided it (the source text, the
mode, the chunk size, the models, linking and embedding on or off). ``--apply`` reuses the saved
preview whose fingerprint matches the current run; anything else runs the pipeline again (whose
answers are cached).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from drsg.kernel.errors import UsageError
from drsg.kernel.files import write_atomic
from drsg.kernel.values import lean_vectors, props_from_json, to_json
from drsg.pipeline.digest.report import DigestReport

FORMAT = 2  # 2: extra labels and plane properties (a code digest's)


@dataclass
class ProposedNode:
    key: str
    label: str
    props: dict[str, Any]
    linked: bool = False  # the key is already in the plane
    extra_labels: tuple[str, ...] = ()  # a parsed fact's further labels (``External``)


@dataclass
class ProposedEdge:
    src: str
    type: str
    dst: str
    props: dict[str, Any]


@dataclass
class Proposal:
    source: str  # the source's stable name (a canonical path)
    plane: str
    run: str
    model: str | None  # None: no model was asked (a tree of code only)
    fingerprint: str
    embedder: str | None = None  # identity of the embedder behind `embedding`, when there is one
    nodes: list[ProposedNode] = field(default_factory=list)
    edges: list[ProposedEdge] = field(default_factory=list)
    report: DigestReport = field(default_factory=DigestReport)
    notes: list[str] = field(default_factory=list)
    plane_props: dict[str, Any] = field(default_factory=dict)  # set on the plane when applied (drift)

    def to_json(self, *, lean: bool = False) -> dict[str, Any]:
        """The proposal in the JSON dialect; ``lean`` shows vectors as upstream's placeholder."""

        def props(values: dict[str, Any]) -> Any:
            return to_json(lean_vectors(values) if lean else values)

        return {
            "format": FORMAT,
            "source": self.source,
            "plane": self.plane,
            "run": self.run,
            "model": self.model,
            "fingerprint": self.fingerprint,
            "embedder": self.embedder,
            "report": self.report.to_json(),
            "notes": self.notes,
            "plane_props": to_json(self.plane_props),
            "nodes": [
                {
                    "key": n.key,
                    "label": n.label,
                    "extra_labels": list(n.extra_labels),
                    "linked": n.linked,
                    "properties": props(n.props),
                }
                for n in self.nodes
            ],
            "edges": [{"src": e.src, "type": e.type, "dst": e.dst, "properties": props(e.props)} for e in self.edges],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Proposal:
        if data.get("format") != FORMAT:
            raise UsageError("the saved preview was written by another drsg version; run the digest again")
        return cls(
            data["source"],
            data["plane"],
            data["run"],
            data["model"],
            data["fingerprint"],
            data["embedder"],
            [
                ProposedNode(
                    n["key"], n["label"], props_from_json(n["properties"]), n["linked"], tuple(n["extra_labels"])
                )
                for n in data["nodes"]
            ],
            [ProposedEdge(e["src"], e["type"], e["dst"], props_from_json(e["properties"])) for e in data["edges"]],
            DigestReport.from_json(data["report"]),
            data["notes"],
            props_from_json(data["plane_props"]),
        )


def fingerprint(text: str, **decided_by: Any) -> str:
    digest = hashlib.sha256(text.encode())
    digest.update(json.dumps(decided_by, sort_keys=True).encode())
    return digest.hexdigest()


class PreviewStore:
    """Saved previews: ``<db>.digest/previews/<plane>/<sha of source>.json``."""

    def __init__(self, folder: Path | str) -> None:
        self.folder = Path(folder)

    def path(self, plane: str, source: str) -> Path:
        name = hashlib.sha256(f"{plane}\x00{source}".encode()).hexdigest()[:32]
        return self.folder / name[:2] / f"{name}.json"

    def save(self, proposal: Proposal) -> Path:
        path = self.path(proposal.plane, proposal.source)
        write_atomic(path, json.dumps(proposal.to_json(), ensure_ascii=False).encode("utf-8"), durable=False)
        return path

    def load(self, plane: str, source: str, fingerprint: str) -> Proposal | None:
        """The saved preview of this source for this plane, if it was made the same way."""
        try:
            data = json.loads(self.path(plane, source).read_text(encoding="utf-8"))
            proposal = Proposal.from_json(data)
        except (OSError, ValueError, KeyError, TypeError, UsageError):
            return None
        return proposal if proposal.fingerprint == fingerprint else None

    def discard(self, plane: str, source: str) -> None:
        self.path(plane, source).unlink(missing_ok=True)
