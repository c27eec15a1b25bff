"""An import's commits made ahead of their LMDB transaction, written by a thread of their own.

The bulk path (store/bulkwrite.py) makes a commit's records in C; written on the importer's thread,
LMDB's puts, the sorts and each transaction's commit and sync (about half of upstream's import)
waited for the reading and the reading for them. A :class:`Chunk` is one LMDB transaction's worth
of commits made with no write transaction open: each key its lines name is answered by the
import's key map (store/_bulkmap.c: every key the import made, published as each commit is made)
or, if the map has not got it, by a read transaction (what was there before the import) — together
what the write transaction would answer, while the map holds every key it was given
(``KeyMap.complete``). A :class:`ChunkWriter` writes each chunk through the staged write on a thread
while the importer makes the next; its puts, sorts and sync run without the GIL.

The ``out`` and ``in`` entries are held back (:class:`Held`) and written once, merged in key
order, when the import is done (or holds ``HELD_TXNS`` transactions' bytes of them): an edge's two
adjacency keys land all over their trees, and put a transaction at a time they rewrote most of
both trees' leaves in every one — four fifths of what LMDB's own writes cost upstream's file in
bounded transactions (tests/bench/RESULTS.md: 0.61 s, 0.12 s without them); put once into an
empty table they are appended. Each chunk's are sorted and laid out in key order on the writer's
thread, so the last put reads them front to back; there the ``in`` runs are merged into one on a
thread of their own while the ``out`` runs are put (a merge is CPU alone, LMDB's puts one
thread's). Nothing the import reads looks at them (store/bulkwrite.py's flush), and they are
written before the import reads on in a transaction of its own; a staged write's commits stay
all or nothing: removing one (store/staging.py's undo_staged) removes its adjacency keys if they
were written at all.

A commit the C line loop cannot make whole (a line of another shape, a key already taken, an end
it does not know, a blank line) is taken back — its entries cut from the runs, its keys never
published — and ends the chunk before it; store/jsonl.py then reads on as before, in a transaction
of its own once the writer is done. The records, entries, tallies and log records are the same
either way (tests/property/test_bulk_import_parity.py).
"""

from __future__ import annotations

import contextlib
import functools
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from drsg.store import bulkwrite, keys
from drsg.store.bulkwrite import ADJACENCY, BulkWrites, KeyMap, Run, new_runs
from drsg.store.environment import Environment
from drsg.store.mutations import Mutation
from drsg.store.projection import Tallies
from drsg.store.readahead import Ahead
from drsg.store.records import Plane
from drsg.store.snapshot import Snapshot
from drsg.store.staging import StagedWrite
from drsg.store.transaction import IdCounters, WriteTx

_enabled = True

#: How many transactions' bytes (an import's ``txn_bytes``) of adjacency entries an import holds
#: back before it writes them: 128 MiB at 8 MiB, upstream's 500k edges' ~70 MiB (docs/graph.md)
HELD_TXNS = 16


def use_ahead(on: bool) -> None:
    """Make an import's commits ahead of their transactions and write them on a thread (``True``)
    or make and write each in its transaction on the importer's thread (``False``): for the parity
    tests and the benchmark's before and after."""
    global _enabled
    _enabled = on


def ahead_enabled() -> bool:
    return _enabled


@dataclass
class Chunk:
    """Commits made ahead, from ``first_seq`` on: their runs, each one's wires, their tallies."""

    first_seq: int
    ids_from: IdCounters
    ids_to: IdCounters
    runs: dict[str, Run]
    commits: list[tuple[list[bytes], int]] = field(default_factory=list)  # wires, how many mutations
    tallies: Tallies = field(default_factory=Tallies)

    def write(self, tx: WriteTx, held: tuple[str, ...] = ()) -> None:
        """Write the chunk into the staged write's transaction ``tx`` (a chunk's ``fn``; run again
        from the same chunk if the map grew): every run but the ``held`` tables', sorted, then each
        commit sealed from its wires — the last by the stage."""
        if tx.seq != self.first_seq or tx.ids != self.ids_from:
            raise RuntimeError(  # (a defect: the stage moved other than by the chunks made ahead)
                f"an import's chunk made for seq {self.first_seq}, {self.ids_from} met seq {tx.seq}, {tx.ids}"
            )
        runs = {name: run for name, run in self.runs.items() if name not in held}
        bulkwrite.write_runs(tx.txn, tx.dbs, runs)  # (run again: sorted already, one pass finds it so)
        for n, (wires, count) in enumerate(self.commits):
            if n:
                tx.commit_point()
            tx.wires, tx.wire_count = wires, count
        tx.ids.node, tx.ids.edge = self.ids_to.node, self.ids_to.edge
        tx.tallies.add_all(self.tallies)


@dataclass
class _Made:
    """One commit being made ahead: what BulkWrites.take fills (store/bulkwrite.py's Commit)."""

    seq: int
    ids: IdCounters
    wired: bool = True  # sealed from its wires: the C loop makes no mutation objects
    wires: list[bytes] = field(default_factory=list)
    wire_count: int = 0
    mutations: list[Mutation] = field(default_factory=list)
    tallies: Tallies = field(default_factory=Tallies)


def keyless(env: Environment, plane_name: str, head: int) -> bool:
    """Whether plane ``plane_name`` has never held a key, or is not there as of ``head`` (an import
    is to make it): asked before an import stages anything, the import's key map then holds every
    key its lines can name, and one it does not hold is absent without a seek."""
    with env.read() as txn:
        plane = Snapshot(txn, env.dbs, head).find_plane(plane_name)
        if plane is None:
            return True
        group = keys.plane_group(plane.id)
        cursor = txn.cursor(db=env.dbs["keys"])
        return not (cursor.set_range(group) and cursor.key().startswith(group))


class ChunkMaker:
    """Makes an import's commits into chunks with no write transaction open (see the module). Two
    sets of runs take turns: one being written by the :class:`ChunkWriter`, one being filled.
    ``keyless``: the plane held no key before the import (:func:`keyless`)."""

    def __init__(self, env: Environment, plane: Plane, new_nodes_from: int, keymap: KeyMap, keyless: bool) -> None:
        self.env, self.plane = env, plane
        self.new_nodes_from = new_nodes_from
        self.keymap = keymap
        self.keyless = keyless
        self.run_sets = (new_runs(), new_runs())
        self.turn = 0
        self.bulk: BulkWrites  # the chunk being made's (begin)

    @property
    def on(self) -> bool:
        """Whether commits can still be made ahead: the key map holds every key the import made."""
        return self.keymap.complete

    def begin(self, first_seq: int, ids: IdCounters) -> Chunk:
        """A new chunk from ``first_seq`` and ``ids`` on, in the set of runs the writer is not
        writing (the caller waited for the chunk before the last)."""
        runs = self.run_sets[self.turn]
        self.turn ^= 1
        self.bulk = BulkWrites(None, self.env.dbs, self.plane, self.new_nodes_from, self.keymap, runs)
        return Chunk(first_seq, ids.copy(), ids.copy(), runs)

    def commit(self, chunk: Chunk, ahead: Ahead) -> tuple[int, int] | None:
        """``ahead``'s lines made into ``chunk``'s next commit: the nodes and edges made, or None —
        not every line could be, and nothing of the commit is kept."""
        bulk, seq = self.bulk, chunk.first_seq + len(chunk.commits)
        made = _Made(seq, chunk.ids_to.copy())
        marks = [len(run) for run in chunk.runs.values()]
        with self.env.read() as txn:
            answered = bulk.look_up_in(txn, seq, ahead.lines, ahead.scan, map_only=self.keyless)
        stop, nodes, edges = bulk.take(made, ahead.lines, 0) if answered else (-1, 0, 0)
        if stop != len(ahead.lines):
            for run, n in zip(chunk.runs.values(), marks, strict=True):
                run.cut(n)
            self._next_commit()
            return None
        self.keymap.add(bulk.key_ids)  # this commit's keys answer the next commits' look-ups
        self.keymap.publish()
        self._next_commit()
        chunk.commits.append((made.wires, made.wire_count))
        chunk.ids_to = made.ids
        chunk.tallies.add_all(made.tallies)
        return nodes, edges

    def _next_commit(self) -> None:
        bulk = self.bulk
        bulk.key_ids.clear()
        bulk.known.clear()
        bulk.scan = None


class Held:
    """The adjacency entries of the chunks written so far, held back from their transactions (see
    the module) until :meth:`ChunkWriter.release` or ``cap`` bytes of them: each chunk's run of a
    table packed (sorted, laid out in key order, on the writer's thread while the importer reads),
    the runs merged as they are put."""

    def __init__(self, cap: int) -> None:
        self.parts: dict[str, list[Run]] = {name: [] for name in ADJACENCY}
        self.cap = cap
        self.nbytes = 0

    def take(self, runs: dict[str, Run]) -> None:
        """A written chunk's adjacency ``runs``, packed into runs of their own (the chunk's are left
        sorted, and emptied by the next chunk)."""
        for name, parts in self.parts.items():
            if len(runs[name]):
                part = runs[name].packed()
                parts.append(part)
                self.nbytes += part.nbytes()

    @property
    def full(self) -> bool:
        return self.nbytes >= self.cap

    def write(self, tx: WriteTx) -> None:
        """Every held entry into the staged write's transaction ``tx`` (which seals no commit; run
        again from the same runs if the map grew). LMDB's puts are one thread's, but a merge is the
        runs' memory alone: the last table's runs are merged on a thread of their own (into one run,
        which then stands for them) while the others' are merged into their trees."""
        *first, last = self.parts
        with ThreadPoolExecutor(1, thread_name_prefix="drsg-import-merge") as pool:
            merging = pool.submit(bulkwrite.merged, self.parts[last]) if len(self.parts[last]) > 1 else None
            for name in first:
                bulkwrite.write_merged(tx.txn, tx.dbs[name], self.parts[name])
            if merging is not None:
                self.parts[last] = [merging.result()]
        bulkwrite.write_merged(tx.txn, tx.dbs[last], self.parts[last])

    def clear(self) -> None:
        for parts in self.parts.values():
            parts.clear()
        self.nbytes = 0

    def __len__(self) -> int:
        return sum(len(run) for parts in self.parts.values() for run in parts)


class ChunkWriter:
    """Writes chunks through a staged write, one at a time, each on a thread of its own (LMDB's
    write transaction must end on the thread that began it); their adjacency entries it holds back
    (:class:`Held`, ``held_bytes`` of them at most) until :meth:`release`."""

    def __init__(self, stage: StagedWrite, held_bytes: int) -> None:
        self.stage = stage
        self.held = Held(held_bytes)
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    def submit(self, chunk: Chunk, last: bool = False) -> None:
        """Start writing ``chunk``, once the chunk before it is written (raising what that met). The
        ``last`` chunk's adjacency is packed on this thread meanwhile: it has nothing else to do
        until the held entries are written."""
        self.wait()
        self._thread = threading.Thread(
            target=self._write, args=(chunk, not last), name="drsg-import-writer", daemon=True
        )
        self._thread.start()
        if last:
            try:
                self.held.take(chunk.runs)
            except BaseException:
                self.stop()
                raise

    def idle(self) -> bool:
        """Whether no chunk is being written: one made now would be written at once."""
        return self._thread is None or not self._thread.is_alive()

    def wait(self) -> None:
        """Until the chunk being written is; raises what writing it met."""
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        error, self._error = self._error, None
        if error is not None:
            raise error

    def release(self) -> None:
        """Once the chunk being written is, write the adjacency entries held back, in a transaction
        of their own on this thread: before the import reads on in its own transactions, and
        before its staged write finishes."""
        self.wait()
        if len(self.held):
            self._write_held()

    def stop(self) -> None:
        """Until the chunk being written is, its error dropped: the importer's own is raised."""
        with contextlib.suppress(BaseException):  # the importer's error came first and is the one raised
            self.wait()

    def _write(self, chunk: Chunk, take: bool) -> None:
        try:
            self.stage.chunk(functools.partial(chunk.write, held=ADJACENCY))
            if take:  # (else the importer's thread is taking them meanwhile: the held entries are its)
                self.held.take(chunk.runs)
                if self.held.full:
                    self._write_held()
        except BaseException as exc:  # handed to the importer's thread, which raises it
            self._error = exc

    def _write_held(self) -> None:
        self.stage.chunk(self.held.write)
        self.held.clear()
