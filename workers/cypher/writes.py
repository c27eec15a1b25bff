"""The write clauses — CREATE, MERGE, SET, REMOVE, DELETE, DETACH DELETE — on a write transaction.

A write statement runs inside one commit function (``db.write``): every clause reads and writes
the transaction (``tx.view`` sees the statement's own earlier changes), and any error leaves the
function, so nothing of the statement is written. Nothing here has an effect outside the
transaction: a Kafka node runs the same function on its copy, and the group-commit writer may run
it again.

:func:`run_write` runs a statement's row plan through the executor (:mod:`drsg.workers.cypher.execute`)
on the transaction's view, and the executor hands each write clause to :func:`apply_write`, which
runs it over the rows so far (all rows, in order, before the next clause) and gives the rows that
go on. :class:`WriteSession` holds the statement's state — the transaction, the graph it reads
(:class:`~drsg.workers.cypher.write_graph.TxGraph`), the executor its expressions run in, the counts.

The rules beside openCypher 9's (upstream's): in a created or merged node, a string ``key`` entry
is the node's external key, not a property (a key already held: Conflict, use MERGE); a MERGE with
one finds the node by the key index. A property value is a boolean, number, string, bytes, a map,
or a list whose items are all of one of these kinds (no nulls, openCypher); a list of numbers
written to a property with a vector index (on one of the node's labels) is stored as a vector.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields, replace

from drsg.kernel.errors import Conflict, QueryError, QueryLimit
from drsg.kernel.values import Value, Vector
from drsg.plan.cypher import ast
from drsg.plan.cypher.graph import KEY_PROPERTY, CypherValue, NodeRef, PathValue, RelRef, Row
from drsg.plan.cypher.rows import WriteClause
from drsg.plan.cypher.statement import Prepared
from drsg.plan.cypher.values import to_store, type_name
from drsg.store.records import Plane
from drsg.store.transaction import WriteTx
from drsg.workers.cypher.execute import Executor, Limits, scan_source
from drsg.workers.cypher.result import CypherResult, WriteCounts
from drsg.workers.cypher.run import answer
from drsg.workers.cypher.write_graph import LastRecords, TxGraph
from drsg.workers.cypher.write_match import NodeWant, RelWant, match_part


@dataclass
class Tally:
    """The counts as the statement goes (see :class:`~drsg.workers.cypher.result.WriteCounts`)."""

    nodes_created: int = 0
    nodes_deleted: int = 0
    edges_created: int = 0
    edges_deleted: int = 0
    labels_added: int = 0
    labels_removed: int = 0
    props_set: int = 0
    props_removed: int = 0

    def counts(self) -> WriteCounts:
        return WriteCounts(**{f.name: getattr(self, f.name) for f in fields(self)})


class WriteSession:
    """One write statement inside its commit function: the transaction, the graph it reads, the
    counts. Its expressions run in the statement's executor (the parameters, pattern predicates)."""

    def __init__(self, tx: WriteTx, plane: Plane, graph: TxGraph, executor: Executor) -> None:
        self.tx = tx
        self.plane = plane
        self.view = graph
        self.executor = executor
        self.tally = Tally()
        #: what the statement created, in order (the answer's subgraph holds them)
        self.created_nodes: list[int] = []
        self.created_rels: list[int] = []
        self._vector_props: dict[str, set[str]] | None = None

    def value(self, expr: ast.Expr, row: Row) -> CypherValue:
        return self.executor.value(expr, row)

    def vector_props(self, labels: Iterable[str]) -> set[str]:
        """The properties with a vector index on one of ``labels`` (a list of numbers written there
        is stored as a vector, so the index sees it)."""
        if self._vector_props is None:
            self._vector_props = {}
            for decl in self.tx.view.indexes(self.plane.id, "vector"):
                self._vector_props.setdefault(decl.label, set()).add(decl.prop)
        return {prop for label in labels for prop in self._vector_props.get(label, ())}

    def check(self, rows: int) -> None:
        """QueryLimit past ``[query] max_rows`` rows or the deadline (then nothing is written)."""
        high = self.executor.limits.max_rows
        if high is not None and rows > high:
            raise QueryLimit(f"a write made more than {high} rows; narrow the MATCH or raise [query] max_rows")
        self.executor.tick(1)


def run_write(
    tx: WriteTx,
    plane: str,
    prepared: Prepared,
    params: Mapping[str, CypherValue] | None = None,
    *,
    embed: object = None,
    max_rows: int | None = None,
    timeout: float | None = None,
) -> CypherResult:
    """Run a write statement inside the commit function ``tx`` belongs to: its rows, the counts,
    and the subgraph of what it returned and created. ``seq`` is the head it ran at (the caller
    puts the commit's seq there once it is made). A write's MATCH reads the transaction's view by
    scans and seeks; ``embed`` is taken for the read path's signature (a write has no SEARCH)."""
    del embed  # SEARCH, HYBRID and CALL are refused in a write (scan_source): nothing to embed
    target = tx.plane(plane)  # NotFound says how to create it
    view, graph = tx.view, TxGraph(tx, target)
    session: WriteSession | None = None

    def writer(clause: WriteClause, rows: list[Row]) -> list[Row]:
        assert session is not None
        return apply_write(clause, rows, session)

    limits = Limits.of(max_rows, timeout)
    executor = Executor(view, target.id, graph, params or {}, scan_source(view, target.id), limits, writer)
    session = WriteSession(tx, target, graph, executor)
    recs = executor.run(prepared.compiled.plan)
    records = LastRecords(session.view)
    columns = prepared.columns
    result = answer(columns, recs if columns else [], records, seq=tx.seq - 1)
    nodes = {node.id: node for node in result.nodes}
    edges = {edge.id: edge for edge in result.edges}
    for rel in session.created_rels:
        if rel not in session.view.deleted_rels:
            edge = edges.setdefault(rel, records.edge(rel))
            for end in (edge.src, edge.dst):
                nodes.setdefault(end, records.node(end))
    for node in session.created_nodes:
        if node not in session.view.deleted_nodes:
            nodes.setdefault(node, records.node(node))
    return replace(result, nodes=tuple(nodes.values()), edges=tuple(edges.values()), counts=session.tally.counts())


def apply_write(clause: WriteClause, rows: Iterable[Row], session: WriteSession) -> list[Row]:
    """Run ``clause`` on each row in order; the rows that go on (CREATE and MERGE bind their new
    variables; a MERGE that matches twice makes two rows)."""
    out: list[Row] = []
    if isinstance(clause, ast.Delete):
        return _Deleter(session, clause.detach).run(clause.exprs, rows)
    for row in rows:
        next_row = dict(row)
        if isinstance(clause, ast.Create):
            for part in clause.pattern:
                _create_part(session, part, next_row, merge=False)
            out.append(next_row)
        elif isinstance(clause, ast.Merge):
            out.extend(_merge(session, clause, next_row))
        elif isinstance(clause, ast.SetClause):
            for item in clause.items:
                _set_item(session, item, next_row)
            out.append(next_row)
        else:
            for removal in clause.items:
                _remove_item(session, removal, next_row)
            out.append(next_row)
        session.check(len(out))
    return out


# ---------------------------------------------------------------------------- CREATE and MERGE


def _create_part(session: WriteSession, part: ast.PatternPart, row: dict[str, CypherValue], *, merge: bool) -> None:
    """Create what ``part`` names and is not bound yet (its nodes, then its relationships), binding
    the new variables in ``row``."""
    what = "MERGE" if merge else "CREATE"
    node_ids = [_create_node(session, pattern, row, what) for pattern in part.nodes]
    rel_ids: list[int] = []
    for i, rel in enumerate(part.rels):
        if rel.length is not None:
            raise QueryError(f"{what} cannot make a variable-length relationship (*); give each hop")
        if len(rel.types) != 1:
            raise QueryError(f"{what} makes a relationship of exactly one type: write -[:TYPE]->")
        if rel.variable is not None and rel.variable in row:
            raise QueryError(f"{what} cannot reuse relationship variable {rel.variable!r}: it is bound already")
        if rel.direction == "both" and not merge:
            raise QueryError("CREATE makes directed relationships: write -[:TYPE]-> or <-[:TYPE]-")
        src, dst = (node_ids[i + 1], node_ids[i]) if rel.direction == "in" else (node_ids[i], node_ids[i + 1])
        props = _stored(session, _pattern_props(session, rel.properties, row), labels=())
        edge = session.tx.create_edge(session.plane, src, dst, rel.types[0], props)
        session.tally.edges_created += 1
        session.tally.props_set += len(props)
        session.created_rels.append(edge.id)
        rel_ids.append(edge.id)
        if rel.variable is not None:
            row[rel.variable] = RelRef(edge.id)
    _bind_path(part, row, node_ids, rel_ids)


def _create_node(session: WriteSession, pattern: ast.NodePattern, row: dict[str, CypherValue], what: str) -> int:
    if pattern.variable is not None and pattern.variable in row:
        bound = row[pattern.variable]
        if pattern.labels or pattern.properties is not None:
            raise QueryError(
                f"{what} cannot give labels or properties to {pattern.variable!r}: it is bound already "
                "(use SET to change it)"
            )
        if not isinstance(bound, NodeRef):
            raise QueryError(f"{what} needs {pattern.variable!r} to be a node, not {type_name(bound)}")
        return bound.id
    props = _pattern_props(session, pattern.properties, row)
    key = props.pop(KEY_PROPERTY) if isinstance(props.get(KEY_PROPERTY), str) else None
    stored = _stored(session, props, pattern.labels)
    plane = session.plane
    if isinstance(key, str) and session.tx.view.node_id_by_key(plane.id, key) is not None:
        raise Conflict(
            f"a node with key {key!r} already exists in plane {plane.name!r}; use MERGE to match it, "
            "or MATCH it and SET what should change"
        )
    node = session.tx.create_node(plane, key if isinstance(key, str) else None, pattern.labels, stored)
    session.tally.nodes_created += 1
    session.tally.labels_added += len(node.labels)
    session.tally.props_set += len(stored)
    session.created_nodes.append(node.id)
    if pattern.variable is not None:
        row[pattern.variable] = NodeRef(node.id)
    return node.id


def _bind_path(part: ast.PatternPart, row: dict[str, CypherValue], node_ids: list[int], rel_ids: list[int]) -> None:
    for pattern, node_id in zip(part.nodes, node_ids, strict=True):
        if pattern.variable is not None:
            row[pattern.variable] = NodeRef(node_id)
    for rel, rel_id in zip(part.rels, rel_ids, strict=True):
        if rel.variable is not None:
            row[rel.variable] = RelRef(rel_id)
    if part.path_variable is not None:
        row[part.path_variable] = PathValue(tuple(NodeRef(n) for n in node_ids), tuple(RelRef(r) for r in rel_ids))


def _merge(session: WriteSession, clause: ast.Merge, row: dict[str, CypherValue]) -> list[Row]:
    """The rows MERGE gives for one row: one per match (then ON MATCH SET), else the one it
    creates (then ON CREATE SET)."""
    part = clause.part
    nodes, rels = _wants(session, part, row)
    found = list(match_part(session.view, part, nodes, rels))
    if not found:
        _create_part(session, part, row, merge=True)
        for item in clause.on_create:
            _set_item(session, item, row)
        return [row]
    out: list[Row] = []
    for node_ids, rel_ids in found:
        matched = dict(row)
        _bind_path(part, matched, node_ids, rel_ids)
        for item in clause.on_match:
            _set_item(session, item, matched)
        out.append(matched)
    return out


def _wants(session: WriteSession, part: ast.PatternPart, row: Row) -> tuple[list[NodeWant], list[RelWant]]:
    """What each element of MERGE's ``part`` asks, evaluated in ``row``."""
    nodes: list[NodeWant] = []
    for pattern in part.nodes:
        bound = _bound(row, pattern.variable, NodeRef)
        if bound is not None and (pattern.labels or pattern.properties is not None):
            raise QueryError(
                f"MERGE cannot give labels or properties to {pattern.variable!r}: it is bound already "
                "(use ON CREATE SET / ON MATCH SET)"
            )
        nodes.append(NodeWant(bound, pattern.labels, _wanted_props(session, pattern.properties, row)))
    rels: list[RelWant] = []
    for rel in part.rels:
        if len(rel.types) != 1:
            raise QueryError("MERGE makes a relationship of exactly one type: write -[:TYPE]->")
        if _bound(row, rel.variable, RelRef) is not None:
            raise QueryError(f"MERGE cannot reuse relationship variable {rel.variable!r}: it is bound already")
        rels.append(RelWant(rel.types, rel.direction, _wanted_props(session, rel.properties, row)))
    return nodes, rels


def _bound(row: Row, variable: str | None, kind: type[NodeRef] | type[RelRef]) -> int | None:
    if variable is None or variable not in row:
        return None
    value = row[variable]
    if not isinstance(value, kind):
        wanted = "a node" if kind is NodeRef else "a relationship"
        raise QueryError(f"MERGE needs {variable!r} to be {wanted}, not {type_name(value)}")
    return value.id


def _wanted_props(
    session: WriteSession, expr: ast.MapLiteral | ast.Parameter | None, row: Row
) -> dict[str, CypherValue]:
    props = _pattern_props(session, expr, row)
    for name, value in props.items():
        if value is None:
            raise QueryError(f"MERGE cannot match a null value for property {name!r}; give it a value")
    return props


def _pattern_props(
    session: WriteSession, expr: ast.MapLiteral | ast.Parameter | None, row: Row
) -> dict[str, CypherValue]:
    if expr is None:
        return {}
    value = session.value(expr, row)
    if not isinstance(value, dict):
        raise QueryError(f"a pattern's properties are a map, not {type_name(value)}")
    return dict(value)


# ---------------------------------------------------------------------------- SET and REMOVE


def _set_item(session: WriteSession, item: ast.SetItem, row: Row) -> None:
    if isinstance(item, ast.SetProperty):
        target = session.value(item.target.subject, row)
        if target is not None:  # SET on a null (an OPTIONAL MATCH's miss) does nothing
            _write_props(session, target, {item.target.key: session.value(item.value, row)}, replace=False)
        return
    target = row.get(item.variable)
    if target is None:
        return
    if isinstance(item, ast.SetLabels):
        node = _node_of(target, "SET")
        record = session.view.node(node)
        added = [label for label in dict.fromkeys(item.labels) if label not in record.labels]
        if added:
            session.tx.update_node(session.plane, node, labels=[*record.labels, *added])
            session.tally.labels_added += len(added)
        return
    value = session.value(item.value, row)
    if isinstance(value, NodeRef):
        changes: Mapping[str, CypherValue] = session.view.properties(value.id)
    elif isinstance(value, RelRef):
        changes = session.view.relationship(value.id).properties
    elif isinstance(value, dict):
        changes = value
    else:
        raise QueryError(f"SET {item.variable} {'+=' if item.merge else '='} needs a map, not {type_name(value)}")
    _write_props(session, target, changes, replace=not item.merge)


def _remove_item(session: WriteSession, item: ast.RemoveItem, row: Row) -> None:
    if isinstance(item, ast.RemoveProperty):
        target = session.value(item.target.subject, row)
        if target is not None:
            _write_props(session, target, {item.target.key: None}, replace=False)
        return
    target = row.get(item.variable)
    if target is None:
        return
    node = _node_of(target, "REMOVE")
    record = session.view.node(node)
    kept = [label for label in record.labels if label not in item.labels]
    if len(kept) != len(record.labels):
        session.tx.update_node(session.plane, node, labels=kept)
        session.tally.labels_removed += len(record.labels) - len(kept)


def _write_props(
    session: WriteSession, target: CypherValue, changes: Mapping[str, CypherValue], *, replace: bool
) -> None:
    """Set each non-null value of ``changes`` and remove each null one (``replace``: remove every
    other property too); counts each property written and each one that was there and is removed."""
    if isinstance(target, NodeRef):
        record = session.view.node(target.id)
        old, labels = record.props, tuple(record.labels)
    elif isinstance(target, RelRef):
        edge = session.view.edge(target.id)
        old, labels = edge.props, ()
    else:
        raise QueryError(f"SET and REMOVE change a node or a relationship, not {type_name(target)}")
    written = _stored(session, changes, labels)
    gone = [name for name, value in changes.items() if value is None and name in old]
    if replace:
        gone += [name for name in old if name not in changes]
    session.tally.props_set += len(written)
    session.tally.props_removed += len(gone)
    if not written and not gone:
        return
    if isinstance(target, NodeRef):
        session.tx.update_node(session.plane, target.id, written, gone)
    else:
        session.tx.update_edge(session.plane, target.id, written, gone)


def _node_of(value: CypherValue, what: str) -> int:
    if not isinstance(value, NodeRef):
        raise QueryError(f"{what} of a label needs a node, not {type_name(value)}")
    return value.id


# ---------------------------------------------------------------------------- DELETE


class _Deleter:
    """DELETE over every row: relationships first, then nodes, so ``DELETE r, n`` of a node's last
    relationship and the node itself holds; a node that still has relationships then is an error
    unless DETACH. An entity deleted already (by an earlier row or clause) is passed over."""

    def __init__(self, session: WriteSession, detach: bool) -> None:
        self.session = session
        self.detach = detach
        self.nodes: dict[int, None] = {}
        self.rels: dict[int, None] = {}

    def run(self, exprs: tuple[ast.Expr, ...], rows: Iterable[Row]) -> list[Row]:
        out = list(rows)
        for row in out:
            for expr in exprs:
                self._collect(self.session.value(expr, row))
        self.session.check(len(out))
        for rel in self.rels:
            self._delete_rel(rel)
        for node in self.nodes:
            self._delete_node(node)
        return out

    def _collect(self, value: CypherValue) -> None:
        if value is None:
            return
        if isinstance(value, NodeRef):
            self.nodes[value.id] = None
        elif isinstance(value, RelRef):
            self.rels[value.id] = None
        elif isinstance(value, PathValue):
            self.rels.update(dict.fromkeys(r.id for r in value.rels))
            self.nodes.update(dict.fromkeys(n.id for n in value.nodes))
        elif isinstance(value, list):
            for item in value:
                self._collect(item)
        else:
            raise QueryError(f"DELETE removes nodes, relationships and paths, not {type_name(value)}")

    def _delete_rel(self, rel: int) -> None:
        graph = self.session.view
        if rel in graph.deleted_rels:
            return
        edge = self.session.tx.view.edge(self.session.plane.id, rel)
        if edge is None:
            return
        self.session.tx.delete_edge(self.session.plane, rel)
        graph.deleted_rels[rel] = edge
        self.session.tally.edges_deleted += 1

    def _delete_node(self, node: int) -> None:
        session, graph = self.session, self.session.view
        if node in graph.deleted_nodes:
            return
        record = session.tx.view.node(session.plane.id, node)
        if record is None:
            return
        attached = {n.edge.id: n.edge for n in session.tx.view.neighbors(session.plane.id, node)}
        if attached and not self.detach:
            raise QueryError(
                f"node #{node} still has {len(attached)} relationship{'s' if len(attached) != 1 else ''}; "
                "use DETACH DELETE to delete them with it"
            )
        session.tx.delete_node(session.plane, node)  # deletes the attached relationships too
        graph.deleted_rels.update(attached)
        graph.deleted_nodes[node] = record
        session.tally.edges_deleted += len(attached)
        session.tally.nodes_deleted += 1


# ---------------------------------------------------------------------------- values


def _stored(session: WriteSession, props: Mapping[str, CypherValue], labels: Iterable[str]) -> dict[str, Value]:
    """Property values as the store keeps them; a null is left out (the caller removes it)."""
    vectors = session.vector_props(labels)
    out: dict[str, Value] = {}
    for name, value in props.items():
        if value is None:
            continue
        stored = to_property(value, name)
        if name in vectors and isinstance(stored, list) and stored and all(_number(v) for v in stored):
            stored = Vector.of(stored)
        out[name] = stored
    return out


def to_property(value: CypherValue, name: str) -> Value:
    """A Cypher value as a property value (see the module for what a property may hold)."""
    if isinstance(value, list):
        kinds = {type_name(item) for item in value}
        if "null" in kinds:
            raise QueryError(f"property {name!r} cannot hold a list with null in it; leave the nulls out")
        if len(kinds) > 1:
            raise QueryError(
                f"property {name!r} cannot hold a list of mixed types ({', '.join(sorted(kinds))}); "
                "a stored list holds one type"
            )
    return to_store(value, f"property {name!r}")


def _number(value: Value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
