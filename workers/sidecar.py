"""Sidecar directories: an index's files and its checkpoint, saved together atomically.

Layout: ``<root>/<name>/CURRENT`` names a version folder ``v<seq>-<nonce>/`` holding the index's
files and ``manifest.json`` (format, database uuid, seq, declaration, SHA-256 of every file). A save
writes a new version folder, fsyncs it, then replaces ``CURRENT`` with an atomic rename, then removes
older versions: a crash at any point leaves either the old or the new version in force, never a mix.
Loading verifies every checksum *before* the files reach a library — a crafted or torn hnswlib file
can crash the process, so nothing unverified is ever loaded.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import secrets
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog

FORMAT = 1
log = structlog.get_logger("drsg.workers")


@dataclass(frozen=True)
class Loaded:
    folder: Path
    seq: int
    meta: dict[str, Any]


class SidecarInvalid(Exception):
    """The sidecar cannot be trusted; the caller rebuilds the index from the log."""


def safe_name(*parts: object) -> str:
    """A folder name for an index that is unique and safe on any file system."""
    raw = "\x1f".join(str(p) for p in parts)
    readable = re.sub(r"[^A-Za-z0-9_.-]+", "_", "-".join(str(p) for p in parts))[:80]
    return f"{readable}-{hashlib.sha256(raw.encode()).hexdigest()[:12]}"


class Sidecar:
    def __init__(self, root: Path, name: str, db_uuid: str) -> None:
        self.dir = root / name
        self.db_uuid = db_uuid

    @contextmanager
    def _locked(self, exclusive: bool) -> Iterator[None]:
        """Serialise saves (and keep loads off half-cleaned folders) across processes: the CLI and
        `drsg serve` may save the same index at once."""
        self.dir.parent.mkdir(parents=True, exist_ok=True)
        with open(f"{self.dir}.lock", "a+b") as fh:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
            try:
                yield
            finally:
                fcntl.flock(fh.fileno(), fcntl.LOCK_UN)

    def save(self, seq: int, meta: dict[str, Any], write_files: Callable[[Path], None]) -> None:
        with self._locked(exclusive=True):
            self._save(seq, meta, write_files)

    def _save(self, seq: int, meta: dict[str, Any], write_files: Callable[[Path], None]) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        version = self.dir / f"v{seq:020d}-{secrets.token_hex(4)}"
        version.mkdir()
        try:
            write_files(version)
            if any(not p.is_file() for p in version.iterdir()):
                raise ValueError(f"{version}: an index must write plain files only, no folders")
            files = {p.name: _sha256(p) for p in sorted(version.iterdir())}
            manifest = {"format": FORMAT, "db": self.db_uuid, "seq": seq, "meta": meta, "files": files}
            (version / "manifest.json").write_text(json.dumps(manifest, sort_keys=True))
            for p in version.iterdir():
                _fsync_file(p)
            _fsync_dir(version)
            current_tmp = self.dir / f"CURRENT.{secrets.token_hex(4)}"
            current_tmp.write_text(version.name)
            _fsync_file(current_tmp)
            os.replace(current_tmp, self.dir / "CURRENT")
            _fsync_dir(self.dir)
        except BaseException:
            shutil.rmtree(version, ignore_errors=True)
            raise
        for old in self.dir.iterdir():
            if old != version and old.name != "CURRENT":
                if old.is_dir():
                    shutil.rmtree(old, ignore_errors=True)
                else:
                    old.unlink(missing_ok=True)

    def load(self, expected_meta: dict[str, Any], read_files: Callable[[Loaded], None]) -> Loaded:
        """Verify the version in force, then hand it to ``read_files`` while no save can remove it;
        raises :class:`SidecarInvalid` with the reason."""
        if not self.dir.exists():
            raise SidecarInvalid("no sidecar yet")
        with self._locked(exclusive=False):
            loaded = self._load(expected_meta)
            read_files(loaded)
            return loaded

    def _load(self, expected_meta: dict[str, Any]) -> Loaded:
        try:
            name = (self.dir / "CURRENT").read_text().strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise SidecarInvalid(f"no readable CURRENT ({exc.__class__.__name__})") from None
        version = self.dir / name
        if "/" in name or not name.startswith("v") or not version.is_dir():
            raise SidecarInvalid(f"CURRENT names a missing version {name!r}")
        try:
            manifest = json.loads((version / "manifest.json").read_text())
        except (OSError, ValueError) as exc:
            raise SidecarInvalid(f"unreadable manifest ({exc.__class__.__name__})") from None
        if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
            raise SidecarInvalid("unknown sidecar format")
        if manifest.get("db") != self.db_uuid:
            raise SidecarInvalid("it belongs to another database")
        if manifest.get("meta") != expected_meta:
            raise SidecarInvalid("it was built for a different index declaration")
        files = manifest.get("files")
        if not isinstance(files, dict) or not isinstance(manifest.get("seq"), int):
            raise SidecarInvalid("malformed manifest")
        present = {p.name for p in version.iterdir() if p.name != "manifest.json"}
        if present != set(files):
            raise SidecarInvalid("files missing or unexpected")
        for file_name, digest in files.items():
            if _sha256(version / file_name) != digest:
                raise SidecarInvalid(f"checksum mismatch in {file_name}")
        return Loaded(version, int(manifest["seq"]), manifest["meta"])

    def remove(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(path: Path) -> None:
    _fsync_file(path)
