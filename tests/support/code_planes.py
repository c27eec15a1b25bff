"""What a plane a code tree was folded into should equal: a fresh full digest of the same tree.

``fresh_export`` runs the digest a user would run (`drsg digest DIR --code-only --apply`, the same
functions in-process) into a new database and returns its canonical export; a folded plane has
converged when its canonical export is these same bytes.
"""

from __future__ import annotations

import itertools
from pathlib import Path

from drsg.pipeline.code.walk import store_files
from drsg.pipeline.digest.ledger import apply
from drsg.pipeline.digest.run import DigestOptions, digest
from drsg.pipeline.digest.sources import TreeOptions, read_source
from drsg.pipeline.llm.calls import ModelCalls
from drsg.store.database import Database
from drsg.store.jsonl import export_lines

_fresh = itertools.count()


def canonical(db: Database, plane: str) -> list[str]:
    return list(export_lines(db, plane, canonical=True))


def fresh_export(root: Path, plane: str, scratch: Path, skip: tuple[Path, ...] = ()) -> list[str]:
    """The canonical export of a full `--code-only` digest of ``root`` into a database of its own."""
    path = scratch / f"fresh-{next(_fresh)}.drsg"
    options = TreeOptions(code_only=True, skip=(*skip, *store_files(path)))
    doc = read_source(str(root), options)
    with Database(path) as db:
        proposal = digest(db, doc, plane, DigestOptions(embed=False, link=False), ModelCalls("none", None, None), None)
        apply(db, proposal)
        return canonical(db, plane)
