"""The LMDB environment: opening, named databases, and growing the map.

LMDB needs a map size up front. We start modestly and double it whenever a write fills it, so no
``MapFullError`` reaches a user. Resizing is only safe while this process has no transaction open,
so every reader passes through a :class:`Gate` (shared), and a resize takes it exclusively. Another
process growing the map shows up here as ``MapResizedError``, answered by adopting the new size.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TypeAlias

import lmdb
import structlog

from drsg.kernel.errors import DamagedDatabase, DatabaseUnavailable, StoreError, StoreFull
from drsg.kernel.values import Undecodable
from drsg.store.filecheck import check_file
from drsg.store.gate import Gate, SharedHold

#: The named databases; see store/keys.py for their key layouts.
DB_NAMES = (
    "meta",  # state (head seq, last timestamp, id counters), format version
    "log",  # seq -> commit record
    "planes",  # plane_id ~seq -> [name, props] | tombstone
    "plane_names",  # name ~seq -> plane_id | tombstone
    "nodes",  # plane node_id ~seq -> [key, labels, props] | tombstone
    "keys",  # plane key ~seq -> node_id | tombstone
    "labels",  # plane label node_id ~seq -> present | absent
    "edges",  # plane edge_id ~seq -> [src, dst, type, props] | tombstone
    "out",  # plane src type edge_id ~seq -> dst | tombstone
    "in",  # plane dst type edge_id ~seq -> src | tombstone
    "tally",  # plane L|T name -> live nodes with a label / edges of a type; plane C -> [nodes, edges]
    "indexes",  # plane kind label property ~seq -> options | tombstone (search index declarations)
)
# Databases made before 2026-12 also hold an empty "checkpoints" table nothing ever used (consumers
# keep their checkpoints in their sidecars): such a file opens as any other; the table is never opened.

#: What reading a damaged file raises: LMDB's own errors, and records that no longer decode. Our own
#: reads fail in no other way, so these are converted to one DamagedDatabase at the boundary.
READ_DAMAGE = (lmdb.Error, Undecodable)
MiB = 1 << 20
CLOSE_WAIT = 30.0  # seconds close() waits for this process's running transactions
log = structlog.get_logger("drsg.store")

#: A named database's handle (py-lmdb's ``_Database``): opaque, passed back as ``db=``.
DbHandle: TypeAlias = object
#: The named databases of one environment, by name.
Dbs: TypeAlias = dict[str, DbHandle]


class Cursor(Protocol):
    """What drsg uses of an LMDB cursor (keys and values are ``bytes``: transactions are opened
    with ``buffers=False``)."""

    def set_range(self, key: bytes) -> bool: ...
    def set_key(self, key: bytes) -> bool: ...
    def key(self) -> bytes: ...
    def value(self) -> bytes: ...
    def item(self) -> tuple[bytes, bytes]: ...
    def next(self) -> bool: ...
    def delete(self) -> bool: ...
    def __iter__(self) -> Iterator[tuple[bytes, bytes]]: ...
    def iternext(self) -> Iterator[tuple[bytes, bytes]]: ...  # (key, value) pairs from here on
    def last(self) -> bool: ...
    def putmulti(self, items: Iterable[tuple[bytes, bytes]], *, append: bool = False) -> tuple[int, int]: ...


class Txn(Protocol):
    """What drsg uses of an LMDB transaction (py-lmdb ships no types for it)."""

    def get(self, key: bytes, default: None = None, db: DbHandle | None = None) -> bytes | None: ...
    def put(self, key: bytes, value: bytes, *, db: DbHandle | None = None, append: bool = False) -> bool: ...
    def delete(self, key: bytes, value: bytes = b"", db: DbHandle | None = None) -> bool: ...
    def cursor(self, db: DbHandle | None = None) -> Cursor: ...
    def drop(self, db: DbHandle, delete: bool = True) -> None: ...
    def commit(self) -> None: ...
    def abort(self) -> None: ...
    def id(self) -> int: ...


@dataclass
class EnvOptions:
    map_size: int = 64 * MiB
    max_map_size: int = 1 << 40
    readonly: bool = False
    create: bool = True
    #: False: a commit flushes nothing (LMDB's MDB_NOSYNC); pages reach the disk when the OS writes
    #: them back or at :meth:`Environment.flush`. A process crash loses nothing (the page cache
    #: outlives it), a system crash may leave the file corrupt: only for a Kafka node's copy, which
    #: store/kafka/copymark.py rebuilds from the topic after a system crash.
    sync: bool = True


class Environment:
    """One open LMDB file (single-file mode: ``graph.drsg`` plus ``graph.drsg-lock``)."""

    def __init__(self, path: str | os.PathLike[str], options: EnvOptions | None = None) -> None:
        self.path = Path(path)
        self.options = options or EnvOptions()
        self.gate = Gate()
        self.closed = False
        self.env = self._open()
        self.dbs: Dbs = self._open_dbs()

    def _open_dbs(self) -> Dbs:
        """Open every named database. Another process may grow the map between our open and these
        (MDB_MAP_RESIZED): nothing of ours is open yet, so adopting its size and trying again is safe."""
        for _ in range(10):
            try:
                return {n: self._open_db(n) for n in DB_NAMES}
            except lmdb.MapResizedError:
                self.env.set_mapsize(0)
            except lmdb.Error as exc:
                raise _unavailable(self.path, exc) from None
        raise StoreError(f"{self.path}: the map kept being resized by another process while opening; retry")

    def _open_db(self, name: str) -> DbHandle:
        try:
            return self.env.open_db(name.encode(), create=not self.options.readonly)
        except lmdb.NotFoundError:
            raise DatabaseUnavailable(f"{self.path} is not a drsg database (no '{name}' table); check --db") from None

    def _open(self) -> lmdb.Environment:
        opts = self.options
        if not self.path.exists():
            if not opts.create:
                raise DatabaseUnavailable(
                    f"no database at {self.path}; check --db, or create one with "
                    f"`drsg --db {self.path} plane create NAME`"
                )
            if not self.path.parent.exists():
                raise DatabaseUnavailable(
                    f"cannot create {self.path}: folder {self.path.parent} does not exist; create it first"
                )
        if self.path.is_dir():
            raise DatabaseUnavailable(f"{self.path} is a directory; point --db at a database file")
        check_file(self.path)  # before LMDB maps it: a truncated file would be a SIGBUS, not an error
        size = max(opts.map_size, _rounded(self.path.stat().st_size * 2) if self.path.exists() else 0)
        try:
            return self._lmdb_open(min(size, opts.max_map_size), lock=True)
        except lmdb.Error as exc:
            if opts.readonly and _is_read_only_fs(exc):
                # A read-only mount (a backup, a container layer): nobody can write there, so
                # reading without the lock file is safe.
                try:
                    return self._lmdb_open(min(size, opts.max_map_size), lock=False)
                except lmdb.Error as again:
                    raise _unavailable(self.path, again) from None
            raise _unavailable(self.path, exc) from None

    def _lmdb_open(self, map_size: int, lock: bool) -> lmdb.Environment:
        return lmdb.open(
            str(self.path),
            subdir=False,
            map_size=map_size,
            max_dbs=len(DB_NAMES) + 2,
            readonly=self.options.readonly,
            max_readers=256,
            readahead=False,
            lock=lock,
            sync=self.options.sync,
        )

    # ------------------------------------------------------------------ transactions

    def read(self) -> ReadTxn:
        """A read transaction for a ``with`` block, held under the shared gate."""
        return ReadTxn(self)

    def begin_write(self) -> lmdb.Transaction:
        """A write transaction; only the group-commit leader calls this. ``MapResizedError`` reaches
        the leader, which adopts the new size outside its gate and runs the group again."""
        return self._begin(write=True)

    def _begin(self, write: bool) -> lmdb.Transaction:
        if self.closed:  # checked under the gate: close() sets it while it holds the gate alone
            raise self._closed_error()
        try:
            return self.env.begin(write=write, buffers=False)
        except lmdb.MapResizedError:
            raise
        except lmdb.ReadonlyError:
            raise DatabaseUnavailable(f"{self.path} was opened read-only; this command needs write access") from None
        except lmdb.Error as exc:
            raise _unavailable(self.path, exc) from None

    def adopt(self) -> None:
        """Take on the map size another process grew the file to. LMDB allows it only while this
        process has no transaction open, so it waits for every reader here to finish."""
        with self.gate.exclusive(timeout=30.0) as acquired:
            if not acquired:
                raise StoreError(
                    f"{self.path} was grown by another process and this process still holds a read open "
                    f"(or one read inside another); finish long reads and retry"
                )
            self.env.set_mapsize(0)
        log.info("map size adopted from another process", path=str(self.path), mib=self.map_size() // MiB)

    def grow(self) -> None:
        """Double the map. Called by the writer after aborting a txn that hit MapFullError."""
        current = self.env.info()["map_size"]
        if current >= self.options.max_map_size:
            raise StoreFull(
                f"{self.path} reached its size limit of {current // MiB} MiB; raise "
                f"store.max_map_size (DRSG_STORE_MAX_MAP_SIZE) or free space with `drsg export` "
                f"into a new database"
            )
        target = min(current * 2, self.options.max_map_size)
        with self.gate.exclusive(timeout=30.0) as acquired:
            if not acquired:
                raise StoreError(
                    f"{self.path} is full and could not grow while this process holds readers "
                    f"open; close long-running reads and retry"
                )
            self.env.set_mapsize(target)
        log.info("map grown", path=str(self.path), from_mib=current // MiB, to_mib=target // MiB)

    def reserve(self, extra: int) -> None:
        """Grow the map ahead of a large write so it has ``extra`` bytes of headroom."""
        with self._open_env() as env:
            used = (env.info()["last_pgno"] + 1) * env.stat()["psize"]
        while self.map_size() < min(used + extra, self.options.max_map_size):
            self.grow()

    def map_size(self) -> int:
        with self._open_env() as env:
            return int(env.info()["map_size"])

    @contextmanager
    def _open_env(self) -> Iterator[lmdb.Environment]:
        """The environment for a call outside any transaction, kept open (the gate) while it runs."""
        with self.gate.shared():
            if self.closed:
                raise self._closed_error()
            yield self.env

    def _closed_error(self) -> DatabaseUnavailable:
        return DatabaseUnavailable(f"{self.path} has been closed; open it again to use it")

    def flush(self) -> None:
        """Write every committed page to the disk (a file opened with ``sync=False`` does only here)."""
        with self._open_env() as env:
            env.sync(True)

    def file_size(self) -> int:
        try:
            return self.path.stat().st_size
        except OSError:
            return 0

    def close(self) -> None:
        """Close the file once no transaction of this process is running. py-lmdb 1.x does not wait
        for other threads: closing under a running read unmaps the pages it is reading and the
        process crashes. Reads and the writer hold the gate shared, so taking it alone waits them out;
        transactions started afterwards get a DatabaseUnavailable."""
        if self.closed:
            return
        with self.gate.exclusive(timeout=CLOSE_WAIT) as acquired:
            if not acquired:
                reason = "a read is open in this thread" if self.gate.held_here() else "reads are still running"
                raise StoreError(f"{self.path}: cannot close while {reason}; close it after they end")
            self.closed = True
            self.env.close()


class _Holding(Protocol):
    """What a :class:`ReadHold` keeps while its read is open, in its subclass's slots."""

    env: Environment
    hold: SharedHold
    txn: lmdb.Transaction


class ReadHold:
    """One read transaction under the gate's shared hold, for a ``with`` block. A class rather than
    a generator: every read takes one, and a generator-based context manager costs several µs more
    than LMDB's own ``begin()``. A read that met damage (LMDB's errors, undecodable records) raises
    it as one DamagedDatabase. No slots of its own: a class that holds a read declares ``env``,
    ``hold`` and ``txn`` (a head snapshot is its own hold: store/reader.py)."""

    __slots__ = ()

    def __enter__(self: _Holding) -> lmdb.Transaction:
        env = self.env
        self.hold = hold = env.gate.shared()  # kept for __exit__: one lookup a read, not two
        resized = 0  # a counter, not a for loop over a range: every read pays for the loop's iterator
        while True:
            hold.__enter__()
            try:
                if env.closed:  # checked under the gate: close() sets it while it holds the gate alone
                    raise env._closed_error()
                self.txn = txn = env.env.begin(buffers=False)
                return txn
            except lmdb.MapResizedError:
                hold.__exit__(None, None, None)
                resized += 1
                if resized == 3:
                    raise StoreError(f"{env.path}: the map kept being resized by another process; retry") from None
                env.adopt()  # outside the gate: adopting waits for this process's readers to finish
            except BaseException as exc:
                hold.__exit__(None, None, None)
                if isinstance(exc, lmdb.Error):  # as _begin says it: reader slots full, and so on
                    raise _unavailable(env.path, exc) from None
                raise

    def __exit__(self: _Holding, kind: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        try:
            self.txn.abort()
        finally:
            self.hold.__exit__(None, None, None)
        if isinstance(exc, READ_DAMAGE):
            raise damaged(self.env.path, exc) from None


class ReadTxn(ReadHold):
    """``env.read()``: the read transaction itself."""

    __slots__ = ("env", "hold", "txn")
    hold: SharedHold
    txn: lmdb.Transaction

    def __init__(self, env: Environment) -> None:
        self.env = env


def damaged(path: Path, exc: BaseException | str) -> DamagedDatabase:
    """The one message for a file found damaged while reading it."""
    what = exc if isinstance(exc, str) else f"{type(exc).__name__}: {exc}"
    return DamagedDatabase(
        f"{path} is damaged ({what}); run `drsg --db {path} check` to find where, then `drsg rebuild` "
        "if only the projection is hurt, else restore it from a backup"
    )


def write_failed(path: Path, exc: lmdb.Error) -> StoreError:
    """The one message for a commit LMDB could not write. A full disk does not always say ENOSPC:
    on some file systems the failed page write comes back as EIO, so the free space decides."""
    full = _unavailable(path, exc)
    if isinstance(full, StoreFull):
        return full
    try:
        usage = os.statvfs(path.parent)
        free = usage.f_bavail * usage.f_frsize
    except OSError:
        free = None
    if free is not None and free < _NEARLY_FULL:
        return StoreFull(f"cannot write {path}: the disk is full ({free // 1024} KiB free); free space and retry")
    return StoreError(f"{path}: write failed ({exc}); nothing was written")


_NEARLY_FULL = 64 * MiB


def _is_read_only_fs(exc: lmdb.Error) -> bool:
    return "Read-only file system" in str(exc) or getattr(exc, "errno", None) == errno.EROFS


def _rounded(n: int) -> int:
    return ((n + MiB - 1) // MiB) * MiB


def _lock_emptied(path: Path) -> bool:
    """Whether the lock file is empty, as `drsg compact` leaves it for a process that waited for it
    (store/compact.py): LMDB then fails to map it, with EINVAL."""
    try:
        return Path(f"{path}-lock").stat().st_size == 0
    except OSError:
        return False


def _unavailable(path: Path, exc: lmdb.Error) -> StoreError:
    text = str(exc)
    code = getattr(exc, "errno", None)
    if isinstance(exc, lmdb.ReadonlyError) or "Permission denied" in text or code == errno.EACCES:
        return DatabaseUnavailable(
            f"cannot open {path}: permission denied; check the file's and folder's permissions or point --db elsewhere"
        )
    if "Read-only file system" in text or code == errno.EROFS:
        return DatabaseUnavailable(f"cannot write {path}: it is on a read-only file system; copy it somewhere writable")
    if "No space left" in text or code == errno.ENOSPC:
        return StoreFull(f"cannot write {path}: the disk is full; free space and retry")
    if isinstance(exc, lmdb.InvalidParameterError) and _lock_emptied(path):
        return DatabaseUnavailable(f"cannot open {path}: `drsg compact` rewrote it meanwhile; run the command again")
    if isinstance(exc, lmdb.InvalidError):
        return DatabaseUnavailable(f"{path} is not a drsg database (not an LMDB file); check --db")
    return DatabaseUnavailable(f"cannot open {path}: {text}")
