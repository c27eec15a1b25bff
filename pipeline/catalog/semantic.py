"""Table and column descriptions by meaning: embedded when the catalog is indexed with an embedder,
searched beside the keywords.

A ``Table``/``View``/``Column`` node's description is embedded into ``embedding`` with
``vectorize``'s stamps (``_embedded_from``: the text's hash, ``_embedded_by``: the embedder), so a
re-index carries an unchanged description's vector over and embeds only what changed, in the same
commit as the drift. The text embedded is the comment first, then the name's words ("date of
birth (dob of person)"): MiniLM scores a paraphrase ~0.1 higher against it than against the
stored ``description`` ("column person.dob DATE: date of birth"), whose type and dotted name are
noise to a sentence model. ``catalog search`` then
fuses its keyword channel (split identifiers, Chinese, aliases) with the vector channel through
the hybrid fusion (min-max, weights 1/1); ``find`` asks the vector channel only where the keywords
name nothing, so a question the keywords answer is resolved exactly as without an embedder.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from drsg.kernel.values import Value, Vector
from drsg.models.embedders.base import Embedder
from drsg.pipeline.catalog.model import Catalog
from drsg.pipeline.catalog.naming import words_of
from drsg.pipeline.vectorize import clip, embedder_prop, same_embedder, text_stamp
from drsg.store.database import Database
from drsg.store.snapshot import Snapshot
from drsg.workers.exact import similarities as exact_similarities
from drsg.workers.fusion import Channel, Ranking

VECTOR = "embedding"
LABELS = ("Table", "View", "Column")
STAMPS = (VECTOR, "_embedded_from", "_embedded_by")
BATCH = 64
#: cosine similarity below which the vector channel proposes nothing (MiniLM scores unrelated short
#: texts ~0.0-0.25, a paraphrase of a description ~0.4-0.7): a query about nothing finds nothing
MIN_SIMILARITY = 0.3
#: ``find``: tables (or columns) found by meaning alone within this of the best are a tie → ambiguous
MARGIN = 0.05

#: a word (and the table whose columns to compare, or None: the tables and views) → name → similarity
Similar = Callable[[str, str | None], dict[str, float]]


@dataclass
class Embedded:
    """The vectors an index run writes: one per description stamp, all by one embedder."""

    identity: str
    dims: int
    by_stamp: dict[str, Vector] = field(default_factory=dict)


def meaning_text(labels: list[str], props: Mapping[str, Value]) -> str | None:
    """What is embedded for a catalog node: its comment, then its name's words (and its table's)."""
    name = props.get("name")
    if not isinstance(name, str) or not any(label in LABELS for label in labels):
        return None
    words = " ".join(words_of(name)) or name
    if "Column" in labels:
        table = str(props.get("table", ""))
        words = f"{words} of {' '.join(words_of(table)) or table}"
    else:
        words = f"{'view' if 'View' in labels else 'table'} {words}"
    comment = props.get("comment")
    return clip(f"{comment} ({words})" if isinstance(comment, str) and comment.strip() else words)


def stamp_of(labels: list[str], props: Mapping[str, Value]) -> str | None:
    text = meaning_text(labels, props)
    return None if text is None else text_stamp(text)


def prepare(
    db: Database, plane: str, wanted: Mapping[str, tuple[list[str], dict[str, Value]]], embedder: Embedder
) -> Embedded:
    """Embed the descriptions in ``wanted`` that the plane holds no vector of (by this embedder) for."""
    same_embedder(
        db,
        plane,
        VECTOR,
        embedder,
        f"index with that embedder (or without --embed), or drop the plane (`drsg plane drop {plane}`) to embed anew",
    )
    identity = embedder.identity()
    have: set[str] = set()
    with db.snapshot() as snap:
        found = snap.find_plane(plane)
        for label in LABELS if found is not None else ():
            for node in snap.nodes(found.id, label):  # type: ignore[union-attr]
                if isinstance(node.props.get(VECTOR), Vector) and node.props.get("_embedded_by") == identity:
                    have.add(str(node.props.get("_embedded_from")))
    todo: dict[str, str] = {}
    for labels, props in wanted.values():
        text = meaning_text(labels, props)
        if text is not None and text_stamp(text) not in have:
            todo[text_stamp(text)] = text
    stamps = list(todo)
    embedded = Embedded(identity, 0)
    for start in range(0, len(stamps), BATCH):
        chunk = stamps[start : start + BATCH]
        for stamp, vector in zip(chunk, embedder.embed([todo[s] for s in chunk]), strict=True):
            embedded.by_stamp[stamp] = vector
    embedded.dims = next(iter(embedded.by_stamp.values())).dims if embedded.by_stamp else embedder_dims(embedder)
    return embedded


def embedder_dims(embedder: Embedder) -> int:
    return embedder.embed(["dimensions"])[0].dims


def with_vector(
    labels: list[str], props: dict[str, Value], old: Mapping[str, Value] | None, embedded: Embedded | None
) -> dict[str, Value]:
    """``props`` with its description's vector: the old one while the description is unchanged (a
    re-index must not drop it), else the fresh one this run embedded, else none (a stale vector
    describes text the column no longer has)."""
    if embedded is None and (old is None or not isinstance(old.get(VECTOR), Vector)):
        return props  # nothing to carry, nothing to add: no hashing inside the write for a plain catalog
    stamp = stamp_of(labels, props)
    if stamp is None:
        return props
    if (
        old is not None
        and isinstance(old.get(VECTOR), Vector)
        and old.get("_embedded_from") == stamp
        and (embedded is None or old.get("_embedded_by") == embedded.identity)
    ):
        return {**props, **{k: old[k] for k in STAMPS if k in old}}
    if embedded is not None and stamp in embedded.by_stamp:
        return {**props, VECTOR: embedded.by_stamp[stamp], "_embedded_from": stamp, "_embedded_by": embedded.identity}
    return props


def plane_meta(embedded: Embedded) -> dict[str, Value]:
    """What the plane records so a text query is embedded the way its vectors were (``vectorize``'s key)."""
    return {embedder_prop(VECTOR): embedded.identity}


# ---------------------------------------------------------------------------------------------- search


def fuse(
    keyword: Mapping[int, float], vector: Mapping[int, float], k: int
) -> list[tuple[int, float, dict[str, float | None]]]:
    """The keyword and vector channels fused as ``drsg hybrid`` fuses them (min-max, weights 1/1):
    ``(node id, fused score, raw score per channel)``, best first."""
    channels = [Channel("keyword", dict(keyword)), Channel("vector", dict(vector))]
    out = []
    for node, score, raw, _share in Ranking(channels, "minmax").entries(("keyword", "vector")):
        out.append((node, score, raw))
        if len(out) >= k:
            break
    return out


def similarities(snap: Snapshot, plane: int, keys: list[str], query: Vector) -> dict[str, float]:
    """Cosine similarity of ``query`` to each keyed node's vector (nodes without one left out), exactly."""
    vectors, found = [], []
    for key in keys:
        node = snap.node_by_key(plane, key)
        value = node.props.get(VECTOR) if node is not None else None
        if isinstance(value, Vector) and value.dims == query.dims:
            vectors.append(np.frombuffer(value.data, dtype="<f4"))
            found.append(key)
    if not found:
        return {}
    sims = exact_similarities("cosine", np.vstack(vectors), np.frombuffer(query.data, dtype="<f4"))
    return {key: float(s) for key, s in zip(found, sims.tolist(), strict=True)}


def similar_in(db: Database, plane: str, catalog: Catalog, embedder: Embedder | None) -> Similar | None:
    """``find``'s :data:`Similar` over the plane's vectors at the head, for ``catalog``'s tables,
    views and their columns (None without an embedder: the keywords alone); a word is embedded once."""
    if embedder is None:
        return None
    tables = {t.name: [c.name for c in t.columns] for t in catalog.tables}
    cache: dict[str, Vector] = {}

    def similar(word: str, table: str | None) -> dict[str, float]:
        query = cache.get(word) or cache.setdefault(word, embedder.embed([word])[0])
        keys = [f"t:{t}" for t in tables] if table is None else [f"c:{table}.{c}" for c in tables.get(table, [])]
        with db.snapshot() as snap:
            found = snap.find_plane(plane)
            sims = similarities(snap, found.id, keys, query) if found is not None else {}
        return {key.split(".", 1)[1] if table else key[2:]: s for key, s in sims.items() if s >= MIN_SIMILARITY}

    return similar


def channel_json(raw: Mapping[str, Any]) -> dict[str, float | None]:
    return {name: None if value is None else round(float(value), 4) for name, value in raw.items()}
