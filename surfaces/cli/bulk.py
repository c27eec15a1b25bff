"""`drsg import` and `drsg export`: the bulk path, in upstream's JSONL line format."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import click

from drsg.kernel.asof import AsOf
from drsg.store.jsonl import ON_CONFLICT
from drsg.surfaces.cli.context import Context, emit_json
from drsg.surfaces.cli.options import as_of_option, json_option, plane_option


@click.command("import")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@plane_option
@click.option(
    "--on-conflict",
    type=click.Choice(ON_CONFLICT),
    default="error",
    show_default=True,
    help="A node whose key exists: error (write nothing, name the keys), skip it, or update it.",
)
@click.option("--create-plane", is_flag=True, help="Create the plane if it does not exist.")
@json_option
@click.pass_obj
def import_cmd(obj: Context, file: Path, plane: str, on_conflict: str, create_plane: bool, as_json: bool) -> None:
    """Import nodes and edges from a JSONL file — all of it or, on any error (or a kill), nothing.

    Staged 10,000 lines a commit (store.import_commit_lines), commits sharing an LMDB transaction
    until 8 MiB of the file is in it (store.import_txn_bytes), one written on a second thread while
    the next is read, so memory stays bounded (two of those, plus a map of the keys the import
    made: ~12 MiB for 100k keys, at most ~200 MiB past 1M, plus the new edges' adjacency entries,
    written once at the end: ~70 MiB for 500k edges, at most 16 transactions' bytes, half as much
    again while they are merged); shows a progress bar on a terminal and prints lines/s on stderr
    at the end. On a Kafka log (--log) the lines go
    out in records of store.import_commit_lines lines and every node imports them as one commit
    where the last lands, whatever other nodes write meanwhile (deploy/README.md).

    \b
    Node line: {"labels": [...], "external_key": "k", "properties": {...}}
    Edge line: {"src_key": "a", "dst_key": "b", "type": "T", "properties": {...}}
    ("src"/"dst" name a node id, or the "id" of a keyless node earlier in the file.)
    """
    size = file.stat().st_size if file.is_file() else 0
    started = time.perf_counter()
    with obj.open(write=True) as db:
        if sys.stderr.isatty() and size > 0:
            with click.progressbar(length=size, label="importing", file=sys.stderr) as bar:
                state = {"done": 0}

                def progress(done: int) -> None:
                    bar.update(done - state["done"])
                    state["done"] = done

                report = db.import_jsonl(
                    plane, file, on_conflict=on_conflict, create_plane=create_plane, progress=progress
                )
        else:
            report = db.import_jsonl(plane, file, on_conflict=on_conflict, create_plane=create_plane)
    secs = time.perf_counter() - started
    rate = report.lines / secs if secs > 0 else 0.0
    if as_json:
        emit_json(report.to_json())
    else:
        click.echo(report.summary())
    click.echo(f"{report.lines:,} line(s) in {secs:.1f} s: {rate:,.0f} lines/s", err=True)  # beside any progress bar


@click.command("export")
@plane_option
@as_of_option
@click.option(
    "--output",
    "-o",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write to this file instead of standard output.",
)
@click.option(
    "--canonical",
    is_flag=True,
    help="Nodes by key (keyless ones after, by id), edges by (src key, type, dst key, properties), "
    "property maps with sorted keys: two planes holding the same graph export the same bytes, whatever "
    "order it was written in — for diffing.",
)
@click.pass_obj
def export_cmd(obj: Context, plane: str, as_of: AsOf | None, output: Path | None, canonical: bool) -> None:
    """Export a plane as JSONL (the format `import` reads), now or --as-of an earlier commit.

    By default in the order the store holds it (ids); --canonical for a byte-comparable export."""
    with obj.open(write=False) as db:
        count = db.plane(plane, as_of=as_of).export_jsonl(
            sys.stdout if output is None else output, as_of=as_of, canonical=canonical
        )
    if output is None:
        return
    click.echo(f"exported {count} line(s) to {output}", err=True)


COMMANDS = [import_cmd, export_cmd]
