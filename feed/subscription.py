"""Subscriptions: a durable, resumable change feed read straight from the log.

The log is the buffer (DESIGN.md §1): a subscription is only a position in it. Each time the
consumer asks for more and nothing is ready, the subscription reads the next batch of commits in one
short read transaction (never held across an ``await`` or a ``yield``), turns them into messages
(feed/changes.py) and hands them out one by one. A slow consumer therefore costs one batch of
memory and simply falls behind; nothing is ever dropped, and ``truncated`` is always false.

A caught-up subscription waits on the database's commit notification (store/notify.py), which
wakes it at once for this process's commits and other processes' alike; it reads the head only
when woken, or after ``poll`` seconds of quiet (a backstop).

Messages::

    {"plane": "social", "seq": 42, "ts": 1718000000000, "changes": [...], "truncated": false}
    {"resolved": 42}    every commit <= 42 that matches has been delivered (sent when quiet)

A watched plane is named at the start but followed by id: a rename keeps the subscription (later
messages carry the new name) and a drop ends it, with a last message that has ``"dropped": true``
(and whatever changes that commit made to the plane before dropping it). The name means the plane
that bore it just before ``from_seq`` — so a resume follows the same plane even after a rename or a
drop — or, if none did, the first plane to take the name after that.

Resuming: every message carries its seq; reconnect with ``from_seq = last_seen + 1`` (or the last
``resolved`` + 1) and the feed continues exactly where it stopped, in order, with no duplicates.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from drsg.feed.changes import ChangeOptions, commit_changes
from drsg.kernel.errors import BadValue, NotFound
from drsg.store.records import Edge, Node
from drsg.store.snapshot import Snapshot

if TYPE_CHECKING:
    from drsg.store.database import Database

Message = dict[str, Any]

#: How much one read may gather before handing out messages: a bound on memory per subscriber.
BATCH_COMMITS = 256
BATCH_MUTATIONS = 4096


#: the range of ``resolved_every`` a subscriber may ask for: a watermark every 1e-9 s was a flood
#: (122,590 frames in 3 s from one WebSocket); more than an hour apart is no watermark at all
RESOLVED_EVERY_RANGE = (0.05, 3600.0)


def check_resolved_every(seconds: object) -> None:
    """BadValue unless ``seconds`` is None (no watermarks) or a number in :data:`RESOLVED_EVERY_RANGE`."""
    if seconds is None:
        return
    low, high = RESOLVED_EVERY_RANGE
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not low <= seconds <= high:
        raise BadValue(
            f"resolved_every is a number of seconds from {low} to {high:g}, or null for none; not {seconds!r:.30}"
        )


class Subscription:
    """Commits of one plane (or of all planes, ``plane=None``) as change messages, from a seq on.

    ``from_seq``: the first commit to deliver; None means "now" (the head + 1). ``to_seq``: stop
    after this commit (waiting for it if need be). ``follow=False``: stop at the head as it was when
    the subscription started. ``labels`` / ``ops`` filter the changes (commits left with no change
    send nothing, but still advance the ``resolved`` watermark). ``resolved_every``: seconds of
    quiet between watermarks (None: never send them). ``poll``: seconds a caught-up subscription
    waits at most before it reads the head again (commits wake it sooner).

    Iterate it with ``async for`` or plain ``for``; it holds no transaction between messages, so it
    can be abandoned at any point without cleanup.
    """

    def __init__(
        self,
        db: Database,
        plane: str | None,
        from_seq: int | None = None,
        *,
        labels: Iterable[str] | str | None = None,
        ops: Iterable[str] | str | None = None,
        include_before: bool = False,
        include_vectors: bool = False,
        include_hidden: bool = False,
        resolved_every: float | None = 1.0,
        poll: float = 1.0,
        to_seq: int | None = None,
        follow: bool = True,
    ) -> None:
        try:
            self.options = ChangeOptions.of(
                labels,
                ops,
                include_before=include_before,
                include_vectors=include_vectors,
                include_hidden=include_hidden,
            )
        except ValueError as exc:
            raise BadValue(str(exc)) from None
        if poll <= 0:
            raise BadValue("poll must be a positive number of seconds")
        check_resolved_every(resolved_every)
        if from_seq is not None and from_seq < 1:
            raise BadValue(f"from_seq must be 1 or more, not {from_seq}")
        self.db = db
        self.resolved_every = resolved_every
        self.poll = poll
        self._next = from_seq or 0  # the first commit not yet read
        if from_seq is not None:
            db.pins.add(self)  # before the horizon is checked: compaction elsewhere then leaves it too
        try:
            start, head = self._start(db, plane, from_seq)
        except BaseException:
            db.pins.discard(self)
            raise
        self.plane_name = plane
        self.from_seq = start
        self._next = start
        self._limit = to_seq if follow else (head if to_seq is None else min(to_seq, head))
        self._ready: deque[Message] = deque()
        self._ended = False
        self._stopped = threading.Event()
        self._last_sent = time.monotonic()
        self._reading: asyncio.Future[None] | None = None  # a batch read running in a worker thread
        db.pins.add(self)  # (one that starts at the head is held from there)

    def _start(self, db: Database, plane: str | None, from_seq: int | None) -> tuple[int, int]:
        """The first commit to read and the head, once the horizon and the plane are checked."""
        with db.read() as reader:
            head = reader.head
            if from_seq is not None and from_seq > head + 1:
                raise BadValue(
                    f"cannot start at seq {from_seq}: the log ends at seq {head}; start at {head + 1} at most"
                )
            start = head + 1 if from_seq is None else from_seq
            if start - 1 < reader.retained.oldest and reader.retained.oldest > 1:  # it reads the state before
                what = f"from_seq {start:,} (it reads the state at commit {start - 1:,})"
                raise reader.retained.refuse(start, what, reader.retained.oldest + 1)
            self._names: dict[int, str] = {p.id: p.name for p in reader.snapshot(start - 1).planes()}
            self.plane_id: int | None = None if plane is None else _plane_for(reader.snapshot(), plane, start)
        return start, head

    def needs(self) -> int:
        """The oldest commit it still reads the state at: the one before its next."""
        return self._next - 1

    @property
    def position(self) -> int:
        """Where to resume so as to lose and repeat nothing, once every message handed out so far
        has been processed: the seq of the first message not yet handed out, else the next read."""
        for message in self._ready:
            if "seq" in message:
                return int(message["seq"])
        return self._next

    # ------------------------------------------------------------------ reading the log

    def _read_batch(self, upto: int) -> None:
        """Read commits ``_next..upto`` (at most one batch) into ready messages, in one short txn."""
        count = mutations = 0
        plane = self.plane_id
        options = self.options
        with self.db.read() as reader:
            snaps: dict[int, Snapshot] = {}

            def before_at(seq: int) -> Any:
                def before(kind: str, plane_id: int, entity: int) -> Node | Edge | None:
                    snap = snaps.get(seq)
                    if snap is None:
                        snaps.clear()
                        snap = snaps[seq] = reader.snapshot(seq - 1)
                    return snap.node(plane_id, entity) if kind == "node" else snap.edge(plane_id, entity)

                return before

            for commit in reader.commits(self._next, upto):
                result = commit_changes(commit.mutations, before_at(commit.seq), options, self._names, plane)
                if result.changes or result.dropped:
                    message: Message = {
                        "plane": result.plane_name,
                        "seq": commit.seq,
                        "ts": commit.ts,
                        "changes": result.changes,
                        "truncated": False,
                    }
                    if result.dropped:
                        message["dropped"] = True
                    self._ready.append(message)
                self._next = commit.seq + 1
                if result.dropped:
                    self._ended = True
                    return
                count += 1
                mutations += len(commit.mutations)
                if count >= BATCH_COMMITS or mutations >= BATCH_MUTATIONS:
                    return

    def stop(self) -> None:
        """End the iteration at its next step (safe from a signal handler or another thread): a
        waiting iteration is woken to notice."""
        self._stopped.set()
        self.db.log.interrupt()

    # ------------------------------------------------------------------ the iteration step

    def _plan(self) -> tuple[str, Any]:
        """What to do next: ("yield", message), ("read", upto), ("wait", None) or ("end", None)."""
        if self._stopped.is_set():
            self.db.pins.discard(self)
            return "end", None
        if self._ready:
            self._last_sent = time.monotonic()
            return "yield", self._ready.popleft()
        if self._ended:
            self.db.pins.discard(self)
            return "end", None
        if self._limit is not None and self._next > self._limit:
            self._ended = True
            self.db.pins.discard(self)
            return "end", None
        now = time.monotonic()
        if self.resolved_every is not None and now - self._last_sent >= self.resolved_every:
            # Quiet for a while (idle, or scanning commits that match nothing): say how far we are.
            self._last_sent = now
            return "yield", {"resolved": self._next - 1}
        head = self.db.head()
        upto = head if self._limit is None else min(head, self._limit)
        if self._next <= upto:
            return "read", upto
        return "wait", None

    def _wait_time(self) -> float:
        if self.resolved_every is None:
            return self.poll
        due = self._last_sent + self.resolved_every - time.monotonic()
        return max(0.0, min(self.poll, due))

    def __iter__(self) -> Iterator[Message]:
        while True:
            action, arg = self._plan()
            if action == "yield":
                yield arg
            elif action == "read":
                self._read_batch(arg)
            elif action == "wait":
                self.db.log.wait(self._next - 1, self._wait_time())
            else:
                return

    def __aiter__(self) -> AsyncIterator[Message]:
        return self

    async def __anext__(self) -> Message:
        while True:
            if self._reading is not None:
                # A read started by a call that was cancelled (e.g. by wait_for) may still be
                # running: let it finish rather than start a second one beside it.
                reading = self._reading
                try:
                    await asyncio.shield(reading)
                finally:
                    if reading.done():
                        self._reading = None
                continue
            action, arg = self._plan()
            if action == "yield":
                return arg  # type: ignore[no-any-return]
            if action == "read":
                self._reading = asyncio.ensure_future(asyncio.to_thread(self._read_batch, arg))
            elif action == "wait":
                await self.db.log.wait_async(self._next - 1, self._wait_time())
            else:
                raise StopAsyncIteration


def _plane_for(now: Snapshot, name: str, start: int) -> int:
    """The plane that bore ``name`` where reading starts, else the first to take the name after
    that: a resume then follows the same plane even if it was renamed or dropped since."""
    history = now.plane_name_history(name)
    in_force = [plane for seq, plane in history if seq < start]
    if in_force and in_force[-1] is not None:
        return in_force[-1]
    for seq, plane in history:
        if seq >= start and plane is not None:
            return plane
    known = ", ".join(sorted(p.name for p in now.planes())) or "none"
    raise NotFound(f"no plane named {name!r} (planes: {known}); create it with `drsg plane create {name}`")


def subscribe(db: Database, plane: str | None, from_seq: int | None = None, **options: Any) -> Subscription:
    """``async for message in drsg.feed.subscribe(db, "social", from_seq=1): …``"""
    return Subscription(db, plane, from_seq, **options)
