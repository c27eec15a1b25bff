"""``import_jsonl`` on a Kafka node: the file's lines as intents, the import decided where its
closing record lands (store/import_intents.py holds the lines in each copy until then).

Every node decides the import by running the embedded import's own logic (store/jsonl.py
``import_lines``) on its copy's state at the closing record's seq, as that one commit: ids follow
log order and ``--on-conflict`` is judged against the state there. All or nothing: a refused import
(a key collision, a bad line) writes nothing on any node, and its caller gets the embedded import's
error word for word.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from tempfile import SpooledTemporaryFile
from typing import IO, Any, TypeVar

from drsg.kernel.errors import BadValue
from drsg.kernel.values import Json, check_value, to_json
from drsg.store.database import Database
from drsg.store.import_intents import CHUNK, CHUNK_BYTES, CLOSE, held_lines, release
from drsg.store.intents import Intent
from drsg.store.jsonl import ImportReport, check_import, check_records, import_lines
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
    with source.open("rb") as fh:
        sent = _Produced(plane, on_conflict, create_plane, str(source), "line")
        return sent.run(db, source.name, fh, commit_lines, None if progress is None else _bytes_read(fh, progress))


def _bytes_read(fh: IO[bytes], progress: Callable[[int], None]) -> Callable[[int], None]:
    """A file's progress: the bytes read of it, whatever was sent."""
    return lambda _sent: progress(fh.tell())


def produce_records(
    db: Database,
    records: Iterable[Any],
    plane: str,
    on_conflict: str,
    create_plane: bool,
    commit_lines: int,
    progress: Callable[[int], None] | None,
) -> ImportReport:
    """:func:`produce_import` of records in memory: each a line as the embedded import reads it
    (its values in the JSON dialect), refused by its number if it holds what JSON cannot."""
    check_records(records, on_conflict)
    sent = _Produced(plane, on_conflict, create_plane, "records", "record")
    return sent.run(db, "records", _record_lines(records), commit_lines, progress)


def _record_lines(records: Iterable[Any]) -> Iterator[bytes]:
    """Each record as a line, once its values are the data model's: JSON's encoder would write a
    tuple as a list and a map key 1 as "1" without a word, where the embedded import refuses them."""
    for n, record in enumerate(records, 1):
        try:
            check_value(record, f"record {n}")
        except BadValue as exc:
            raise BadValue(f"{exc}; nothing was imported") from None
        line = json.dumps(record, ensure_ascii=False, default=to_json)  # (bytes, vectors: the JSON dialect)
        yield line.encode("utf-8", "surrogatepass") + b"\n"


@dataclass(frozen=True)
class _Produced:
    """An import sent as intents: what its closing record asks (``source`` and ``what`` name it and
    its lines in errors)."""

    plane: str
    on_conflict: str
    create_plane: bool
    source: str
    what: str

    def run(
        self,
        db: Database,
        name: str,
        lines: Iterable[bytes],
        commit_lines: int,
        progress: Callable[[int], None] | None,
    ) -> ImportReport:
        if not self.create_plane:
            db.plane(self.plane)
        import_id = uuid.uuid4().hex
        origin: dict[str, Json] = {"via": "import", "source": name}
        count = sent = 0
        for chunk, n in _chunks(iter(lines), max(1, commit_lines)):
            db.submit(Intent(CHUNK, {"import": import_id, "n": count, "lines": chunk.decode("latin-1")}), origin)
            count, sent = count + 1, sent + n
            if progress is not None:
                progress(sent)
        args: dict[str, Json] = {
            "import": import_id,
            "chunks": count,
            "plane": self.plane,
            "on_conflict": self.on_conflict,
            "create_plane": self.create_plane,
            "source": self.source,
            "what": self.what,
        }
        done = db.submit(Intent(CLOSE, args), origin)
        answer = done.value if isinstance(done.value, dict) else {}
        report = ImportReport(**{name: got for name in _COUNTS if isinstance(got := answer.get(name), int)})
        if done.seqs:
            report.first_seq = report.last_seq = done.seqs[0]
        return report


def _chunks(lines: Iterator[bytes], most: int) -> Iterator[tuple[bytes, int]]:
    """Whole lines, ``most`` (or :data:`CHUNK_BYTES`, whichever comes first) at a time, and how many."""
    while True:
        chunk: list[bytes] = []
        size = 0
        while len(chunk) < most and size < CHUNK_BYTES:
            line = next(lines, b"")
            if not line:
                break
            chunk.append(line)
            size += len(line)
        if not chunk:
            return
        yield b"".join(chunk), len(chunk)


def close_op(tx: WriteTx, args: dict[str, Json]) -> Json:
    """Import every line held for ``args["import"]`` as this one commit; answers the counts."""
    plane, on_conflict, create_plane = args.get("plane"), args.get("on_conflict"), args.get("create_plane")
    if not (isinstance(plane, str) and isinstance(on_conflict, str) and isinstance(create_plane, bool)):
        raise BadValue(f"an {CLOSE} names its plane, on_conflict and create_plane")
    stage = _OneCommit(tx)
    with SpooledTemporaryFile(max_size=CHUNK_BYTES) as fh:  # the file as its writer read it
        held_lines(tx, args, fh)
        fh.seek(0)
        what = "record" if args.get("what") == "record" else "line"  # (closing records before it: a file's)
        report = import_lines(stage, fh, plane, on_conflict, create_plane, Path(str(args["source"])), what)
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
