"""Text search over a plane's nodes and edges without an index: what JSON-RPC ``plane.find`` runs.

Upstream's matching (``plane_find``: a case-insensitive substring of the external key, a label or a
string property value; of an edge's type or a string property value), then drsg's analysed match:
a record none of whose fields contains the text still matches when every term of the text, as the
keyword index's analyser makes terms (lower case, English stemming, stop words dropped), is among
one string field's terms, so "algorithms" finds "algorithm". ``_`` provenance properties are never
matched. Hits are ranked by how they matched, then by id:

    0  the key (an edge's type) is the text          2  a label contains it
    1  the key (the type) contains it                 3  a property value contains it
                                                       4  a property value holds every term

A scan examines at most :data:`SCAN_CAP` nodes and as many edges (upstream's cap: the search runs
on every keystroke of the dashboard's header box); ``truncated`` says when a cap or ``limit`` cut
the answer short.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from drsg.kernel.values import Described
from drsg.store.snapshot import Snapshot
from drsg.workers.analysis import analyze

SCAN_CAP = 20_000  # upstream's FIND_SCAN_CAP
LANGUAGE = "english"  # the analyser's language for the term match (the keyword index's default)


class _Needle:
    def __init__(self, q: str) -> None:
        self.text = q.strip().casefold()
        self.terms = frozenset(analyze(q, LANGUAGE))

    def contains(self, value: str) -> bool:
        return self.text in value.casefold()

    def has_terms(self, value: str) -> bool:
        return bool(self.terms) and self.terms <= frozenset(analyze(value, LANGUAGE))


def _strings(props: dict[str, Any]) -> Iterable[tuple[str, str]]:
    for name, value in props.items():
        if isinstance(value, Described):
            value = value.value
        if isinstance(value, str) and not name.startswith("_"):
            yield name, value


def _props_match(needle: _Needle, props: dict[str, Any]) -> tuple[int, str] | None:
    strings = list(_strings(props))
    for name, value in strings:
        if needle.contains(value):
            return 3, f"properties.{name}"
    for name, value in strings:
        if needle.has_terms(value):
            return 4, f"properties.{name}"
    return None


def _node_match(needle: _Needle, key: str | None, labels: list[str], props: dict[str, Any]) -> tuple[int, str] | None:
    if key is not None and key.casefold() == needle.text:
        return 0, "key"
    if key is not None and needle.contains(key):
        return 1, "key"
    if any(needle.contains(label) for label in labels):
        return 2, "label"
    return _props_match(needle, props)


def _edge_match(needle: _Needle, edge_type: str, props: dict[str, Any]) -> tuple[int, str] | None:
    if edge_type.casefold() == needle.text:
        return 0, "type"
    if needle.contains(edge_type):
        return 1, "type"
    return _props_match(needle, props)


def find_text(snap: Snapshot, plane: int, q: str, limit: int, vectors: bool | str = True) -> dict[str, Any]:
    """``plane.find``'s text mode on one snapshot: ``{nodes, edges, mode: "text", note, scanned,
    total, truncated}``, each hit its record with ``match`` naming the field that matched."""
    total = snap.counts(plane)[0]
    needle = _Needle(q)
    if not needle.text:
        return {
            "nodes": [],
            "edges": [],
            "mode": "text",
            "note": None,
            "scanned": 0,
            "total": total,
            "truncated": False,
        }
    node_hits: list[tuple[int, int, dict[str, Any]]] = []
    scanned = 0
    for node in snap.nodes(plane):
        if scanned >= SCAN_CAP:
            break
        scanned += 1
        found = _node_match(needle, node.key, node.labels, node.props)
        if found is not None:
            node_hits.append((found[0], node.id, {**node.to_json(vectors=vectors), "match": found[1]}))
    edge_hits: list[tuple[int, int, dict[str, Any]]] = []
    edges_cut = False
    for examined, edge in enumerate(snap.edges(plane)):
        if examined >= SCAN_CAP:
            edges_cut = True
            break
        found = _edge_match(needle, edge.type, edge.props)
        if found is not None:
            edge_hits.append((found[0], edge.id, {**edge.to_json(vectors=vectors), "match": found[1]}))
    node_hits.sort(key=lambda hit: hit[:2])
    edge_hits.sort(key=lambda hit: hit[:2])
    truncated = scanned < total or edges_cut or len(node_hits) > limit or len(edge_hits) > limit
    return {
        "nodes": [record for _, _, record in node_hits[:limit]],
        "edges": [record for _, _, record in edge_hits[:limit]],
        "mode": "text",
        "note": None,
        "scanned": scanned,
        "total": total,
        "truncated": truncated,
    }
