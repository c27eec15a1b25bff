"""Sidecar directories: an index's files and its checkpoint, saved together atomically.

Layout: ``<root>/<name>/CURRENT`` names a version folder ``v<seq>-<nonce>/`` holding the index's
files and ``manifest.json`` (format, database uuid, seq, declaration — what the index is, not when it
was restated —, SHA-256 of every file). A save writes a new version folder, fsyncs it, then replaces
``CURRENT`` with an atomic rename, then removes older versions: a crash at any point leaves either
the old or the new version in force, never a mix.
Loading verifies every checksum *before* the files reach a library — a crafted or torn hnswlib file
can crash the process, so nothing unverified is ever loaded.

Each manifest also carries the index's *lineage*: one ``[base, seq, owner]`` entry per save that
led to it (newest ``LINEAGE`` kept), ``base`` being the checkpoint of the version it was made on.
Index workers that share a sidecar folder across processes or machines (``drsg workers``, the
consumer group of workers/index_group.py) save *fenced*: a save is refused (:class:`SidecarFenced`)
unless the version in force is still the one this worker loaded or saved last, so a worker that
lost its shard to another while it was paused can never put an older state back over a newer one,
and the lineage of the version in force is one unbroken chain of the commits each save applied.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog

from drsg.kernel.files import fsync_path

FORMAT = 1
LINEAGE = 1000  # saves a manifest remembers
log = structlog.get_logger("drsg.workers")


@dataclass(frozen=True)
class Loaded:
    folder: Path
    seq: int
    meta: dict[str, Any]


@dataclass(frozen=True)
class InForce:
    """What one sidecar's manifest says of the version in force (shown, never loaded from)."""

    name: str
    seq: int  # the commit its index reached
    meta: dict[str, Any]  # the declaration it was built for: kind, plane, label, property, …
    saved_by: str | None  # host:pid of the save that made it
    saved_at: float  # when (the version folder's time)


def survey(root: Path) -> tuple[list[InForce], list[tuple[str, str]]]:
    """Every sidecar under ``root`` by name: what its version in force says, and (name, why) for
    those with none readable."""
    found: list[InForce] = []
    unreadable: list[tuple[str, str]] = []
    for folder in sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []:
        try:
            found.append(Sidecar(root, folder.name, "").status())
        except SidecarInvalid as exc:
            unreadable.append((folder.name, str(exc)))
    return found, unreadable


class SidecarInvalid(Exception):
    """The sidecar cannot be trusted; the caller rebuilds the index from the log."""


class SidecarFenced(Exception):
    """A fenced save found another version in force than the one this worker built on: another
    worker owns the index now (or saved it meanwhile); this worker's state must be dropped."""


def safe_name(*parts: object) -> str:
    """A folder name for an index that is unique and safe on any file system."""
    raw = "\x1f".join(str(p) for p in parts)
    readable = re.sub(r"[^A-Za-z0-9_.-]+", "_", "-".join(str(p) for p in parts))[:80]
    return f"{readable}-{hashlib.sha256(raw.encode()).hexdigest()[:12]}"


class Sidecar:
    def __init__(self, root: Path, name: str, db_uuid: str) -> None:
        self.dir = root / name
        self.db_uuid = db_uuid
        #: the version in force when this worker last loaded or saved ("": none), its checkpoint,
        #: and its lineage: what the next save is made on (None: not looked at yet)
        self.in_force: str | None = None
        self.in_force_seq = 0
        self.lineage: list[list[Any]] = []

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

    def save(
        self, seq: int, meta: dict[str, Any], write_files: Callable[[Path], None], *, fenced: bool = False
    ) -> None:
        """Save a new version; ``fenced``: only if the version in force is still the one this worker
        loaded or saved last (else :class:`SidecarFenced`, and nothing is written)."""
        with self._locked(exclusive=True):
            if fenced:
                current = self._current_name()
                if current != (self.in_force or ""):
                    raise SidecarFenced(
                        f"{self.dir.name}: version {current or 'none'} is in force, not {self.in_force or 'none'} "
                        f"that this worker built on: another worker saved it meanwhile"
                    )
            self._save(seq, meta, write_files)

    def _current_name(self) -> str:
        try:
            return (self.dir / "CURRENT").read_text().strip()
        except (OSError, UnicodeDecodeError):
            return ""

    def _save(self, seq: int, meta: dict[str, Any], write_files: Callable[[Path], None]) -> None:
        import secrets  # here, with shutil and socket: a read that saves nothing (a Cypher MATCH) loads none
        import shutil
        import socket

        self.dir.mkdir(parents=True, exist_ok=True)
        lineage = [*self.lineage, [self.in_force_seq, seq, f"{socket.gethostname()}:{os.getpid()}"]][-LINEAGE:]
        version = self.dir / f"v{seq:020d}-{secrets.token_hex(4)}"
        version.mkdir()
        try:
            write_files(version)
            if any(not p.is_file() for p in version.iterdir()):
                raise ValueError(f"{version}: an index must write plain files only, no folders")
            files = {p.name: _sha256(p) for p in sorted(version.iterdir())}
            manifest = {
                "format": FORMAT, "db": self.db_uuid, "seq": seq, "meta": meta, "files": files, "lineage": lineage,
            }  # fmt: skip
            (version / "manifest.json").write_text(json.dumps(manifest, sort_keys=True))
            for p in version.iterdir():
                fsync_path(p)
            fsync_path(version)
            current_tmp = self.dir / f"CURRENT.{secrets.token_hex(4)}"
            current_tmp.write_text(version.name)
            fsync_path(current_tmp)
            os.replace(current_tmp, self.dir / "CURRENT")
            fsync_path(self.dir)
        except BaseException:
            shutil.rmtree(version, ignore_errors=True)
            raise
        self.in_force, self.in_force_seq, self.lineage = version.name, seq, lineage
        for old in self.dir.iterdir():
            if old != version and old.name != "CURRENT":
                if old.is_dir():
                    shutil.rmtree(old, ignore_errors=True)
                else:
                    old.unlink(missing_ok=True)

    def load(self, built_for: Callable[[dict[str, Any]], bool], read_files: Callable[[Loaded], None]) -> Loaded:
        """Verify the version in force (``built_for``: whether the declaration it was saved for, its
        manifest's meta, is this index's), then hand it to ``read_files`` while no save can remove
        it; raises :class:`SidecarInvalid` with the reason."""
        if not self.dir.exists():
            self.in_force, self.in_force_seq, self.lineage = "", 0, []
            raise SidecarInvalid("no sidecar yet")
        with self._locked(exclusive=False):
            loaded = self._load(built_for)
            read_files(loaded)
            return loaded

    def status(self) -> InForce:
        """The version in force as it says it is (its files are not checked: that reads them all),
        for ``drsg workers --status``; SidecarInvalid when none is readable."""
        with self._locked(exclusive=False):  # a save removes the old version: read it while none can
            version, manifest = self._in_force()
            saved_at = version.stat().st_mtime
        lineage = manifest.get("lineage")
        last = lineage[-1] if isinstance(lineage, list) and lineage and isinstance(lineage[-1], list) else []
        meta, seq = manifest.get("meta"), manifest.get("seq")
        if not isinstance(meta, dict) or not isinstance(seq, int):
            raise SidecarInvalid("malformed manifest")
        return InForce(self.dir.name, seq, meta, str(last[-1]) if last else None, saved_at)

    def _in_force(self) -> tuple[Path, dict[str, Any]]:
        """The version folder ``CURRENT`` names and its manifest, of this format."""
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
        return version, manifest

    def _load(self, built_for: Callable[[dict[str, Any]], bool]) -> Loaded:
        # whatever is found, a rebuild replaces what is in force now (a fenced save checks that)
        self.in_force, self.in_force_seq, self.lineage = self._current_name(), 0, []
        version, manifest = self._in_force()
        if manifest.get("db") != self.db_uuid:
            raise SidecarInvalid("it belongs to another database")
        meta = manifest.get("meta")
        if not isinstance(meta, dict) or not built_for(meta):
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
        lineage = manifest.get("lineage")
        self.in_force_seq = int(manifest["seq"])
        self.lineage = lineage if isinstance(lineage, list) else []
        return Loaded(version, int(manifest["seq"]), meta)

    def remove(self) -> None:
        import shutil

        shutil.rmtree(self.dir, ignore_errors=True)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
