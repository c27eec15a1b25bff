"""vectorize: embed a text property into a vector property for every node, through the log.

A node is skipped when its text is unchanged since it was last embedded *by the same embedder*
(``_embedded_from`` holds 16 hex digits of the text's SHA-256, upstream's stamp, and
``_embedded_by`` the embedder's identity). The plane records which embedder produced each vector
property (plane property ``_embedder:<property>``), so a text query can later be embedded the same
way without the user repeating ``--embed``.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from drsg.kernel.errors import BadValue, UsageError
from drsg.kernel.values import Json, Vector, from_json, to_json
from drsg.models.embedders.base import Embedder
from drsg.store.database import Database
from drsg.store.intents import Intent, answered, batch
from drsg.store.records import Node
from drsg.store.transaction import WriteTx

MAX_TEXT_BYTES = 6000  # upstream's cap on the text sent for one node


@dataclass
class VectorizeReport:
    embedded: int = 0
    unchanged: int = 0
    skipped_no_text: int = 0
    unique: int = 0  # distinct texts among those embedded
    labels: set[str] = field(default_factory=set)
    seqs: list[int] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "embedded": self.embedded,
            "current": self.unchanged,
            "no_text": self.skipped_no_text,
            "labels": sorted(self.labels),
            "commits": len(self.seqs),
        }


def text_stamp(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def clip(text: str) -> str:
    """The part of a text that is embedded (at most MAX_TEXT_BYTES of UTF-8)."""
    return text.encode()[:MAX_TEXT_BYTES].decode(errors="ignore")


def embedder_prop(into: str) -> str:
    return f"_embedder:{into}"


def recorded_embedder(db: Database, plane: str, prop: str) -> str | None:
    """The identity of the embedder that produced ``prop``'s vectors in a plane, if recorded."""
    with db.snapshot() as snap:
        found = snap.find_plane(plane)
        value = found.props.get(embedder_prop(prop)) if found is not None else None
    return value if isinstance(value, str) else None


def ensure_vector_indexes(db: Database, plane: str, labels: Iterable[str], prop: str, metric: str) -> None:
    """A vector index on ``prop`` for each label that has none (an existing one keeps its metric)."""
    wanted = sorted(set(labels))
    if not wanted:
        return
    options: dict[str, Json] = {"metric": metric}
    ensure = [
        Intent(
            "index.ensure",
            {
                "plane": plane,
                "kind": "vector",
                "label": label,
                "property": prop,
                "options": options,
                "if_missing": True,
            },
        )
        for label in wanted
    ]
    db.submit(batch(ensure), {"via": "vectorize"})  # decided where it lands: an index made meanwhile is kept


def same_embedder(db: Database, plane: str, into: str, embedder: Embedder, fix: str) -> str | None:
    """The embedder recorded for ``into``'s vectors in ``plane`` (None: none yet); a UsageError naming
    ``fix`` when it is another than ``embedder``: one property holds one vector space."""
    recorded, identity = recorded_embedder(db, plane, into), embedder.identity()
    if recorded is not None and recorded != identity:
        raise UsageError(
            f"{into!r} in plane {plane!r} holds vectors from {recorded}; embedding with {identity} would mix two "
            f"vector spaces — {fix}"
        )
    return recorded


def vectorize(
    db: Database,
    embedder: Embedder,
    plane: str,
    source: str,
    into: str = "embedding",
    label: str | None = None,
    batch: int = 64,
    progress: Callable[[int, int], None] | None = None,
) -> VectorizeReport:
    """Embed ``source`` into ``into`` for every node (of ``label``) whose text changed."""
    if source == into:
        raise UsageError(f"--from and --into are both {source!r}; the vector needs its own property")

    return embed_nodes(
        db, embedder, plane, prop_text(source), into, label=label, batch=batch, progress=progress, rule={"prop": source}
    )


def prop_text(source: str) -> Callable[[Node], str | None]:
    """vectorize's text rule: the node's ``source`` property, when it is a string."""

    def text_of(node: Node) -> str | None:
        text = node.props.get(source)
        return text if isinstance(text, str) else None

    return text_of


def embed_nodes(
    db: Database,
    embedder: Embedder,
    plane: str,
    text_of: Callable[[Node], str | None],
    into: str = "embedding",
    *,
    label: str | None = None,
    keys: Iterable[str] | None = None,
    batch: int = 64,
    progress: Callable[[int, int], None] | None = None,
    origin: dict[str, Any] | None = None,
    rule: Json = None,
) -> VectorizeReport:
    """Embed ``text_of(node)`` into ``into`` for the nodes (of ``label``; only ``keys``, when given)
    whose text changed since they were last embedded by this embedder, one commit per ``batch``.

    ``rule`` names ``text_of`` as drsg/api/operations.py's :data:`WRITE_OP` knows it (``{"prop":
    name}``, ``"node_text"``, ``"fact_text"``): then each batch is an intent carrying its vectors as data, decided where
    it lands — a node deleted, or whose text changed, since it was read is skipped there, alike on
    every node (the next run embeds it). Without one, each batch is a commit function (as before)."""
    identity = embedder.identity()
    fix = "use the same --embed/--embed-model, or --into another property"
    recorded = same_embedder(db, plane, into, embedder, fix)
    report = VectorizeReport()
    todo: list[tuple[int, str, str]] = []  # node id, text, stamp
    with db.snapshot() as snap:
        plane_id = snap.plane(plane).id
        if keys is None:
            nodes: Iterable[Node | None] = snap.nodes(plane_id, label)
        else:
            nodes = (snap.node_by_key(plane_id, key) for key in keys)
        for node in nodes:
            if node is None or (label is not None and label not in node.labels):
                continue
            text = text_of(node)
            if text is None or not text.strip():
                report.skipped_no_text += 1
                continue
            text = clip(text)
            stamp = text_stamp(text)
            current = isinstance(node.props.get(into), Vector)
            if current and node.props.get("_embedded_from") == stamp and node.props.get("_embedded_by") == identity:
                report.unchanged += 1
                continue
            todo.append((node.id, text, stamp))
            report.labels.update(node.labels)
    report.unique = len({stamp for _, _, stamp in todo})
    for start in range(0, len(todo), batch):
        chunk = todo[start : start + batch]
        vectors = embedder.embed([text for _, text, _ in chunk])
        made = origin or {"via": "vectorize", "embedder": identity}
        if rule is not None and db.ops.unknown(Intent(WRITE_OP, {})) is None:
            items: list[Json] = [
                [node_id, stamp, to_json(v)] for (node_id, _, stamp), v in zip(chunk, vectors, strict=True)
            ]
            args: dict[str, Json] = {"plane": plane, "into": into, "identity": identity, "rule": rule, "items": items}
            done = db.submit(Intent(WRITE_OP, args), made)
            written, seqs = answered(done, "written"), done.seqs
        else:
            result = db.write(
                functools.partial(
                    _write,
                    plane_name=plane,
                    chunk=chunk,
                    vectors=vectors,
                    text_of=text_of,
                    into=into,
                    identity=identity,
                ),
                made,
            )
            written, seqs = result.value, result.seqs
        report.embedded += int(written)
        report.seqs.extend(seqs)
        if progress is not None:
            progress(min(start + batch, len(todo)), len(todo))
    if todo and recorded is None:
        record = Intent("plane.set_props", {"plane": plane, "properties": {embedder_prop(into): identity}})
        db.submit(record, origin or {"via": "vectorize"})
    return report


#: A batch of vectorize's vectors as an intent (drsg/api/operations.py decides it with its text rule).
WRITE_OP = "vectorize.write"


def write_op(tx: WriteTx, args: dict[str, Json], text_of: Callable[[Node], str | None]) -> Json:
    """Write the vectors ``args`` carries to the nodes whose text (by ``text_of``) is still the one
    embedded (by its stamp); answers how many were written."""
    plane, into, identity, items = args.get("plane"), args.get("into"), args.get("identity"), args.get("items")
    if not (isinstance(plane, str) and isinstance(into, str) and isinstance(identity, str) and isinstance(items, list)):
        raise BadValue(f"a {WRITE_OP} names its plane, into, identity and items")
    chunk: list[tuple[int, str, str]] = []
    vectors: list[Vector] = []
    for item in items:
        if not (isinstance(item, list) and len(item) == 3 and isinstance(item[0], int) and isinstance(item[1], str)):
            raise BadValue(f"a {WRITE_OP} item is [node id, text stamp, vector]")
        vector = from_json(item[2])
        if not isinstance(vector, Vector):
            raise BadValue(f'a {WRITE_OP} item\'s vector is {{"$vector": [...]}}')
        chunk.append((item[0], "", item[1]))
        vectors.append(vector)
    return {"written": _write(tx, plane, chunk, vectors, text_of, into, identity)}


def _write(
    tx: WriteTx,
    plane_name: str,
    chunk: list[tuple[int, str, str]],
    vectors: list[Vector],
    text_of: Callable[[Node], str | None],
    into: str,
    identity: str,
) -> int:
    plane = tx.plane(plane_name)
    written = 0
    for (node_id, _text, stamp), vector in zip(chunk, vectors, strict=True):
        node = tx.view.node(plane.id, node_id)
        text = text_of(node) if node is not None else None
        if text is None or text_stamp(clip(text)) != stamp:
            continue  # deleted or edited while we were embedding: the next run picks it up
        tx.update_node(plane, node_id, {into: vector, "_embedded_from": stamp, "_embedded_by": identity})
        written += 1
    return written
