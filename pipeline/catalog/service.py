"""Index runs and offline reads, for the CLI and the server alike."""

from __future__ import annotations

from typing import Any

from drsg.kernel.asof import AsOf
from drsg.kernel.errors import NotFound, UsageError
from drsg.pipeline.catalog.backends import backend_for
from drsg.pipeline.catalog.connections import Connection
from drsg.pipeline.catalog.model import Catalog, keep_l2
from drsg.pipeline.catalog.naming import expand, query_words
from drsg.pipeline.catalog.plane import SEARCHED, read_catalog, write_catalog
from drsg.store.database import Database
from drsg.workers.search import Searcher

LEVELS = ("l1", "l2", "full")


def index(db: Database, conn: Connection, level: str, enum_limit: int, extra: list[str]) -> list[dict[str, Any]]:
    """Index ``conn`` at ``level``: ``full`` writes L1 first (one commit, usable at once), then L2
    (a second commit); an L2 failure is reported and the L1 commit stays. One report per commit."""
    if level not in LEVELS:
        raise UsageError(f"unknown level {level!r}; use l1, l2 or full")
    backend = backend_for(conn)
    names = [*conn.sensitive_extra, *extra]
    reports = []
    if level in ("l1", "full"):
        snapshot = backend.introspect("l1", enum_limit)
        with db.snapshot() as snap:
            if snap.find_plane(conn.plane) is not None:
                snapshot = keep_l2(snapshot, read_catalog(snap, conn.plane))
        reports.append({**write_catalog(db, conn.plane, snapshot, conn.name, names, l2_run=False), "level": "l1"})
    if level in ("l2", "full"):
        try:
            catalog = backend.introspect("l2", enum_limit)
        except Exception as exc:  # the L1 commit above stays: an index that lists columns is most of the value
            if level == "l2":
                raise
            reports.append({"level": "l2", "failed": f"{type(exc).__name__}: {exc}"})
        else:
            catalog.level = "full"
            reports.append({**write_catalog(db, conn.plane, catalog, conn.name, names, l2_run=True), "level": "l2"})
    return reports


def load(db: Database, conn: Connection, as_of: AsOf | None = None) -> Catalog:
    """The catalog as the plane holds it (now, or as of a commit): no network."""
    with db.snapshot(as_of) as snap:
        if snap.find_plane(conn.plane) is None:
            raise NotFound(f"connection {conn.name!r} has not been indexed; run `drsg catalog index {conn.name}`")
        return read_catalog(snap, conn.plane)


def keyword_search(searcher: Searcher, conn: Connection, words: str, k: int) -> list[dict[str, Any]]:
    """Tables, views and columns by BM25 over their ``terms`` (the keyword index the catalog
    declares), the question's words expanded with their aliases as the catalog's were."""
    query = " ".join(sorted(expand(query_words(words)))) or words
    hits: list[dict[str, Any]] = []
    for label, prop in SEARCHED:
        for hit in searcher.keyword(conn.plane, label, prop, query, k):
            props = hit.node.props
            item: dict[str, Any] = {"score": round(float(hit.score or 0.0), 3), "kind": label.lower()}
            if label == "Column":
                item |= {"table": props.get("table"), "column": props.get("name")}
            else:
                item["table"] = props.get("name")
            hits.append(item)
    hits.sort(key=lambda h: (-h["score"], str(h["table"]), str(h.get("column", ""))))
    return hits[:k]
