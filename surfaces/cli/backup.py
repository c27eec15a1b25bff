"""Backups and disk: `snapshot`, `restore`, `compact` (store/backup.py, workers/backup.py, store/compact.py)."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

import click

from drsg.kernel.errors import UsageError
from drsg.store.backup import whole_file
from drsg.store.compact import compact
from drsg.surfaces.cli.context import Context, emit_json
from drsg.surfaces.cli.options import json_option
from drsg.workers.backup import Taken, restore_snapshot, take_snapshot

MiB = 1 << 20


@contextmanager
def _progress(label: str, total: int | None) -> Iterator[Callable[[int], None] | None]:
    """A progress bar on a terminal (stderr), for a file of ``total`` bytes; nothing otherwise."""
    if not sys.stderr.isatty():
        yield None
        return
    with click.progressbar(length=total or 0, label=label, file=sys.stderr) as bar:
        done = {"bytes": 0}

        def step(now: int) -> None:
            if now - done["bytes"] >= MiB:  # a redraw per MiB, not per chunk header
                bar.update(now - done["bytes"])
                done["bytes"] = now

        yield step


@click.command("snapshot")
@click.argument("out", type=click.Path(dir_okay=False, allow_dash=True, path_type=Path))
@click.option("--force", is_flag=True, help="Replace OUT if it exists.")
@json_option
@click.pass_obj
def snapshot_cmd(obj: Context, out: Path, force: bool, as_json: bool) -> None:
    """Write the database, as of one commit, to OUT as one checksummed file (`-`: standard output),
    with its index sidecars, while writers and subscribers go on. `drsg restore OUT` brings it back.

    OUT is written under a temporary name and renamed when complete: it is never a part of a snapshot."""
    if str(out) != "-" and out.resolve() in {Path(obj.db_path).resolve(), Path(f"{obj.db_path}-lock").resolve()}:
        raise UsageError(f"{out} is the database's own file; write the snapshot to another path")
    started = time.perf_counter()
    with obj.open(write=False) as db:
        size = db.env.file_size()
        if str(out) == "-":
            taken = take_snapshot(db, sys.stdout.buffer)
            sys.stdout.buffer.flush()
        else:
            with whole_file(out, replace=force) as fh, _progress("snapshot", size) as step:
                taken = take_snapshot(db, fh, step)
    _report(taken, str(out), time.perf_counter() - started, as_json)


def _report(taken: Taken, out: str, secs: float, as_json: bool) -> None:
    """The summary: on stdout, or on stderr when stdout carries the snapshot itself."""
    info = taken.info
    if as_json:
        sidecars = [{"name": s.name, "seq": s.seq} for s in taken.sidecars]
        figures = {"seq": info.seq, "bytes": info.size, "db_bytes": info.db_size, "secs": round(secs, 3)}
        click.echo(json.dumps({"out": out, **figures, "sidecars": sidecars}), err=out == "-")
        return
    click.echo(
        f"snapshot at seq {info.seq} written to {out}: {info.size:,} bytes (database {info.db_size:,}, "
        f"{len(taken.sidecars)} index sidecar(s)) in {secs:.1f} s",
        err=out == "-",
    )


@click.command("restore")
@click.argument("source", type=click.Path(dir_okay=False, allow_dash=True, path_type=Path))
@json_option
@click.pass_obj
def restore_cmd(obj: Context, source: Path, as_json: bool) -> None:
    """Restore a snapshot (`-`: standard input) as the database --db, which must not exist yet, with
    its index sidecars beside it. The whole file is checked before the database appears: a truncated
    or altered snapshot is refused and nothing is written."""
    target = Path(obj.db_path)
    started = time.perf_counter()
    if str(source) == "-":
        info = restore_snapshot(sys.stdin.buffer, "standard input", target)
    else:
        fh = _open_source(source)
        with fh, _progress("restore", source.stat().st_size) as step:
            info = restore_snapshot(fh, str(source), target, step)
    secs = time.perf_counter() - started
    if as_json:
        emit_json(
            {"db": str(target), "seq": info.seq, "bytes": info.size, "db_bytes": info.db_size, "secs": round(secs, 3)}
        )
        return
    click.echo(f"restored {target} at seq {info.seq} ({info.db_size:,} bytes) from {source} in {secs:.1f} s")


def _open_source(source: Path) -> BinaryIO:
    try:
        return source.open("rb")
    except OSError as exc:
        raise UsageError(f"cannot read {source}: {exc.strerror or exc}; check the path") from None


@click.command("compact")
@click.option(
    "--history",
    is_flag=True,
    help="Instead, remove the history [log] retain_commits / retain_days no longer keep (online: "
    "writers and `serve` go on; the file's freed pages are reused).",
)
@json_option
@click.pass_obj
def compact_cmd(obj: Context, history: bool, as_json: bool) -> None:
    """Rewrite the database file without its free pages and report the bytes reclaimed. Offline:
    refused while another process (`drsg serve`, a writer) has the file open."""
    if history:
        _compact_history(obj, as_json)
        return
    done = compact(Path(obj.db_path))
    if as_json:
        emit_json({"db": obj.db_path, "before": done.before, "after": done.after, "reclaimed": done.reclaimed})
        return
    click.echo(f"compacted {obj.db_path}: {done.before:,} → {done.after:,} bytes ({done.reclaimed:,} reclaimed)")


def _compact_history(obj: Context, as_json: bool) -> None:
    with obj.open(write=True) as db:
        retention = db.retention()
        if not retention.bounded:
            raise UsageError(
                "[log] retain_commits and retain_days are both 0, which keeps all history; set one "
                "(e.g. DRSG_LOG_RETAIN_COMMITS=100000) and run `compact --history` again"
            )
        done = db.compact_history(retention)
    if as_json:
        emit_json({"db": obj.db_path, **done.to_json()})
        return
    click.echo(
        f"history of {obj.db_path} starts at commit {done.horizon:,}: removed {done.versions:,} versions "
        f"and {done.log_records:,} log records"
    )
    if done.held_by:  # a reader here or in another process still reads from there (store/readers.py)
        click.echo(
            f"kept from commit {done.horizon:,} instead of {done.asked:,} for readers still behind: "
            f"{'; '.join(done.held_by)} ([log] reader_lease_secs ends a dead reader's hold)"
        )


COMMANDS = [snapshot_cmd, restore_cmd, compact_cmd]
