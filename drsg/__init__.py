"""drsg — an AI-native graph store built as a streaming pipeline around one append-only log.

    >>> import drsg
    >>> db = drsg.open("graph.drsg")
    >>> db.write(lambda tx: tx.create_node(tx.plane("startup"), "ada", ["Person"], {"born": 1815}))

The kernel (errors, settings, values, asof) sits here; the store, workers, feed and pipeline are
subpackages. ``open`` is imported lazily so the kernel never depends on what stands above it.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from drsg.store.database import Database

__version__ = "0.1.0"


def open(path: str | os.PathLike[str] = "graph.drsg", **options: Any) -> Database:
    """Open (creating if needed) the database at ``path``."""
    from drsg.store.database import Database

    return Database(path, **options)
