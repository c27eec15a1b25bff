"""Vectorize a whole plane, upstream's way: ``Plane.vectorize_nodes``, what JSON-RPC ``plane.vectorize`` runs.

Every node's text goes into ``embedding`` (incremental: a node whose text and embedder are those
of its last embedding is skipped, :func:`drsg.pipeline.vectorize.embed_nodes`), then a vector
index on ``embedding`` is ensured for each label embedded. The text of a node is upstream's: a
parsed fact (a node a handler wrote, ``_generated_by``) is its ``key (Labels)`` and its string
properties; any other node, its string properties, one ``name: value`` line each; ``_``
properties never.
"""

from __future__ import annotations

from typing import Any

from drsg.kernel.metrics import check_metric
from drsg.kernel.values import Described
from drsg.models.embedders.base import Embedder
from drsg.pipeline.digest.linking import entity_text
from drsg.pipeline.vectorize import VectorizeReport, clip, embed_nodes, ensure_vector_indexes
from drsg.store.database import Database
from drsg.store.records import Node

INTO = "embedding"


def node_text(node: Node) -> str | None:
    """What a node is embedded from (see the module's docstring); None when it has no text."""
    if node.key is not None and "_generated_by" in node.props:
        return entity_text(node.key, ", ".join(node.labels), node.props)
    lines = []
    for name, value in node.props.items():
        value = value.value if isinstance(value, Described) else value
        if not name.startswith("_") and isinstance(value, str) and value.strip():
            lines.append(f"{name}: {value}")
    return clip("\n".join(lines)) if lines else None


def vectorize_plane(
    db: Database, embedder: Embedder, plane: str, metric: str = "cosine", origin: dict[str, Any] | None = None
) -> tuple[VectorizeReport, int]:
    """Embed the plane and ensure its indexes; the report, and the tokens a remote service reported
    using (0 for the local model): drsg.api's ``Plane.vectorize_nodes``."""
    metric = check_metric(metric)
    spent = getattr(embedder, "tokens", 0)
    report = embed_nodes(db, embedder, plane, node_text, INTO, origin=origin, rule="node_text")
    ensure_vector_indexes(db, plane, report.labels, INTO, metric)
    return report, int(getattr(embedder, "tokens", 0) - spent)
