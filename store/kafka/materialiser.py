"""The Kafka log's LMDB materialisation: the partition's commits, judged in log order and projected
into a local drsg file, so reads and time travel are the embedded store's own (DESIGN.md §5).

Every node keeps one. Its commit ``seq`` is the Kafka seq (offset + 1), one local commit per
offset, so ``AS OF 42`` names the same state on every node. What each record becomes is decided by
the log alone, the same way on every node (:class:`Judge`):

- a writer (store/kafka/database.py) runs its commit function against its materialisation at head
  ``B`` and produces the result with a ``drsg-base: B`` header. The record at seq ``S`` is applied
  only if ``B == S - 1``: nothing came between what the writer saw and where its commit landed, so
  the ids it allocated and the checks it made hold in log order. Otherwise it is *stale*: kept as an
  empty commit, and the writer runs its function again on the newer state;
- a write of several commits (``db.staged()``, ``tx.commit_point()``) is a group: each record carries
  ``drsg-group`` (the group's first base), each but the last ``drsg-rest: N`` (records still to
  come), and each one's base is the seq of the one before. A group is held back until its last record
  and then applied at once, in one LMDB transaction; a record that breaks the chain (stale, foreign,
  unreadable) turns the whole group into empty commits. All or nothing, as the embedded store's. (An
  import is intents instead, never broken: its chunks are held in the copy and it is decided where
  its closing record lands, store/import_intents.py; :func:`decide` drops a refused one's chunks);
- a record without a base (a plain ``KafkaLog.append``, another tool's producer) is a resolved fact
  and applied as it is, as ``LmdbLog.append`` does;
- a poison record (not a commit, a damaged one, an offset the broker skipped, or one whose mutations
  the projection refuses) is kept as an empty commit too: logged (``kafka_record_skipped``), counted
  in the file's meta table (:func:`poison_count`; shown with the materialiser's last error by
  ``drsg stats`` and ``db.stats``, store/kafka/database.py ``KafkaStats``), never a stuck node.

An empty commit's origin says why (``{"skipped": "stale: …"}``); its timestamp is the record's.
The meta table names the log the file materialises and the newest record it holds (seq and CRC), so
a file is never silently paired with another topic or with one that lost its commits; and a writer's
record names the CRC of the record it was made on (``drsg-prev``), so a running node that meets a
commit made on another history (the topic deleted and filled again) stops there and says so. Its own
checkpoint is its head, written in the same LMDB transaction as what it materialised, so a ``kill -9``
at any point resumes from there; the broker's committed offsets are never used.

Why no consumer group, and not faust: every node needs every record of the one partition, in
order, while a group hands a partition to one member alone. So the node follows the partition with
a plain ``assign()`` consumer of kafka-python (store/kafka/log.py), which delivers a new record far
sooner than faust's batches (the figures: tests/bench/RESULTS.md, "Kafka: what the broker and the
client were measured to do").
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
import uuid
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import islice

import structlog

from drsg.kernel.errors import ConfigError, CorruptRecord, DamagedDatabase, DrsgError, StoreError, UsageError
from drsg.kernel.values import Json, pack, unpack
from drsg.store import keys
from drsg.store.database import FORMAT_VERSION, META_UUID
from drsg.store.environment import Environment, Txn
from drsg.store.import_intents import release
from drsg.store.intents import Intent, IntentOps, Refusal, decode_intent, is_intent
from drsg.store.kafka.log import KafkaLog, Record
from drsg.store.kafka.outcomes import Decided, write_outcome
from drsg.store.log import decode, header_ts
from drsg.store.meta import META_FORMAT, LogState, read_mark, read_state
from drsg.store.mutations import Mutation
from drsg.store.projection import Tallies
from drsg.store.sink import LogSink
from drsg.store.staging import in_write
from drsg.store.transaction import WriteTx

BASE = "drsg-base"  # header: the materialised head the commit was made against
REST = "drsg-rest"  # header: how many records of the commit's group are still to come
GROUP = "drsg-group"  # header on each record of a group of several: the base of its first record
PREV = "drsg-prev"  # header: the CRC of the record at the base, as the writer's copy holds it
META_SOURCE = b"log_url"  # the URL of the log this file materialises
META_TIP = b"kafka_tip"  # [seq, crc32] of the newest Kafka record materialised
META_POISON = b"kafka_poison"  # poison records materialised as empty commits so far
BATCH = 512  # records judged and written per LMDB transaction
OFFERS = 65_536  # records held for judging without a fetch (while the node catches up, say)
IDLE_WAIT = 0.25  # seconds the follower waits on the Kafka log's head before looking again
RETRY_WAIT = 1.0  # seconds before the follower tries a broker that failed it again
FLUSH_EVERY = 5.0  # seconds between the follower's flushes of the copy, which commits without one
log = structlog.get_logger("drsg.store")


def u64_header(value: int) -> bytes:
    return keys.u64(value)


def _header_int(record: Record, name: str) -> int | None:
    raw = record.headers.get(name)
    return None if raw is None or len(raw) != keys.U64.size else keys.read_u64(raw)


def crc_of(record: Record) -> int:
    return zlib.crc32(record.value or b"")


@dataclass
class Entry:
    """One local commit to write: the Kafka record's seq and timestamp, and what it became."""

    seq: int
    ts: int
    origin: dict[str, Json]
    mutations: list[Mutation]
    crc: int
    poison: bool = False  # a record that is no good commit (not a stale one, whose writer retries)
    intent: Intent | None = None  # an intent to decide here (then ``mutations`` is empty)

    def skipped(self, reason: str, *, poison: bool = False) -> Entry:
        return Entry(self.seq, self.ts, {"skipped": reason}, [], self.crc, poison)


@dataclass
class Judge:
    """Turns the partition's records, fed in seq order, into the local commits they become (see the
    module docstring). It holds back an unfinished group; everything else comes out at once."""

    pending: list[Entry] = field(default_factory=list)
    group: int | None = None  # the pending group's GROUP header
    last_ts: int = 0
    last_crc: int | None = None  # the CRC of the record before the next one (None: not known)
    url: str = ""  # the log's, named in what it logs

    def feed(self, record: Record) -> list[Entry]:
        """What ``record`` (the next seq) makes come out. A commit made on the right seq but on a
        record other than the one this copy holds there means the topic's history is not this
        copy's (it was recreated): DamagedDatabase, and nothing of the record is taken."""
        seq = record.seq
        base, prev = _header_int(record, BASE), _header_int(record, PREV)
        if base == seq - 1 and prev is not None and self.last_crc is not None and prev != self.last_crc:
            raise DamagedDatabase(
                f"commit {seq} of the topic was made on another commit {base} than the one this copy holds: "
                "the topic is not the log this copy was made from (it was recreated); move the copy aside "
                "(or delete it) and open again: the node rebuilds it from the topic"
            )
        self.last_crc = crc_of(record)
        try:
            if record.value is None:
                raise CorruptRecord(seq, "missing from the log (gap)")
            if is_intent(record.value):
                ts, origin, intent = decode_intent(seq, record.value)
                entry = self._entry(record, origin, [], ts)
                entry.intent = intent
            else:
                commit = decode(seq, record.value)
                entry = self._entry(record, commit.origin, commit.mutations, commit.ts)
        except CorruptRecord as exc:
            log.warning("kafka_record_skipped", url=self.url, seq=seq, reason=exc.problem)
            poison = self._entry(record, {}, []).skipped(f"unreadable: {exc.problem}", poison=True)
            return [*self._break(seq), poison]
        rest, group = _header_int(record, REST) or 0, _header_int(record, GROUP)
        out: list[Entry] = []
        if self.pending and (base != seq - 1 or group != self.group):  # the group's chain is broken here
            out = self._break(seq)
        if base is not None and base != seq - 1:
            return [*out, entry.skipped(f"stale: made on the state at {base}, landed at {seq}")]
        if rest > 0:
            if not self.pending:
                self.group = group
            self.pending.append(entry)
            return out
        out.extend(self.pending)
        self.pending = []
        out.append(entry)
        return out

    def _entry(
        self, record: Record, origin: dict[str, Json], mutations: list[Mutation], ts: int | None = None
    ) -> Entry:
        if ts is None:
            try:
                ts = header_ts(record.seq, record.value or b"")
            except CorruptRecord:
                ts = self.last_ts
        self.last_ts = max(self.last_ts, ts)
        return Entry(record.seq, ts, origin, mutations, crc_of(record))

    def _break(self, seq: int) -> list[Entry]:
        broken, self.pending = self.pending, []
        return [entry.skipped(f"its group was broken at {seq}") for entry in broken]


def write_entries(
    env: Environment,
    entries: Sequence[Entry],
    source: str,
    ops: IntentOps,
    decided: dict[int, Decided] | None = None,
) -> bool:
    """Write ``entries`` (consecutive) as local commits in one LMDB transaction, past those the file
    holds already (every process judges the log alike), each intent decided by ``ops`` on the state
    before it; False (nothing written) while a staged write holds the seqs past the head.
    ``decided`` is given each intent decided here (valid once this returns True)."""
    dbs = env.dbs
    meta = dbs["meta"]

    def step(txn: Txn) -> bool:
        if read_mark(txn, meta) is not None:
            return False
        state = read_state(txn, meta)
        before = state.head
        sink = LogSink(txn, dbs, state)
        if state.head == 0 and txn.get(META_FORMAT, db=meta) is None:
            txn.put(META_FORMAT, keys.u32(FORMAT_VERSION), db=meta)
            txn.put(META_UUID, log_identity(source, entries[0].crc).encode(), db=meta)
            txn.put(META_SOURCE, source.encode(), db=meta)
        written = False
        for entry in entries:
            if entry.seq <= state.head:
                continue  # another process on this file (a CLI command beside `serve`) got there first
            if entry.seq != state.head + 1:
                raise DamagedDatabase(f"{env.path}: materialising Kafka commit {entry.seq} after {state.head}")
            written = True
            if entry.intent is not None:
                made, tallies, origin, outcome = decide(env, txn, state, entry.seq, entry.intent, entry.origin, ops)
                ts = sink.append(entry.seq, made, origin, entry.ts, tallies)
                write_outcome(txn, env, entry.seq, outcome)
                if decided is not None:
                    decided[entry.seq] = Decided(outcome, ts, bool(made))
                continue
            tallies = None
            if entry.mutations:  # resolved facts: projected as they are, sealed with the record's origin and time
                tx = sink.begin()
                tx.apply(entry.mutations)
                tallies = tx.tallies
            sink.append(entry.seq, entry.mutations, entry.origin, entry.ts, tallies)
        if written:
            sink.advance()
            txn.put(META_TIP, pack([entries[-1].seq, entries[-1].crc]), db=meta)
            poison = sum(entry.poison for entry in entries if entry.seq > before)
            if poison:
                txn.put(META_POISON, keys.u64(poison_count(txn, env) + poison), db=meta)
        return True

    return bool(in_write(env, step))


def decide(
    env: Environment,
    txn: Txn,
    state: LogState,
    seq: int,
    intent: Intent,
    origin: dict[str, Json],
    ops: IntentOps,
) -> tuple[list[Mutation], Tallies | None, dict[str, Json], dict[str, Json]]:
    """Run ``intent`` as commit ``seq`` on the state in ``txn``, in a transaction nested in it:
    ``(mutations, tallies, origin, outcome)`` to seal. A refusal (store/intents.py) undoes what the
    operation did and is sealed as an empty commit whose origin names it; anything else it raises is
    the record's fault, raised (the materialiser keeps the record as a poison one)."""
    unknown = _unknown(ops, intent)
    if unknown is not None:  # not a decision: another drsg may know it (see store/intents.py)
        raise StoreError(
            f"commit {seq} is a write this drsg does not know ({unknown!r}): a newer drsg wrote it; "
            f"upgrade drsg on this node (nothing past commit {seq - 1} is materialised until then)"
        )
    saved = state.copy()
    child = env.env.begin(write=True, parent=txn, buffers=False)
    tx = WriteTx(child, env.dbs, seq, state.ids, _one_commit)
    try:
        value = ops.run(tx, intent.unbounded())  # (a clock decides nothing)
    except BaseException as exc:
        child.abort()
        state.head, state.ts, state.ids = saved.head, saved.ts, saved.ids
        refusal = Refusal.of(exc)
        if refusal is None:
            raise
        release(txn, env.dbs, intent)  # an import's held chunks go with its refusal
        return [], None, {**origin, "refused": refusal.to_json()}, {"refused": refusal.to_json()}
    child.commit()
    return list(tx.mutations), tx.tallies, origin, {"value": value}


def _unknown(ops: IntentOps, intent: Intent) -> str | None:
    try:
        return ops.unknown(intent)
    except UsageError:  # a malformed batch: decided (refused) like any other bad write
        return None


def _one_commit(tx: WriteTx) -> int:
    raise UsageError("an intent is one commit; tx.commit_point() has no place in one")


def log_identity(source: str, first_crc: int) -> str:
    """The database uuid of every materialisation of one topic: its name and its first record's
    CRC, whatever host:port a node reaches the broker by, so index sidecars saved on one node (the
    consumer group's, workers/index_group.py) load on another, and a recreated topic's do not."""
    topic = source.rsplit("/", 1)[-1]
    return uuid.uuid5(uuid.NAMESPACE_URL, f"kafka-topic:{topic}#{first_crc:08x}").hex


def poison_count(txn: Txn, env: Environment) -> int:
    raw = txn.get(META_POISON, db=env.dbs["meta"])
    return 0 if raw is None else keys.read_u64(raw)


def read_tip(txn: Txn, env: Environment) -> tuple[str | None, int, int]:
    """``(source URL, tip seq, tip crc)`` recorded in a materialisation (None, 0, 0 if none)."""
    meta = env.dbs["meta"]
    source, tip = txn.get(META_SOURCE, db=meta), txn.get(META_TIP, db=meta)
    seq, crc = (0, 0) if tip is None else unpack(tip)
    return (None if source is None else bytes(source).decode()), int(seq), int(crc)


def crc_at(txn: Txn, env: Environment, seq: int) -> int | None:
    """The CRC of the Kafka record this copy holds at ``seq`` when it is the newest one it recorded
    (what a commit made on ``seq`` names as ``drsg-prev``); None otherwise, or at seq 0."""
    _, tip_seq, tip_crc = read_tip(txn, env)
    return tip_crc if tip_seq == seq > 0 else None


def check_pairing(env: Environment, kafka: KafkaLog) -> None:
    """Refuse a file that is not a materialisation of this log, or of a log that has lost commits."""
    with env.read() as txn:
        head = read_state(txn, env.dbs["meta"]).head
        source, tip_seq, tip_crc = read_tip(txn, env)
    rebuild = f"move {env.path} aside (or delete it) and open again: the node rebuilds it from the topic"
    if head == 0:
        return
    if source is None:
        raise ConfigError(
            f"{env.path} is an embedded database, not a materialisation of {kafka.url}; "
            f"name another --db for the Kafka log (or move the data across with export/import)"
        )
    if source != kafka.url:
        raise ConfigError(f"{env.path} materialises {source}, not {kafka.url}; give each log its own --db file")
    if kafka.head() < tip_seq:
        raise DamagedDatabase(
            f"{kafka.url} holds {kafka.head()} commits but {env.path} materialised {tip_seq}: the topic "
            f"lost commits (deleted, recreated, or a broker's memory); {rebuild}"
        )
    (found,) = list(kafka.records(tip_seq, tip_seq))
    if crc_of(found) != tip_crc:
        raise DamagedDatabase(
            f"{kafka.url}: commit {tip_seq} is not the one {env.path} materialised (the topic was recreated); {rebuild}"
        )


class Materialiser:
    """Follows the Kafka log into the local file in a thread of its own; ``publish`` is told each
    new local head (the local log's waiters: the feed, the index workers, waiting writers)."""

    def __init__(
        self,
        env: Environment,
        kafka: KafkaLog,
        publish: Callable[[int], None],
        lock: threading.Lock,
        ops: IntentOps,
    ) -> None:
        self.env = env
        self.ops = ops  # what intents may name: the same table on every node, or they decide apart
        self.lock = lock  # the file's write transactions in this process (py-lmdb allows one at a time)
        self.kafka = kafka
        self.publish = publish
        self.error: str | None = None  # why the last round failed (cleared by the next good one)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        with env.read() as txn:
            head = read_state(txn, env.dbs["meta"]).head
            last_crc = crc_at(txn, env, head)
        self._next = head + 1  # the next record to judge
        self.written = head  # the copy's head as of the last round (only the materialiser moves it)
        self.judge = Judge(last_crc=last_crc, url=kafka.url)
        self._ready: list[Entry] = []  # judged, not yet written (a staged write held the file)
        self._offered: dict[int, Record] = {}  # records this process produced, by seq (see offer)
        self._progress = threading.Condition()  # notified after every round (see wait)
        self._stepping = threading.Lock()  # one round at a time: the follower's, or a waiting writer's
        self._offered_lock = threading.Lock()
        # writers waiting for a seq, (seq, n, event) in a heap: a round wakes those it has reached,
        # not every writer in the process to look again (64 in flight spent their time on that)
        self._seq_waiters: list[tuple[int, int, threading.Event]] = []
        self._seq_lock = threading.Lock()
        self._waiter_ids = itertools.count()
        self._flushed = (head, time.monotonic())  # the head at the last flush, and when
        # intents this process's writers wait for, and what they became when decided here: a
        # writer takes its outcome from memory instead of reading it back from the copy
        self._expected: dict[int, Decided | None] = {}

    def start(self) -> Materialiser:
        """Start following the topic in a thread of its own; returns the materialiser. The log's
        watcher hands it what it reads through :meth:`offer` (the database passes it as the log's
        listener), so no record is fetched a second time."""
        if self._thread is not None:
            raise UsageError("the materialiser is started already")
        self._thread = threading.Thread(target=self._run, name=f"drsg-materialise-{self.kafka.topic}", daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop following: the thread ends, and every wait on its progress with it."""
        self._stop.set()
        self.kafka.interrupt()
        with self._progress:
            self._progress.notify_all()
        self._wake(everyone=True)
        if self._thread is not None:
            self._thread.join()

    @property
    def judged(self) -> int:
        """The last seq judged (written, or held back in an unfinished group)."""
        return self._next - 1

    def settled(self, seq: int) -> bool:
        """Every record up to ``seq`` is judged, and all of it that is not held back is written.
        (Read from other threads without a lock: each of the two reads is atomic, and a round caught
        half-way reads as not settled.)"""
        return self._next > seq and not self._ready

    def wait(self, done: Callable[[], bool], timeout: float) -> bool:
        """Block until ``done()`` after some round, or ``timeout`` passes; whether it is done."""
        deadline = time.monotonic() + timeout
        with self._progress:
            while not done():
                left = deadline - time.monotonic()
                if left <= 0 or self._stop.is_set():
                    return False
                self._progress.wait(left)
        return True

    def wait_written(self, seq: int, timeout: float) -> bool:
        """Block until the copy's head reaches ``seq``, the materialiser stops or ``timeout`` passes;
        whether it has."""
        if self.written >= seq:
            return True
        event = threading.Event()
        with self._seq_lock:
            if self.written >= seq:
                return True
            heapq.heappush(self._seq_waiters, (seq, next(self._waiter_ids), event))
        if not self._stop.is_set():
            event.wait(timeout)
        return self.written >= seq

    def _wake(self, *, everyone: bool = False) -> None:
        """Wake the writers waiting for a seq the copy has reached (all of them, when it stops)."""
        with self._seq_lock:
            waiters = self._seq_waiters
            while waiters and (everyone or waiters[0][0] <= self.written):
                heapq.heappop(waiters)[2].set()

    def step(self) -> bool:
        """One round: judge the records past what was read, write what they became. Whether the
        local head moved."""
        if not self._ready:
            head = self.kafka.head()
            if self._next > head:
                return False
            for record in self._own_records() or islice(self.kafka.records(self._next, head), BATCH):
                self._ready.extend(self.judge.feed(record))
                self._next = record.seq + 1
            if not self._ready:
                return False  # an unfinished group: held back
        if not self._write():
            return False
        head = self._ready[-1].seq
        self._ready = []
        self.written = max(self.written, head)
        self._wake()
        self.publish(head)
        return True

    def help(self, done: Callable[[], bool]) -> None:
        """Run rounds in the calling thread — a writer waiting for its own commit — until ``done()``
        or nothing moves, unless the follower is in one: the commit is materialised without waking
        another thread and back. What fails here is left to the follower, which tries again and
        says why."""
        if not self._stepping.acquire(blocking=False):
            return
        try:
            while not done() and self.step():
                pass
        except Exception:
            pass
        finally:
            self._stepping.release()
        with self._progress:
            self._progress.notify_all()

    def offer(self, record: Record) -> None:
        """A record as the broker holds it at ``record.seq`` (one this process has just produced,
        or one the log's watcher has read): when it is next to judge, it is judged from these bytes
        without fetching it. Offers wait at most OFFERS deep; past that the fetch reads them."""
        with self._offered_lock:
            if len(self._offered) < OFFERS:
                self._offered[record.seq] = record

    def expect(self, seq: int) -> None:
        """A writer of this process waits for intent ``seq``: keep what it becomes for :meth:`decided`."""
        with self._offered_lock:
            self._expected[seq] = None

    def decided(self, seq: int) -> Decided | None:
        """Intent ``seq`` as this process decided it (once; None if it was not decided here, or not
        yet, or was no intent: then the copy says)."""
        with self._offered_lock:
            return self._expected.pop(seq, None)

    def _keep(self, decided: dict[int, Decided]) -> None:
        if decided:
            with self._offered_lock:
                for seq in decided.keys() & self._expected.keys():
                    self._expected[seq] = decided[seq]

    def _own_records(self) -> list[Record]:
        """The offered records from the next seq on, consecutive; older offers are dropped."""
        with self._offered_lock:
            for seq in [seq for seq in self._offered if seq < self._next]:
                del self._offered[seq]
            own: list[Record] = []
            while (record := self._offered.pop(self._next + len(own), None)) is not None:
                own.append(record)
            return own

    def _write(self) -> bool:
        """Write the judged entries. A commit the projection refuses (a record that decodes but
        whose mutations do not apply: a poison record) would fail its batch for good, so the batch
        is written one commit at a time and that commit kept as an empty one."""
        with self.lock:
            return self._write_locked()

    def _write_locked(self) -> bool:
        decided: dict[int, Decided] = {}
        try:
            written = write_entries(self.env, self._ready, self.kafka.url, self.ops, decided)
            if written:
                self._keep(decided)
            return written
        except DrsgError:
            raise  # the file or the disk, not the record: tried again
        except Exception:
            pass
        for i, entry in enumerate(self._ready):
            try:
                decided = {}
                written = write_entries(self.env, [entry], self.kafka.url, self.ops, decided)
                if written:
                    self._keep(decided)
            except DrsgError:
                raise
            except Exception as exc:
                reason = f"{type(exc).__name__}: {exc}"
                log.warning("kafka_record_skipped", url=self.kafka.url, seq=entry.seq, reason=reason)
                self._ready[i] = entry = entry.skipped(f"unappliable: {reason}", poison=True)
                written = write_entries(self.env, [entry], self.kafka.url, self.ops)
            if not written:  # a staged write began meanwhile: the rest waits for it
                del self._ready[:i]
                return False
        return True

    def _flush(self) -> None:
        """Flush the copy every FLUSH_EVERY seconds while it moves, off every caller's path: its
        commits flush nothing (store/kafka/copymark.py), and so the OS's dirty pages stay few and a
        clean close has little left to write."""
        head, at = self._flushed
        now = time.monotonic()
        if self.written > head and now - at >= FLUSH_EVERY:
            self.env.flush()
            self._flushed = (self.written, now)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                with self._stepping:
                    moved = self.step()
                self._flush()
                self.error = None
                with self._progress:
                    self._progress.notify_all()
            except Exception as exc:  # a lost broker, a full disk: said, and tried again
                message = exc.message if isinstance(exc, DrsgError) else f"{type(exc).__name__}: {exc}"
                if self.error != message:
                    log.warning("kafka_materialise_failed", url=self.kafka.url, error=message)
                self.error = message
                self._stop.wait(RETRY_WAIT)
                continue
            if not moved:
                if self._ready:  # a staged write holds the file: look again soon
                    self._stop.wait(0.02)
                else:
                    self.kafka.wait(self._next - 1, IDLE_WAIT)
