"""The ``synced:`` line every answer from a plane read out of a source tree carries (CLI and RPC)."""

from __future__ import annotations

from drsg.pipeline.code.drift import synced_line
from drsg.store.database import Database


def synced_of(db: Database, plane: str) -> str | None:
    """The plane's ``synced:`` line, or None (no such plane, or one that never measured)."""
    with db.snapshot() as snap:
        found = snap.find_plane(plane)
    return synced_line(found.props) if found is not None else None
