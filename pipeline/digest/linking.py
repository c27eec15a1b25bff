"""Linking a document to what the plane already knows (upstream's Phase A, and entity embedding).

Before extraction each chunk is embedded and the 8 keyed nodes whose ``embedding`` is most
cosine-similar are offered to the model as EXISTING ENTITIES, so it reuses their keys. The
neighbours are found by an exact scan of the plane's ``embedding`` vectors (one matrix product per
batch of chunks), which needs no index and sees every label. After the passes every entity is
embedded from ``key (Label)`` and its textual properties.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from drsg.pipeline.vectorize import Embedder, clip
from drsg.store.database import Database
from drsg.values import Described, Vector

NEIGHBOURS = 8
DESCRIPTION_CHARS = 160


class PlaneVectors:
    """The plane's keyed nodes with an ``embedding`` of the embedder's size, as one matrix."""

    def __init__(self, db: Database, plane: str, prop: str = "embedding") -> None:
        self.lines: list[str] = []
        rows: list[np.ndarray] = []
        with db.snapshot() as snap:
            found = snap.find_plane(plane)
            nodes = snap.nodes(found.id) if found is not None else iter(())
            for node in nodes:
                vector = node.props.get(prop)
                if node.key is None or not isinstance(vector, Vector):
                    continue
                rows.append(np.frombuffer(vector.data, dtype="<f4"))
                label = node.labels[0] if node.labels else "Entity"
                self.lines.append(f"- {node.key} ({label}): {describe(node.props)[:DESCRIPTION_CHARS]}")
        sizes = {len(r) for r in rows}
        self.matrix = _normalised(np.stack(rows)) if len(sizes) == 1 else None

    def nearest(self, vectors: list[Vector]) -> list[list[str]]:
        """For each query vector, the EXISTING ENTITIES lines of its nearest keyed nodes."""
        if self.matrix is None or not vectors:
            return [[] for _ in vectors]
        queries = _normalised(np.stack([np.frombuffer(v.data, dtype="<f4") for v in vectors]))
        if queries.shape[1] != self.matrix.shape[1]:
            return [[] for _ in vectors]
        scores = queries @ self.matrix.T
        k = min(NEIGHBOURS, scores.shape[1])
        out = []
        for row in scores:
            best = np.argsort(-row, kind="stable")[:k]
            out.append([self.lines[i] for i in best])
        return out


def contexts(db: Database, plane: str, chunks: list[str], embedder: Embedder) -> list[list[str]]:
    """EXISTING ENTITIES for every chunk (empty lists when the plane has no embedded nodes)."""
    known = PlaneVectors(db, plane)
    if known.matrix is None:
        return [[] for _ in chunks]
    return known.nearest(embedder.embed([clip(text) for text in chunks]))


def entity_text(key: str, label: str, props: dict[str, Any]) -> str:
    lines = [f"{key} ({label})"]
    for name, value in props.items():
        value = value.value if isinstance(value, Described) else value
        if not name.startswith("_") and isinstance(value, str):
            lines.append(f"{name}: {value}")
    return clip("\n".join(lines))


def describe(props: dict[str, Any]) -> str:
    value = props.get("description")
    value = value.value if isinstance(value, Described) else value
    return " ".join(value.split()) if isinstance(value, str) else ""


def _normalised(matrix: np.ndarray) -> np.ndarray:
    matrix = matrix.astype(np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0, 1, norms)
