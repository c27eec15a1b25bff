"""``drsg compact``: the database file rewritten without its free pages, while no process has it open.

LMDB reuses the pages a commit frees but never gives them back to the file system; a long read
held under heavy writing, or an import that was rolled back, leaves a file much larger than its
data. Its compacting copy writes only the pages in use, renumbered.

Offline only: a process with the file open maps it and would go on writing into the replaced
file. Every process that has an LMDB file open holds a shared lock on the first byte of its lock
file for as long as it is open (LMDB's own check for being its first user), so an exclusive
open-file-description lock taken there fails at once while another process has it open, and,
held, makes any process opening it meanwhile wait. The copy then replaces the file with a rename,
and the lock file is emptied before it is let go: LMDB builds it afresh on the next open, and a
process that waited for it fails to open rather than trust a reader table of the old file.
"""

from __future__ import annotations

import errno
import fcntl
import os
import struct
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import lmdb

from drsg.kernel.errors import DatabaseUnavailable, StoreError
from drsg.kernel.files import fsync_path
from drsg.store.environment import DB_NAMES
from drsg.store.filecheck import check_file
from drsg.store.meta import META_FORMAT

_FLOCK = struct.Struct("hhqqi4x")  # struct flock on Linux x86-64/aarch64: type, whence, start, len, pid


@dataclass(frozen=True)
class Compacted:
    before: int  # bytes of the file before
    after: int  # bytes after

    @property
    def reclaimed(self) -> int:
        return self.before - self.after


def compact(path: Path) -> Compacted:
    """Rewrite ``path`` without its free pages; refused while another process has it open."""
    if not path.is_file():
        raise DatabaseUnavailable(f"no database at {path}; check --db")
    check_file(path)  # a truncated file would crash LMDB's copy, not fail it
    with _alone(path):
        before = path.stat().st_size
        fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.compact-", suffix=".tmp")
        try:
            _copy(path, fd)
            os.fsync(fd)
            os.close(fd)
            fd = -1
            os.chmod(temp, path.stat().st_mode & 0o7777)
            os.replace(temp, path)
            fsync_path(path.parent)
        except BaseException:
            if fd >= 0:
                os.close(fd)
            Path(temp).unlink(missing_ok=True)
            raise
        return Compacted(before, path.stat().st_size)


def _copy(path: Path, fd: int) -> None:
    """LMDB's compacting copy of ``path`` into ``fd``, opened without the lock file (this process
    holds it alone: see :func:`_alone`)."""
    try:
        env = lmdb.open(str(path), subdir=False, readonly=True, lock=False, max_dbs=len(DB_NAMES) + 2)
    except lmdb.Error as exc:
        raise DatabaseUnavailable(f"cannot open {path}: {exc}") from None
    try:
        try:
            meta = env.open_db(b"meta", create=False)
            with env.begin() as txn:
                drsg_file = txn.get(META_FORMAT, db=meta) is not None
        except lmdb.NotFoundError:
            drsg_file = False
        if not drsg_file:
            raise DatabaseUnavailable(f"{path} is not a drsg database; check --db")
        env.copyfd(fd, compact=True)
    except lmdb.Error as exc:
        raise StoreError(f"{path}: the compacting copy failed ({exc}); the file is unchanged") from None
    finally:
        env.close()


@contextmanager
def _alone(path: Path) -> Iterator[None]:
    """Hold the database's lock file alone, or refuse: another process has the file open."""
    lock_path = Path(f"{path}-lock")
    try:
        lock_fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise DatabaseUnavailable(f"cannot open {lock_path}: {os.strerror(exc.errno or 0)}") from None
    try:
        try:
            fcntl.fcntl(lock_fd, fcntl.F_OFD_SETLK, _FLOCK.pack(fcntl.F_WRLCK, os.SEEK_SET, 0, 1, 0))
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.EACCES):
                raise DatabaseUnavailable(f"cannot lock {lock_path}: {os.strerror(exc.errno or 0)}") from None
            raise DatabaseUnavailable(
                f"{path} is open in another process (`drsg serve`, a writer or a reader); stop it and run "
                "compact again, or take `drsg snapshot` while it runs and `drsg restore` that instead"
            ) from None
        try:
            yield
        finally:
            os.ftruncate(lock_fd, 0)  # LMDB builds it afresh at the next open (see the module's docstring)
    finally:
        os.close(lock_fd)  # lets the lock go
