"""A plane's soft schema observed from a snapshot (:class:`drsg.plan.schema.SoftSchema`).

Label and edge-type counts come from the kept tallies (walked AS OF an earlier commit); property
types, examples and edge connectivity from a bounded sample, so a large plane costs a fixed read.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from itertools import islice

from drsg.kernel.values import value_type
from drsg.plan.logical import SeekKeys, Source
from drsg.plan.schema import EXAMPLES, LabelInfo, PropertyInfo, SoftSchema, example_text, hidden, masked
from drsg.store.snapshot import Snapshot

#: nodes read per label, and edges read per plane, to observe types and connectivity
SAMPLE_NODES = 500
SAMPLE_EDGES = 5000


def soft_schema(snap: Snapshot, plane: int, masked_props: Iterable[str] = ()) -> SoftSchema:
    extra = set(masked_props)
    label_counts, type_counts = snap.labels_and_types(plane)
    schema = SoftSchema(edge_counts=dict(type_counts))
    for label, count in label_counts.items():
        if count <= 0:
            continue
        types: dict[str, Counter[str]] = {}
        examples: dict[str, list[str]] = {}
        for node in islice(snap.nodes(plane, label), SAMPLE_NODES):
            for name, value in node.props.items():
                if hidden(name):
                    continue
                types.setdefault(name, Counter())[value_type(value)] += 1
                shown = examples.setdefault(name, [])
                text = None if masked(name, extra) else example_text(value)
                if text is not None and text not in shown and len(shown) < EXAMPLES:
                    shown.append(text)
        info = LabelInfo(count)
        for name, seen in types.items():
            is_masked = masked(name, extra)
            info.properties[name] = PropertyInfo(
                seen.most_common(1)[0][0], [] if is_masked else examples[name], is_masked
            )
        schema.labels[label] = info
        schema.complete &= count <= SAMPLE_NODES
    pairs: dict[str, set[tuple[str, str]]] = {}
    ends: dict[int, str] = {}
    for edge in islice(snap.edges(plane), SAMPLE_EDGES):
        src, dst = (_label(snap, plane, end, ends) for end in (edge.src, edge.dst))
        pairs.setdefault(edge.type, set()).add((src, dst))
    for edge_type, count in type_counts.items():
        if count > 0:
            schema.edges[edge_type] = sorted(pairs.get(edge_type, set()))
    return schema


def _label(snap: Snapshot, plane: int, node_id: int, seen: dict[int, str]) -> str:
    if node_id not in seen:
        node = snap.node(plane, node_id)
        seen[node_id] = node.labels[0] if node is not None and node.labels else "?"
    return seen[node_id]


def missing_keys(snap: Snapshot, plane: int, source: Source) -> list[str]:
    """The keys of a ``SeekKeys`` source that name no node (what bounded an answer)."""
    if not isinstance(source, SeekKeys):
        return []
    return [key for key in source.keys if snap.node_id_by_key(plane, key) is None]
