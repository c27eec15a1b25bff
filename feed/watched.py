"""The trees `drsg serve watch` daemons follow, recorded beside the database (``DB.digest/watching/``).

`drsg serve` lets grep and snippet read a plane's tree inside one of them, as inside ``[server]
code_roots``: the operator chose it on this machine's command line, which no client's write can
(a plane's ``synced_root`` is data any writer may set). A daemon records its tree as it starts and
removes the record as it stops; one killed (``-9``) leaves its record until a daemon on the same
tree stops.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterator
from pathlib import Path

from drsg.kernel.files import write_atomic
from drsg.pipeline.code.walk import digest_folder

FOLDER = "watching"


def _record(db: str | Path, root: Path) -> Path:
    name = hashlib.sha256(str(root).encode()).hexdigest()[:24]  # one record per tree, whoever watches it
    return digest_folder(db) / FOLDER / name


@contextlib.contextmanager
def watching(db: str | Path, root: Path) -> Iterator[None]:
    """Record ``root`` (resolved) as followed while the block runs."""
    record = _record(db, root.resolve())
    record.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(record, str(root.resolve()).encode(), durable=False)
    try:
        yield
    finally:
        record.unlink(missing_ok=True)


def watched_roots(db: str | Path) -> tuple[Path, ...]:
    """The trees recorded as followed (none when no daemon ever ran here)."""
    folder = digest_folder(db) / FOLDER
    roots: list[Path] = []
    with contextlib.suppress(FileNotFoundError):
        for record in sorted(folder.iterdir()):
            with contextlib.suppress(OSError, UnicodeDecodeError):
                text = record.read_text(encoding="utf-8").strip()
                if text and record.name == _record(db, Path(text)).name:  # a record this module wrote
                    roots.append(Path(text))
    return tuple(roots)
