"""Linking a document to what the plane already knows (upstream's Phase A, and entity embedding).

Before extraction each chunk is embedded and the 8 keyed nodes whose ``embedding`` is most
cosine-similar are offered to the model as EXISTING ENTITIES, so it reuses their keys. After
extraction, an entity whose key is not in the plane is compared with its nearest plane nodes, and
likely pairs join the identity-resolution call (``plane_candidates``). The
neighbours are found by an exact scan of the plane's ``embedding`` vectors (one matrix product per
batch of chunks), which needs no index and sees every label. After the passes every entity is
embedded from ``key (Label)`` and its textual properties.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from drsg.kernel.values import Described, Vector
from drsg.models.embedders.base import Embedder
from drsg.pipeline.digest.draft import Draft
from drsg.pipeline.digest.folding import fold
from drsg.pipeline.vectorize import clip
from drsg.store.database import Database

NEIGHBOURS = 8
DESCRIPTION_CHARS = 160
PLANE_CANDIDATES = 3  # nearest plane nodes looked at per new entity
VERY_SIMILAR = 0.9  # proposes a pair without a shared name (the model still decides)


class PlaneVectors:
    """The plane's keyed nodes with an ``embedding`` of the embedder's size, as one matrix."""

    def __init__(self, db: Database, plane: str, prop: str = "embedding") -> None:
        self.lines: list[str] = []
        self.keys: list[str] = []
        self.described: list[str] = []  # "key [Label]: description", as the identity prompt lists entities
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
                text = describe(node.props)[:DESCRIPTION_CHARS]
                self.keys.append(node.key)
                self.lines.append(f"- {node.key} ({label}): {text}")
                self.described.append(f"{node.key} [{label}]: {text}")
        sizes = {len(r) for r in rows}
        self.matrix = _normalised(np.stack(rows)) if len(sizes) == 1 else None

    def nearest(self, vectors: list[Vector], k: int = NEIGHBOURS) -> list[list[tuple[int, float]]]:
        """For each query vector, its ``k`` most cosine-similar keyed nodes as (row, similarity)."""
        if self.matrix is None or not vectors:
            return [[] for _ in vectors]
        queries = _normalised(np.stack([np.frombuffer(v.data, dtype="<f4") for v in vectors]))
        if queries.shape[1] != self.matrix.shape[1]:
            return [[] for _ in vectors]
        scores = queries @ self.matrix.T
        k = min(k, scores.shape[1])
        out = []
        for row in scores:
            best = np.argsort(-row, kind="stable")[:k]
            out.append([(int(i), float(row[i])) for i in best])
        return out


def contexts(known: PlaneVectors, chunks: list[str], embedder: Embedder) -> list[list[str]]:
    """EXISTING ENTITIES for every chunk (empty lists when the plane has no embedded nodes)."""
    if known.matrix is None:
        return [[] for _ in chunks]
    found = known.nearest(embedder.embed([clip(text) for text in chunks]))
    return [[known.lines[i] for i, _ in near] for near in found]


def plane_candidates(known: PlaneVectors, draft: Draft, embedder: Embedder) -> list[tuple[str, str, str]]:
    """Pairs (draft key, plane key, plane entity line) worth asking the identity pass about.

    Only entities whose key is not in the plane are considered (an exact key links by itself);
    their nearest plane nodes by embedding are proposed when one name contains the other after
    folding, or when they are very similar. The model decides; nothing here merges anything."""
    if known.matrix is None:
        return []
    in_plane = set(known.keys)
    todo = [key for key in draft.entities if key not in in_plane]
    if not todo:
        return []
    texts = [entity_text(key, draft.entities[key].label or "Entity", {}) for key in todo]
    pairs: list[tuple[str, str, str]] = []
    for key, near in zip(todo, known.nearest(embedder.embed(texts), PLANE_CANDIDATES), strict=True):
        mine = fold(key)
        for row, similarity in near:
            other = known.keys[row]
            theirs = fold(other)
            contained = bool(mine) and bool(theirs) and (mine in theirs or theirs in mine)
            if other not in draft.entities and (contained or similarity >= VERY_SIMILAR):
                pairs.append((key, other, known.described[row]))
    return pairs


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
