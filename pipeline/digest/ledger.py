"""Applying a proposal, and forgetting one document's contribution — each in one commit.

The contribution ledger lives on the records themselves: every node and edge a digest wrote or
confirmed carries ``_contributed_by`` = ``{source: [property names it supplied]}``. A source that
merely mentions an existing node still gets an entry (with no properties), so the node is known to
be shared. The plane property ``_digest:<source>`` lists the commits that applied that source, so
forgetting reads just those commits to find what to revisit — no plane scan.

Apply: a new key creates a node (with ``_source``, ``_model``, ``_run`` provenance); an existing
key is linked — properties it lacks are filled in (never overwritten) and recorded as this
source's. An edge (src, type, dst) that already exists is linked the same way. Re-applying an
unchanged document therefore writes nothing at all.

Forget: each record loses this source's entry and the properties no other source supplied; a
record a digest created is deleted when no source is left (edges first, so nodes go detached),
and ``_source`` moves to a remaining source. Records created by users are never deleted.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from drsg.errors import NotFound
from drsg.pipeline.digest.proposal import Proposal
from drsg.pipeline.vectorize import embedder_prop
from drsg.store.database import Database
from drsg.store.mutations import EdgePut, NodePut
from drsg.store.records import Edge, Node
from drsg.store.transaction import WriteTx
from drsg.values import Described

LEDGER = "_contributed_by"
PROVENANCE_DESCRIPTION = "digest provenance"


def digest_prop(source: str) -> str:
    return f"_digest:{source}"


@dataclass
class Applied:
    nodes_created: int = 0
    nodes_updated: int = 0  # linked nodes that gained properties
    edges_created: int = 0
    untouched: list[str] = field(default_factory=list)  # linked keys left as they were
    seq: int = 0


@dataclass
class Forgotten:
    nodes_deleted: int = 0
    nodes_updated: int = 0
    edges_deleted: int = 0
    edges_updated: int = 0
    seq: int = 0


def apply(db: Database, proposal: Proposal) -> tuple[Applied, bool]:
    """Write ``proposal`` in one commit; returns what was written and whether the plane was created."""
    result = db.write(lambda tx: apply_in(tx, proposal), origin_of(proposal))
    applied, created = result.value
    applied.seq = result.seqs[-1] if result.seqs else 0
    return applied, created


def origin_of(proposal: Proposal) -> dict[str, Any]:
    return {"via": "digest", "source": proposal.source, "run": proposal.run, "model": proposal.model}


def apply_in(tx: WriteTx, proposal: Proposal) -> tuple[Applied, bool]:
    """Apply ``proposal`` inside ``tx`` (for callers that own the write, like the server)."""
    created = tx.view.find_plane(proposal.plane) is None
    plane = tx.ensure_plane(proposal.plane)
    source = proposal.source
    out = Applied()
    wrote = False
    for item in proposal.nodes:
        node = tx.view.node_by_key(plane.id, item.key)
        if node is None:
            props = {**item.props, **_provenance(proposal), LEDGER: {source: _visible(item.props)}}
            tx.create_node(plane, item.key, [item.label], props)
            out.nodes_created += 1
            wrote = True
            continue
        gaps = {k: v for k, v in item.props.items() if k not in node.props and not k.startswith("_")}
        ledger = _ledger(node.props)
        mine = sorted(set(ledger.get(source, [])) | set(gaps))
        if gaps or source not in ledger:
            tx.update_node(plane, node.id, {**gaps, LEDGER: {**ledger, source: mine}})
            wrote = True
        if gaps:
            out.nodes_updated += 1
        else:
            out.untouched.append(item.key)
    for edge in proposal.edges:
        src = tx.view.node_id_by_key(plane.id, edge.src)
        dst = tx.view.node_id_by_key(plane.id, edge.dst)
        if src is None or dst is None:
            continue  # an endpoint deleted since the preview: nothing to attach the edge to
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
    if wrote:
        seqs = plane.props.get(digest_prop(source))
        earlier = list(seqs) if isinstance(seqs, list) else []
        marks: dict[str, Any] = {digest_prop(source): [*earlier, tx.seq]}
        if proposal.embedder is not None and any("embedding" in n.props for n in proposal.nodes):
            marks[embedder_prop("embedding")] = proposal.embedder  # so text queries embed the same way
        tx.set_plane_props(plane.name, marks)
    return out, created


def forget(db: Database, plane: str, source: str) -> Forgotten:
    """Remove exactly ``source``'s contribution to ``plane`` in one commit."""
    with db.snapshot() as snap:
        found = snap.plane(plane)
        seqs = found.props.get(digest_prop(source))
    if not isinstance(seqs, list) or not seqs:
        raise NotFound(
            f"no applied digest of {source} in plane {plane!r}; `drsg digest --list --plane {plane}` shows them"
        )
    node_ids: set[int] = set()
    edge_ids: set[int] = set()
    for seq in seqs:
        for commit in db.commits(seq, seq):
            for mutation in commit.mutations:
                if isinstance(mutation, NodePut) and mutation.plane == found.id:
                    node_ids.add(mutation.id)
                elif isinstance(mutation, EdgePut) and mutation.plane == found.id:
                    edge_ids.add(mutation.id)
    result = db.write(
        lambda tx: _forget(tx, plane, source, node_ids, edge_ids), {"via": "digest.forget", "source": source}
    )
    result.value.seq = result.seqs[-1] if result.seqs else 0
    return result.value


def _forget(tx: WriteTx, plane_name: str, source: str, node_ids: Iterable[int], edge_ids: Iterable[int]) -> Forgotten:
    plane = tx.plane(plane_name)
    out = Forgotten()
    for edge_id in sorted(edge_ids):
        edge = tx.view.edge(plane.id, edge_id)
        if edge is None or source not in _ledger(edge.props):
            continue
        drop, set_props, unset = _withdraw(edge.props, source)
        if drop:
            tx.delete_edge(plane, edge.id)
            out.edges_deleted += 1
        else:
            tx.update_edge(plane, edge.id, set_props, unset)
            out.edges_updated += 1
    for node_id in sorted(node_ids):
        node = tx.view.node(plane.id, node_id)
        if node is None or source not in _ledger(node.props):
            continue
        drop, set_props, unset = _withdraw(node.props, source)
        if drop:
            tx.delete_node(plane, node.id)
            out.nodes_deleted += 1
        else:
            tx.update_node(plane, node.id, set_props, unset)
            out.nodes_updated += 1
    tx.set_plane_props(plane.name, {}, unset=[digest_prop(source)])
    return out


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
