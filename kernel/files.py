"""Writing a file whole or not at all: a temporary file in the same directory, then a rename."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def write_atomic(path: Path, data: bytes, *, durable: bool = True) -> None:
    """``data`` at ``path``: a reader (or a crash) sees the old file or the new one, never a torn one.

    ``durable`` also syncs the bytes to disk before the rename (a registry, a compiled plugin); a
    cache entry that is only worth its recomputation skips it, since a lost entry is a miss."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            if durable:
                out.flush()
                os.fsync(out.fileno())
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
