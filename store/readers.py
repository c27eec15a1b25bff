"""Long readers and the history they hold: this process's, and other processes' through leases.

A long reader (a feed subscription, ``drsg log --follow``) reads across many transactions, so
history compaction (store/retention.py) must leave the commits it has yet to read. In this process
:class:`Pins` knows them. Another process's readers are known by a **lease**: a small file per
open database with long readers, ``DB.readers/PID-TOKEN.lease``, holding the oldest commit they
still read the state at. A thread renews it every third of its term (``[log] reader_lease_secs``)
while the process lives, and a new reader that needs an older commit rewrites it before it reads,
so a lease is never newer than its readers. A lease not renewed within its term has expired: its
process died (or stopped for that long), and it no longer holds history back; the compactor
removes it. A lease that cannot be written (a read-only folder) is logged, and its readers are held
only by this process's compactions, as before leases.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import structlog

from drsg.kernel.files import write_atomic

LEASE_SECS = 120.0  # ``[log] reader_lease_secs``'s default: how long a dead reader's lease holds history
SUFFIX = ".lease"
log = structlog.get_logger("drsg.store")


class Pinned(Protocol):
    """A reader that reads across transactions (a feed subscription, ``Database.follow``)."""

    def needs(self) -> int:
        """The oldest commit it will still read the state at."""
        ...


def leases_dir(db_path: Path) -> Path:
    """The folder beside the database where its readers' leases are."""
    return db_path.with_name(db_path.name + ".readers")


@dataclass(frozen=True, slots=True)
class Holder:
    """A reader that holds history from ``seq`` on, and who it is (for a one-line report)."""

    seq: int
    who: str


@dataclass(frozen=True, slots=True)
class Lease:
    """One process's lease, as read from its file."""

    path: Path
    seq: int
    pid: int
    host: str
    expires_ms: int

    def holder(self, now_ms: int) -> Holder:
        left = max(0, (self.expires_ms - now_ms) // 1000)
        return Holder(self.seq, f"pid {self.pid} on {self.host} (its lease expires in {left} s unless renewed)")


def read_lease(path: Path) -> Lease | None:
    """The lease in ``path``, or None when it is gone or not a lease (a stray file holds nothing)."""
    try:
        raw = json.loads(path.read_bytes())
        return Lease(path, int(raw["seq"]), int(raw["pid"]), str(raw["host"]), int(raw["expires_ms"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def live_leases(folder: Path, now_ms: int, *, mine: Path | None = None, prune: bool = True) -> list[Lease]:
    """The leases in ``folder`` still in their term (but ``mine``); expired ones are removed
    (``prune``: a compaction; a look such as `drsg stats` only reads)."""
    try:
        names = sorted(folder.glob("*" + SUFFIX))
    except OSError:
        return []
    live: list[Lease] = []
    for path in names:
        if path == mine:
            continue
        lease = read_lease(path)
        if lease is None:
            continue
        if lease.expires_ms < now_ms:
            if not prune:
                continue
            log.info("reader lease expired", lease=path.name, seq=lease.seq, pid=lease.pid)
            with contextlib.suppress(OSError):  # (its process may renew it meanwhile: then it is back)
                path.unlink()
            with contextlib.suppress(OSError):  # the folder goes with its last lease
                folder.rmdir()
            continue
        live.append(lease)
    return live


class Pins:
    """This process's long readers, published as its lease. The horizon stays at or before the
    oldest commit any of them, or any other process's live lease, still needs (upstream's floor:
    the oldest live reader). Readers are held weakly: one dropped unclosed goes."""

    def __init__(self, db_path: Path | None = None, lease_secs: Callable[[], float] = lambda: LEASE_SECS) -> None:
        self._readers: weakref.WeakSet[Pinned] = weakref.WeakSet()
        self._lock = threading.Lock()
        self.lease_secs = lease_secs  # read when a lease is written (a layer above gives the setting)
        self.folder = None if db_path is None else leases_dir(db_path)
        self.lease: Path | None = None  # this process's lease file, once written
        self._published: int | None = None  # the seq the lease file holds
        self._closed = threading.Event()
        self._thread: threading.Thread | None = None
        self._warned = False

    def add(self, reader: Pinned) -> None:
        with self._lock:
            self._readers.add(reader)
            need = reader.needs()
            if self._published is None or need < self._published:
                self._publish(need)  # before it reads: a lease is never newer than its readers
            self._start()

    def discard(self, reader: Pinned) -> None:
        with self._lock:
            self._readers.discard(reader)
            if not self._readers:
                self._remove()  # (while others read, the renewal moves the lease on)

    def oldest(self) -> int | None:
        """The oldest commit this process's readers need."""
        with self._lock:
            return self._oldest()

    def _oldest(self) -> int | None:
        return min((reader.needs() for reader in list(self._readers)), default=None)

    def holders(self, now_ms: int | None = None, *, prune: bool = True) -> list[Holder]:
        """Every reader holding history: this process's, then other processes' live leases
        (``prune``: remove the expired ones)."""
        now = int(time.time() * 1000) if now_ms is None else now_ms
        held = self.oldest()
        found = [] if held is None else [Holder(held, f"a reader in this process (pid {os.getpid()})")]
        if self.folder is not None:
            found += [lease.holder(now) for lease in live_leases(self.folder, now, mine=self.lease, prune=prune)]
        return found

    def close(self) -> None:
        """Stop renewing and remove this process's lease: its readers end with the database."""
        self._closed.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()
        with self._lock:
            self._remove()

    # ------------------------------------------------------------------ the lease file

    def _start(self) -> None:
        if self._thread is None and self.folder is not None and not self._closed.is_set():
            self._thread = threading.Thread(target=self._renew, name="drsg-reader-lease", daemon=True)
            self._thread.start()

    def _renew(self) -> None:
        while not self._closed.wait(max(0.05, self.lease_secs() / 3)):
            with self._lock:  # (read under the lock: a reader added meanwhile may need an older commit)
                need = self._oldest()
                if need is None:
                    self._remove()
                else:
                    self._publish(need)

    def _publish(self, seq: int) -> None:
        """Write the lease (the caller holds the lock)."""
        if self.folder is None:
            return
        if self.lease is None:
            self.lease = self.folder / f"{os.getpid()}-{secrets.token_hex(4)}{SUFFIX}"
        term = self.lease_secs()
        body = {
            "seq": seq,
            "pid": os.getpid(),
            "host": os.uname().nodename,
            "expires_ms": int((time.time() + term) * 1000),
        }
        try:
            try:
                write_atomic(self.lease, json.dumps(body).encode(), durable=False)  # (a crash ends its readers too)
            except FileNotFoundError:  # another process removed the folder as its last lease went: again
                write_atomic(self.lease, json.dumps(body).encode(), durable=False)
        except OSError as exc:
            if not self._warned:
                self._warned = True
                log.warning("reader lease not written; other processes may compact past it", error=str(exc))
            return
        self._published = seq

    def _remove(self) -> None:
        if self.lease is not None and self._published is not None:
            with contextlib.suppress(OSError):
                self.lease.unlink()
            with contextlib.suppress(OSError):  # the last lease leaves no folder behind (one in use stays)
                self.lease.parent.rmdir()
        self._published = None
