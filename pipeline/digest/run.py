"""One digest, start to finish: chunk, link, extract, clean up, check keys, embed → a Proposal.

Nothing here writes to the database; ``ledger.apply`` does, in one commit. The clean-up passes
follow ``--mode``: coarse = vocabulary reconciliation; fine (default) = + identity resolution;
super = + per-entity refinement. After them every key is checked against the plane exactly: a
known key links to its node instead of creating one; a relation whose endpoint is neither
extracted nor in the plane is dropped (and counted).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from drsg.kernel.errors import ChatError, UsageError
from drsg.kernel.values import Described, Vector
from drsg.models.embedders.base import Embedder
from drsg.pipeline.code.handler import FactNode
from drsg.pipeline.digest.chunking import chunk_text
from drsg.pipeline.digest.draft import Draft, Entity
from drsg.pipeline.digest.extract import extract_all
from drsg.pipeline.digest.identity import resolve
from drsg.pipeline.digest.linking import PlaneVectors, contexts, entity_text, plane_candidates
from drsg.pipeline.digest.proposal import Proposal, ProposedEdge, ProposedNode, fingerprint
from drsg.pipeline.digest.refine import refine
from drsg.pipeline.digest.report import CodeRead, DigestReport, FilesRead, ParsedFacts, Preprocessed, Usage
from drsg.pipeline.digest.sources import Document
from drsg.pipeline.digest.vocabulary import reconcile
from drsg.pipeline.llm.cache import PROMPT_VERSION
from drsg.pipeline.llm.calls import ModelCalls
from drsg.store.database import Database

MODES = ("coarse", "fine", "super")
DEFAULT_LABEL = "Entity"
DESCRIPTION = "LLM-extracted description"
NO_PROSE = "no prose left to read — digested without a model call"

Progress = Callable[[str, int, int], None]  # (phase, done, total)


@dataclass(frozen=True)
class DigestOptions:
    mode: str = "fine"
    chunk_chars: int = 4000
    concurrency: int = 8
    embed: bool = True
    link: bool = True

    def __post_init__(self) -> None:
        check_mode(self.mode)
        if self.concurrency < 1:
            raise UsageError("--concurrency must be at least 1")


def check_mode(mode: str) -> str:
    if mode not in MODES:
        raise UsageError(f"unknown digest mode {mode!r}; choose coarse, fine or super")
    return mode


def decided_by(doc: Document, options: DigestOptions, model: str, embedder: Embedder | None) -> str:
    """The fingerprint of a run: a saved preview with the same one can be applied as it is."""
    return fingerprint(
        doc.text,
        facts=doc.facts_digest(),
        prompts=PROMPT_VERSION,
        mode=options.mode,
        chunk_chars=options.chunk_chars,
        model=model,
        embedder=embedder.identity() if embedder is not None and (options.embed or options.link) else None,
        embed=options.embed,
        link=options.link,
    )


def digest(
    db: Database,
    doc: Document,
    plane: str,
    options: DigestOptions,
    calls: ModelCalls,
    embedder: Embedder | None,
    progress: Progress | None = None,
) -> Proposal:
    run = f"{os.path.basename(doc.name.rstrip('/')) or doc.name}-{int(time.time())}"
    chunks = chunk_text(doc.text, options.chunk_chars)
    # no prose, no model: the proposal (and its commit's origin) names none rather than one never asked
    model = calls.model if chunks else None
    proposal = Proposal(doc.name, plane, run, model, decided_by(doc, options, calls.model, embedder))
    if embedder is not None and options.embed and chunks:
        proposal.embedder = embedder.identity()
    proposal.notes.extend(doc.notes)
    proposal.plane_props = dict(doc.plane_props)
    parsed = _parsed_facts(doc)
    start = _usage(calls, embedder)
    if chunks:
        report = _digest_prose(db, plane, options, calls, embedder, chunks, proposal, set(parsed), progress)
    else:
        proposal.notes.append(NO_PROSE)
        report = DigestReport()
    usage = _usage(calls, embedder) - start
    code = _add_facts(proposal, doc, parsed, _known(db, plane, parsed))  # after the model's nodes are counted
    proposal.report = replace(report, usage=usage, code=code)
    return proposal


def _digest_prose(
    db: Database,
    plane: str,
    options: DigestOptions,
    calls: ModelCalls,
    embedder: Embedder | None,
    chunks: list[str],
    proposal: Proposal,
    parsed: set[str],
    progress: Progress | None,
) -> DigestReport:
    """The model's part: extract each chunk, clean up, propose the nodes and edges; its report."""
    # The plane's embedded nodes, read once: they feed the EXISTING ENTITIES context and identity's pairs.
    known = PlaneVectors(db, plane) if embedder is not None and options.link else None
    context = contexts(known, chunks, embedder) if known is not None and embedder is not None else [[] for _ in chunks]
    tick = (lambda done: progress("extracting", done, len(chunks))) if progress else None
    results = extract_all(calls, chunks, context, options.concurrency, tick)
    failed = [r for r in results if r.error is not None]
    if failed:
        first = failed[0]
        raise ChatError(
            f"chunk {first.index + 1} of {len(chunks)} could not be extracted: {first.error}; "
            f"the {len(chunks) - len(failed)} answers received are cached, so running again costs only the rest"
        )
    for result in results:
        proposal.notes.extend(result.notes)
    draft = Draft.merge((r.index, r.extraction) for r in results)
    passes: dict[str, dict[str, int]] = {}
    labels, types, merged = reconcile(draft, calls, *_vocabulary(db, plane))
    passes["labels"], passes["edge_types"] = labels.to_json(), types.to_json()
    if options.mode in ("fine", "super"):
        pairs = None
        if known is not None and embedder is not None:
            pairs = lambda d: plane_candidates(known, d, embedder)  # noqa: E731
        identity, more = resolve(draft, calls, pairs)
        passes["identity"] = identity.to_json()
        merged += more
    if options.mode == "super":
        ticks = (lambda done, total: progress("refining", done, total)) if progress else None
        passes["refined"] = refine(draft, chunks, calls, options.concurrency, ticks).to_json()
    dropped = _propose(db, plane, draft, proposal, embedder if options.embed else None, parsed)
    entities = sum(1 for n in proposal.nodes if not n.linked)
    return DigestReport(
        chunks=len(chunks),
        entities=entities,
        relations=len(proposal.edges),
        linked=len(proposal.nodes) - entities,
        dropped_relations=dropped,
        merged_relations=merged,
        passes=passes,
        dropped_items=draft.dropped_items,
    )


def refuse_shared(db: Database, doc: Document, plane: str) -> None:
    """A tree whose parsed keys another tree already defines in the plane: refused before any model call."""
    from drsg.pipeline.digest.ledger import refuse_shared_keys

    facts = ((key, node.properties) for key, node in _parsed_facts(doc).items())
    refuse_shared_keys(db, plane, doc.name, facts)


def _parsed_facts(doc: Document) -> dict[str, FactNode]:
    if doc.reading is None:
        return {}
    return {node.key: node for result in doc.reading.results for node in result.output.nodes}


def facts_only(doc: Document, plane: str) -> Proposal:
    """What :func:`digest` proposes for a tree read without its prose — the parsed facts — with no
    model, and without asking the plane which keys it holds (a fold's ``linked`` flags go unread):
    ``serve watch`` builds one per fold."""
    proposal = Proposal(doc.name, plane, "", "", "")
    proposal.notes.extend(doc.notes)
    proposal.plane_props = dict(doc.plane_props)
    proposal.report = DigestReport(code=_add_facts(proposal, doc, _parsed_facts(doc), set()))
    return proposal


def _known(db: Database, plane: str, parsed: dict[str, FactNode]) -> set[str]:
    """The parsed keys the plane already holds (a preview says which facts are new)."""
    with db.snapshot() as snap:
        found = snap.find_plane(plane)
        if found is None:
            return set()
        return {key for key in parsed if snap.node_id_by_key(found.id, key) is not None}


def _add_facts(proposal: Proposal, doc: Document, parsed: dict[str, FactNode], known: set[str]) -> CodeRead | None:
    """The parsers' facts join the proposal; where the model named a parsed key, the parser wins.
    Returns what the parsers read (None without a tree read)."""
    if doc.reading is None:
        return None
    before = len(proposal.nodes)
    proposal.nodes = [node for node in proposal.nodes if node.key not in parsed]
    if len(proposal.nodes) < before:
        dropped = before - len(proposal.nodes)
        proposal.notes.append(
            f"{dropped} model entit{'y' if dropped == 1 else 'ies'} dropped for a parsed fact of the same key"
        )
    # the facts' own property maps: a reading is made for one proposal, and nothing downstream edits them
    for node in parsed.values():
        proposal.nodes.append(ProposedNode(node.key, node.label, node.properties, node.key in known, node.extra_labels))
    for result in doc.reading.results:
        for edge in result.output.edges:
            proposal.edges.append(ProposedEdge(edge.src, edge.type, edge.dst, edge.properties))
    reading = doc.reading
    walk = reading.walk
    files = FilesRead(
        walk.seen, len(reading.read_by), len(walk.withheld), len(reading.not_claimed), len(reading.skipped)
    )
    kept = proposal.nodes[-len(parsed) :] if parsed else []  # the parsed facts, appended above
    new = sum(1 for node in kept if not node.linked)
    facts = ParsedFacts(len(kept), new, sum(len(result.output.edges) for result in reading.results))
    handlers = tuple(
        Preprocessed(r.handler.manifest.ident, len(r.output.nodes) + len(r.output.edges), len(r.files))
        for r in reading.results
    )
    return CodeRead(files, reading.facts, facts, handlers)


def _vocabulary(db: Database, plane: str) -> tuple[list[str], list[str]]:
    """The labels and edge types the plane already uses (none when it does not exist yet)."""
    with db.snapshot() as snap:
        found = snap.find_plane(plane)
        if found is None:
            return [], []
        labels, types = snap.labels_and_types(found.id)
    return list(labels), list(types)


def _propose(
    db: Database, plane: str, draft: Draft, proposal: Proposal, embedder: Embedder | None, parsed: set[str]
) -> int:
    """Fill in the proposal's nodes and edges; returns how many relations were dangling.

    A relation may end at a parsed fact's key: the facts are applied with the model's entities."""
    with db.snapshot() as snap:
        found = snap.find_plane(plane)
        in_plane = {
            key: node
            for key in draft.entities
            if found is not None and (node := snap.node_by_key(found.id, key)) is not None
        }
        endpoint_known: dict[str, bool] = {}
        for rel in draft.relations:
            for key in (rel.src, rel.dst):
                if key not in draft.entities and key not in endpoint_known:
                    endpoint_known[key] = found is not None and snap.node_id_by_key(found.id, key) is not None
    for key, entity in draft.entities.items():
        label = entity.label or DEFAULT_LABEL
        proposal.nodes.append(ProposedNode(key, label, _node_props(entity), linked=key in in_plane))
    dropped = 0
    for rel in draft.relations:
        if all(k in draft.entities or k in parsed or endpoint_known.get(k) for k in (rel.src, rel.dst)):
            props: dict[str, Any] = dict(rel.props)
            if rel.description:
                props["description"] = Described(DESCRIPTION, rel.description)
            props.update(rel.as_written)
            proposal.edges.append(ProposedEdge(rel.src, rel.type, rel.dst, props))
        else:
            dropped += 1
    if embedder is None:
        return dropped
    todo = []
    for proposed in proposal.nodes:
        vector = in_plane[proposed.key].props.get("embedding") if proposed.linked else None
        if isinstance(vector, Vector):
            proposed.props["embedding"] = vector  # already embedded: state it again rather than pay again
        else:
            todo.append(proposed)
    if todo:
        vectors = embedder.embed([entity_text(n.key, n.label, n.props) for n in todo])
        for proposed, vector in zip(todo, vectors, strict=True):
            proposed.props["embedding"] = vector
    return dropped


def _node_props(entity: Entity) -> dict[str, Any]:
    props: dict[str, Any] = dict(entity.props)
    if entity.description:
        props["description"] = Described(DESCRIPTION, entity.description)
    props.update(entity.as_written)
    return props


def _usage(calls: ModelCalls, embedder: Embedder | None) -> Usage:
    """Counters that only grow; a report is the difference between two readings."""
    chat = calls.chat
    embed_tokens = getattr(embedder, "tokens", 0)
    return Usage(
        chat_requests=chat.calls if chat is not None else 0,
        input_tokens=chat.prompt_tokens if chat is not None else 0,
        output_tokens=chat.completion_tokens if chat is not None else 0,
        embed_tokens=embed_tokens if isinstance(embed_tokens, int) else 0,
        cache_hits=calls.cache.hits if calls.cache is not None else 0,
    )
