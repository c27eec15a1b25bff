"""A database as one snapshot file, and a snapshot file back as a database.

The format (``drsg snapshot``, ``GET /snapshot``; format 1), big-endian::

    header   "DRSGSNAP" u32 format  u64 seq  u32 n  n bytes of JSON {"seq", "uuid", "store_format", "created_ms"}
    part     "P" u16 n  n bytes of name, then chunks (u32 size > 0, that many bytes) ending with u32 0
    …
    trailer  "E" and the SHA-256 of every byte before it (32 bytes), then the end of the file

Parts: ``db`` (the LMDB file as of ``seq``: LMDB's compacting copy of one read transaction, so
writers go on meanwhile) and ``sidecar/<suffix>/<path>`` (an index sidecar's files, saved at a
checkpoint at or before ``seq``: they load as they are and catch up from the log). Chunks let the
file be written as LMDB copies it, with no size known ahead and no copy on disk first.

A restore writes every part into a hidden folder beside the target, checks the trailer, the end of
the file and that the copy's head and identity are the header's, and only then links the database
into place (failing if anything appeared there meanwhile) and moves the sidecars beside it: a
``kill -9`` at any moment leaves no database or the whole one.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import re
import shutil
import struct
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Protocol

import lmdb

from drsg.kernel.errors import DamagedDatabase, StoreError, UsageError
from drsg.kernel.files import fsync_path
from drsg.store import keys
from drsg.store.database import FORMAT_VERSION, META_UUID
from drsg.store.environment import Environment, EnvOptions
from drsg.store.filecheck import check_file
from drsg.store.meta import META_FORMAT, META_STAGED, read_head
from drsg.store.staging import undo_staged

MAGIC = b"DRSGSNAP"
FORMAT = 1
DB_PART = "db"
SIDECAR_PREFIX = "sidecar/"
CHUNK = 1 << 20
_HEADER = struct.Struct(">8sIQI")
_NAME = struct.Struct(">H")
_SIZE = struct.Struct(">I")
_COMPONENT = re.compile(r"[A-Za-z0-9_.-]{1,200}")
_MAX_HEADER = 1 << 16


class Sink(Protocol):
    """Where a snapshot is written: a file, standard output, an HTTP answer's stream."""

    def write(self, data: bytes, /) -> object: ...


#: Called with the bytes written (or read) so far: a terminal's progress line.
Progress = Callable[[int], None]


@dataclass(frozen=True)
class Part:
    """A file to carry in a snapshot under ``name``."""

    name: str
    path: Path


@dataclass(frozen=True)
class SnapshotInfo:
    """What a snapshot holds: its commit, its database's identity, its parts and its size."""

    seq: int
    uuid: str
    parts: list[str] = field(default_factory=list)
    size: int = 0  # bytes of the snapshot file
    db_size: int = 0  # bytes of the database in it


def sidecar_part(suffix: str, relative: Path) -> str:
    """The part name of a sidecar file at ``relative`` under the sidecar root ``<db><suffix>``."""
    return f"{SIDECAR_PREFIX}{suffix}/{relative.as_posix()}"


class _Out:
    """The output, hashed and counted as it is written."""

    def __init__(self, out: Sink, progress: Progress | None) -> None:
        self.out, self.progress = out, progress
        self.digest = hashlib.sha256()
        self.size = 0

    def write(self, data: bytes) -> None:
        self.out.write(data)
        self.digest.update(data)
        self.size += len(data)
        if self.progress is not None:
            self.progress(self.size)

    def chunk(self, data: bytes) -> None:
        self.write(_SIZE.pack(len(data)) + data)

    def part(self, name: str) -> None:
        raw = name.encode()
        self.write(b"P" + _NAME.pack(len(raw)) + raw)


def write_snapshot(
    env: Environment, out: Sink, parts: Sequence[Part] = (), progress: Progress | None = None
) -> SnapshotInfo:
    """Write the database as of its head now, with ``parts`` (taken before this call: a sidecar
    saved before the read began is at or before its seq), to ``out``."""
    sink = _Out(out, progress)
    with env.read() as txn:
        seq = read_head(txn, env.dbs["meta"])
        raw_uuid = txn.get(META_UUID, db=env.dbs["meta"])
        uuid = "" if raw_uuid is None else bytes(raw_uuid).decode()
        header = json.dumps(
            {"seq": seq, "uuid": uuid, "store_format": FORMAT_VERSION, "created_ms": int(time.time() * 1000)}
        ).encode()
        sink.write(_HEADER.pack(MAGIC, FORMAT, seq, len(header)) + header)
        names = []
        for part in parts:
            sink.part(part.name)
            with part.path.open("rb") as fh:
                for block in iter(lambda: fh.read(CHUNK), b""):
                    sink.chunk(block)
            sink.chunk(b"")
            names.append(part.name)
        sink.part(DB_PART)
        db_size = _copy_database(env, txn, sink)
        names.append(DB_PART)
    sink.write(b"E")
    sink.write(sink.digest.digest())  # of every byte before it, "E" included
    return SnapshotInfo(seq, uuid, names, sink.size, db_size)


def _copy_database(env: Environment, txn: lmdb.Transaction, sink: _Out) -> int:
    """LMDB's compacting copy of ``txn`` into the snapshot, through a pipe: the copy runs in a
    thread (py-lmdb lets go of the GIL) while this one frames what it writes."""
    read_end, write_end = os.pipe()
    failed: list[BaseException] = []

    def copy() -> None:
        try:
            env.env.copyfd(write_end, compact=True, txn=txn)
        except BaseException as exc:  # reported by the caller, after the join
            failed.append(exc)
        finally:
            os.close(write_end)

    thread = threading.Thread(target=copy, name="drsg-snapshot-copy", daemon=True)
    thread.start()
    size = 0
    try:
        while block := _read_full(read_end, CHUNK):
            sink.chunk(block)
            size += len(block)
        sink.chunk(b"")
    finally:
        os.close(read_end)  # a failed write: the copy meets a closed pipe and ends
        thread.join()  # always before the read transaction ends: the copy reads its pages
    if failed:
        raise StoreError(f"{env.path}: the copy failed ({failed[0]}); nothing was written")
    return size


def _read_full(fd: int, size: int) -> bytes:
    """Up to ``size`` bytes from a pipe, fewer only at its end (whole chunks: fewer, larger frames)."""
    parts, got = [], 0
    while got < size:
        block = os.read(fd, size - got)
        if not block:
            break
        parts.append(block)
        got += len(block)
    return b"".join(parts)


# --------------------------------------------------------------------------- reading it back


class _In:
    """The input, hashed as it is read; a short read is a truncated snapshot."""

    def __init__(self, source: BinaryIO, what: str, progress: Progress | None) -> None:
        self.source, self.what, self.progress = source, what, progress
        self.digest = hashlib.sha256()
        self.size = 0

    def read(self, n: int) -> bytes:
        data = self.source.read(n)
        if len(data) != n:
            raise self.bad("it ends early: truncated")
        self.digest.update(data)
        self.size += n
        if self.progress is not None:
            self.progress(self.size)
        return data

    def bad(self, why: str) -> DamagedDatabase:
        return DamagedDatabase(
            f"{self.what} is not a whole drsg snapshot ({why}); nothing was restored: take the snapshot again"
        )


def read_snapshot(
    source: BinaryIO, what: str, into: Path, suffixes: Iterable[str], progress: Progress | None = None
) -> SnapshotInfo:
    """Unpack a snapshot into the empty folder ``into`` (``db`` and ``sidecar/<suffix>/…``), verified
    to its last byte; raises DamagedDatabase, naming ``what``, when it is not whole."""
    src = _In(source, what, progress)
    magic, fmt, seq, length = _HEADER.unpack(src.read(_HEADER.size))
    if magic != MAGIC:
        raise src.bad("it does not start as one")
    if fmt != FORMAT:
        raise UsageError(f"{what} is snapshot format {fmt}; this drsg reads format {FORMAT}: use the drsg that made it")
    if length > _MAX_HEADER:
        raise src.bad("its header is too long")
    try:
        header = json.loads(src.read(length))
        uuid = str(header["uuid"])
    except (ValueError, KeyError, TypeError):
        raise src.bad("its header is not readable") from None
    allowed = frozenset(suffixes)
    names: list[str] = []
    while (kind := src.read(1)) == b"P":
        name = src.read(_NAME.unpack(src.read(_NAME.size))[0]).decode("utf-8", "replace")
        target = into / _place(name, allowed, src)
        if target.exists() or name in names:
            raise src.bad(f"part {name!r} comes twice")
        target.parent.mkdir(parents=True, exist_ok=True)
        with target.open("wb") as fh:
            while size := _SIZE.unpack(src.read(_SIZE.size))[0]:
                if size > CHUNK:  # never written so: a crafted size would be read into memory whole
                    raise src.bad(f"part {name!r} has a malformed chunk")
                fh.write(src.read(size))
            fh.flush()
            os.fsync(fh.fileno())
        names.append(name)
    if kind != b"E":
        raise src.bad("a part is malformed")
    expected = src.digest.digest()
    if src.read(32) != expected:
        raise src.bad("its checksum does not match: altered or damaged")
    if source.read(1):
        raise src.bad("bytes follow its end")
    if DB_PART not in names:
        raise src.bad("it holds no database")
    db_file = into / DB_PART
    if _check_copy(db_file, seq, uuid, src):
        _drop_staged(db_file)
    return SnapshotInfo(seq, uuid, names, src.size, db_file.stat().st_size)


def _place(name: str, allowed: frozenset[str], src: _In) -> Path:
    """Where a part goes under the unpacking folder: only the names a snapshot writes (an
    allow-list: no absolute path, no ``..``, no suffix that is not a sidecar's)."""
    if name == DB_PART:
        return Path(DB_PART)
    if name.startswith(SIDECAR_PREFIX):
        suffix, _, rest = name[len(SIDECAR_PREFIX) :].partition("/")
        components = rest.split("/")
        if suffix in allowed and 2 <= len(components) <= 3 and all(_safe(c) for c in components):
            return Path("sidecar", suffix, *components)
    raise src.bad(f"it names an unexpected part {name[:80]!r}")


def _safe(component: str) -> bool:
    return _COMPONENT.fullmatch(component) is not None and component not in (".", "..")


def _check_copy(db_file: Path, seq: int, uuid: str, src: _In) -> bool:
    """The unpacked database is an LMDB file whose head and identity are the header's; returns
    whether it holds a staged write's mark (an import was running when the snapshot was taken)."""
    try:
        check_file(db_file)
        env = lmdb.open(str(db_file), subdir=False, readonly=True, lock=False, max_dbs=4)
    except (lmdb.Error, DamagedDatabase) as exc:
        raise src.bad(f"its database does not open: {exc}") from None
    try:
        meta = env.open_db(b"meta", create=False)
        with env.begin(buffers=False) as txn:
            head = read_head(txn, meta)
            raw_uuid = txn.get(META_UUID, db=meta)
            raw_format = txn.get(META_FORMAT, db=meta)
            staged = txn.get(META_STAGED, db=meta) is not None
    except lmdb.Error as exc:
        raise src.bad(f"its database does not read: {exc}") from None
    finally:
        env.close()
    found_uuid = "" if raw_uuid is None else bytes(raw_uuid).decode()
    if head != seq or found_uuid != uuid:
        raise src.bad(f"its database is at seq {head}, not the header's {seq}")
    if raw_format is None or keys.U32.unpack(raw_format)[0] != FORMAT_VERSION:
        raise src.bad(f"its database is not format {FORMAT_VERSION}")
    return staged


def _drop_staged(db_file: Path) -> None:
    """Remove what an import running when the snapshot was taken had staged past the head: not part
    of the database at its seq, and its owner (a process on the machine the snapshot came from) is
    none of the restored database's."""
    env = Environment(db_file, EnvOptions(create=False))
    try:
        undo_staged(env)
    finally:
        env.close()


def restore(
    source: BinaryIO, what: str, target: Path, suffixes: Sequence[str], progress: Progress | None = None
) -> SnapshotInfo:
    """Restore a snapshot as the database ``target``, its sidecars at ``<target><suffix>``; only
    into a path where nothing is yet. All or nothing (see the module's docstring)."""
    empty_target(target, suffixes)
    staging = scratch(target.parent, f".{target.name}.restore-")
    try:
        info = read_snapshot(source, what, staging, suffixes, progress)
        _fsync_tree(staging)
        try:
            os.link(staging / DB_PART, target)  # never over a file another process made meanwhile
        except FileExistsError:
            raise UsageError(f"{target} appeared while restoring; restore into a path where nothing is") from None
        fsync_path(target.parent)
        for suffix in suffixes:  # the database is whole: a sidecar not moved is rebuilt from the log
            unpacked = staging / "sidecar" / suffix
            if unpacked.is_dir() and not Path(f"{target}{suffix}").exists():
                os.rename(unpacked, f"{target}{suffix}")
        fsync_path(target.parent)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return info


def scratch(folder: Path, prefix: str) -> Path:
    """A new hidden folder ``<prefix><pid>-…`` in ``folder``, after removing those a process that no
    longer runs left there (a ``kill -9`` in the middle of a snapshot or a restore)."""
    sweep(folder, prefix)
    return Path(tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-", dir=folder))


def sweep(folder: Path, prefix: str) -> None:
    """Remove what ``<prefix><pid>-…`` names in ``folder`` whose process is gone."""
    for leftover in folder.glob(f"{glob.escape(prefix)}*-*"):
        pid = leftover.name[len(prefix) :].split("-", 1)[0]
        if pid.isdigit() and not _running(int(pid)):
            if leftover.is_dir():
                shutil.rmtree(leftover, ignore_errors=True)
            else:
                leftover.unlink(missing_ok=True)


def _running(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie, killed and not yet reaped, is not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except FileNotFoundError:
        return False
    except OSError:
        return True  # cannot tell: keep its files
    return stat[stat.rindex(b")") + 2 :][:1] not in (b"Z", b"X")


def empty_target(target: Path, suffixes: Sequence[str]) -> None:
    """Refuse a target where something is already: a database, its lock file or a sidecar folder."""
    if not target.parent.is_dir():
        raise UsageError(f"cannot restore to {target}: folder {target.parent} does not exist; create it first")
    for taken in (target, Path(f"{target}-lock"), *(Path(f"{target}{s}") for s in suffixes)):
        if taken.exists():
            raise UsageError(
                f"cannot restore to {target}: {taken} already exists; restore only where nothing is "
                "(a new path, or remove the old database and its folders first)"
            )


def _fsync_tree(root: Path) -> None:
    for folder, _dirs, files in os.walk(root):
        for name in files:
            fsync_path(Path(folder, name))
        fsync_path(Path(folder))


@contextmanager
def whole_file(path: Path, *, replace: bool) -> Iterator[BinaryIO]:
    """A file written under a temporary name beside ``path`` and renamed into place once complete
    and on disk: a ``kill -9`` leaves the temporary file, never a part of a snapshot at ``path``.
    Without ``replace``, a file already at ``path`` is refused (before and after writing)."""
    if path.exists() and not replace:
        raise UsageError(f"{path} already exists; choose another name, or pass --force to replace it")
    if not path.parent.is_dir():
        raise UsageError(f"cannot write {path}: folder {path.parent} does not exist; create it first")
    sweep(path.parent, f".{path.name}.snapshot-")
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.snapshot-{os.getpid()}-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as out:
            yield out
            out.flush()
            os.fsync(out.fileno())
        if replace:
            os.replace(temp, path)
        else:
            try:
                os.link(temp, path)
            except FileExistsError:
                raise UsageError(f"{path} appeared while writing it; choose another name, or pass --force") from None
            os.unlink(temp)
        fsync_path(path.parent)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
