"""What the public API's calls return: frozen records a Python user reads by field, never dicts.

The store's own records are the API's where they already are what a user reads (a node, an edge,
a version, a plane's diff, an import's report): they are re-exported, not copied. The types here
are the ones a call puts together: a write's outcome with its commit seq, a neighbour, a search hit
with each channel's score, a feed message, an ask answer, a vectorize report.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from drsg.store.records import Edge, Node

if TYPE_CHECKING:
    from drsg.pipeline.digest.ledger import Applied
    from drsg.pipeline.digest.proposal import Proposal
    from drsg.pipeline.digest.report import DigestReport
    from drsg.pipeline.vectorize import VectorizeReport
    from drsg.store.records import FusionDecl
    from drsg.workers.search import Hit as SearchHit

__all__ = [
    "AskAnswer",
    "Deleted",
    "Digested",
    "FeedMessage",
    "Hit",
    "Linked",
    "Neighbour",
    "PlaneSummary",
    "Vectorized",
    "Written",
]


@dataclass(frozen=True, slots=True)
class Written:
    """A node put: ``op`` is "created" or "updated"; ``seq`` the commit that wrote it (None: the
    node was already so, and nothing was written)."""

    op: str
    node: Node
    seq: int | None


@dataclass(frozen=True, slots=True)
class Linked:
    """An edge made, and the commit that made it."""

    edge: Edge
    seq: int | None


@dataclass(frozen=True, slots=True)
class Deleted:
    """A node deleted, with the number of edges at it that went with it."""

    node: Node
    edges: int
    seq: int | None


@dataclass(frozen=True, slots=True)
class Neighbour:
    """One edge at a node and the node at its other end (None if that node is gone);
    ``direction`` is "out" or "in", as seen from the node asked about."""

    edge: Edge
    direction: str
    node: Node | None


@dataclass(frozen=True, slots=True)
class PlaneSummary:
    """A plane as of commit ``seq``: its live node and edge counts, nodes per label, edges per type,
    and the fusion profiles declared on it."""

    id: int
    name: str
    props: Mapping[str, Any]
    nodes: int
    edges: int
    labels: Mapping[str, int]
    edge_types: Mapping[str, int]
    fusion_profiles: tuple[FusionDecl, ...]
    seq: int


@dataclass(frozen=True, slots=True)
class Hit:
    """A search or hybrid hit. ``score``: a search's similarity or BM25 score, a hybrid query's fused
    score. ``channels``: a hybrid query's raw score per channel (``vector`` a distance, ``keyword``
    BM25, ``graph`` decay^hops; None where the channel did not see the node), ``normalised`` what
    was weighted; ``hops`` how far the node is from the graph channel's nearest seed. A plain search
    leaves them empty."""

    node: Node
    score: float | None
    channels: Mapping[str, float | None] = field(default_factory=dict)
    normalised: Mapping[str, float | None] = field(default_factory=dict)
    hops: int | None = None
    explanation: str = ""
    profile: FusionDecl | None = None  # the plane's fusion profile a hybrid query used, if any
    wire: SearchHit | None = field(default=None, repr=False, compare=False)  # the search's own hit

    @property
    def key(self) -> str | None:
        return self.node.key

    def to_json(self) -> dict[str, Any]:
        """The hit as ``drsg search --json`` and JSON-RPC give it (the search's own rendering)."""
        if self.wire is None:
            raise ValueError("a Hit made by hand has no wire form; the library's searches make one")
        return self.wire.to_json()


@dataclass(frozen=True, slots=True)
class FeedMessage:
    """One message of a change feed: a commit's changes to the plane (``changes`` in the wire
    shape, drsg.feed.changes), or a ``resolved`` watermark (every matching commit up to it has been
    delivered; then ``seq`` is that watermark and ``changes`` is empty). ``dropped``: the plane was
    dropped by this commit and the feed ends."""

    seq: int
    ts: int | None = None
    plane: str | None = None
    changes: tuple[Mapping[str, Any], ...] = ()
    resolved: bool = False
    dropped: bool = False
    wire: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)  # the feed's own message

    @classmethod
    def of(cls, message: Mapping[str, Any]) -> FeedMessage:
        if "resolved" in message:
            return cls(seq=int(message["resolved"]), resolved=True, wire=message)
        return cls(
            seq=int(message["seq"]),
            ts=message.get("ts"),
            plane=message.get("plane"),
            changes=tuple(message.get("changes", ())),
            dropped=bool(message.get("dropped", False)),
            wire=message,
        )

    def to_json(self) -> dict[str, Any]:
        """The message as ``drsg feed --json`` and the WebSocket/SSE feeds send it."""
        if not self.wire:
            raise ValueError("a FeedMessage made by hand has no wire form; a Feed makes one")
        return dict(self.wire)


@dataclass(frozen=True, slots=True)
class AskAnswer:
    """A question's answer: the read-only ``plans`` it became (upstream's plan JSON), whether they
    ``ran`` (not on a dry run), the nodes they ended at (``results``, records; ``answers`` their
    ids), the ``edges`` they walked, what ``bounds`` limited the answer, the ``trace`` of the model's
    turns, and the seq ``at`` which everything was read. When the model answered with a Cypher
    statement, ``cypher`` holds it (``plans`` its compiled plan, ``results``/``edges`` its
    subgraph) and ``columns``/``rows`` its table (rows in the wire form of ``drsg cypher --json``)."""

    question: str
    plans: tuple[Mapping[str, Any], ...]
    ran: bool
    results: tuple[Mapping[str, Any], ...]
    answers: tuple[int, ...]
    edges: tuple[Mapping[str, Any], ...]
    bounds: tuple[str, ...]
    trace: tuple[str, ...]
    attempts: int
    at: int
    #: what the model calls cost: ``calls``, ``prompt_tokens``, ``completion_tokens``, ``tool_calls``,
    #: ``refused`` (plans refused) and ``repairs``
    usage: Mapping[str, int] = field(default_factory=dict)
    cypher: tuple[str, ...] = ()
    columns: tuple[str, ...] = ()
    rows: tuple[tuple[Any, ...], ...] = ()
    wire: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)  # the ask's own JSON

    def to_json(self) -> dict[str, Any]:
        """The answer as ``drsg ask --json`` and JSON-RPC give it (the ask's own rendering)."""
        if not self.wire:
            raise ValueError("an AskAnswer made by hand has no wire form; Plane.ask makes one")
        return dict(self.wire)


@dataclass(frozen=True, slots=True)
class Vectorized:
    """What ``Plane.vectorize`` (or ``vectorize_nodes``) did: nodes embedded, already current,
    without text; the labels whose vector index it ensured; the commits it wrote; the embedder's
    identity; the distinct texts among those embedded (``unique``) and the tokens a remote service
    reported using for them (0 for the local model)."""

    embedded: int
    unchanged: int
    no_text: int
    labels: frozenset[str]
    seqs: tuple[int, ...]
    embedder: str
    unique: int = 0
    tokens: int = 0

    @classmethod
    def of(cls, report: VectorizeReport, embedder: str, tokens: int = 0) -> Vectorized:
        """The pipeline's report of a vectorize, with the embedder that did it."""
        counts = (report.embedded, report.unchanged, report.skipped_no_text)
        return cls(*counts, frozenset(report.labels), tuple(report.seqs), embedder, report.unique, tokens)

    def to_json(self) -> dict[str, Any]:
        """The report as ``drsg vectorize --json`` gives it (the pipeline's report's rendering)."""
        from drsg.pipeline.vectorize import VectorizeReport

        report = VectorizeReport(self.embedded, self.unchanged, self.no_text, labels=set(self.labels))
        report.seqs.extend(self.seqs)
        return report.to_json()

    def stats_json(self) -> dict[str, Any]:
        """The report as JSON-RPC ``plane.vectorize`` gives it: upstream's stats ``{embedded, unique,
        tokens, current, empty, labels}``."""
        return {
            "embedded": self.embedded,
            "unique": self.unique,
            "tokens": self.tokens,
            "current": self.unchanged,
            "empty": self.no_text,
            "labels": sorted(self.labels),
        }


@dataclass(frozen=True, slots=True)
class Digested:
    """A digest: the ``proposal`` (its nodes and edges) and its ``report`` (what the prose gave, what
    it cost, each clean-up pass, what the parsers read). A preview has ``saved`` (where the proposal
    waits to be applied; nothing written); an apply has ``applied`` (what its commit wrote, and its
    seq, and ``created``: whether that commit made the plane)."""

    proposal: Proposal
    report: DigestReport
    saved: Path | None = None
    applied: Applied | None = None
    created: bool = False
