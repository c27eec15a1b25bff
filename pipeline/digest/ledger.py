"""Applying a proposal, and forgetting one document's contribution — each in one commit.

The contribution ledger lives on the records themselves: every node and edge a digest wrote or
confirmed carries ``_contributed_by`` = ``{source: [property names it supplied]}``. A source that
merely mentions an existing node still gets an entry (with no properties), so the node is known to
be shared. The plane property ``_digest:<source>`` lists the commits that applied that source, so
finding what it wrote reads just those commits — no plane scan.

Apply states the source's *current* contribution: a new key creates a node (with ``_source``,
``_model``, ``_run`` provenance); an existing key is linked — properties it lacks are filled in,
properties only this source supplied follow the new text, others are never overwritten. Whatever an
earlier apply of the same source wrote and this one no longer states is withdrawn. Re-applying an
unchanged document therefore writes nothing at all.

Two trees never share a parsed key: a parsed fact that defines a key (a ``_generated_by`` statement with
properties of its own, not an ``External`` stand-in, which only names what a tree uses) is refused,
and the whole apply with it, when another source's parsed fact already defines that key — digesting
``crateB/src`` after ``crateA/src`` into one plane would otherwise turn crateA's ``util.helper`` into
crateB's. Stand-ins are shared (both trees import ``os``), and one never relabels another tree's
definition. The same tree applied again (drift, ``serve watch``) is the same source: it updates.

Withdrawing (and so forgetting, which is applying nothing): a record loses this source's entry and
the properties no other source supplied; a record a digest created is deleted when no source is
left (edges first, so nodes go detached), and ``_source`` moves to a remaining source. Records
created by users are never deleted.
"""

from __future__ import annotations

import dataclasses
import shlex
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from drsg.kernel.errors import Conflict, NotFound, UsageError
from drsg.kernel.values import Described, Json
from drsg.pipeline.code.handler import GENERATED_BY, HOST_OWNED, tree_label
from drsg.pipeline.digest.proposal import Proposal, ProposedNode
from drsg.pipeline.vectorize import embedder_prop
from drsg.store.database import Database
from drsg.store.intents import Intent, IntentOp, IntentOps
from drsg.store.log import LogReader
from drsg.store.mutations import EdgePut, NodePut
from drsg.store.records import Edge, Plane
from drsg.store.retention import read_retained
from drsg.store.transaction import WriteTx
from drsg.store.writer import CommitResult

LEDGER = "_contributed_by"
EMBEDDING = "embedding"  # derived from the record's text: kept with the record, never withdrawn
PROVENANCE_DESCRIPTION = "digest provenance"


def digest_prop(source: str) -> str:
    return f"_digest:{source}"


@dataclass
class Applied:
    nodes_created: int = 0
    nodes_updated: int = 0  # existing nodes whose properties changed
    edges_created: int = 0
    untouched: list[str] = field(default_factory=list)  # linked keys left as they were
    nodes_withdrawn: int = 0  # nodes this source no longer states: deleted, or kept for other sources
    edges_withdrawn: int = 0
    nodes_deleted: int = 0
    edges_deleted: int = 0
    seq: int = 0


Touched = tuple[set[int], set[int]]  # node ids, edge ids


def apply(db: Database, proposal: Proposal, origin: dict[str, Any] | None = None) -> tuple[Applied, bool]:
    """Write ``proposal`` in one commit; returns what was written and whether the plane was created.

    The proposal *replaces* what the same source contributed before: facts an earlier version of
    the document stated and this one does not are withdrawn, as ``forget`` would."""
    return answer_of(_submit(db, apply_intent(proposal), origin or origin_of(proposal)))


def apply_changes(
    db: Database, proposal: Proposal, since: Proposal, origin: dict[str, Any] | None = None
) -> tuple[Applied, bool]:
    """Write ``proposal`` in one commit, given that the plane holds ``since`` of the same source as
    it was applied: only what differs is written, so a one-file edit costs a one-file commit.

    The records left are the ones :func:`apply` of the whole proposal leaves (the same rules run,
    on fewer records): what changed is stated again, what vanished is withdrawn. The caller vouches
    for ``since``; when the plane may have moved under it (another writer), use :func:`apply`."""
    delta, gone_keys, gone_edges = changes(since, proposal)
    return apply_delta(db, delta, gone_keys, gone_edges, origin)


def apply_delta(
    db: Database,
    delta: Proposal,
    gone_keys: list[str],
    gone_edges: list[tuple[str, str, str]],
    origin: dict[str, Any] | None = None,
) -> tuple[Applied, bool]:
    """Write what :func:`changes` found, in one commit: ``delta`` stated, the rest withdrawn."""
    args: dict[str, Json] = {"delta": delta.to_json(), "gone_keys": list(gone_keys)}
    args["gone_edges"] = [list(edge) for edge in gone_edges]
    return answer_of(_submit(db, Intent(APPLY_CHANGES, args), origin or origin_of(delta)))


def _apply_changes_in(tx: WriteTx, args: dict[str, Json]) -> tuple[Applied, bool]:
    delta = _proposal_of(args.get("delta"))
    gone_keys, gone_edges = args.get("gone_keys"), args.get("gone_edges")
    if not isinstance(gone_keys, list) or not isinstance(gone_edges, list):
        raise UsageError(f"{APPLY_CHANGES} takes a delta, gone_keys and gone_edges")
    found = tx.view.find_plane(delta.plane)
    nodes: set[int] = set()
    edges: set[int] = set()
    if found is not None:
        for key in gone_keys:
            node_id = tx.view.node_id_by_key(found.id, str(key))
            if node_id is not None:
                nodes.add(node_id)
        for gone in gone_edges:
            if not (isinstance(gone, list) and len(gone) == 3 and all(isinstance(part, str) for part in gone)):
                raise UsageError(f"{APPLY_CHANGES}'s gone edges are [src, type, dst], not {gone!r}")
            src_key, edge_type, dst_key = (str(part) for part in gone)
            src, dst = tx.view.node_id_by_key(found.id, src_key), tx.view.node_id_by_key(found.id, dst_key)
            if src is not None and dst is not None and (edge := _out_edges(tx, found.id, src, edge_type).get(dst)):
                edges.add(edge.id)
    return apply_in(tx, delta, (nodes, edges), changes_only=True)


def changes(since: Proposal, proposal: Proposal) -> tuple[Proposal, list[str], list[tuple[str, str, str]]]:
    """What ``proposal`` states that ``since`` did not state the same way (a proposal of just
    those), and the keys and (src, type, dst) that ``since`` stated and ``proposal`` no longer does.

    An edge at a key that is new here is stated again even when unchanged: while its end was
    missing it could not be written, so it may not be in the plane yet."""
    before_nodes = {n.key: n for n in since.nodes}
    delta = dataclasses.replace(proposal, nodes=[], edges=[])
    created: set[str] = set()
    for node in proposal.nodes:
        old = before_nodes.pop(node.key, None)
        if old is None:
            created.add(node.key)
        if old is None or (old.label, old.extra_labels, old.props) != (node.label, node.extra_labels, node.props):
            delta.nodes.append(node)
    before_edges = {(e.src, e.type, e.dst): e.props for e in since.edges}
    for edge in proposal.edges:
        triple = (edge.src, edge.type, edge.dst)
        old_props = before_edges.pop(triple, None)
        if old_props != edge.props or edge.src in created or edge.dst in created:
            delta.edges.append(edge)
    return delta, list(before_nodes), list(before_edges)


def forget(db: Database, plane: str, source: str) -> Applied:
    """Remove exactly ``source``'s contribution to ``plane`` in one commit (the empty re-apply)."""
    applied, _ = answer_of(_submit(db, Intent(FORGET, {"plane": plane, "source": source}), _forgot(source)))
    return applied


def _forget_in(tx: WriteTx, args: dict[str, Json]) -> tuple[Applied, bool]:
    plane, source = args.get("plane"), args.get("source")
    if not isinstance(plane, str) or not isinstance(source, str):
        raise UsageError(f"{FORGET} takes a plane and a source")
    tx.plane(plane)  # NotFound for a missing plane
    touched = contributed_in(tx, plane, source)
    if not touched[0] and not touched[1]:
        raise NotFound(
            f"no applied digest of {source} in plane {plane!r}; `drsg digest --list --plane {plane}` shows them"
        )
    return apply_in(tx, Proposal(source, plane, "", "", ""), touched)


def _forgot(source: str) -> dict[str, Any]:
    return {"via": "digest.forget", "source": source}


def contributed_in(tx: WriteTx, plane: str, source: str) -> Touched:
    """Ids of the records the applies of ``source`` wrote (read from those commits in the log)."""
    found = tx.view.find_plane(plane)
    seqs = found.props.get(digest_prop(source)) if found is not None else None
    nodes: set[int] = set()
    edges: set[int] = set()
    if found is None or not isinstance(seqs, list):
        return nodes, edges
    oldest = read_retained(tx.txn, tx.dbs["meta"]).oldest
    if any(isinstance(seq, int) and seq < oldest for seq in seqs):  # compacted away ([log] retain_*)
        return _bearing(tx, found.id, source)
    log = LogReader(tx.txn, tx.dbs["log"])
    for seq in seqs:
        if not isinstance(seq, int):
            continue  # the ledger records commit seqs; anything else was written by hand
        commit = log.get(seq)
        for mutation in commit.mutations if commit is not None else ():
            if isinstance(mutation, NodePut) and mutation.plane == found.id:
                nodes.add(mutation.id)
            elif isinstance(mutation, EdgePut) and mutation.plane == found.id:
                edges.add(mutation.id)
    return nodes, edges


def _retained_entries(tx: WriteTx, seqs: list[Any]) -> list[Any]:
    """The ledger's commits with those older than the retained history folded into the first of
    them: one is enough to send :func:`contributed_in` to its plane scan, so the list stays short."""
    oldest = read_retained(tx.txn, tx.dbs["meta"]).oldest
    stale = [seq for seq in seqs if isinstance(seq, int) and seq < oldest]
    return stale[:1] + [seq for seq in seqs if seq not in stale]


def _bearing(tx: WriteTx, plane: int, source: str) -> Touched:
    """Ids of the records whose ledger names ``source``: what its applies wrote, found by a plane
    scan once some of those commits are older than the retained history."""
    nodes = {n.id for n in tx.view.nodes(plane) if source in _ledger(n.props)}
    return nodes, {e.id for e in tx.view.edges(plane) if source in _ledger(e.props)}


def refuse_shared_keys(db: Database, plane: str, source: str, facts: Iterable[tuple[str, dict[str, Any]]]) -> None:
    """Raise the Conflict that applying ``source``'s parsed ``facts`` (key, properties) to ``plane`` would
    (see the module docstring): read-only, so a digest can refuse before it spends a model call."""
    claimed: dict[str, list[str]] = {}
    with db.snapshot() as snap:
        found = snap.find_plane(plane)
        if found is None:
            return
        for key, props in facts:
            if not _defines(_statement(props)):
                continue
            node = snap.node_by_key(found.id, key)
            ledger = _ledger(node.props) if node is not None else {}
            definers = [other for other, said in ledger.items() if other != source and _defines(said)]
            if definers:
                claimed.setdefault(definers[0], []).append(key)
    if claimed:
        raise _tree_conflict(source, plane, claimed)


def origin_of(proposal: Proposal) -> dict[str, Any]:
    return {"via": "digest", "source": proposal.source, "run": proposal.run, "model": proposal.model}


def apply_in(
    tx: WriteTx, proposal: Proposal, touched: Touched = (set(), set()), *, changes_only: bool = False
) -> tuple[Applied, bool]:
    """Apply ``proposal`` inside ``tx`` (for callers that own the write, like the server).

    ``touched`` holds the records earlier applies of this source wrote; those it no longer states
    are withdrawn. An empty proposal therefore forgets the source — unless it holds ``changes_only``
    (:func:`apply_delta`): then an empty one withdraws what vanished, and what stands stays stated."""
    created = tx.view.find_plane(proposal.plane) is None
    plane = tx.ensure_plane(proposal.plane)
    source = proposal.source
    out = Applied()
    wrote = False
    claimed: dict[str, list[str]] = {}  # another tree's source -> the keys it defines that this one would take
    for item in proposal.nodes:
        wrote |= _assert_node(tx, plane, proposal, item, out, claimed)
    if claimed:
        raise _tree_conflict(proposal.source, proposal.plane, claimed)  # inside the write: nothing committed
    stated: set[tuple[int, str, int]] = set()
    ids: dict[str, int | None] = {}
    existing: dict[tuple[int, str], dict[int, Edge]] = {}  # (src, type) -> dst -> edge, read once per pair
    for edge in proposal.edges:
        src = ids[edge.src] if edge.src in ids else ids.setdefault(edge.src, tx.view.node_id_by_key(plane.id, edge.src))
        dst = ids[edge.dst] if edge.dst in ids else ids.setdefault(edge.dst, tx.view.node_id_by_key(plane.id, edge.dst))
        if src is None or dst is None:
            continue  # an endpoint deleted since the preview: nothing to attach the edge to
        stated.add((src, edge.type, dst))
        out_edges = existing.get((src, edge.type))
        if out_edges is None:
            out_edges = existing[(src, edge.type)] = _out_edges(tx, plane.id, src, edge.type)
        found = out_edges.get(dst)
        if found is None:
            props = {**edge.props, **_provenance(proposal, edge.props), LEDGER: {source: _statement(edge.props)}}
            out_edges[dst] = tx.create_edge(plane, src, dst, edge.type, props)
            out.edges_created += 1
            wrote = True
            continue
        change = _restate(found.props, source, _statement(edge.props))
        if change is not None:
            tx.update_edge(plane, found.id, change[1], change[2])
            wrote = True
    wrote |= _withdraw_stale(tx, plane, source, {n.key for n in proposal.nodes}, stated, touched, out)
    if wrote:
        seqs = plane.props.get(digest_prop(source))
        earlier = _retained_entries(tx, seqs) if isinstance(seqs, list) else []
        if not proposal.nodes and not proposal.edges and not changes_only:  # forgotten: nothing is left to find
            tx.set_plane_props(plane.name, {}, unset=[digest_prop(source)])
        else:
            marks: dict[str, Any] = {digest_prop(source): [*earlier, tx.seq], **proposal.plane_props}
            if proposal.embedder is not None and any("embedding" in n.props for n in proposal.nodes):
                marks[embedder_prop("embedding")] = proposal.embedder  # so text queries embed the same way
            tx.set_plane_props(plane.name, marks)
    elif any(plane.props.get(name) != value for name, value in proposal.plane_props.items()):
        tx.set_plane_props(plane.name, proposal.plane_props)  # the same graph, read from another commit
    return out, created


def _assert_node(
    tx: WriteTx, plane: Plane, proposal: Proposal, item: ProposedNode, out: Applied, claimed: dict[str, list[str]]
) -> bool:
    """Create the node, or state it again (see ``_restate``). Returns whether anything was written; a
    key another tree's parsed facts define is noted in ``claimed`` instead (the apply is then refused)."""
    source = proposal.source
    node = tx.view.node_by_key(plane.id, item.key)
    if node is None:
        props = {**item.props, **_provenance(proposal, item.props), LEDGER: {source: _statement(item.props)}}
        tx.create_node(plane, item.key, [item.label, *item.extra_labels], props)
        out.nodes_created += 1
        return True
    statement = _statement(item.props)
    definers = [other for other, said in _ledger(node.props).items() if other != source and _defines(said)]
    if definers and _defines(statement):
        claimed.setdefault(definers[0], []).append(item.key)
        return False
    gaps = {k: v for k, v in item.props.items() if k == EMBEDDING and k not in node.props}
    change = _restate(node.props, source, statement)
    labels = None if definers else _relabel(node.labels, node.props, item)  # a stand-in never relabels a definition
    if change is None and not gaps and labels is None:
        out.untouched.append(item.key)
        return False
    _, set_props, unset = change if change is not None else (False, {}, [])
    tx.update_node(plane, node.id, {**gaps, **set_props}, unset, labels)
    if gaps or any(k != LEDGER for k in set_props) or unset or labels is not None:
        out.nodes_updated += 1
    else:
        out.untouched.append(item.key)
    return True


def _defines(statement: dict[str, Any]) -> bool:
    """Whether a source's statement is a parsed definition: facts of a tree beyond its provenance (an
    ``External`` stand-in states nothing but ``_generated_by``)."""
    return GENERATED_BY in statement and any(not name.startswith("_") for name in statement)


def _tree_conflict(source: str, plane: str, claimed: dict[str, list[str]]) -> Conflict:
    other, keys = next(iter(claimed.items()))
    count = sum(len(taken) for taken in claimed.values())
    shown = ", ".join(keys[:5]) + (", …" if len(keys) > 5 else "")
    also = f" (and {len(claimed) - 1} other tree(s))" if len(claimed) > 1 else ""
    label = tree_label(Path(source)) or "NAME"
    return Conflict(
        f"{source} defines {count} key(s) that {other}{also} already defines in plane {plane!r} "
        f"({shown}); two trees' parsed facts cannot share keys in one plane: digest it into a plane of its own "
        f"(--plane {shlex.quote(label)}), or forget the other tree first "
        f"(drsg digest {shlex.quote(other)} --forget --plane {shlex.quote(plane)}); nothing was written"
    )


def _relabel(labels: list[str], props: dict[str, Any], item: ProposedNode) -> list[str] | None:
    """A parsed fact's new labels for the node a digest made of it, or None when they stand.

    The parser owns what its facts are (a function became a method: its label changes), so the
    node keeps its id and its edges, foreign ones too, and takes the fact's labels; a node someone
    else made and the parser only links to keeps its own."""
    if GENERATED_BY not in item.props or "_source" not in props:
        return None
    stated = sorted({item.label, *item.extra_labels})
    return None if labels == stated else stated


def _withdraw_stale(
    tx: WriteTx,
    plane: Plane,
    source: str,
    keys: set[str],
    edges: set[tuple[int, str, int]],
    touched: Touched,
    out: Applied,
) -> bool:
    """Withdraw ``source`` from the records it wrote before and no longer states (edges first)."""
    wrote = False
    for edge_id in sorted(touched[1]):
        edge = tx.view.edge(plane.id, edge_id)
        if edge is None or source not in _ledger(edge.props) or (edge.src, edge.type, edge.dst) in edges:
            continue
        drop, set_props, unset = _restate(edge.props, source, None) or (False, {}, [])
        if drop:
            tx.delete_edge(plane, edge.id)
            out.edges_deleted += 1
        else:
            tx.update_edge(plane, edge.id, set_props, unset)
        out.edges_withdrawn += 1
        wrote = True
    for node_id in sorted(touched[0]):
        node = tx.view.node(plane.id, node_id)
        if node is None or source not in _ledger(node.props) or node.key in keys:
            continue
        drop, set_props, unset = _restate(node.props, source, None) or (False, {}, [])
        if drop:
            tx.delete_node(plane, node.id)
            out.nodes_deleted += 1
        else:
            tx.update_node(plane, node.id, set_props, unset)
        out.nodes_withdrawn += 1
        wrote = True
    return wrote


def _restate(
    props: dict[str, Any], source: str, statement: dict[str, Any] | None
) -> tuple[bool, dict[str, Any], list[str]] | None:
    """What changes when ``source`` now states ``statement`` about a record (``None``: nothing).

    Returns ``None`` when nothing changes, else (delete the record?, properties to set, properties
    to unset). A property's value is the user's when the user set it (no source ever stated it),
    else the value of the first source, in the order they first stated the record, that states it;
    a property no source states any more is removed."""
    ledger = _ledger(props)
    if statement is None and source not in ledger:
        return None
    stated_before = {name for said in ledger.values() for name in said}
    users = {k for k in props if not k.startswith("_") and k != EMBEDDING and k not in stated_before}
    after = dict(ledger)
    if statement is None:
        after.pop(source, None)
    else:
        after[source] = statement
    if not after and "_source" in props:
        return True, {}, []  # a digest made it and nobody states it any more
    set_props: dict[str, Any] = {}
    unset: list[str] = []
    for name in sorted(stated_before | {n for said in after.values() for n in said}):
        if name in users:
            continue
        owner = next((said for said in after.values() if name in said), None)
        if owner is None:
            unset.append(name)
        elif props.get(name) != owner[name]:
            set_props[name] = owner[name]
    if after != ledger:
        if after:
            set_props[LEDGER] = after
        else:
            unset.append(LEDGER)
    if after and "_source" in props and _plain(props.get("_source")) not in after:
        set_props["_source"] = Described(PROVENANCE_DESCRIPTION, next(iter(after)))
    if not set_props and not unset:
        return None
    return False, set_props, unset


def _out_edges(tx: WriteTx, plane: int, src: int, edge_type: str) -> dict[int, Edge]:
    """A node's outgoing edges of one type by target (the first of parallel edges): one walk per node
    and type, not one per edge stated — a module with a thousand definitions has a thousand CONTAINS."""
    found: dict[int, Edge] = {}
    for neighbor in tx.view.neighbors(plane, src, "out", edge_type):
        found.setdefault(neighbor.edge.dst, neighbor.edge)
    return found


def _provenance(proposal: Proposal, props: dict[str, Any]) -> dict[str, Any]:
    """Where a record came from. A parsed fact names its handler (``_generated_by``) instead of a
    model and a run: it is what the tree says, so the same tree writes the same record."""
    source = {"_source": Described(PROVENANCE_DESCRIPTION, proposal.source)}
    if GENERATED_BY in props:
        return source
    return {
        **source,
        "_model": Described(PROVENANCE_DESCRIPTION, proposal.model),
        "_run": Described(PROVENANCE_DESCRIPTION, proposal.run),
    }


def _ledger(props: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """``_contributed_by`` as {source: {property: value it states}}, in the order sources came."""
    value = props.get(LEDGER)
    if not isinstance(value, dict):
        return {}
    return {k: dict(v) for k, v in value.items() if isinstance(v, dict)}


def _statement(props: dict[str, Any]) -> dict[str, Any]:
    """What a source states about a record: its visible properties (the embedding is the record's).

    A parsed fact states all the handler said, its ``_`` properties too (``_generated_by``, a
    call's ``_resolved_by``): they are facts of the tree, so they follow it as its text does."""
    if GENERATED_BY in props:
        return {k: v for k, v in props.items() if k not in HOST_OWNED}
    return {k: v for k, v in props.items() if not k.startswith("_") and k != EMBEDDING}


def _plain(value: Any) -> Any:
    return value.value if isinstance(value, Described) else value


# --------------------------------------------------------------------------- the ledger's intents

#: A digest's writes as intents (store/intents.py), decided where they land: on a Kafka node every
#: node runs the same rules on the state the intent meets, so two nodes' digests never conflict.
APPLY, APPLY_CHANGES, FORGET = "digest.apply", "digest.apply_changes", "digest.forget"


def apply_intent(proposal: Proposal, *, withdraw: bool = True) -> Intent:
    """The intent applying ``proposal``; ``withdraw=False`` (JSON-RPC's ``digest.write``) states it
    without withdrawing what earlier applies of its source stated."""
    return Intent(APPLY, {"proposal": proposal.to_json(), "withdraw": withdraw})


def _apply_in(tx: WriteTx, args: dict[str, Json]) -> tuple[Applied, bool]:
    proposal = _proposal_of(args.get("proposal"))
    touched = contributed_in(tx, proposal.plane, proposal.source) if args.get("withdraw", True) else (set(), set())
    return apply_in(tx, proposal, touched)


def _proposal_of(data: Json) -> Proposal:
    if not isinstance(data, dict):
        raise UsageError("a digest's write carries its proposal as an object")
    try:
        return Proposal.from_json(data)
    except (KeyError, TypeError, ValueError) as exc:
        raise UsageError(f"a digest's proposal is malformed ({type(exc).__name__}: {exc})") from None


def _answer(run: Callable[[WriteTx, dict[str, Json]], tuple[Applied, bool]]) -> IntentOp:
    def op(tx: WriteTx, args: dict[str, Json]) -> Json:
        applied, created = run(tx, args)
        return {"applied": dataclasses.asdict(applied), "created": created}

    return op


#: The digest's operations, which drsg/api/operations.py adds to every public database's table.
DIGEST_OPS: dict[str, IntentOp] = {
    APPLY: _answer(_apply_in),
    APPLY_CHANGES: _answer(_apply_changes_in),
    FORGET: _answer(_forget_in),
}
_OWN = IntentOps(DIGEST_OPS)


def _submit(db: Database, intent: Intent, origin: dict[str, Any]) -> CommitResult[Json]:
    """``intent`` through ``db``'s write path: decided where it lands when the database's table has
    the digest's operations (drsg.open's databases do), else its commit function run as a write."""
    if db.ops.unknown(intent) is None:
        return db.submit(intent, origin)
    return db.write(_OWN.commit_function(intent), origin)


def answer_of(done: CommitResult[Json]) -> tuple[Applied, bool]:
    """What a digest's intent wrote, and whether it created the plane."""
    answer = done.value
    if not isinstance(answer, dict) or not isinstance(answer.get("applied"), dict):
        raise TypeError(f"not a digest's answer: {answer!r}")
    applied = Applied(**answer["applied"])  # type: ignore[arg-type]
    applied.seq = done.seqs[-1] if done.seqs else 0
    return applied, bool(answer.get("created"))
