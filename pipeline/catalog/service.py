"""Index runs and offline reads, for the CLI and the server alike."""

from __future__ import annotations

from typing import Any

from drsg.kernel.asof import AsOf
from drsg.kernel.errors import NotFound, UsageError
from drsg.kernel.gcpause import collector_paused
from drsg.kernel.values import Vector
from drsg.models.embedders.base import Embedder
from drsg.pipeline.catalog import semantic
from drsg.pipeline.catalog.backend import sampled
from drsg.pipeline.catalog.backends import backend_for
from drsg.pipeline.catalog.connections import Connection
from drsg.pipeline.catalog.model import Catalog, keep_l2
from drsg.pipeline.catalog.naming import expand, query_words
from drsg.pipeline.catalog.plane import SEARCHED, read_catalog, write_catalog
from drsg.pipeline.catalog.resolve import search as resolve_search
from drsg.store.database import Database
from drsg.store.snapshot import Snapshot
from drsg.workers.search import Searcher

LEVELS = ("l1", "l2", "full")


def index(
    db: Database,
    conn: Connection,
    level: str,
    enum_limit: int,
    sensitive: list[str],
    embedder: Embedder | None = None,
) -> list[dict[str, Any]]:
    """Index ``conn`` at ``level``: ``full`` writes L1 first (one commit, usable at once), then L2
    (a second commit); an L2 failure is reported and the L1 commit stays. One report per commit.
    ``sensitive``: the connection's names masked beside the built-in ones
    (``connections.sensitive_names``), marked in the plane and never sampled.
    With ``embedder``, the last level's commit carries the descriptions' vectors (L2 adds the
    comments, so a full run embeds once, at L2)."""
    if level not in LEVELS:
        raise UsageError(f"unknown level {level!r}; use l1, l2 or full")
    with collector_paused():  # 10,000 columns' records and mutations: full collections would hold the GIL 100+ ms
        return _index(db, conn, level, enum_limit, sensitive, embedder)


def _index(
    db: Database, conn: Connection, level: str, enum_limit: int, names: list[str], embedder: Embedder | None
) -> list[dict[str, Any]]:
    backend = backend_for(conn)
    reports = []
    if level in ("l1", "full"):
        snapshot = backend.introspect("l1", enum_limit, names)
        with db.snapshot() as snap:
            if snap.find_plane(conn.plane) is not None:
                snapshot = keep_l2(snapshot, read_catalog(snap, conn.plane))
        for table in snapshot.tables:  # a sample kept from before a name was made sensitive goes now
            for column in table.columns:
                if column.enum_sample is not None and not sampled(table, column, names):
                    column.enum_sample = None
        now = embedder if level == "l1" else None
        written = write_catalog(db, conn.plane, snapshot, conn.name, names, l2_run=False, embedder=now)
        reports.append({**written, "level": "l1"})
    if level in ("l2", "full"):
        try:
            catalog = backend.introspect("l2", enum_limit, names)
        except Exception as exc:  # the L1 commit above stays: an index that lists columns is most of the value
            if level == "l2":
                raise
            reports.append({"level": "l2", "failed": f"{type(exc).__name__}: {exc}"})
        else:
            catalog.level = "full"
            written = write_catalog(db, conn.plane, catalog, conn.name, names, l2_run=True, embedder=embedder)
            reports.append({**written, "level": "l2"})
    return reports


def load(db: Database, conn: Connection, as_of: AsOf | None = None) -> Catalog:
    """The catalog as the plane holds it (now, or as of a commit): no network."""
    with db.snapshot(as_of) as snap:
        if snap.find_plane(conn.plane) is None:
            raise NotFound(f"connection {conn.name!r} has not been indexed; run `drsg catalog index {conn.name}`")
        return read_catalog(snap, conn.plane)


CANDIDATES = 50  # hits per channel a fused catalog search ranks


def _bm25(searcher: Searcher, snap: Snapshot, plane: int, current: bool, words: str, k: int) -> list[dict[str, Any]]:
    """Tables, views and columns by BM25 over their ``terms`` (the keyword index the catalog
    declares), the question's words expanded with their aliases as the catalog's were."""
    query = " ".join(sorted(expand(query_words(words)))) or words
    hits: list[dict[str, Any]] = []
    for label, prop in SEARCHED:
        ids, scores = searcher.keyword_pool(snap, plane, label, prop, query, k, current)
        for node, score in zip(snap.nodes_at(plane, ids.tolist()), scores.tolist(), strict=True):
            if node is not None:
                hits.append({"score": round(float(score), 3), **_where(node.labels, node.props)})
    hits.sort(key=lambda h: (-h["score"], str(h["table"]), str(h.get("column", ""))))
    return hits[:k]


def _where(labels: list[str], props: dict[str, Any]) -> dict[str, Any]:
    label = next((name for name, _ in SEARCHED if name in labels), "Table")
    if label == "Column":
        return {"kind": "column", "table": props.get("table"), "column": props.get("name")}
    return {"kind": label.lower(), "table": props.get("name")}


def _key(hit: dict[str, Any]) -> str:
    return f"c:{hit['table']}.{hit['column']}" if "column" in hit else f"t:{hit['table']}"


def search(
    searcher: Searcher,
    conn: Connection,
    words: str,
    k: int,
    *,
    bm25: bool = False,
    query: Vector | None = None,
    as_of: AsOf | None = None,
) -> list[dict[str, Any]]:
    """``catalog search``: the keyword channel (the offline scorer, or BM25 with ``bm25``) alone,
    or, given the query's vector, fused with the vector channel over the descriptions' vectors;
    each hit names its channels' raw scores (keyword score, cosine similarity)."""
    with searcher.view(conn.plane, as_of) as (snap, plane, current):
        if bm25:
            keyword = _bm25(searcher, snap, plane, current, words, k if query is None else CANDIDATES)
        else:
            catalog = read_catalog(snap, conn.plane)
            matched = resolve_search(catalog, words, k if query is None else CANDIDATES)
            keyword = [m.to_json() for m in matched]
        if query is None:
            return keyword
        by_key = {_key(hit): hit for hit in keyword}
        ids: dict[str, int] = {}
        for key in by_key:
            node = snap.node_by_key(plane, key)
            if node is not None:
                ids[key] = node.id
        vector: dict[int, float] = {}
        for label in semantic.LABELS:
            found, sims = searcher.vector_pool(
                snap, plane, label, semantic.VECTOR, query, "cosine", CANDIDATES, current
            )
            vector.update(
                (n, s) for n, s in zip(found.tolist(), sims.tolist(), strict=True) if s >= semantic.MIN_SIMILARITY
            )
        fused = semantic.fuse({ids[key]: float(hit["score"]) for key, hit in by_key.items() if key in ids}, vector, k)
        nodes = snap.nodes_at(plane, [node for node, _, _ in fused])
        out = []
        for (_, score, raw), node in zip(fused, nodes, strict=True):
            if node is None:
                continue
            hit = {**_where(node.labels, node.props), **by_key.get(node.key or "", {})}
            hit["score"] = round(score, 4)
            hit["channels"] = semantic.channel_json(raw)
            out.append(hit)
        return out


def keyword_search(searcher: Searcher, conn: Connection, words: str, k: int) -> list[dict[str, Any]]:
    """Tables, views and columns by BM25 alone (``catalog search --keyword``)."""
    return search(searcher, conn, words, k, bm25=True)
