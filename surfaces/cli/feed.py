"""The change feed on the command line: `feed`."""

from __future__ import annotations

import signal
import threading
from collections.abc import Mapping
from typing import Any

import click

from drsg.feed.changes import OPS
from drsg.kernel.asof import format_ms
from drsg.surfaces.cli.context import Context, emit_json
from drsg.surfaces.cli.options import json_option, plane_option


def _change_line(seq: int, ts: int, plane: str | None, change: Mapping[str, Any]) -> str:
    where = change.get("plane", plane)
    record = change.get("record") or change.get("before") or {}
    if change["kind"] == "node":
        what = f"node #{change['id']}"
        if record.get("external_key"):
            what += f" @{record['external_key']}"
        if change.get("labels"):
            what += " [" + ", ".join(change["labels"]) + "]"
    else:
        what = f"edge #{change['id']}"
        if record:
            what += f" {record['src']} -{record['type']}-> {record['dst']}"
    return f"seq {seq}\t{format_ms(ts)}\t{where}\t{change['op']} {what}"


@click.command("feed")
@plane_option
@click.option("--all-planes", is_flag=True, help="Watch every plane (each change names its plane).")
@click.option(
    "--from",
    "from_seq",
    type=click.IntRange(min=0),
    default=None,
    metavar="SEQ",
    help="First commit seq to deliver (resume with the last seq seen + 1; 0: from the start, as `diff`); "
    "default: from now on, said on stderr.",
)
@click.option(
    "--until", "to_seq", type=click.IntRange(min=1), default=None, metavar="SEQ", help="Stop after this commit seq."
)
@click.option("--no-follow", is_flag=True, help="Stop at the current head instead of waiting for new commits.")
@click.option(
    "--label", "-l", "labels", multiple=True, metavar="LABEL", help="Only nodes with this label (repeatable)."
)
@click.option("--op", "ops", multiple=True, type=click.Choice(OPS), help="Only these operations (repeatable).")
@click.option("--before", "include_before", is_flag=True, help="Add each record as it was before the change.")
@click.option("--vectors", "include_vectors", is_flag=True, help="Keep vector properties in records.")
@click.option("--hidden", "include_hidden", is_flag=True, help="Keep `_`-prefixed (provenance) properties.")
@click.option(
    "--resolved",
    "resolved_every",
    type=click.FloatRange(min=0.05),
    default=None,
    metavar="SECONDS",
    help='When quiet this long, print a watermark ({"resolved": seq}: all up to seq delivered).',
)
@json_option
@click.pass_obj
def feed(
    obj: Context,
    plane: str,
    all_planes: bool,
    from_seq: int | None,
    to_seq: int | None,
    no_follow: bool,
    labels: tuple[str, ...],
    ops: tuple[str, ...],
    include_before: bool,
    include_vectors: bool,
    include_hidden: bool,
    resolved_every: float | None,
    as_json: bool,
) -> None:
    """Follow the changes of a plane, commit by commit, from --from SEQ (0: the start) or from now (Ctrl-C stops).

    --json prints one object per commit: {"plane", "seq", "ts", "changes", "truncated"}; a dropped
    plane ends the feed with a last object carrying "dropped": true.
    """
    with obj.open(write=False) as db:
        subscription = db.feed(
            None if from_seq is None else max(from_seq, 1),  # seq 0 is the empty start: commits begin at 1
            plane=None if all_planes else plane,
            labels=labels or None,
            ops=ops or None,
            include_before=include_before,
            include_vectors=include_vectors,
            include_hidden=include_hidden,
            resolved_every=resolved_every,
            to_seq=to_seq,
            follow=not no_follow,
        )
        if from_seq is None:  # no --from starts after the head, so an idle plane prints nothing: say why
            start = subscription.position
            click.echo(
                f"following from seq {start} (the next commit); --from 0 replays every commit"
                if not no_follow
                else f"nothing to show: without --from the feed starts after the head (seq {start - 1}); "
                "--from 0 shows every commit",
                err=True,
            )
        # Ctrl-C (and SIGTERM) end the feed at its next step, not wherever the signal lands: an
        # exception raised inside a read transaction's bookkeeping could leave the database gate held.
        stop = lambda *_: subscription.stop()  # noqa: E731
        in_main = threading.current_thread() is threading.main_thread()  # only it may set handlers
        previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM) if in_main}
        try:
            for message in subscription:
                if as_json:
                    emit_json(message.to_json())
                elif message.resolved:
                    click.echo(f"resolved {message.seq}")
                else:
                    ts = message.ts or 0  # a commit's message always has its time
                    for change in message.changes:
                        click.echo(_change_line(message.seq, ts, message.plane, change))
                    if message.dropped:
                        click.echo(f"seq {message.seq}\t{format_ms(ts)}\tplane {message.plane} dropped")
        except KeyboardInterrupt:  # Ctrl-C before the handler was in place
            return
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)


COMMANDS = [feed]
