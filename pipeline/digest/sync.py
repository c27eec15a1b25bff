"""Keeping a plane true to a working tree: each fold reads the tree again and writes what changed.

A **fold** is a digest of the directory, computed cheaply and written as a difference, in one
commit. The tree is walked and routed again in full (a handler's facts about one file can depend on
every other: a call resolves into another module), but a file whose inputs did not change is not
parsed again (``drsg.pipeline.code.parsed``), and only the facts that differ from the last fold are
written (``ledger.apply_changes``). So the plane a fold leaves is the one a fresh digest of the same
tree leaves — the contract ``serve watch`` keeps — at the cost of a few records per edit.

The first fold of a daemon, and any fold after another process wrote to the plane, states the
whole tree again (``ledger.apply``): that reads every record, and converges whatever happened while
nobody watched (a daemon killed mid-fold left either its last commit or none). Prose goes to the
model only when one is configured (``calls``); the answer cache makes unchanged chunks free.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from drsg.kernel.settings import Settings
from drsg.models.embedders.base import Embedder
from drsg.pipeline.code.handler import Handler
from drsg.pipeline.code.parsed import ParseMemo
from drsg.pipeline.digest.ledger import Applied, apply, apply_delta, changes
from drsg.pipeline.digest.linking import entity_text
from drsg.pipeline.digest.proposal import Proposal
from drsg.pipeline.digest.run import DigestOptions, digest, facts_only
from drsg.pipeline.digest.sources import TreeOptions, read_tree_source, source_name
from drsg.pipeline.llm.calls import ModelCalls
from drsg.pipeline.vectorize import embed_nodes
from drsg.store.database import Database
from drsg.store.mutations import EdgeDelete, EdgePut, NodeDelete, NodePut, PlaneCreate, PlaneDrop, PlaneRename
from drsg.store.records import Node

_RECORDS = (NodePut, NodeDelete, EdgePut, EdgeDelete, PlaneDrop, PlaneRename)


@dataclass
class FoldReport:
    """What one fold did, for the daemon's log line and its ``-v`` accounting."""

    seq: int = 0  # the fold's commit; 0 when the plane already said all of it
    full: bool = False  # stated the whole tree (first fold, or after a foreign write)
    nodes_created: int = 0
    nodes_updated: int = 0
    nodes_deleted: int = 0
    edges_created: int = 0
    edges_deleted: int = 0
    files: int = 0  # files read (by a handler, or as prose)
    seen: int = 0  # files the floor left
    withheld: int = 0  # by the ignore rules (or --tracked-only)
    withheld_by: dict[str, int] = field(default_factory=dict)  # the rule file (or --tracked-only) → files
    warning: str | None = None  # the walk's own: most of the tree withheld, naming the rule files
    skipped: int = 0  # binaries, unreadable, too big
    not_claimed: int = 0  # no handler claims them (prose, when no model reads it)
    parsed: int = 0  # parses run this fold
    reused: int = 0  # parses remembered
    embedded: int = 0  # nodes embedded again (only with an embedder configured)
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

    def fields(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "full": self.full,
            "nodes": f"+{self.nodes_created} ~{self.nodes_updated} -{self.nodes_deleted}",
            "edges": f"+{self.edges_created} -{self.edges_deleted}",
            "files": f"{self.files}/{self.seen}",
            "withheld": self.withheld,
            "withheld_by": self.withheld_by,
            "skipped": self.skipped,
            "not_claimed": self.not_claimed,
            "parsed": self.parsed,
            "reused": self.reused,
            "embedded": self.embedded,
            "ms": round(self.seconds * 1000, 1),
        }


class TreeSync:
    """Folds ``root`` into ``plane`` of ``db``, one :meth:`fold` per change (see the module docstring).

    ``handlers`` stay loaded for the daemon's life (the caller closes them); ``calls`` None means no
    chat model, so only what a handler claims is read. ``ident`` tells this daemon's commits from
    everyone else's in the log."""

    def __init__(
        self,
        db: Database,
        root: Path,
        plane: str,
        options: TreeOptions,
        *,
        handlers: Sequence[Handler],
        memo: ParseMemo,
        ident: str,
        settings: Settings | None = None,
        calls: ModelCalls | None = None,
        digest_options: DigestOptions | None = None,
        embedder: Embedder | None = None,
    ) -> None:
        self.db = db
        self.root = root
        self.source = source_name(str(root))
        self.plane = plane
        self.options = options if calls is not None else dataclasses.replace(options, code_only=True)
        self.handlers = handlers
        self.memo = memo
        self.ident = ident
        self.settings = settings
        self.calls = calls
        self.digest_options = digest_options or DigestOptions(embed=False, link=False)
        self.embedder = embedder
        self.since: Proposal | None = None  # what the plane holds of this tree, as last folded
        # commits up to here were looked at for foreign writes (the first fold states everything anyway)
        self.checked = db.head()
        self.unembedded: set[str] = set()  # stated keys whose embedding failed: tried again next fold

    def origin(self) -> dict[str, Any]:
        return {"via": "watch", "source": self.source, "daemon": self.ident}

    def fold(self) -> FoldReport:
        """Read the tree and write what differs from the plane, in one commit (or none)."""
        started = time.perf_counter()
        hits, misses = self.memo.hits, self.memo.misses
        self._look_for_foreign_writes(self.db.head())
        doc = read_tree_source(self.root, self.source, self.options, self.settings, None, self.memo, self.handlers)
        if self.calls is not None:
            proposal = digest(self.db, doc, self.plane, self.digest_options, self.calls, None)
        else:  # a handler's prose waits for a model this daemon does not have
            proposal = facts_only(doc, self.plane)
        report = FoldReport(full=self.since is None, notes=list(proposal.notes))
        if self.since is None:
            applied, _ = apply(self.db, proposal, self.origin())
            stated = [node.key for node in proposal.nodes]
        else:
            delta, gone_keys, gone_edges = changes(self.since, proposal)
            applied, _ = apply_delta(self.db, delta, gone_keys, gone_edges, self.origin())
            stated = [node.key for node in delta.nodes]
        self.since = proposal
        if applied.seq:
            self._look_for_foreign_writes(applied.seq)  # a write that slipped in before ours (ours is known)
        _count(report, applied)
        if self.embedder is not None:
            self.unembedded.update(stated)
            if self.unembedded:  # an embedder that fails (a 429) fails this fold; the keys wait for the next
                report.embedded = self._embed(sorted(self.unembedded))
                self.unembedded.clear()
        reading = doc.reading
        if reading is not None:
            report.files, report.seen = len(reading.read_by), reading.walk.seen
            report.withheld, report.skipped = len(reading.walk.withheld), len(reading.skipped)
            report.withheld_by = dict(reading.walk.withheld_by_source().most_common())
            report.warning = reading.walk.warning()
            report.not_claimed = len(reading.not_claimed)
        report.parsed, report.reused = self.memo.misses - misses, self.memo.hits - hits
        report.seconds = time.perf_counter() - started
        return report

    def written_by_another(self) -> bool:
        """Whether a commit not this daemon's touched the plane since the last look (so the next fold
        states the whole tree again); cheap: it reads only the commits since then."""
        self._look_for_foreign_writes(self.db.head())
        return self.since is None

    def _embed(self, keys: list[str]) -> int:
        """Embed the nodes this fold stated whose text changed (a commit of their own, after the fold's)."""
        assert self.embedder is not None
        made = embed_nodes(
            self.db, self.embedder, self.plane, fact_text, keys=keys, origin=self.origin(), rule="fact_text"
        )
        return made.embedded

    def _look_for_foreign_writes(self, upto: int) -> None:
        """Forget ``since`` when a commit not this daemon's touched the plane's records."""
        if upto <= self.checked:
            return
        with self.db.snapshot() as snap:
            found = snap.find_plane(self.plane)
        plane_id = found.id if found is not None else None
        for commit in self.db.commits(self.checked + 1, upto):
            if commit.origin.get("daemon") == self.ident:
                continue
            for mutation in commit.mutations:
                if (isinstance(mutation, _RECORDS) and mutation.plane == plane_id) or (
                    isinstance(mutation, PlaneCreate) and mutation.name == self.plane
                ):
                    self.since = None
                    break
        self.checked = upto


def fact_text(node: Node) -> str | None:
    """What a parsed fact is embedded from: ``key (Labels)`` and its text properties (upstream's rule)."""
    if node.key is None:
        return None
    return entity_text(node.key, ", ".join(node.labels), node.props)


def _count(report: FoldReport, applied: Applied) -> None:
    report.seq = applied.seq
    report.nodes_created = applied.nodes_created
    report.nodes_updated = applied.nodes_updated
    report.nodes_deleted = applied.nodes_deleted
    report.edges_created = applied.edges_created
    report.edges_deleted = applied.edges_deleted
