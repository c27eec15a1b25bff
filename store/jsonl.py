"""Bulk import and export in upstream's JSONL line format.

Node line: ``{"id"?, "labels", "external_key"?, "properties"?}``.
Edge line (has ``type``): ``{"src_key"|"src", "dst_key"|"dst", "type", "properties"?}``.

Import streams the file (memory stays bounded: a transaction's lines, the ids of *keyless* nodes, so
edges can refer to them by the file's ``id``, and the bounded map of the keys it made: bulkwrite.py's
KEY_MAP_KEYS), and stages it as many commits, several to an LMDB
transaction (store/staging.py), so a failure anywhere — a malformed line, a missing endpoint, a key
collision under ``--on-conflict error`` — leaves the database exactly as it was. Export writes the same format back:
keyed nodes without ``id`` and edges by key, so export → import → export is byte-identical.
A canonical export (``canonical=True``) orders and spells the lines by the graph alone, so two
planes holding the same graph export the same bytes however and in whatever order it was written.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sized
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from drsg.kernel.asof import AsOf
from drsg.kernel.errors import BadImportLine, Conflict, DrsgError, NotFound, UsageError
from drsg.kernel.gcpause import collector_paused
from drsg.kernel.gilswitch import switching_often
from drsg.kernel.values import (
    Json,
    Props,
    Value,
    Vector,
    check_name,
    check_utf8,
    props_from_json,
    props_to_json,
    to_json,
)
from drsg.store.bulkwrite import BulkWrites, bulk_enabled, key_map, scanner
from drsg.store.database import Database
from drsg.store.importahead import HELD_TXNS, Chunk, ChunkMaker, ChunkWriter, ahead_enabled, keyless
from drsg.store.readahead import NOTHING, RECORD, Ahead, FileLines, Lines, RecordLines, parse
from drsg.store.records import Node
from drsg.store.snapshot import Snapshot
from drsg.store.staging import StagedWrite
from drsg.store.transaction import IdCounters, WriteTx, label_list

ON_CONFLICT = ("error", "skip", "update")
_PUT_MODE = {"error": "create", "skip": "skip", "update": "replace"}  # --on-conflict -> WriteTx.put_node mode
_MAX_REPORTED = 5
#: Bytes of the file read per LMDB transaction by default (store.import_txn_bytes): 4-64 MiB load
#: upstream's 600k-line graph equally fast, 1 MiB slower (tests/bench/RESULTS.md, "Graph load").
TXN_BYTES = 8 << 20
_NODE_FIELDS = frozenset(("id", "labels", "external_key", "properties"))
_EDGE_FIELDS = frozenset(("id", "src", "dst", "src_key", "dst_key", "type", "properties"))


@dataclass
class ImportReport:
    lines: int = 0
    nodes_created: int = 0
    nodes_updated: int = 0
    nodes_skipped: int = 0
    edges_created: int = 0
    edges_updated: int = 0
    edges_skipped: int = 0
    first_seq: int | None = None
    last_seq: int | None = None

    @property
    def commits(self) -> int:
        return 0 if self.first_seq is None or self.last_seq is None else self.last_seq - self.first_seq + 1

    def summary(self) -> str:
        nodes = f"{self.nodes_created + self.nodes_updated} node(s) "
        nodes += f"({_breakdown(self.nodes_created, self.nodes_updated, self.nodes_skipped)})"
        edges = f"{self.edges_created + self.edges_updated} edge(s)"
        if self.edges_updated or self.edges_skipped:  # edges only ever created: upstream's line as it was
            edges += f" ({_breakdown(self.edges_created, self.edges_updated, self.edges_skipped)})"
        seqs = f" (seq {self.first_seq}..{self.last_seq})" if self.commits else ""
        return f"imported {nodes}, {edges} in {self.commits} commit(s){seqs}"

    def to_json(self) -> dict[str, Json]:
        return {
            "lines": self.lines,
            "nodes_created": self.nodes_created,
            "nodes_updated": self.nodes_updated,
            "nodes_skipped": self.nodes_skipped,
            "edges_created": self.edges_created,
            "edges_updated": self.edges_updated,
            "edges_skipped": self.edges_skipped,
            "commits": self.commits,
            "first_seq": self.first_seq,
            "last_seq": self.last_seq,
        }


def _breakdown(created: int, updated: int, skipped: int) -> str:
    """``3 created, 1 updated, 2 skipped``: the created count always, the others when there are any."""
    counts = [f"{created} created"] + [f"{n} {what}" for n, what in ((updated, "updated"), (skipped, "skipped")) if n]
    return ", ".join(counts)


def import_jsonl(
    db: Database,
    path: str | Path,
    plane_name: str,
    on_conflict: str = "error",
    *,
    commit_lines: int = 10_000,
    txn_bytes: int = TXN_BYTES,
    progress: Callable[[int], None] | None = None,
    create_plane: bool = False,
) -> ImportReport:
    """Import a JSONL file into a plane; all or nothing. ``progress`` gets bytes read so far, after
    each commit.

    The file is staged ``commit_lines`` lines per commit, several commits per LMDB transaction: one
    is committed once ``txn_bytes`` of the file are read in it (what it holds in memory is bounded
    by that, not by the file's size; fewer, larger transactions cost less than many small ones,
    tests/bench/RESULTS.md). It appears in the graph at once when the last line is in; an error, or
    the process dying, leaves the database as it was (store/staging.py)."""
    source = check_import(path, on_conflict)
    size = source.stat().st_size
    db.env.reserve(size * 8)  # a rough upper bound on what the import writes, so it rarely regrows
    with source.open("rb") as fh:
        run = _Run(plane_name, create_plane, on_conflict, commit_lines, txn_bytes, HELD_TXNS * txn_bytes, progress)
        return _import(db, FileLines(fh), (str(source), source.name), run, size)


#: Records an LMDB transaction of records in memory stages by default: about what TXN_BYTES holds
#: of upstream's lines (~60 bytes each)
TXN_RECORDS = TXN_BYTES // 64


def import_records(
    db: Database,
    records: Iterable[Any],
    plane_name: str,
    on_conflict: str = "error",
    *,
    commit_lines: int = 10_000,
    txn_records: int = TXN_RECORDS,
    progress: Callable[[int], None] | None = None,
    create_plane: bool = False,
) -> ImportReport:
    """:func:`import_jsonl` of records in memory: each what a line of the file parses to (a node's
    or an edge's dict; its properties in the JSON dialect or values of the data model), read once
    from any iterable — no more of them kept at a time than a transaction's, ``txn_records``.
    ``progress`` gets the records read so far. Errors name a record by its number, from 1."""
    check_records(records, on_conflict)
    size = len(records) if isinstance(records, Sized) else math.inf
    if size != math.inf:
        db.env.reserve(int(size) * 512)  # (as a file's: ~8 times the ~60 bytes of a line)
    run = _Run(plane_name, create_plane, on_conflict, commit_lines, txn_records, HELD_TXNS * TXN_BYTES, progress)
    with switching_often():  # (the writer thread would wait out the making's switch intervals: kernel/gilswitch.py)
        return _import(db, RecordLines(records), ("records", "records"), run, size)


def check_records(records: object, on_conflict: str) -> None:
    """Refuse (UsageError) what is no iterable of records before anything is read or written."""
    _check_on_conflict(on_conflict)
    if isinstance(records, (str, bytes, bytearray, Mapping, os.PathLike)) or not isinstance(records, Iterable):
        what = type(records).__name__
        raise UsageError(
            f"records must be an iterable of node and edge dicts, not a {what}; to import a file, use import_jsonl"
        )


@dataclass(frozen=True)
class _Run:
    """What an import was asked: its plane, what to do on a conflict, its sizes, its progress callback."""

    plane_name: str
    create_plane: bool
    on_conflict: str
    commit_lines: int  # lines a commit
    txn_size: int  # its source's units (a file's bytes, records) an LMDB transaction
    held_bytes: int  # bytes of adjacency entries held back (store/importahead.py)
    progress: Callable[[int], None] | None


def _import(db: Database, lines: Lines, names: tuple[str, str], run: _Run, size: float) -> ImportReport:
    """An import of ``lines`` as one staged write, called ``names[0]`` in its errors and
    ``names[1]`` in its commits' origin; ``size``: where they end (inf: unknown until read)."""
    if not run.create_plane:
        # fail fast, before reading anything: the store's Database.plane, which the API's overrides
        # with one that loads drsg.api.plane (inside the import's time)
        Database.plane(db, run.plane_name)
    # A line's dict and a chunk's mutations are containers that live for a chunk: the collector's
    # passes over them cost 6 % of a 3M-line import and find nothing (JSON values and mutations make
    # no cycles: a collection after a whole import, paused, finds 0 objects), so it rests meanwhile.
    with collector_paused(), db.staged({"via": "import", "source": names[1]}) as stage:
        report = _Importer(stage, lines, run, size).run(names[0])
        seqs = stage.finish()
    if seqs:
        report.first_seq, report.last_seq = seqs[0], seqs[-1]
    return report


def check_import(path: str | Path, on_conflict: str) -> Path:
    """The file an import reads, refused (UsageError) before anything is read or written if it is not
    one or ``on_conflict`` is not one of ON_CONFLICT."""
    _check_on_conflict(on_conflict)
    source = Path(path)
    if not source.exists():
        raise UsageError(f"cannot read {source}: no such file; check the path")
    if source.is_dir():
        raise UsageError(f"cannot import {source}: it is a folder; name a JSONL file")
    return source


def _check_on_conflict(on_conflict: str) -> None:
    if on_conflict not in ON_CONFLICT:
        raise UsageError(f"--on-conflict must be one of {', '.join(ON_CONFLICT)}, not {on_conflict!r}")


def import_lines(
    stage: StagedWrite,
    fh: IO[bytes],
    plane_name: str,
    on_conflict: str,
    create_plane: bool,
    source: Path | str,
    what: str = "line",
) -> ImportReport:
    """The import's logic on ``stage``, reading ``fh`` (named ``source`` in its errors): what a
    Kafka node runs where an import's closing record lands (drsg/api/imports.py)."""
    _check_on_conflict(on_conflict)
    run = _Run(plane_name, create_plane, on_conflict, 10_000, TXN_BYTES, HELD_TXNS * TXN_BYTES, None)
    return _Importer(stage, FileLines(fh, what), run).run(str(source))


@dataclass(frozen=True)
class _Rewind:
    """Where a transaction began, so that running it again (the map grew) starts from the same state."""

    offset: int
    line_no: int
    report: ImportReport
    collisions: int
    edge_collisions: int
    bad_lines: int
    matched: dict[tuple[int, str, int], int]


class _Importer:
    def __init__(self, stage: StagedWrite, lines: Lines, run: _Run, file_size: float = math.inf) -> None:
        self.stage = stage
        self.lines = lines
        self.plane_name = run.plane_name
        self.create_plane = run.create_plane
        self.on_conflict = on_conflict = run.on_conflict
        self.mode = _PUT_MODE[on_conflict]
        self.commit_lines, self.txn_size = max(1, run.commit_lines), run.txn_size
        self.progress = run.progress
        self.reported = 0  # where it was last reported (a transaction run again reads its lines again)
        self.report = ImportReport()
        self.line_no = 0
        self.done = False
        self.file_ids: dict[int, int] = {}  # the file's "id" of a keyless node -> its new id
        self.chunk_file_ids: list[tuple[int, int | None]] = []  # this transaction's, with what they replaced
        # Nodes and edges with ids from these on were made by this import: an edge line conflicts only
        # with an edge that was there before (parallel edges within one file are a multigraph's right).
        self.new_nodes_from, self.new_edges_from = stage.before.ids.node, stage.before.ids.edge
        self.matched: dict[tuple[int, str, int], int] = {}  # parallel old edges matched so far
        self.collisions: list[str] = []  # colliding keys and edges, as the refusal names them
        self.edge_collisions = 0  # how many of them are edges
        self.bad_lines: list[str] = []
        self.bulk: BulkWrites | None = None  # new records in sorted runs: only ever created under "error"
        # the keys this import made, answered without a seek once their transaction committed
        self.keymap = key_map() if on_conflict == "error" and bulk_enabled() else None
        self.maker: ChunkMaker | None = None  # commits made ahead of their transaction (store/importahead.py)
        # asked before anything is staged: the key map then answers for every key of the plane
        self.keyless = self._can_make_ahead() and keyless(stage.env, run.plane_name, stage.top)
        self.writer = ChunkWriter(stage, run.held_bytes)  # (the adjacency it holds back)
        self.next_chunk: tuple[int, IdCounters] | None = None  # after the chunk made ahead last: its seq, ids
        self.file_size = file_size  # (when reading began: its last chunk is known before it is read past)

    def run(self, source: str) -> ImportReport:
        try:
            self._run()
        except BaseException:
            self.writer.stop()  # (what this thread met is raised; the stage then removes what was written)
            raise
        self.writer.release()  # (the adjacency held back: before the stage finishes)
        return self._verdict(source)

    def _run(self) -> None:
        while not self.done:
            self.lines.forget()  # (a transaction read again is read from where it begins, on)
            if self._ahead():
                continue
            rewind = _Rewind(
                self.lines.tell(),
                self.line_no,
                dataclasses.replace(self.report),
                len(self.collisions),
                self.edge_collisions,
                len(self.bad_lines),
                dict(self.matched),
            )
            self.stage.chunk(functools.partial(self._transaction, rewind=rewind))
            if self.keymap is not None:
                self.keymap.publish()  # (committed: a later transaction's seek would find them)
            self.chunk_file_ids = []

    def _verdict(self, source: str) -> ImportReport:
        self.report.lines = self.line_no
        if self.bad_lines:
            raise UsageError(
                f"{source}: {len(self.bad_lines)}{'+' if len(self.bad_lines) >= _MAX_REPORTED else ''} "
                f"bad {self.lines.what}(s), nothing was written — {'; '.join(self.bad_lines)}"
            )
        if self.collisions:
            shown = ", ".join(self.collisions[:_MAX_REPORTED])
            more = f" and {len(self.collisions) - _MAX_REPORTED} more" if len(self.collisions) > _MAX_REPORTED else ""
            keys, edges = len(self.collisions) - self.edge_collisions, self.edge_collisions
            what = " or ".join(word for n, word in ((keys, "key(s)"), (edges, "edge(s)")) if n)
            raise Conflict(
                f"{len(self.collisions)} {what} already exist in plane {self.plane_name!r}: {shown}{more}; "
                f"nothing was written — re-run with --on-conflict skip or --on-conflict update"
            )
        return self.report

    def _ahead(self) -> bool:
        """Make the next transaction's commits ahead of it and hand them to the writer thread, while
        every line of them can be (store/importahead.py); False: the next is this thread's to write,
        as before, once the writer is done (and the rest, once a line went wrong or the map filled)."""
        maker, chunk = self._maker(), None
        if maker is not None and maker.on and not (self.bad_lines or self.collisions):
            seq, ids = self.next_chunk or (self.stage.top + 1, self.stage.ids)
            chunk = maker.begin(seq, ids)
            self._make(maker, chunk)
        if chunk is None or not chunk.commits:
            self.writer.release()  # (this thread's transaction may read the adjacency)
            self.next_chunk = None
            return False
        self.writer.submit(chunk, last=self.done or self.lines.tell() >= self.file_size)
        self.next_chunk = (chunk.first_seq + len(chunk.commits), chunk.ids_to)
        return True

    def _maker(self) -> ChunkMaker | None:
        """The import's chunk maker, once its plane is known (the first transaction found or made
        it): for a plain staged write (a Kafka node's writes its one commit itself) whose lines the
        C loop reads, under --on-conflict error."""
        stage = self.stage
        if self.maker is None and self.keymap is not None and self._can_make_ahead():
            with stage.env.read() as txn:  # (a plane this import is to make: once its first transaction did)
                plane = Snapshot(txn, stage.env.dbs, stage.top).find_plane(self.plane_name)
            if plane is not None:
                self.maker = ChunkMaker(stage.env, plane, self.new_nodes_from, self.keymap, self.keyless)
        return self.maker

    def _can_make_ahead(self) -> bool:
        """Whether this import's commits are made ahead once its plane is there (see _maker)."""
        plain = type(self.stage).chunk is StagedWrite.chunk  # (a Kafka node's writes its one commit itself)
        return plain and self.keymap is not None and scanner() is not None and ahead_enabled()

    def _make(self, maker: ChunkMaker, chunk: Chunk) -> None:
        """Commits of ``commit_lines`` lines into ``chunk`` until ``txn_size`` of the file (bytes, or
        records) are read in it, the file ends, a commit cannot be made ahead (the file is back at
        its start) — or the writer has nothing to write: a chunk then ends after any commit, so the
        writer is never left waiting for a whole transaction's lines (the first, and while lines
        are made more slowly than written: a node takes longer to make than to write, an edge the
        other way)."""
        start, scan = self.lines.tell(), scanner()
        while maker.on:
            at = self.lines.tell()
            ahead = self.lines.read_ahead(self.commit_lines, scan)
            if not ahead.raws:
                self.done = True
                return
            made = maker.commit(chunk, ahead)
            if made is None:
                self.lines.seek(at)
                return
            self.line_no += len(ahead.raws)
            self.report.nodes_created += made[0]
            self.report.edges_created += made[1]
            read = self.lines.tell()
            self._report(read)
            if len(ahead.raws) < self.commit_lines:
                self.done = True
                return
            if read - start >= self.txn_size or self.writer.idle():
                return

    def _report(self, read: int) -> None:
        """Progress: ``read`` bytes of the file (or records), once past what was reported (a
        transaction run again reads its lines again)."""
        if self.progress is not None and read > self.reported:
            self.reported = read
            self.progress(read)

    def _transaction(self, tx: WriteTx, rewind: _Rewind) -> None:
        """Commits of ``commit_lines`` lines each in one LMDB transaction, from where ``rewind`` says
        it began, until ``txn_size`` of the file (bytes, or records) are read in it (or it ends)."""
        self._rewind(tx, rewind)
        while True:
            self._commit()
            read = self.lines.tell()
            # (a transaction that makes the plane ends after its first commit when the rest can be
            # made ahead: its edges' adjacency would be in the trees the held entries append to)
            handed_over = self.maker is None and self._can_make_ahead()
            last = self.done or read - rewind.offset >= self.txn_size or handed_over
            if self.bulk is not None:  # what it holds stays bounded by a commit's lines (adjacency: a transaction's)
                self.bulk.flush(adjacency=last)
            self._report(read)
            if last:
                return  # the stage seals the last commit
            tx.commit_point()

    def _rewind(self, tx: WriteTx, rewind: _Rewind) -> None:
        """Back to where ``rewind`` says this transaction began: a run again reads the same lines."""
        self.lines.seek(rewind.offset)
        self.line_no, self.report = rewind.line_no, dataclasses.replace(rewind.report)
        del self.collisions[rewind.collisions :], self.bad_lines[rewind.bad_lines :]
        self.edge_collisions, self.matched = rewind.edge_collisions, dict(rewind.matched)
        for file_id, before in reversed(self.chunk_file_ids):
            if before is None:
                del self.file_ids[file_id]
            else:
                self.file_ids[file_id] = before
        self.chunk_file_ids = []
        if self.keymap is not None:
            self.keymap.drop()  # a rerun's transaction: the keys the failed one made are not in the file
        self.tx = tx
        self.plane = tx.ensure_plane(self.plane_name) if self.create_plane else tx.plane(self.plane_name)
        if self.on_conflict == "error" and bulk_enabled():
            runs = None if self.bulk is None else self.bulk.runs  # (their memory kept, emptied)
            self.bulk = BulkWrites(tx.txn, tx.dbs, self.plane, self.new_nodes_from, self.keymap, runs)

    def _commit(self) -> None:
        """Up to ``commit_lines`` lines into the commit ``self.tx`` is making (the bulk path reads
        and parses them first, to look the keys they name up at once)."""
        start = self.lines.tell()
        ahead = NOTHING if self.bulk is None else self._read_ahead(self.bulk)
        parsed, n = None, 0
        while n < self.commit_lines:
            if self.bulk is not None and not (self.bad_lines or self.collisions):
                n = self._take(self.bulk, ahead.lines, n)  # (past the lines read ahead: none taken)
                if n >= self.commit_lines:
                    break
            if self.bulk is None:
                raw, parsed = self.lines.readline()
            else:
                raw, parsed = ahead.line(n)
            if not raw:
                self.done = True
                return
            self.line_no += 1
            if raw.strip():
                self._line(self.line_no, raw, parsed)
                if len(self.bad_lines) >= _MAX_REPORTED:
                    if self.bulk is not None:  # read no further than the reference does
                        self.lines.seek(start + ahead.end_of(n))
                    self.done = True
                    return
            n += 1
        self.done = False

    def _take(self, bulk: BulkWrites, parsed: list[Any], n: int) -> int:
        """Lines from ``n`` on made in C while they have the common shapes; where it stopped."""
        stop, nodes, edges = bulk.take(self.tx, parsed, n)
        self.line_no += stop - n
        self.report.nodes_created += nodes
        self.report.edges_created += edges
        return stop

    def _read_ahead(self, bulk: BulkWrites) -> Ahead:
        """The commit's lines, read and parsed (store/readahead.py), and the keys they name looked up."""
        ahead = self.lines.read_ahead(self.commit_lines, scanner())
        bulk.look_up_keys(self.tx, ahead.lines, ahead.scan)
        return ahead

    def _line(self, line_no: int, raw: bytes, parsed: Any = None) -> None:
        what = self.lines.what
        try:
            try:
                obj = parse(raw) if parsed is None and raw is not RECORD else parsed
            except ValueError as exc:
                raise BadImportLine(line_no, f"not valid JSON ({exc.args[0].split(':')[0]})") from None
            except RecursionError:
                raise BadImportLine(line_no, "lists and maps nest too deeply to read; flatten the value") from None
            if not isinstance(obj, dict):
                shape = "a JSON object" if raw is not RECORD else f"a dict, not {type(obj).__name__}"
                raise BadImportLine(line_no, f"a {what} must be {shape} (a node or an edge)")
            if "type" in obj:
                self._edge(line_no, obj)
            else:
                self._node(line_no, obj)
        except BadImportLine as exc:
            self.bad_lines.append(str(BadImportLine(exc.line_no, exc.problem, what)))
        except (NotFound, UsageError) as exc:
            self.bad_lines.append(str(BadImportLine(line_no, str(exc), what)))

    def _node(self, line_no: int, obj: dict[str, Any]) -> None:
        unknown = obj.keys() - _NODE_FIELDS
        if unknown:
            raise BadImportLine(line_no, f"unknown field(s) {sorted(unknown, key=str)} in a node")
        labels = obj.get("labels", [])
        if not isinstance(labels, list):
            raise BadImportLine(line_no, '"labels" must be a list of strings')
        key = obj.get("external_key")
        if key is not None:
            check_name("external_key", key)
        props = props_from_json(obj.get("properties"))
        if self.bad_lines:
            return  # keep validating the rest of the file, but write nothing more
        bulk = self.bulk
        if bulk is not None:
            if not any(isinstance(value, Vector) for value in props.values()):
                self._bulk_node(bulk, obj, key, labels, props)
                return
            bulk.flush()  # a vector's index check reads the graph: all of it must be there
        try:
            op, node = self.tx.put_node(self.plane, key, labels, props, mode=self.mode)
        except Conflict:
            self.collisions.append(key)  # type: ignore[arg-type]  # only a keyed node collides
            return
        if op == "skipped":
            self.report.nodes_skipped += 1
            return
        if op == "replaced":
            self.report.nodes_updated += 1
            return
        self.report.nodes_created += 1
        file_id = obj.get("id")
        if key is None and isinstance(file_id, int):
            self.chunk_file_ids.append((file_id, self.file_ids.get(file_id)))
            self.file_ids[file_id] = node.id

    def _bulk_node(
        self, bulk: BulkWrites, obj: dict[str, Any], key: str | None, labels: list[Any], props: Props
    ) -> None:
        """``put_node`` in "create" mode, its entries kept in ``bulk``: the same checks in the same order."""
        if key is not None and bulk.node_id_by_key(self.tx, key) is not None:
            self.collisions.append(key)
            return
        node_id = bulk.create_node(self.tx, key, label_list(labels), props)
        self.report.nodes_created += 1
        file_id = obj.get("id")
        if key is None and isinstance(file_id, int):
            self.chunk_file_ids.append((file_id, self.file_ids.get(file_id)))
            self.file_ids[file_id] = node_id

    def _edge(self, line_no: int, obj: dict[str, Any]) -> None:
        unknown = obj.keys() - _EDGE_FIELDS
        if unknown:
            raise BadImportLine(line_no, f"unknown field(s) {sorted(unknown, key=str)} in an edge")
        edge_type = obj["type"]
        check_name("an edge type", edge_type)
        props = props_from_json(obj.get("properties"))
        src = self._endpoint(line_no, obj, "src")
        dst = self._endpoint(line_no, obj, "dst")
        if self.bad_lines or self.collisions:
            return
        existing = self._existing_edge(src, edge_type, dst)
        if existing is None:
            if self.bulk is not None:
                self.bulk.link(self.tx, src, dst, edge_type, props)
            else:
                self.tx.link(self.plane, src, dst, edge_type, props)  # both ends looked up just now
            self.report.edges_created += 1
        elif self.on_conflict == "error":
            self.collisions.append(f"edge {obj.get('src_key', src)} -[{edge_type}]-> {obj.get('dst_key', dst)}")
            self.edge_collisions += 1
        elif self.on_conflict == "skip":
            self.report.edges_skipped += 1
        else:
            old = self.tx.edge(self.plane, existing)
            self.tx.update_edge(self.plane, existing, props, unset=set(old.props) - set(props))
            self.report.edges_updated += 1

    def _existing_edge(self, src: int, edge_type: str, dst: int) -> int | None:
        """The edge that was there before this import with the same ends and type: the line states it
        again. Several parallel ones are matched in id order, one per line."""
        if src >= self.new_nodes_from or dst >= self.new_nodes_from:
            return None  # an end this import created has no old edges
        old = [e for e in self.tx.view.parallel_edges(self.plane.id, src, edge_type, dst) if e < self.new_edges_from]
        if len(old) <= 1:
            return old[0] if old else None
        used = self.matched.get((src, edge_type, dst), 0)
        self.matched[(src, edge_type, dst)] = used + 1
        return old[used] if used < len(old) else None

    def _endpoint(self, line_no: int, obj: dict[str, Any], end: str) -> int:
        key = obj.get(_KEY_FIELD[end], _ABSENT)
        if key is not _ABSENT:
            if not isinstance(key, str):
                raise BadImportLine(line_no, f'"{end}_key" must be a string')
            check_utf8(key, f'"{end}_key"')  # (a lone surrogate: no key holds it, none can be sought)
            if self.bulk is None:
                node_id = self.tx.view.node_id_by_key(self.plane.id, key)
            else:
                node_id = self.bulk.node_id_by_key(self.tx, key)
            if node_id is None and not (self.collisions and self.on_conflict == "error"):
                raise BadImportLine(
                    line_no, f"edge {end} {key!r} is not a node in plane {self.plane.name!r}; import it first"
                )
            return node_id or 0
        ref = obj.get(end)
        if not isinstance(ref, int) or isinstance(ref, bool):
            raise BadImportLine(line_no, f'an edge needs "{end}_key" (a key) or "{end}" (a node id)')
        target = self.file_ids.get(ref, ref)
        if self.bulk is not None and self.bulk.has_node(self.tx, target):
            return target
        try:
            return self.tx.node_id(self.plane, target)
        except NotFound:
            raise BadImportLine(line_no, f"edge {end} id {ref} is not a node in plane {self.plane.name!r}") from None


_KEY_FIELD = {"src": "src_key", "dst": "dst_key"}
_ABSENT = object()  # a field not in a line (None is a value a line may hold)


def export_lines(
    db: Database, plane_name: str, as_of: AsOf | str | int | None = None, *, canonical: bool = False
) -> Iterator[str]:
    """JSONL lines for a plane: every node, then every edge (id order).

    ``canonical``: in an order and a spelling that depend on the graph alone, not on the order it
    was written in or its history, so two planes holding the same graph export the same bytes —
    for diffing (see :func:`_canonical_lines`)."""
    with db.snapshot(as_of) as snap:
        plane = snap.plane(plane_name)
        if canonical:
            yield from _canonical_lines(snap, plane.id)
            return
        for node in snap.nodes(plane.id):
            yield _dumps(_node_line(node, props_to_json(node.props)))
        for edge in snap.edges(plane.id):
            out: dict[str, Any] = {"type": edge.type}
            for end, node_id in (("src", edge.src), ("dst", edge.dst)):
                end_node = snap.node(plane.id, node_id)
                if end_node is not None and end_node.key is not None:
                    out[f"{end}_key"] = end_node.key
                else:
                    out[end] = node_id
            out["properties"] = props_to_json(edge.props)
            yield _dumps(out)


def _node_line(node: Node, properties: dict[str, Json]) -> dict[str, Any]:
    line: dict[str, Any] = {}
    if node.key is None:
        line["id"] = node.id
    line["labels"] = node.labels
    if node.key is not None:
        line["external_key"] = node.key
    line["properties"] = properties
    return line


def _canonical_lines(snap: Snapshot, plane: int) -> Iterator[str]:
    """The canonical export, streamed: keyed nodes by key (the key index's order, code-point order),
    then keyless nodes by id (they keep their ``id``); then each node's out-edges, the nodes in the
    same order, one node's edges sorted at a time by (type, dst key — keyless dsts after, by id —,
    properties). Property maps are written with their keys sorted, at every depth; labels as stored
    (a record keeps them sorted). Only keyless nodes' ids depend on how the graph was written."""
    for _key, node_id in snap.keyed_node_ids(plane):
        node = snap.node(plane, node_id)
        if node is not None:
            yield _dumps(_node_line(node, _sorted_props(node.props)))
    for node in snap.nodes(plane):
        if node.key is None:
            yield _dumps(_node_line(node, _sorted_props(node.props)))
    for key, node_id in snap.keyed_node_ids(plane):
        yield from _canonical_out_edges(snap, plane, node_id, key)
    for node in snap.nodes(plane):
        if node.key is None:
            yield from _canonical_out_edges(snap, plane, node.id, None)


def _canonical_out_edges(snap: Snapshot, plane: int, node_id: int, key: str | None) -> Iterator[str]:
    src: dict[str, Any] = {"src": node_id} if key is None else {"src_key": key}
    dst_keys: dict[int, str | None] = {}  # this node's other ends, each looked up once
    lines: list[tuple[str, tuple[int, str | int], str, str]] = []
    for neighbor in snap.neighbors(plane, node_id, "out"):
        dst = neighbor.node
        if dst not in dst_keys:
            end = snap.node(plane, dst)
            dst_keys[dst] = None if end is None else end.key
        dst_key = dst_keys[dst]
        dst_order: tuple[int, str | int]
        line: dict[str, Any] = {"type": neighbor.edge.type, **src}
        if dst_key is None:
            line["dst"], dst_order = dst, (1, dst)
        else:
            line["dst_key"], dst_order = dst_key, (0, dst_key)
        line["properties"] = properties = _sorted_props(neighbor.edge.props)
        lines.append((neighbor.edge.type, dst_order, _dumps(properties), _dumps(line)))
    lines.sort()
    for *_, text in lines:
        yield text


def _sorted_props(props: Mapping[str, Value]) -> dict[str, Json]:
    """Properties in the JSON dialect with the keys of every map sorted (code-point order)."""
    return {name: _sorted_json(to_json(props[name])) for name in sorted(props)}


def _sorted_json(value: Json) -> Json:
    """``value`` with the keys of every map in it sorted (code-point order), at every depth."""
    if isinstance(value, dict):
        return {k: _sorted_json(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_sorted_json(v) for v in value]
    return value


def export_jsonl(
    db: Database,
    plane_name: str,
    out: IO[str],
    as_of: AsOf | str | int | None = None,
    *,
    canonical: bool = False,
) -> int:
    count = 0
    for line in export_lines(db, plane_name, as_of, canonical=canonical):
        out.write(line)
        out.write("\n")
        count += 1
    return count


def _dumps(obj: Any) -> str:
    try:
        return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except ValueError as exc:  # pragma: no cover - values are validated on the way in
        raise DrsgError(f"cannot export a value: {exc}") from None
