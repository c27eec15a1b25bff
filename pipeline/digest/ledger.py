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

Withdrawing (and so forgetting, which is applying nothing): a record loses this source's entry and
the properties no other source supplied; a record a digest created is deleted when no source is
left (edges first, so nodes go detached), and ``_source`` moves to a remaining source. Records
created by users are never deleted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from drsg.errors import NotFound
from drsg.pipeline.digest.proposal import Proposal, ProposedNode
from drsg.pipeline.vectorize import embedder_prop
from drsg.store.database import Database
from drsg.store.mutations import EdgePut, NodePut
from drsg.store.records import Edge, Node, Plane
from drsg.store.transaction import WriteTx
from drsg.values import Described

LEDGER = "_contributed_by"
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


def apply(db: Database, proposal: Proposal) -> tuple[Applied, bool]:
    """Write ``proposal`` in one commit; returns what was written and whether the plane was created.

    The proposal *replaces* what the same source contributed before: facts an earlier version of
    the document stated and this one does not are withdrawn, as ``forget`` would."""
    touched = contributed(db, proposal.plane, proposal.source)
    result = db.write(lambda tx: apply_in(tx, proposal, touched), origin_of(proposal))
    applied, created = result.value
    applied.seq = result.seqs[-1] if result.seqs else 0
    return applied, created


def forget(db: Database, plane: str, source: str) -> Applied:
    """Remove exactly ``source``'s contribution to ``plane`` in one commit (the empty re-apply)."""
    with db.snapshot() as snap:
        snap.plane(plane)  # NotFound for a missing plane
    touched = contributed(db, plane, source)
    if not touched[0] and not touched[1]:
        raise NotFound(
            f"no applied digest of {source} in plane {plane!r}; `drsg digest --list --plane {plane}` shows them"
        )
    empty = Proposal(source, plane, "", "", "")
    result = db.write(lambda tx: apply_in(tx, empty, touched), {"via": "digest.forget", "source": source})
    applied, _ = result.value
    applied.seq = result.seqs[-1] if result.seqs else 0
    return applied


def contributed(db: Database, plane: str, source: str) -> Touched:
    """Ids of the records the applies of ``source`` wrote (read from those commits in the log)."""
    with db.snapshot() as snap:
        found = snap.find_plane(plane)
        seqs = found.props.get(digest_prop(source)) if found is not None else None
    nodes: set[int] = set()
    edges: set[int] = set()
    if found is None or not isinstance(seqs, list):
        return nodes, edges
    for seq in seqs:
        for commit in db.commits(seq, seq):
            for mutation in commit.mutations:
                if isinstance(mutation, NodePut) and mutation.plane == found.id:
                    nodes.add(mutation.id)
                elif isinstance(mutation, EdgePut) and mutation.plane == found.id:
                    edges.add(mutation.id)
    return nodes, edges


def origin_of(proposal: Proposal) -> dict[str, Any]:
    return {"via": "digest", "source": proposal.source, "run": proposal.run, "model": proposal.model}


def apply_in(tx: WriteTx, proposal: Proposal, touched: Touched = (set(), set())) -> tuple[Applied, bool]:
    """Apply ``proposal`` inside ``tx`` (for callers that own the write, like the server).

    ``touched`` holds the records earlier applies of this source wrote; those it no longer states
    are withdrawn. An empty proposal therefore forgets the source."""
    created = tx.view.find_plane(proposal.plane) is None
    plane = tx.ensure_plane(proposal.plane)
    source = proposal.source
    out = Applied()
    wrote = False
    for item in proposal.nodes:
        wrote |= _assert_node(tx, plane, proposal, item, out)
    stated: set[tuple[int, str, int]] = set()
    for edge in proposal.edges:
        src = tx.view.node_id_by_key(plane.id, edge.src)
        dst = tx.view.node_id_by_key(plane.id, edge.dst)
        if src is None or dst is None:
            continue  # an endpoint deleted since the preview: nothing to attach the edge to
        stated.add((src, edge.type, dst))
        found = _find_edge(tx, plane.id, src, edge.type, dst)
        if found is None:
            props = {**edge.props, **_provenance(proposal), LEDGER: {source: _visible(edge.props)}}
            tx.create_edge(plane, src, dst, edge.type, props)
            out.edges_created += 1
            wrote = True
            continue
        ledger = _ledger(found.props)
        if source not in ledger:
            tx.update_edge(plane, found.id, {LEDGER: {**ledger, source: []}})
            wrote = True
    wrote |= _withdraw_stale(tx, plane, source, {n.key for n in proposal.nodes}, stated, touched, out)
    if wrote:
        seqs = plane.props.get(digest_prop(source))
        earlier = list(seqs) if isinstance(seqs, list) else []
        if not proposal.nodes and not proposal.edges:  # forgotten: nothing of it is left to find
            tx.set_plane_props(plane.name, {}, unset=[digest_prop(source)])
        else:
            marks: dict[str, Any] = {digest_prop(source): [*earlier, tx.seq]}
            if proposal.embedder is not None and any("embedding" in n.props for n in proposal.nodes):
                marks[embedder_prop("embedding")] = proposal.embedder  # so text queries embed the same way
            tx.set_plane_props(plane.name, marks)
    return out, created


def _assert_node(tx: WriteTx, plane: Plane, proposal: Proposal, item: ProposedNode, out: Applied) -> bool:
    """Create the node, or state it again: fill gaps, update and drop properties only this source
    supplied. Returns whether anything was written."""
    source = proposal.source
    node = tx.view.node_by_key(plane.id, item.key)
    if node is None:
        props = {**item.props, **_provenance(proposal), LEDGER: {source: _visible(item.props)}}
        tx.create_node(plane, item.key, [item.label], props)
        out.nodes_created += 1
        return True
    ledger = _ledger(node.props)
    before = set(ledger.get(source, []))
    others = {name for src, names in ledger.items() if src != source for name in names}
    stated = {k: v for k, v in item.props.items() if not k.startswith("_")}
    gaps = {k: v for k, v in stated.items() if k not in node.props}
    own = {k: v for k, v in stated.items() if k in before and k not in others and node.props.get(k) != v}
    stale = sorted(k for k in before if k not in stated and k not in others)
    mine = sorted((before & set(stated)) | set(gaps))
    if not (gaps or own or stale) and source in ledger and sorted(before) == mine:
        out.untouched.append(item.key)
        return False
    tx.update_node(plane, node.id, {**gaps, **own, LEDGER: {**ledger, source: mine}}, stale)
    if gaps or own or stale:
        out.nodes_updated += 1
    else:
        out.untouched.append(item.key)
    return True


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
        drop, set_props, unset = _withdraw(edge.props, source)
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
        drop, set_props, unset = _withdraw(node.props, source)
        if drop:
            tx.delete_node(plane, node.id)
            out.nodes_deleted += 1
        else:
            tx.update_node(plane, node.id, set_props, unset)
        out.nodes_withdrawn += 1
        wrote = True
    return wrote


def _withdraw(props: dict[str, Any], source: str) -> tuple[bool, dict[str, Any], list[str]]:
    """(delete the record?, properties to set, properties to unset) once ``source`` is withdrawn."""
    ledger = _ledger(props)
    mine = set(ledger.pop(source, []))
    created_by_digest = "_source" in props
    if not ledger and created_by_digest:
        return True, {}, []
    still_supplied = {name for names in ledger.values() for name in names}
    unset = sorted(mine - still_supplied)
    if not ledger:
        return False, {}, [*unset, LEDGER]
    set_props: dict[str, Any] = {LEDGER: ledger}
    if created_by_digest and _plain(props.get("_source")) == source:
        set_props["_source"] = Described(PROVENANCE_DESCRIPTION, min(ledger))
    return False, set_props, unset


def _find_edge(tx: WriteTx, plane: int, src: int, edge_type: str, dst: int) -> Edge | None:
    for neighbor in tx.view.neighbors(plane, src, "out", edge_type):
        if neighbor.edge.dst == dst:
            return neighbor.edge
    return None


def _provenance(proposal: Proposal) -> dict[str, Any]:
    return {
        "_source": Described(PROVENANCE_DESCRIPTION, proposal.source),
        "_model": Described(PROVENANCE_DESCRIPTION, proposal.model),
        "_run": Described(PROVENANCE_DESCRIPTION, proposal.run),
    }


def _ledger(props: dict[str, Any]) -> dict[str, list[str]]:
    value = props.get(LEDGER)
    if not isinstance(value, dict):
        return {}
    return {k: [n for n in v if isinstance(n, str)] for k, v in value.items() if isinstance(v, list)}


def _visible(props: dict[str, Any]) -> list[str]:
    return sorted(name for name in props if not name.startswith("_"))


def _plain(value: Any) -> Any:
    return value.value if isinstance(value, Described) else value


def sources_of(node: Node | Edge) -> list[str]:
    return sorted(_ledger(node.props))
