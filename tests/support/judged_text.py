"""A small judged retrieval set from real prose (the AI Native chapter and the dbgraph README in
tests/data): each passage of three sentences is a `Passage` node (its middle sentence taken out),
consecutive passages joined by `NEXT` edges; the taken-out sentence is a query, judged 2 for its
passage and 1 for the passages either side. Built deterministically, embedded by the local model.
"""

from __future__ import annotations

import json
import re
from itertools import pairwise
from pathlib import Path

DATA = Path(__file__).parents[1] / "data"
SOURCES = ("ai_native_en.txt", "dbgraph_readme.txt")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")
PLANE, LABEL = "prose", "Passage"


def passages() -> list[tuple[str, str, str]]:
    """``(key, passage text without its middle sentence, the middle sentence)`` in reading order."""
    out: list[tuple[str, str, str]] = []
    for source in SOURCES:
        text = (DATA / source).read_text(encoding="utf-8")
        sentences = [
            s.strip() for block in text.split("\n\n") for s in _SENTENCE.split(" ".join(block.split())) if s.strip()
        ]
        sentences = [s for s in sentences if len(s.split()) >= 6 and not s.startswith("$")]
        for i in range(0, len(sentences) - 2, 3):
            first, middle, last = sentences[i : i + 3]
            out.append((f"{source.split('_')[0]}-{i // 3:03d}", f"{first} {last}", middle))
    return out


def build(path: Path) -> tuple[Path, Path]:
    """The plane (keyword index on `text`, `text` embedded into an indexed `embedding`) in the
    database at ``path``; returns the qrels and queries files written beside it."""
    from drsg.models.embedders import get_embedder
    from drsg.pipeline.vectorize import vectorize
    from drsg.store.database import Database
    from drsg.store.transaction import WriteTx

    found = passages()
    db = Database(path, create=True)

    def load(tx: WriteTx) -> None:
        plane = tx.create_plane(PLANE)
        for key, text, _ in found:
            tx.create_node(plane, key, [LABEL], {"text": text})
        for (a, _, _), (b, _, _) in pairwise(found):
            if a.split("-")[0] == b.split("-")[0]:
                tx.create_edge(plane, a, b, "NEXT")
        tx.declare_index(plane, "keyword", LABEL, "text", {"language": "english"})

    db.write(load)
    vectorize(db, get_embedder(None), PLANE, "text", "embedding", LABEL)
    db.write(lambda tx: tx.declare_index(tx.plane(PLANE), "vector", LABEL, "embedding", {"metric": "cosine"}))
    db.close()
    qrels, queries = path.parent / "qrels.txt", path.parent / "queries.jsonl"
    judged, asked = [], []
    for i, (key, _, sentence) in enumerate(found):
        asked.append(json.dumps({"id": f"q{i:03d}", "text": sentence}))
        judged.append(f"q{i:03d} 0 {key} 2")
        for j in (i - 1, i + 1):
            if 0 <= j < len(found) and found[j][0].split("-")[0] == key.split("-")[0]:
                judged.append(f"q{i:03d} 0 {found[j][0]} 1")
    qrels.write_text("\n".join(judged) + "\n")
    queries.write_text("\n".join(asked) + "\n")
    return qrels, queries
