"""``Plane``: one plane of a database and the library's calls on it.

A plane is the store's plane record (its id, name and properties, as of when it was looked up)
bound to its database, so it goes wherever the record does (``tx.create_node(plane, …)``). Reads
take ``as_of`` (a commit seq, an RFC 3339 string, an aware datetime, or an :class:`AsOf`) and read
that commit's graph; writes are one commit each and say its seq. A node is named by its id (an
int) or its key (a string; a leading ``@`` is allowed, as on the command line).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from drsg.api.points import AsOfLike, as_of_of
from drsg.api.results import AskAnswer, Deleted, Digested, Hit, Linked, Neighbour, PlaneSummary, Vectorized, Written
from drsg.kernel.errors import NotFound
from drsg.kernel.values import Vector, props_to_json
from drsg.store.intents import Intent, answered
from drsg.store.records import Edge, Node, Version
from drsg.store.records import Plane as PlaneRecord

if TYPE_CHECKING:
    from drsg.api.code import Code
    from drsg.api.feed import Feed
    from drsg.api.host import Host
    from drsg.kernel.values import Json, Value
    from drsg.models.chat.base import ChatModel
    from drsg.models.embedders.base import Embedder
    from drsg.models.providers import ChatChoice, EmbedderChoice
    from drsg.pipeline.catalog.answer import FindAnswer
    from drsg.plan.query import Plan
    from drsg.store.diff import PlaneDiff
    from drsg.store.jsonl import ImportReport
    from drsg.store.snapshot import Snapshot
    from drsg.store.writer import CommitResult
    from drsg.workers.cypher.result import CypherResult


def written_plane(db: Host, done: CommitResult[Json]) -> Plane:
    """The plane a plane intent (store/intent_ops.py) wrote, as its commit left it."""
    with db.snapshot(done.seq) as snap:
        record = snap.plane_by_id(answered(done, "plane"))
    if record is None:
        raise NotFound(f"plane {answered(done, 'plane')} is not there at commit {done.seq}")
    return Plane(db, record, done.seq)


def _before(seq: int | None) -> int | None:
    """The commit before ``seq``: where what ``seq`` deleted was last there."""
    return None if seq is None else seq - 1


def _ref(ref: int | str) -> int | str:
    return ref.removeprefix("@") if isinstance(ref, str) else ref


def _shown(ref: int | str) -> str:
    """A node reference in a message as the caller wrote it (``7``, ``ada``, ``@ada``): as the CLI has
    always named it."""
    return str(ref)


class Plane(PlaneRecord):
    """A plane of ``db`` (:meth:`Database.plane`); see the module's docstring."""

    __slots__ = ("db", "seq")

    def __init__(self, db: Host, record: PlaneRecord, seq: int | None = None) -> None:
        super().__init__(record.id, record.name, record.props)
        self.db = db
        self.seq = seq  # the commit that made it so, when a write returned it (None: read)

    # ------------------------------------------------------------------ reading records

    def _node(self, snap: Snapshot, ref: int | str) -> Node:
        target = _ref(ref)
        node = snap.node(self.id, target) if isinstance(target, int) else snap.node_by_key(self.id, target)
        if node is None:
            raise NotFound(f"no node {_shown(ref)} in plane {self.name!r} at seq {snap.at}; check the id or @key")
        return node

    def get(self, ref: int | str, *, as_of: AsOfLike | None = None) -> Node:
        """The node with this id or key, now or as of a commit (NotFound if there is none)."""
        with self.db.snapshot(as_of_of(as_of)) as snap:
            return self._node(snap, ref)

    def nodes(self, label: str | None = None, *, as_of: AsOfLike | None = None) -> list[Node]:
        """Every node (with ``label``), in id order."""
        with self.db.snapshot(as_of_of(as_of)) as snap:
            return list(snap.nodes(self.id, label))

    def neighbours(
        self,
        ref: int | str,
        *,
        direction: str = "both",
        type: str | None = None,
        as_of: AsOfLike | None = None,
    ) -> list[Neighbour]:
        """A node's edges (``direction`` "out", "in" or "both"; only ``type`` if given) and the
        nodes at their other ends."""
        with self.db.snapshot(as_of_of(as_of)) as snap:
            center = self._node(snap, ref)
            return [
                Neighbour(hop.edge, hop.direction, snap.node(self.id, hop.node))
                for hop in snap.neighbors(self.id, center.id, direction, type)
            ]

    def history(self, ref: int | str) -> list[Version]:
        """Every version of a node, oldest first (``record`` None for a deletion); NotFound if the
        node never existed."""
        with self.db.snapshot() as snap:
            target = _ref(ref)
            node_id = target if isinstance(target, int) else snap.key_holder(self.id, target)
            versions = snap.node_history(self.id, node_id) if node_id is not None else []
        if not versions:
            raise NotFound(f"node {_shown(ref)} never existed in plane {self.name!r}")
        return versions

    def diff(self, from_: AsOfLike, to: AsOfLike | None = None) -> PlaneDiff:
        """What changed in the plane between two commits (seq 0: before the first; ``to``: the head)."""
        return self.db.diff(self.name, from_, to)

    # ------------------------------------------------------------------ writing records

    def put(
        self,
        key: str | None,
        labels: Iterable[str] = (),
        props: Mapping[str, Value] | None = None,
        *,
        replace: bool = False,
    ) -> Written:
        """Create a node, or update the node with this key (labels added, properties merged; with
        ``replace``, both replaced)."""
        args: dict[str, Json] = {"key": key, "labels": list(labels), "properties": props_to_json(props or {})}
        done = self._submit("node.put", {**args, "mode": "replace" if replace else "update"})
        return Written(answered(done, "op"), self._node_at(done.seq, answered(done, "node")), done.seq)

    def link(self, src: int | str, dst: int | str, type: str, props: Mapping[str, Value] | None = None) -> Linked:
        """Make an edge ``src -[type]-> dst`` (nodes by id or key)."""
        # the store reads an id, a key or an @key, and names the reference as given when it is none
        args: dict[str, Json] = {"src": src, "dst": dst, "type": type, "properties": props_to_json(props or {})}
        done = self._submit("edge.link", args)
        return Linked(self._edge_at(done.seq, answered(done, "edge")), done.seq)

    def unlink(self, edge_id: int) -> Linked:
        """Delete one edge by id; returns the edge as it was."""
        done = self._submit("edge.unlink", {"edge": edge_id})
        return Linked(self._edge_at(_before(done.seq), edge_id), done.seq)

    def delete(self, ref: int | str) -> Deleted:
        """Delete a node and every edge at it."""
        done = self._submit("node.remove", {"node": ref})
        return Deleted(self._node_at(_before(done.seq), answered(done, "node")), answered(done, "edges"), done.seq)

    def _submit(self, op: str, args: dict[str, Json]) -> CommitResult[Json]:
        """A write of this plane's as an intent (store/intent_ops.py), so on a Kafka log it is
        decided where it lands and never conflicts with other nodes' writes."""
        return self.db.submit(Intent(op, {"plane": self.name, **args}), self.db.origin)

    def _node_at(self, seq: int | None, node_id: int) -> Node:
        """The node as commit ``seq`` left it (None: as it is now)."""
        with self.db.snapshot(seq) as snap:
            node = snap.node(self.id, node_id)
        if node is None:
            raise NotFound(f"node {node_id} is not in plane {self.name!r} at commit {seq}")
        return node

    def _edge_at(self, seq: int | None, edge_id: int) -> Edge:
        with self.db.snapshot(seq) as snap:
            edge = snap.edge(self.id, edge_id)
        if edge is None:
            raise NotFound(f"edge {edge_id} is not in plane {self.name!r} at commit {seq}")
        return edge

    # ------------------------------------------------------------------ the plane itself

    def counts(self, *, as_of: AsOfLike | None = None) -> tuple[int, int]:
        """Live (nodes, edges)."""
        with self.db.snapshot(as_of_of(as_of)) as snap:
            return snap.counts(self.id)

    def summary(self, *, as_of: AsOfLike | None = None) -> PlaneSummary:
        """Its counts, nodes per label, edges per type and fusion profiles (``drsg plane show``'s)."""
        with self.db.snapshot(as_of_of(as_of)) as snap:
            record = snap.plane_by_id(self.id) or self  # its name and properties then
            nodes, edges = snap.counts(self.id)
            labels, types = snap.labels_and_types(self.id)
            profiles = tuple(snap.fusion_profiles(self.id))
            return PlaneSummary(self.id, record.name, record.props, nodes, edges, labels, types, profiles, snap.at)

    def rename(self, to: str) -> Plane:
        """Rename the plane (its id and contents stay); returns it under its new name."""
        return written_plane(self.db, self._submit("plane.rename", {"to": to}))

    def set_props(self, props: Mapping[str, Value]) -> Plane:
        """Set properties of the plane, merged into the ones it has; returns it as it now is."""
        return written_plane(self.db, self._submit("plane.set_props", {"properties": props_to_json(props)}))

    def drop(self) -> int | None:
        """Drop the plane; its contents stay readable as of the commit before the one returned."""
        return self._submit("plane.drop", {}).seq

    # ------------------------------------------------------------------ JSONL

    def export_jsonl(self, out: IO[str] | str | Path, *, as_of: AsOfLike | None = None, canonical: bool = False) -> int:
        """Write the plane as JSONL (``drsg export``'s format) to a file or text stream; returns
        the lines written. A file appears whole or not at all (written beside it, then renamed)."""
        from drsg.store.jsonl import export_jsonl

        if isinstance(out, str | Path):
            path = Path(out)
            partial = path.with_name(path.name + ".partial")
            with partial.open("w", encoding="utf-8") as fh:
                count = export_jsonl(self.db.store, self.name, fh, as_of_of(as_of), canonical=canonical)
            partial.replace(path)
            return count
        return export_jsonl(self.db.store, self.name, out, as_of_of(as_of), canonical=canonical)

    def import_jsonl(
        self, path: str | Path, *, on_conflict: str = "error", progress: Callable[[int], None] | None = None
    ) -> ImportReport:
        """Import a JSONL file (``drsg import``'s format) into the plane, all or nothing;
        ``on_conflict``: "error", "skip" or "update"; ``progress(bytes_read)`` as it goes."""
        return self.db.import_jsonl(self.name, path, on_conflict=on_conflict, progress=progress)

    def import_records(
        self,
        records: Iterable[Mapping[str, Any]],
        *,
        on_conflict: str = "error",
        progress: Callable[[int], None] | None = None,
    ) -> ImportReport:
        """Import records in memory (what ``drsg import``'s lines parse to) into the plane, all or
        nothing, as :meth:`import_jsonl` does a file: the bulk path for a graph made in Python
        (:meth:`drsg.api.database.Database.import_records`); ``progress(records_read)`` as it goes."""
        return self.db.import_records(self.name, records, on_conflict=on_conflict, progress=progress)

    # ------------------------------------------------------------------ the change feed

    def feed(self, from_seq: int | None = None, **options: Any) -> Feed:
        """This plane's changes from ``from_seq`` on (default: the next commit); iterate it with
        ``for`` or ``async for`` (:class:`~drsg.api.feed.Feed`)."""
        from drsg.api.feed import Feed

        return Feed(self.db, self.name, from_seq, **options)

    # ------------------------------------------------------------------ search and models (drsg.api.retrieval)

    def search(
        self,
        query: str | Vector | Sequence[float],
        prop: str = "embedding",
        *,
        keyword: bool = False,
        label: str | None = None,
        k: int = 10,
        metric: str = "cosine",
        as_of: AsOfLike | None = None,
        embed: EmbedderChoice | None = None,
    ) -> list[Hit]:
        """The ``k`` nodes nearest ``query`` in the vector property ``prop`` (a text query is
        embedded with the embedder that wrote the vectors; a vector as it is), or with ``keyword=True`` the best BM25
        matches of the text in the keyword-indexed ``prop`` of ``label`` nodes. ``embed`` names the
        embedder for a text query; the one that wrote the vectors is used by default, and another is
        refused (drsg.pipeline.embedder_choice)."""
        from drsg.api import retrieval

        return retrieval.search(self, query, prop, keyword, label, k, metric, as_of_of(as_of), embed)

    def query(
        self, statement: str | Plan, *, params: Mapping[str, Any] | None = None, embed: EmbedderChoice | None = None
    ) -> list[Hit]:
        """Run a SEARCH or HYBRID statement (``drsg search``'s language, AS OF included), or a parsed
        logical plan (drsg.plan.query); ``params`` are a statement's ``$parameters``' values."""
        from drsg.api import retrieval

        return retrieval.query(self, statement, params, embed)

    def hybrid(self, text: str, *, as_of: AsOfLike | None = None, **options: Any) -> list[Hit]:
        """Hybrid retrieval: vector, keyword and graph channels fused (``drsg hybrid``'s options, as
        keywords: ``label``, ``vector``, ``keyword``, ``graph_hops``, ``k``, ``weights``, ``fusion``
        …; see :func:`drsg.api.retrieval.hybrid_spec`), or ``spec=`` a HybridSpec built already;
        ``embed`` names the embedder for the vector channel (by default the one that wrote it)."""
        from drsg.api import retrieval

        return retrieval.hybrid(self, text, as_of_of(as_of), options)

    def vectorize(
        self,
        source: str,
        into: str = "embedding",
        *,
        label: str | None = None,
        metric: str = "cosine",
        embed: EmbedderChoice | None = None,
        batch: int = 64,
        progress: Callable[[int, int], None] | None = None,
    ) -> Vectorized:
        """Embed the text property ``source`` into the vector property ``into`` for every node (of
        ``label``) whose text changed, then ensure a vector index on it. ``embed`` names the
        embedder; by default the one that wrote ``into``'s vectors (another is refused), else the
        configured one, else the local model. ``progress(done, total)`` is called as batches are
        embedded."""
        from drsg.api import retrieval

        return retrieval.vectorize(self, source, into, label, metric, embed, batch, progress)

    def vectorize_nodes(
        self, *, metric: str = "cosine", embed: EmbedderChoice | None = None, origin: Mapping[str, Json] | None = None
    ) -> Vectorized:
        """Upstream's whole-plane vectorize (JSON-RPC ``plane.vectorize``): every node's text into
        ``embedding`` — a parsed fact's ``key (Labels)`` and string properties, any other node's string
        properties as ``name: value`` lines, ``_`` properties never — unchanged texts skipped, then a
        vector index on ``embedding`` per label embedded. ``embed`` as for :meth:`vectorize`; each
        commit says ``origin`` (default: the database's) and the embedder."""
        from drsg.api import retrieval

        return retrieval.vectorize_nodes(self, metric, embed, origin)

    # ------------------------------------------------------------------ Cypher (drsg.api.cypher)

    def cypher(
        self,
        statement: str,
        params: Mapping[str, object] | None = None,
        *,
        as_of: AsOfLike | None = None,
        embed: EmbedderChoice | None = None,
    ) -> CypherResult:
        """Run a Cypher statement (docs/cypher.md): a read on one snapshot — ``as_of`` or the
        statement's ``AS OF`` (not both) — or a write (CREATE, MERGE, SET, REMOVE, DELETE) as one
        commit at the head, whose origin is ``db.origin``. ``params`` are the ``$parameters``' values
        (None, bool, int, float, str, lists and maps). ``embed`` names the embedder for a text
        ``NEAR "…"`` (by default the one that wrote the vectors searched). Bounded by ``[query]
        max_rows`` and ``timeout_secs`` (a QueryLimit past either)."""
        from drsg.api import cypher

        return cypher.cypher(self, statement, params, as_of_of(as_of), embed)

    def explain_cypher(self, statement: str) -> Json:
        """The plan a Cypher statement compiles to, as JSON (``drsg cypher --explain``); nothing runs."""
        from drsg.api import cypher

        return cypher.explain(statement)

    def find(self, request: Mapping[str, Any], *, embed: EmbedderChoice | None = None) -> FindAnswer:
        """On a catalog plane (``drsg catalog index``'s): answer ``{"entity": …, "fields": […],
        "where": {…}}`` with one SELECT against the live database, sensitive columns masked. The
        answer is ``Found`` (its rows), ``Ambiguous`` (the candidate tables) or ``MissingPredicate``."""
        from drsg.api import catalog

        return catalog.find(self, request, embed)

    def code(self, *, as_of: AsOfLike | None = None, allowed_roots: Sequence[Path] | None = None) -> Code:
        """On a code plane (``drsg digest DIR --apply``'s): the code verbs — ``context``, ``describe``,
        ``grep``, ``trace``, ``impact``, ``snippet`` — each answer with ``file:line`` receipts and the
        drift line (drsg.api.code). ``allowed_roots``: the only directories the plane's tree may be read
        from disk under (a server's; None: anywhere)."""
        from drsg.api.code import Code

        return Code(self, as_of_of(as_of), allowed_roots)

    def digest(
        self,
        source: str | Path,
        *,
        apply: bool = False,
        chat: ChatModel | None = None,
        embed: EmbedderChoice | None = None,
        mode: str | None = None,
        cache: bool = True,
    ) -> Digested:
        """Read a document, a folder or a tree of code into the plane: a preview (saved, nothing
        written) unless ``apply``, which writes the saved preview — or a new digest — in one commit.
        Prose needs a chat model (``chat``, else the ``digest.chat``/``digest.model`` settings');
        code needs none. ``mode``: "coarse", "fine" or "super" clean-up passes (``digest.mode``)."""
        from drsg.api import digest

        return digest.digest(self.db, self.name, source, apply=apply, chat=chat, embed=embed, mode=mode, cache=cache)

    def ask(
        self,
        question: str,
        *,
        chat: ChatModel | ChatChoice | None = None,
        as_of: AsOfLike | None = None,
        dry_run: bool = False,
        embed: EmbedderChoice | Embedder | None = None,
        max_attempts: int | None = None,
        limit: int | None = None,
    ) -> AskAnswer:
        """A natural-language question as read-only plans, run (unless ``dry_run``) as of one seq;
        ``chat`` is the model, or a :class:`ChatChoice` naming one (default: the
        ``digest.chat``/``digest.model`` settings'); ``embed`` names an embedder (or is one) to give the
        model its find_edge/find_entity tools. ``max_attempts`` (model turns) and ``limit`` (rows a plan
        with none gets; 0: none) default to the ``ask.*`` settings."""
        from drsg.api import retrieval

        return retrieval.ask(self, question, chat, as_of_of(as_of), dry_run, embed, max_attempts, limit)
