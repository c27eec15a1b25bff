"""A tiny real-text plane for hybrid tests: dictionary-style glosses and their IS_A edges."""

from __future__ import annotations

from pathlib import Path

DOCS = {
    "cello": "a large bowed string instrument with a deep tone, held between the knees",
    "violin": "bowed stringed instrument that is the highest member of the violin family",
    "strings": "instruments that produce sound from vibrating strings",
    "trumpet": "a brass wind instrument with a bright tone and three valves",
    "brass": "wind instruments made of metal that are played by buzzing the lips",
    "oak": "a deciduous tree bearing acorns, with hard durable wood",
    "trees": "tall woody perennial plants with a single main stem",
    "pine": "a coniferous evergreen tree with long needles in clusters",
}
EDGES = [("cello", "strings"), ("violin", "strings"), ("trumpet", "brass"), ("oak", "trees"), ("pine", "trees")]


def build(path: Path) -> int:
    """A database with plane `music`: the docs as `Doc` nodes with IS_A edges, a keyword index on
    `body`, and `body` embedded by the local model into an indexed `embedding`. Returns the head."""
    from drsg.models.embedders import get_embedder
    from drsg.pipeline.vectorize import vectorize
    from drsg.store.database import Database
    from drsg.store.transaction import WriteTx

    db = Database(path, create=True)

    def load(tx: WriteTx) -> None:
        plane = tx.create_plane("music")
        for key, text in DOCS.items():
            tx.create_node(plane, key, ["Doc"], {"body": text})
        for a, b in EDGES:
            tx.create_edge(plane, a, b, "IS_A")
        tx.declare_index(plane, "keyword", "Doc", "body", {"language": "english"})

    db.write(load)
    vectorize(db, get_embedder(None), "music", "body", "embedding", "Doc")
    db.write(lambda tx: tx.declare_index(tx.plane("music"), "vector", "Doc", "embedding", {"metric": "cosine"}))
    head = db.head()
    db.close()
    return head
