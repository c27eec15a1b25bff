"""A snapshot with its index sidecars, and a restore that puts them back beside the database.

Each sidecar's version in force is pinned *before* the snapshot's read transaction begins: its
files are linked (versions are never changed once saved, so a link is a copy) under the sidecar's
shared lock, which keeps a save from removing them meanwhile. A sidecar is saved at a seq its
database had already committed, so every pinned one is at or before the snapshot's seq: the
restored database loads it as it is and catches up from the log, as after any restart
(store/backup.py has the format).
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import structlog

from drsg.store.backup import Part, Progress, Sink, SnapshotInfo, restore, scratch, sidecar_part, write_snapshot
from drsg.store.database import Database
from drsg.workers.sidecar import Sidecar, SidecarInvalid

#: The sidecar roots beside a database, one per index kind (the workers' ``suffix``; held equal by
#: tests/integration/test_snapshot.py, so a snapshot loads neither numpy nor tantivy).
SUFFIXES = (".hnsw", ".bm25")
log = structlog.get_logger("drsg.workers")


@dataclass(frozen=True)
class PinnedSidecar:
    name: str  # "<suffix>/<sidecar folder>"
    seq: int  # the checkpoint it was saved at
    parts: list[Part]


@dataclass(frozen=True)
class Taken:
    """A snapshot written: what store/backup.py says of it, and the sidecars it carries."""

    info: SnapshotInfo
    sidecars: list[PinnedSidecar]


def pin_sidecars(db_path: Path, staging: Path) -> list[PinnedSidecar]:
    """Link each sidecar's version in force under ``staging``; one that cannot be read is left out
    (the restored database rebuilds that index, as this one would)."""
    pinned: list[PinnedSidecar] = []
    for suffix in SUFFIXES:
        root = Path(f"{db_path}{suffix}")
        for folder in sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []:
            sidecar = Sidecar(root, folder.name, "")
            try:
                with sidecar._locked(exclusive=False):
                    version, manifest = sidecar._in_force()
                    seq = int(manifest["seq"])
                    into = staging / suffix / folder.name
                    (into / version.name).mkdir(parents=True)
                    files = [version / p.name for p in sorted(version.iterdir())]
                    for file in files:
                        _link(file, into / version.name / file.name)
                    (into / "CURRENT").write_text(version.name)
            except (SidecarInvalid, KeyError, TypeError, ValueError) as exc:
                log.warning("sidecar left out of the snapshot", sidecar=folder.name, reason=str(exc))
                continue
            parts = [Part(sidecar_part(suffix, Path(folder.name, "CURRENT")), into / "CURRENT")]
            parts += [
                Part(sidecar_part(suffix, Path(folder.name, version.name, f.name)), into / version.name / f.name)
                for f in files
            ]
            pinned.append(PinnedSidecar(f"{suffix}/{folder.name}", seq, parts))
    return pinned


def _link(source: Path, target: Path) -> None:
    try:
        os.link(source, target)
    except OSError:  # another file system, or links refused: a copy
        shutil.copyfile(source, target)


def take_snapshot(db: Database, out: Sink, progress: Progress | None = None) -> Taken:
    """Write ``db`` as one snapshot file, with its sidecars, to ``out``."""
    path = Path(db.path)
    staging = scratch(path.parent, f".{path.name}.pins-")
    try:
        pinned = pin_sidecars(path, staging)
        info = write_snapshot(db.env, out, [p for s in pinned for p in s.parts], progress)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return Taken(info, pinned)


def restore_snapshot(source: BinaryIO, what: str, target: Path, progress: Progress | None = None) -> SnapshotInfo:
    """Restore a snapshot as the database ``target``, its sidecars beside it; only where nothing is."""
    return restore(source, what, target, SUFFIXES, progress)
