"""``import_jsonl`` on a Kafka node: the file's lines as intents, the import decided where its
closing record lands (store/import_intents.py holds the lines in each copy until then).

Every node decides the import by running the embedded import's own logic (store/jsonl.py
``import_lines``) on its copy's state at the closing record's seq, as that one commit: ids follow
log order and ``--on-conflict`` is judged against the state there. All or nothing: a refused import
(a key collision, a bad line) writes nothing on any node, and its caller gets the embedded import's
error word for word.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from tempfile import SpooledTemporaryFile
from typing import IO, TypeVar

from drsg.kernel.errors import BadValue
from drsg.kernel.values import Json
from drsg.store.database import Database
from drsg.store.import_intents import CHUNK, CHUNK_BYTES, CLOSE, held_lines, release
from drsg.store.intents import Intent
from drsg.store.jsonl import ImportReport, check_import, import_lines
from drsg.store.meta import LogState
from drsg.store.staging import StagedWrite
from drsg.store.transaction import WriteTx

T = TypeVar("T")
_COUNTS = ("lines", *(f"{what}_{done}" for what in ("nodes", "edges") for done in ("created", "updated", "skipped")))


def produce_import(
    db: Database,
    path: str,
    plane: str,
    on_conflict: str,
    create_plane: bool,
    commit_lines: int,
    progress: Callable[[int], None] | None,
) -> ImportReport:
    """Submit ``path``'s lines as chunk intents, then the closing one; the import's report, its
    one commit the closing record's (none when it changed nothing), or the refusal's error."""
    source = check_import(path, on_conflict)  # refused before anything is produced, as the embedded import
    if not create_plane:
        db.plane(plane)
    import_id = uuid.uuid4().hex
    origin: dict[str, Json] = {"via": "import", "source": source.name}
    count = 0
    with source.open("rb") as fh:
        for lines in _chunks(fh, max(1, commit_lines)):
            db.submit(Intent(CHUNK, {"import": import_id, "n": count, "lines": lines.decode("latin-1")}), origin)
            count += 1
            if progress is not None:
                progress(fh.tell())
    args: dict[str, Json] = {
        "import": import_id,
        "chunks": count,
        "plane": plane,
        "on_conflict": on_conflict,
        "create_plane": create_plane,
        "source": str(source),
    }
    done = db.submit(Intent(CLOSE, args), origin)
    answer = done.value if isinstance(done.value, dict) else {}
    report = ImportReport(**{name: got for name in _COUNTS if isinstance(got := answer.get(name), int)})
    if done.seqs:
        report.first_seq = report.last_seq = done.seqs[0]
    return report


def _chunks(fh: IO[bytes], lines: int) -> Iterator[bytes]:
    """The file's whole lines, ``lines`` (or :data:`CHUNK_BYTES`, whichever comes first) at a time."""
    while True:
        chunk: list[bytes] = []
        size = 0
        while len(chunk) < lines and size < CHUNK_BYTES:
            line = fh.readline()
            if not line:
                break
            chunk.append(line)
            size += len(line)
        if not chunk:
            return
        yield b"".join(chunk)


def close_op(tx: WriteTx, args: dict[str, Json]) -> Json:
    """Import every line held for ``args["import"]`` as this one commit; answers the counts."""
    plane, on_conflict, create_plane = args.get("plane"), args.get("on_conflict"), args.get("create_plane")
    if not (isinstance(plane, str) and isinstance(on_conflict, str) and isinstance(create_plane, bool)):
        raise BadValue(f"an {CLOSE} names its plane, on_conflict and create_plane")
    stage = _OneCommit(tx)
    with SpooledTemporaryFile(max_size=CHUNK_BYTES) as fh:  # the file as its writer read it
        held_lines(tx, args, fh)
        fh.seek(0)
        report = import_lines(stage, fh, plane, on_conflict, create_plane, Path(str(args["source"])))
    tx.mutations.extend(stage.tx.mutations)
    release(tx.txn, tx.dbs, Intent(CLOSE, args))  # (a refusal's are dropped by whoever decides it)
    answer = report.to_json()
    return {name: answer[name] for name in _COUNTS}


class _OneCommit(StagedWrite):
    """The stage an import decided at its closing record runs on: every chunk of the embedded
    import's logic goes into the one commit the intent makes. No mark is claimed and nothing is
    staged past the head (StagedWrite's start is not run): the decision's transaction is the write."""

    def __init__(self, tx: WriteTx) -> None:
        self.tx = _Continuing(tx.txn, tx.dbs, tx.seq, tx.ids, _no_seal, tx.tallies)
        self.before = LogState(tx.seq - 1, 0, tx.ids.copy())

    def chunk(self, fn: Callable[[WriteTx], T]) -> T:
        return fn(self.tx)


class _Continuing(WriteTx):
    """A transaction whose commit points are not commits: an intent is one commit."""

    def commit_point(self) -> int:
        return self.seq


def _no_seal(tx: WriteTx) -> int:
    raise AssertionError("an import decided at its closing record seals nothing itself")
