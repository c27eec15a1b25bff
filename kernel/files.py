"""Writing a file whole or not at all: a temporary file in the same directory, then a rename."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def write_atomic(path: Path, data: bytes, mode: int | None = None, *, durable: bool = True) -> None:
    """``data`` at ``path``: a reader (or a crash) sees the old file or the new one, never a torn one.

    ``mode`` is the file's permission bits (the temporary file's own are 0600: right for a cache,
    not for a file a user keeps, such as ``.gitignore``). ``durable`` also syncs the bytes to disk
    before the rename (a registry, a compiled plugin); a cache entry, worth only its recomputation,
    skips it, since a lost entry is a miss."""
    import tempfile  # here: with shutil, bz2 and lzma ≈6 ms of a start that writes no file (a read)

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            if mode is not None:
                os.fchmod(out.fileno(), mode)
            if durable:
                out.flush()
                os.fsync(out.fileno())
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


def fsync_path(path: Path) -> None:
    """Sync ``path`` to disk: a file's bytes, or a folder's entries (what a rename into it made)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def user_file_mode(path: Path) -> int:
    """The permission bits a rewritten ``path`` keeps: its own, or for a new file what the umask allows."""
    with contextlib.suppress(FileNotFoundError):
        return path.stat().st_mode & 0o7777
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask
