"""The catalog ↔ a plane: written in one commit per index run, read back offline.

Nodes, keyed so a re-index finds what it wrote before: ``t:NAME`` (``Table`` or ``View``),
``c:TABLE.COLUMN`` (``Column``), ``i:TABLE.INDEX`` (``Index``). Edges: ``HAS_COLUMN`` (table →
column), ``FK`` (column → the column it references), ``INDEX`` (index → column, with its
position), ``VIEW_REF`` (view → a table it reads). A run writes only the difference from what the
plane holds, so schema drift reaches the change feed as ordinary changes and ``AS OF`` reads the
schema as it was. An ``l1`` run is given the L2 facts the plane already has (``model.keep_l2``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from drsg.kernel.errors import BadValue, Conflict
from drsg.kernel.values import Json, Value, Vector, from_json, props_from_json, props_to_json, to_json
from drsg.models.embedders.base import Embedder
from drsg.pipeline.catalog import semantic
from drsg.pipeline.catalog.masking import is_sensitive
from drsg.pipeline.catalog.model import Catalog, Column, ForeignKey, IndexInfo, Table
from drsg.pipeline.catalog.naming import terms_text
from drsg.store.database import Database
from drsg.store.intents import Intent, IntentOp, IntentOps
from drsg.store.snapshot import Snapshot
from drsg.store.transaction import WriteTx

SEARCHED = (("Table", "terms"), ("View", "terms"), ("Column", "terms"))

Wanted = dict[str, tuple[list[str], dict[str, Value]]]
EdgeKey = tuple[str, str, str]


def _clean(props: Mapping[str, Any]) -> dict[str, Value]:
    return {k: v for k, v in props.items() if v is not None}


def _table_props(t: Table) -> dict[str, Value]:
    what = "view" if t.kind == "view" else "table"
    return _clean(
        {
            "name": t.name,
            "kind": t.kind,
            "comment": t.comment,
            "row_estimate": t.row_estimate,
            "terms": terms_text(t.name, t.comment),
            "description": f"{what} {t.name}" + (f": {t.comment}" if t.comment else ""),
        }
    )


def _column_props(t: Table, c: Column, extra: list[str]) -> dict[str, Value]:
    return _clean(
        {
            "table": t.name,
            "name": c.name,
            "ordinal": c.ordinal,
            "declared_type": c.declared_type,
            "type_class": c.type_class,
            "nullable": c.nullable,
            "default": c.default,
            "comment": c.comment,
            "primary": c.primary,
            "unique": c.unique,
            "enum_sample": list(c.enum_sample) if c.enum_sample is not None else None,
            "sensitive": is_sensitive(c.name, extra),
            "generated": True if c.generated else None,
            "terms": terms_text(c.name, c.comment),
            "description": f"column {t.name}.{c.name} {c.declared_type}" + (f": {c.comment}" if c.comment else ""),
        }
    )


def wanted_graph(catalog: Catalog, extra: list[str]) -> tuple[Wanted, dict[EdgeKey, dict[str, Value]]]:
    nodes: Wanted = {}
    edges: dict[EdgeKey, dict[str, Value]] = {}
    names = {t.name for t in catalog.tables}
    for t in catalog.tables:
        tkey = f"t:{t.name}"
        nodes[tkey] = (["View" if t.kind == "view" else "Table"], _table_props(t))
        for c in t.columns:
            nodes[f"c:{t.name}.{c.name}"] = (["Column"], _column_props(t, c, extra))
            edges[(tkey, "HAS_COLUMN", f"c:{t.name}.{c.name}")] = {}
        for fk in t.foreign_keys:
            for src, dst in zip(fk.columns, fk.ref_columns or fk.columns, strict=False):
                if fk.ref_table in names:  # a dangling reference is warned about, not drawn
                    edges[(f"c:{t.name}.{src}", "FK", f"c:{fk.ref_table}.{dst}")] = {}
                else:
                    catalog.warnings.append(f"{t.name}.{src} references {fk.ref_table}, which is not in the catalog")
        for ix in t.indexes:
            ikey = f"i:{t.name}.{ix.name}"
            nodes[ikey] = (["Index"], {"table": t.name, "name": ix.name, "unique": ix.unique})
            for pos, col in enumerate(ix.columns):
                edges[(ikey, "INDEX", f"c:{t.name}.{col}")] = {"position": pos}
        for ref in t.view_refs:
            if ref in names:
                edges[(tkey, "VIEW_REF", f"t:{ref}")] = {}
    return nodes, {k: v for k, v in edges.items() if k[0] in nodes and k[2] in nodes}


def write_catalog(
    db: Database,
    plane_name: str,
    catalog: Catalog,
    connection: str,
    extra: list[str],
    *,
    l2_run: bool,
    embedder: Embedder | None = None,
) -> dict[str, Any]:
    """Replace the plane's catalog with ``catalog`` in one commit; returns the counts changed.

    Descriptions keep their vectors while unchanged; with ``embedder``, the new and changed ones
    are embedded first (outside the write) and land in the same commit. The write is an intent
    (:data:`WRITE_OP`): the nodes, edges and vectors computed here travel as data and are reconciled
    by key where it lands in the log (on a Kafka node, against the state there)."""
    nodes, edges = wanted_graph(catalog, extra)
    embedded = semantic.prepare(db, plane_name, nodes, embedder) if embedder is not None else None
    now = datetime.now(UTC).isoformat(timespec="seconds")
    run = CatalogRun(
        plane_name, connection, catalog.engine, catalog.database, catalog.level, nodes, edges, embedded, now, l2_run
    )
    intent = Intent(WRITE_OP, run.to_json())
    origin: dict[str, Json] = {"via": "catalog.index", "connection": connection}
    result = (
        db.submit(intent, origin) if db.ops.unknown(intent) is None else db.write(_OWN.commit_function(intent), origin)
    )
    counts = result.value if isinstance(result.value, dict) else {}
    out = {**counts, "seq": result.seq, "level": catalog.level, "warnings": catalog.warnings}
    if embedded is not None:
        out["embedded"] = len(embedded.by_stamp)
    return out


#: The index run's write as an intent (store/intents.py), which drsg/api/operations.py adds to every
#: public database's table.
WRITE_OP = "catalog.write"


@dataclass(frozen=True)
class CatalogRun:
    """What one index run computed, as its intent carries it."""

    plane: str
    connection: str
    engine: str
    database: str
    level: str
    nodes: Wanted
    edges: dict[EdgeKey, dict[str, Value]]
    embedded: semantic.Embedded | None
    now: str
    l2_run: bool

    def to_json(self) -> dict[str, Json]:
        embedded: Json = None
        if self.embedded is not None:
            vectors: dict[str, Json] = {stamp: to_json(v) for stamp, v in self.embedded.by_stamp.items()}
            embedded = {"identity": self.embedded.identity, "dims": self.embedded.dims, "by_stamp": vectors}
        return {
            "plane": self.plane,
            "connection": self.connection,
            "engine": self.engine,
            "database": self.database,
            "level": self.level,
            "nodes": {key: [list(labels), props_to_json(props)] for key, (labels, props) in self.nodes.items()},
            "edges": [[src, kind, dst, props_to_json(props)] for (src, kind, dst), props in self.edges.items()],
            "embedded": embedded,
            "now": self.now,
            "l2_run": self.l2_run,
        }

    @classmethod
    def from_json(cls, args: Mapping[str, Any]) -> CatalogRun:
        """The run ``args`` carries; BadValue (a refusal, the same everywhere) for any other shape."""
        try:
            nodes: Wanted = {
                str(key): ([str(label) for label in labels], props_from_json(props))
                for key, (labels, props) in args["nodes"].items()
            }
            edges = {(str(s), str(k), str(d)): props_from_json(props) for s, k, d, props in args["edges"]}
            raw = args["embedded"]
            embedded = None
            if raw is not None:
                by_stamp = {str(stamp): from_json(v) for stamp, v in raw["by_stamp"].items()}
                vectors = {stamp: v for stamp, v in by_stamp.items() if isinstance(v, Vector)}
                embedded = semantic.Embedded(str(raw["identity"]), int(raw["dims"]), vectors)
            text = {name: str(args[name]) for name in ("plane", "connection", "engine", "database", "level", "now")}
            return cls(
                text["plane"],
                text["connection"],
                text["engine"],
                text["database"],
                text["level"],
                nodes,
                edges,
                embedded,
                text["now"],
                bool(args["l2_run"]),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise BadValue(f"a {WRITE_OP} intent is not an index run's ({type(exc).__name__}: {exc})") from None


def _write_op(tx: WriteTx, args: dict[str, Json]) -> Json:
    counts: dict[str, Json] = dict(apply_run(tx, CatalogRun.from_json(args)))
    return counts


def apply_run(tx: WriteTx, run: CatalogRun) -> dict[str, int]:
    """Reconcile the plane with ``run`` by key on the transaction's state: what the run computed, decided
    where its intent lands (the counts changed)."""
    plane_name, connection, nodes, edges = run.plane, run.connection, run.nodes, run.edges
    embedded, now, l2_run = run.embedded, run.now, run.l2_run
    plane = tx.view.find_plane(plane_name) or tx.create_plane(plane_name)
    owner = plane.props.get("catalog_connection")
    if owner != connection and (owner is not None or any(tx.view.counts(plane.id))):
        raise Conflict(
            f"plane {plane_name!r} holds something other than connection {connection!r}'s catalog; "
            f"rename it (`drsg plane rename {plane_name} OTHER`) and index again"
        )
    counts = {"created": 0, "updated": 0, "deleted": 0, "edges_created": 0, "edges_deleted": 0}
    existing = {n.key: n for n in tx.view.nodes(plane.id) if n.key}
    for key, node in existing.items():
        if key not in nodes:
            tx.delete_node(plane, node.id)
            counts["deleted"] += 1
    for key, (labels, wanted) in nodes.items():
        old = existing.get(key)
        props = semantic.with_vector(labels, wanted, old.props if old is not None else None, embedded)
        if old is None:
            tx.create_node(plane, key, labels, props)
            counts["created"] += 1
        elif old.labels != labels or old.props != props:
            tx.put_node(plane, key, labels, props, mode="replace")
            counts["updated"] += 1
    ids = {n.id: n.key for n in tx.view.nodes(plane.id) if n.key}
    have: set[EdgeKey] = set()
    for edge in list(tx.view.edges(plane.id)):
        src, dst = ids.get(edge.src), ids.get(edge.dst)
        if src is None or dst is None:
            continue
        ek = (src, edge.type, dst)
        if ek in have or edges.get(ek) != edge.props:
            tx.delete_edge(plane, edge.id)
            counts["edges_deleted"] += 1
        else:
            have.add(ek)
    by_key = {key: node_id for node_id, key in ids.items()}
    for ek, props in edges.items():
        if ek not in have:
            tx.link(plane, by_key[ek[0]], by_key[ek[2]], ek[1], props)
            counts["edges_created"] += 1
    for label, prop in SEARCHED:
        if tx.view.index(plane.id, "keyword", label, prop) is None:
            tx.declare_index(plane, "keyword", label, prop, {"language": "chinese"})
    if embedded is not None:  # the vectors get an HNSW index, and the plane the embedder's name
        for label in semantic.LABELS:
            if tx.view.index(plane.id, "vector", label, semantic.VECTOR) is None:
                tx.declare_index(plane, "vector", label, semantic.VECTOR, {"metric": "cosine", "dims": embedded.dims})
        if any(plane.props.get(k) != v for k, v in semantic.plane_meta(embedded).items()):
            tx.set_plane_props(plane_name, semantic.plane_meta(embedded))
    meta: dict[str, Value] = {
        "catalog_connection": connection,
        "catalog_engine": run.engine,
        "catalog_database": run.database,
        "catalog_level": run.level,
    }
    if any(counts.values()) or plane.props.get("catalog_l1_at") is None:
        meta["catalog_l1_at"] = now  # when the schema last changed (a run that finds no drift writes nothing)
    if l2_run:
        meta["catalog_l2_at"] = now
    if any(plane.props.get(k) != v for k, v in meta.items() if not k.endswith("_at")) or any(counts.values()):
        tx.set_plane_props(plane_name, meta)
    return counts


CATALOG_OPS: dict[str, IntentOp] = {WRITE_OP: _write_op}
_OWN = IntentOps(CATALOG_OPS)


def read_catalog(snap: Snapshot, plane_name: str) -> Catalog:
    """The catalog a plane holds (at the snapshot's commit): what ``find`` and the verbs read offline."""
    plane = snap.plane(plane_name)
    props = plane.props
    catalog = Catalog(str(props.get("catalog_engine", "")), str(props.get("catalog_database", "")), "")
    catalog.level = str(props.get("catalog_level", ""))
    tables: dict[str, Table] = {}
    columns: dict[str, list[tuple[int, Column]]] = {}
    indexes: dict[int, tuple[str, IndexInfo]] = {}
    keys: dict[int, str] = {}
    for node in snap.nodes(plane.id):
        p = node.props
        keys[node.id] = node.key or ""
        if "Table" in node.labels or "View" in node.labels:
            tables[str(p["name"])] = Table(
                str(p["name"]), str(p.get("kind", "table")), _opt(p.get("comment")), row_estimate=_int(p)
            )
        elif "Column" in node.labels:
            sample = p.get("enum_sample")
            col = Column(
                str(p["name"]),
                _whole(p.get("ordinal")),
                str(p.get("declared_type", "")),
                bool(p.get("nullable", True)),
                _opt(p.get("default")),
                _opt(p.get("comment")),
                bool(p.get("primary", False)),
                bool(p.get("unique", False)),
                [str(v) for v in sample] if isinstance(sample, list) else None,
                bool(p.get("generated", False)),
            )
            columns.setdefault(str(p["table"]), []).append((col.ordinal, col))
        elif "Index" in node.labels:
            indexes[node.id] = (str(p["table"]), IndexInfo(str(p["name"]), [], bool(p.get("unique", False))))
    for name, cols in columns.items():
        if name in tables:
            tables[name].columns = [c for _, c in sorted(cols, key=lambda pair: pair[0])]
    positions: dict[int, list[tuple[int, str]]] = {}
    for edge in snap.edges(plane.id):
        src, dst = keys.get(edge.src, ""), keys.get(edge.dst, "")
        if edge.type == "FK":
            s_table, s_col = src[2:].split(".", 1)
            d_table, d_col = dst[2:].split(".", 1)
            if s_table in tables:
                tables[s_table].foreign_keys.append(ForeignKey([s_col], d_table, [d_col]))
        elif edge.type == "VIEW_REF" and src[2:] in tables:
            tables[src[2:]].view_refs.append(dst[2:])
        elif edge.type == "INDEX" and edge.src in indexes:
            positions.setdefault(edge.src, []).append((_whole(edge.props.get("position")), dst.split(".", 1)[1]))
    for node_id, (table, info) in indexes.items():
        info.columns = [c for _, c in sorted(positions.get(node_id, []))]
        if table in tables:
            tables[table].indexes.append(info)
    catalog.tables = [tables[name] for name in sorted(tables)]
    for t in catalog.tables:
        t.view_refs.sort()
    return catalog


def _opt(value: object) -> str | None:
    return None if value is None else str(value)


def _int(props: Mapping[str, Value]) -> int | None:
    value = props.get("row_estimate")
    return value if isinstance(value, int) else None


def _whole(value: object) -> int:
    return value if isinstance(value, int) else 0
