"""Deep verification of one database file (what `drsg check` runs).

1. Every table walks in strictly increasing key order, and every key a walk meets is found again
   by a seek (a damaged branch page sends seeks astray while a walk still sees every leaf).
2. Every log record passes its checksum, seqs have no gap, and the head is the last seq.
3. The projection equals a replay of the log: the log is copied into a scratch database, replayed
   there, and every projection table is compared with the file's record by record, so a lost,
   altered or extra record is found and named (with `drsg rebuild` as the fix).

Damage that crashes the C library cannot be reported from inside it: the caller runs this in a
child process (see ``surfaces/cli``'s check) and ``progress`` names the table being read.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from drsg.kernel.errors import CorruptRecord, StoreError
from drsg.store import keys
from drsg.store.environment import DB_NAMES, Dbs, Environment, EnvOptions, MiB, Txn
from drsg.store.log import LogReader
from drsg.store.meta import StageMark, read_mark, read_state
from drsg.store.projection import Projector, rebuild
from drsg.store.retention import VERSIONED, read_retained
from drsg.store.staging import owner_alive

PROJECTION = ("planes", "plane_names", "nodes", "keys", "labels", "edges", "out", "in", "tally", "indexes")
_SHOWN = 3  # differences named per table


@dataclass
class Report:
    commits: int = 0
    records: dict[str, int] = field(default_factory=dict)  # table -> records walked
    problems: list[str] = field(default_factory=list)  # one line each
    notes: list[str] = field(default_factory=list)  # what is fine but worth saying, one line each

    @property
    def ok(self) -> bool:
        return not self.problems


def verify(env: Environment, progress: Callable[[str], None] = lambda table: None) -> Report:
    report = Report()
    with env.read() as txn:
        for name in DB_NAMES:
            progress(name)
            report.records[name] = _walk(txn, env.dbs[name], name, report.problems)
        progress("log")
        mark = read_mark(txn, env.dbs["meta"])
        retained = read_retained(txn, env.dbs["meta"])
        report.commits = _log(txn, env.dbs, mark, report.problems, retained.oldest)
        if retained.oldest > 1:
            report.notes.append(
                f"history before commit {retained.oldest} was compacted ({retained.setting()}): the projection's "
                "versions were compared with a replay from the state at that commit; the tallies were not"
            )
        if mark is not None and mark.top > mark.base:
            state = "still running" if owner_alive(mark, env.path) else "which ended first"
            who = f"pid {mark.pid}, {state}"
            report.notes.append(
                f"an unfinished import ({who}) staged commits {mark.base + 1}..{mark.top} past the head: no "
                "reader sees them, and the next write removes them unless the import finishes"
            )
        if report.problems:
            return report  # a replay of a damaged log, or a compare of a damaged table, says nothing more
        progress("replay")
        _compare_with_replay(env, txn, report.commits, mark is not None, report.problems, retained.oldest)
    return report


def _walk(txn: Txn, db: object, name: str, problems: list[str]) -> int:
    walk, seek = txn.cursor(db=db), txn.cursor(db=db)
    previous: bytes | None = None
    count = 0
    for key, value in walk:
        if previous is not None and key <= previous:
            problems.append(f"table {name}: keys out of order after record {count} (a damaged page)")
            return count
        if not seek.set_key(key) or seek.value() != value:
            problems.append(f"table {name}: record {count} cannot be found by a seek (a damaged branch page)")
            return count
        previous = key
        count += 1
    return count


def _log(txn: Txn, dbs: Dbs, mark: StageMark | None, problems: list[str], oldest: int = 1) -> int:
    """Check every log record (from ``oldest``, where retention left the log starting); returns the
    head. Past the head, only a staged write's commits."""
    last = 0
    try:
        for commit in LogReader(txn, dbs["log"]).iter(oldest):
            last = commit.seq
    except CorruptRecord as exc:
        problems.append(f"table log: {exc}")
        return last
    head = read_state(txn, dbs["meta"]).head
    end = head if mark is None else mark.top
    if mark is not None and mark.base != head:
        problems.append(f"table meta: a staged write began at head {mark.base}, but the head is {head}")
    elif end != last:
        problems.append(f"table meta: the head says {end} commits but the log holds {last}")
    return head


def _compare_with_replay(
    env: Environment, txn: Txn, head: int, staged: bool, problems: list[str], oldest: int = 1
) -> None:
    """The projection up to ``head`` against a replay of the log up to it. With a staged write,
    versions past the head are its own and left out (the tallies hold none of them). With history
    compacted to ``oldest``, the replay starts from the file's state at ``oldest`` (its versions
    up to it, taken as they are) and the tallies, kept for the head only, are not compared."""
    if oldest > 1:
        _compare_from(env, txn, head, staged, problems, oldest)
        return
    with tempfile.TemporaryDirectory(prefix="drsg-check-") as scratch:
        size = max(64 * MiB, 4 * env.file_size())
        replay = Environment(Path(scratch) / "replay.drsg", EnvOptions(map_size=size, max_map_size=size))
        try:
            with replay.env.begin(write=True, buffers=False) as out:
                for key, record in txn.cursor(db=env.dbs["log"]):
                    if keys.read_u64(key) > head:
                        break
                    out.put(key, record, db=replay.dbs["log"], append=True)
                rebuild(out, replay.dbs)
            with replay.read() as expected:
                for name in PROJECTION:
                    found: Iterator[tuple[bytes, bytes]] = iter(txn.cursor(db=env.dbs[name]))
                    if staged and name != "tally":
                        found = ((k, v) for k, v in found if keys.seq_of(k) <= head)
                    _compare(name, found, expected.cursor(db=replay.dbs[name]), problems)
        finally:
            replay.close()


def _compare_from(env: Environment, txn: Txn, head: int, staged: bool, problems: list[str], oldest: int) -> None:
    with tempfile.TemporaryDirectory(prefix="drsg-check-") as scratch:
        size = max(64 * MiB, 4 * env.file_size())
        replay = Environment(Path(scratch) / "replay.drsg", EnvOptions(map_size=size, max_map_size=size))
        try:
            with replay.env.begin(write=True, buffers=False) as out:
                for name in VERSIONED:
                    for key, value in txn.cursor(db=env.dbs[name]):
                        if keys.seq_of(key) <= oldest:
                            out.put(key, value, db=replay.dbs[name])
                for commit in LogReader(txn, env.dbs["log"]).iter(oldest + 1, head):
                    projector = Projector(out, replay.dbs, commit.seq)
                    for mutation in commit.mutations:
                        projector.apply(mutation)
            with replay.read() as expected:
                for name in VERSIONED:
                    found: Iterator[tuple[bytes, bytes]] = iter(txn.cursor(db=env.dbs[name]))
                    if staged:
                        found = ((k, v) for k, v in found if keys.seq_of(k) <= head)
                    _compare(name, found, expected.cursor(db=replay.dbs[name]), problems)
        finally:
            replay.close()


def _compare(name: str, found: Any, expected: Any, problems: list[str]) -> None:
    lost = altered = extra = 0
    first: list[str] = []
    for key, have, want in _merge(iter(found), iter(expected)):
        if have is None:
            lost += 1
        elif want is None:
            extra += 1
        elif have != want:
            altered += 1
        else:
            continue
        if len(first) < _SHOWN:
            first.append(key.hex())
    if lost or altered or extra:
        counts = ", ".join(f"{n} {what}" for n, what in ((lost, "lost"), (altered, "altered"), (extra, "extra")) if n)
        problems.append(
            f"table {name}: the projection differs from a replay of the log ({counts}; first keys "
            f"{', '.join(first)}); the log is intact: run `drsg rebuild` to rebuild the projection from it"
        )


def _merge(
    found: Iterator[tuple[bytes, bytes]], expected: Iterator[tuple[bytes, bytes]]
) -> Iterator[tuple[bytes, bytes | None, bytes | None]]:
    """Two sorted walks side by side: ``(key, value in the file, value in the replay)``."""
    a, b = next(found, None), next(expected, None)
    while a is not None or b is not None:
        if b is None or (a is not None and a[0] < b[0]):
            assert a is not None
            yield a[0], a[1], None
            a = next(found, None)
        elif a is None or b[0] < a[0]:
            yield b[0], None, b[1]
            b = next(expected, None)
        else:
            yield a[0], a[1], b[1]
            a, b = next(found, None), next(expected, None)


def verify_file(path: Path) -> Report:
    """:func:`verify` in a child process, so damage that crashes LMDB is reported, not fatal: the
    child names each table before it reads it, and a crash names the last one. Forks: call it from
    a process with no other threads (the CLI)."""
    Environment(path, EnvOptions(readonly=True, create=False)).close()  # clean errors (header, access) here
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - runs in the child; the parent checks what it sends
        os.close(read_end)
        with os.fdopen(write_end, "w", buffering=1) as out:
            try:
                env = Environment(path, EnvOptions(readonly=True, create=False))
                report = verify(env, lambda table: print(json.dumps({"table": table}), file=out))
                print(json.dumps({"report": dataclasses.asdict(report)}), file=out)
            except Exception as exc:
                print(json.dumps({"error": str(exc)}), file=out)
        os._exit(0)
    os.close(write_end)
    table, result, error = "the file's header", None, None
    with os.fdopen(read_end) as lines:
        for line in lines:
            message = json.loads(line)
            table = message.get("table", table)
            result = message.get("report", result)
            error = message.get("error", error)
    _, status = os.waitpid(child, 0)
    if result is not None:
        return Report(**result)
    code = os.waitstatus_to_exitcode(status)
    if code < 0:
        how = f"the LMDB library crashed ({signal.Signals(-code).name}) reading table {table}"
        return Report(problems=[f"{how}: the file is damaged there; restore it from a backup"])
    raise StoreError(f"{path}: reading table {table} failed ({error}); the file may be damaged")
