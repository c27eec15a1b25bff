"""Whether a Kafka node's copy can be trusted after what happened while it was open, and the mark
beside it that says so.

A node's copy is derived from the topic, which keeps every commit durably (acks=all), so the copy
commits without flushing (LMDB's MDB_NOSYNC, store/kafka/database.py). A process that dies
(``kill -9``) loses nothing by it: every committed page is in the OS's page cache, which outlives the
process, and LMDB's file stays consistent. A system crash or a power loss may leave pages unwritten
and the file corrupt, so a copy that was being written when the machine went down is not trusted: it
is removed and the node rebuilds it from the topic, as a new node builds its copy.

The mark, ``<copy>.synced``, is one small JSON record: the machine's boot id (new at every boot,
/proc/sys/kernel/random/boot_id) and whether the copy was left clean (every page flushed, no
process writing it). Every process that opens the copy holds a shared ``flock`` on the mark while
it is open; the one that finds itself alone at open judges the mark and marks it in use, and the
last one to close flushes the copy and marks it clean. The rule, on open:

- no mark (a new copy, or one a drsg that flushed every commit made), or marked clean: trusted;
- in use, this boot: trusted — its writer died with the machine still up, its pages in the cache;
- in use, another boot (or a boot id this machine cannot tell, or a mark that cannot be read):
  the machine went down while the copy was being written — rebuilt from the topic.

The record is written in place, one ``pwrite`` of a fixed size and an fsync: never torn by a process
that dies, and a sector's size, which a disk writes whole.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import structlog

from drsg.kernel.errors import DatabaseUnavailable
from drsg.kernel.files import fsync_path
from drsg.kernel.values import Json

BOOT_ID = Path("/proc/sys/kernel/random/boot_id")
SUFFIX = ".synced"
SIZE = 512  # the record's bytes, padded: one sector
TRIES = 250  # × 0.02 s: how long an opener waits for another's judging before it gives up
log = structlog.get_logger("drsg.store")


def boot_id() -> str | None:
    """This boot's id (None where the system does not tell: then a copy in use is never trusted)."""
    try:
        return BOOT_ID.read_text().strip() or None
    except OSError:
        return None


@dataclass(frozen=True)
class Mark:
    """The record: the boot it was written in, whether the copy was left clean, and the last time
    the copy was found untrusted and rebuilt (``{"at": ISO time, "reason": …}``), kept for
    ``drsg stats``."""

    boot: str | None
    clean: bool
    rebuilt: dict[str, Json] | None = None

    def to_bytes(self) -> bytes:
        raw = json.dumps({"boot": self.boot, "clean": self.clean, "rebuilt": self.rebuilt}).encode()
        if len(raw) > SIZE:  # a reason is a line of ours: never so long, but a mark must stay whole
            return Mark(self.boot, self.clean, {"at": (self.rebuilt or {}).get("at"), "reason": "…"}).to_bytes()
        return raw.ljust(SIZE)

    @staticmethod
    def of(raw: bytes) -> Mark | None:
        """The mark in ``raw``; None if it is no mark (torn, or another file's bytes)."""
        try:
            data = json.loads(raw)
            boot, clean, rebuilt = data["boot"], data["clean"], data["rebuilt"]
        except (ValueError, TypeError, KeyError):
            return None
        if not isinstance(boot, str | None) or not isinstance(clean, bool) or not isinstance(rebuilt, dict | None):
            return None
        return Mark(boot, clean, rebuilt)


def distrust(mark: Mark | None, raw: bytes, boot: str | None) -> str | None:
    """Why a copy left with ``mark`` (read as ``raw``) is not to be trusted on a machine at ``boot``;
    None if it is (the module's rule)."""
    if not raw.strip():
        return None  # no mark yet: the copy is new, or made by a drsg that flushed every commit
    if mark is None:
        return "its mark cannot be read"
    if mark.clean:
        return None
    if boot is None or mark.boot is None:
        return "it was being written and this system gives no boot id to tell a restart by"
    if mark.boot != boot:
        return "the machine restarted (power loss or a system crash) while it was being written"
    return None


class CopyMark:
    """The mark of the copy at ``copy``, held while the copy is open (see the module).
    ``boot`` gives this boot's id (a parameter for tests, which plant another)."""

    def __init__(self, copy: str | os.PathLike[str], boot: Callable[[], str | None] = boot_id) -> None:
        self.copy = Path(copy)
        self.path = Path(f"{self.copy}{SUFFIX}")
        self.boot = boot
        self.rebuilt: dict[str, Json] | None = None  # as the mark keeps it (this open's, or an earlier one)
        self._fd: int | None = None
        self._made = False  # this open made the mark (the copy is new to marks)

    def open(self) -> CopyMark:
        """Judge the copy and hold the mark (in use) until :meth:`close`: an untrusted copy is
        removed first, so the database opened next is a new copy, built from the topic."""
        if not self.copy.parent.is_dir() or self.copy.is_dir():
            return self  # the database's open says what is wrong with the path
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            self._take(fd)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        return self

    def _take(self, fd: int) -> None:
        for _ in range(TRIES):
            if _try_lock(fd, fcntl.LOCK_EX):  # alone: this process judges the copy
                self._judge(fd)
                fcntl.flock(fd, fcntl.LOCK_SH)
                return
            fcntl.flock(fd, fcntl.LOCK_SH)  # others have it open: they judged it (wait out one judging)
            raw = os.pread(fd, SIZE, 0)
            mark = Mark.of(raw)
            if distrust(mark, raw, self.boot()) is None:
                self.rebuilt = None if mark is None else mark.rebuilt
                if mark is None or mark.clean or mark.boot != self.boot():
                    self._write(fd, Mark(self.boot(), False, self.rebuilt))
                return
            fcntl.flock(fd, fcntl.LOCK_UN)  # caught between another's close and its open: look again
            time.sleep(0.02)
        raise DatabaseUnavailable(
            f"{self.copy}: another process holds this copy open while its mark ({self.path}) says it "
            f"cannot be trusted; stop that process and open it again"
        )

    def _judge(self, fd: int) -> None:
        raw = os.pread(fd, SIZE, 0)
        mark = Mark.of(raw)
        boot = self.boot()
        self.rebuilt = None if mark is None else mark.rebuilt
        reason = distrust(mark, raw, boot) if self.copy.exists() else None
        if reason is not None:
            for path in (self.copy, Path(f"{self.copy}-lock")):
                path.unlink(missing_ok=True)
            fsync_path(self.copy.parent)
            self.rebuilt = {"at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "reason": reason}
            log.warning("kafka_copy_rebuilt", path=str(self.copy), reason=reason)
        self._write(fd, Mark(boot, False, self.rebuilt))
        if not raw:
            self._made = True
            fsync_path(self.path.parent)  # the mark is new: its name made durable too

    def _write(self, fd: int, mark: Mark) -> None:
        os.pwrite(fd, mark.to_bytes(), 0)
        os.fsync(fd)

    def close(self, flush: Callable[[], None]) -> None:
        """Let go of the mark. The last process to let go flushes the copy (``flush``: every page it
        and the processes before it committed) and marks it clean; while another still has it open,
        that one does, when it closes."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            if _try_lock(fd, fcntl.LOCK_EX):  # (a failed conversion lets the shared lock go: fine here)
                flush()
                self._write(fd, Mark(self.boot(), True, self.rebuilt))
        finally:
            os.close(fd)

    def release(self) -> None:
        """Let go of the mark without marking the copy clean (an open that failed part-way); a mark
        this open made goes, unless another process has opened the copy since: a refused open
        leaves nothing behind."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            if self._made and _try_lock(fd, fcntl.LOCK_EX):
                self.path.unlink(missing_ok=True)
        finally:
            os.close(fd)


def _try_lock(fd: int, kind: int) -> bool:
    try:
        fcntl.flock(fd, kind | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            return False
        raise
    return True
