"""The grounded tools of `ask`: ``find_edge`` and ``find_entity``, by cosine similarity.

``find_edge`` embeds the query and every edge type's descriptor (``TYPE: Src→Dst, …``) and returns
the top 10 as ``{"type", "connects"}``; ``find_entity`` embeds the query and each entity's short
descriptor (key, labels, name or description — never a provenance or masked property) and returns
the top 5 as ``{"key", "label", "description"}``. Descriptors are embedded once per ask, at most
``MAX_ENTITIES`` of them (a larger plane is searched over its first ones, and the answer says so).
When the plane's ``embedding`` vectors were written by the same embedder, ``find_entity`` searches
them instead, as upstream does: every node, through the vector index when one serves.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from drsg.kernel.values import Vector
from drsg.models.embedders.base import Embedder
from drsg.plan.schema import SoftSchema, hidden, masked
from drsg.store.records import Node

EDGES_TOP = 10
ENTITIES_TOP = 5
MAX_ENTITIES = 2000
DESCRIPTION_CHARS = 140
_TEXT_PROPS = ("description", "summary", "name", "title", "note")


def describe(node: Node, masked_props: set[str]) -> str:
    for name in _TEXT_PROPS:
        value = node.props.get(name)
        if isinstance(value, str) and value.strip() and not hidden(name) and not masked(name, masked_props):
            return " ".join(value.split())[:DESCRIPTION_CHARS]
    return ""


#: (query vector, label or None, k) → the nearest nodes by their ``embedding`` property
VectorSearch = Callable[[Vector, str | None, int], list[Node]]


class Tools:
    """The two tools over one schema and one plane's entities (read once, as of the ask's snapshot)."""

    def __init__(
        self,
        embedder: Embedder,
        schema: SoftSchema,
        entities: list[Node],
        masked_props: set[str],
        vector_search: VectorSearch | None = None,
    ) -> None:
        self.embedder = embedder
        self.vector_search = vector_search
        self.schema = schema
        self.entities = entities[:MAX_ENTITIES]
        self.capped = len(entities) > MAX_ENTITIES
        self.masked = masked_props
        self._edge_matrix: np.ndarray | None = None
        self._entity_matrix: np.ndarray | None = None

    def _matrix(self, texts: list[str]) -> np.ndarray:
        vectors = self.embedder.embed(texts) if texts else []
        return _normalised(np.array([v.tolist() for v in vectors], dtype=np.float32).reshape(len(texts), -1))

    def _query(self, text: str) -> np.ndarray:
        return _normalised(np.array([self.embedder.embed([text])[0].tolist()], dtype=np.float32))[0]

    def find_edge(self, query: str) -> list[dict[str, Any]]:
        types = sorted(self.schema.edges)
        if not types:
            return []
        if self._edge_matrix is None:
            self._edge_matrix = self._matrix([self.schema.edge_descriptor(t) for t in types])
        order = _top(self._edge_matrix, self._query(query), EDGES_TOP)
        return [{"type": types[i], "connects": [f"{s}→{d}" for s, d in self.schema.edges[types[i]]]} for i in order]

    def find_entity(self, query: str, label: str | None) -> list[dict[str, Any]]:
        if self.vector_search is not None:
            found = self.vector_search(self.embedder.embed([query])[0], label, ENTITIES_TOP * 2)
            return [self._entity(n, label) for n in found if n.key is not None][:ENTITIES_TOP]
        if self._entity_matrix is None:
            self._entity_matrix = self._matrix([self._text(n) for n in self.entities])
        keep = [i for i, n in enumerate(self.entities) if n.key is not None and (label is None or label in n.labels)]
        if not keep:
            return []
        local = _top(self._entity_matrix[keep], self._query(query), ENTITIES_TOP)
        return [self._entity(self.entities[keep[j]], label) for j in local]

    def _entity(self, node: Node, label: str | None) -> dict[str, Any]:
        shown = label if label is not None else (node.labels[0] if node.labels else None)
        return {"key": node.key, "label": shown, "description": describe(node, self.masked)}

    def _text(self, node: Node) -> str:
        return " ".join(filter(None, [node.key or "", " ".join(node.labels), describe(node, self.masked)]))


def _normalised(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms > 0, norms, 1.0)


def _top(matrix: np.ndarray, query: np.ndarray, k: int) -> list[int]:
    scores = matrix @ query
    # best first; ties by position, so the answer is the same every run
    return sorted(range(len(scores)), key=lambda i: (-float(scores[i]), i))[:k]
