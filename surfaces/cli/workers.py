"""`drsg workers`: index workers of a Kafka log as a consumer group (drsg.workers.index_group)."""

from __future__ import annotations

import datetime as dt
import signal
import sys
import threading
from pathlib import Path

import click

from drsg.kernel.errors import UsageError
from drsg.surfaces.cli.context import Context, emit_json
from drsg.surfaces.cli.options import json_option


@click.command("workers")
@click.option(
    "--index-dir",
    default=None,
    metavar="DIR",
    help="The folder every member of the group shares for the index sidecars ([log] index_dir).",
)
@click.option("--group", default=None, help="The consumer group ([log] group; default drsg-index-TOPIC).")
@click.option(
    "--shards",
    type=click.IntRange(min=1, max=10_000),
    default=None,
    help="Partitions of TOPIC.index when this member creates it ([log] shards, default 12).",
)
@click.option(
    "--save-every",
    type=click.FloatRange(min=0.1),
    default=30.0,
    show_default=True,
    metavar="SECONDS",
    help="Save the held indexes this often (a member that dies loses at most this much work).",
)
@click.option(
    "--session-timeout",
    type=click.FloatRange(min=1.0, max=300.0),
    default=10.0,
    show_default=True,
    metavar="SECONDS",
    help="Silence after which the group gives a member's shards to the others.",
)
@click.option(
    "--status",
    is_flag=True,
    help="Instead of joining: show every index the group saved in --index-dir, how far behind this node's copy "
    "of the log it is, and which member saved it when.",
)
@json_option
@click.pass_obj
def workers(
    obj: Context,
    index_dir: str | None,
    group: str | None,
    shards: int | None,
    save_every: float,
    session_timeout: float,
    status: bool,
    as_json: bool,
) -> None:
    """Index a Kafka log's planes as one member of a consumer group (SIGTERM/Ctrl-C: save, leave).

    \b
    Every member follows its own node's copy of the log (--db) and keeps the indexes of the planes
    in the shards the group assigns it (plane id mod the shard count), saving their sidecars in the
    folder the group shares (--index-dir). Start one per machine; add one and the group hands it
    shards; stop one (or lose it) and the others take its shards over from its last save.
    Logs are JSON lines on stderr: shards_assigned, shards_released, index_saved, index_fenced.
    `--status` shows what the group has saved, against this node's copy (--json: one index per line).
    """
    from drsg.workers.index_group import GroupOptions, IndexGroup

    settings = obj.settings
    if not settings.text("log.url"):
        raise UsageError(
            "`drsg workers` indexes a Kafka log; give --log kafka://HOST:PORT/TOPIC "
            "(an embedded database is indexed inside `drsg serve`)"
        )
    folder = index_dir or settings.text("log.index_dir")
    if not folder:
        raise UsageError("give --index-dir DIR (or [log] index_dir): the folder every worker of the group shares")
    if status:
        _show_status(obj, Path(folder), as_json)
        return
    options = GroupOptions(
        index_dir=Path(folder),
        group=group or settings.text("log.group"),
        shards=shards or settings.integer("log.shards"),
        save_every=save_every,
        session_timeout=session_timeout,
        ef_search=settings.integer("index.ef_search"),
        recall_target=settings.number("index.recall_target"),
    )
    from drsg.surfaces.server.app import route_library_logs

    fmt = obj.daemon_logs()
    route_library_logs(fmt == "json" or (fmt == "auto" and not sys.stderr.isatty()))
    stop = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        with obj.open(write=True) as db:
            from drsg.store.kafka.database import KafkaDatabase

            assert isinstance(db, KafkaDatabase)  # log.url is set: Context.open made one
            member = IndexGroup(db, db.kafka, options)
            click.echo(
                f"drsg workers: group {member.group} on {member.topic} ({member.shards} shards), "
                f"sidecars in {options.index_dir}",
                err=True,
            )
            member.run(stop)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _show_status(obj: Context, folder: Path, as_json: bool) -> None:
    """What the group saved in ``folder``: each index's checkpoint against this node's copy's head."""
    from drsg.store.kafka.database import KafkaDatabase
    from drsg.workers.manager import sidecar_roots
    from drsg.workers.sidecar import InForce, survey

    with obj.open(write=False) as db:
        assert isinstance(db, KafkaDatabase)  # log.url is set: Context.open made one
        head = db.catch_up()  # the topic's head as this node knows it, materialised
        root = folder / db.kafka.topic  # as the group's IndexSet keeps them (workers/index_group.py)
    found: list[InForce] = []
    unreadable: list[tuple[str, str]] = []
    for kind_root in sidecar_roots(root):
        more, bad = survey(kind_root)
        found, unreadable = found + more, unreadable + bad
    if not found and not unreadable and not as_json:
        click.echo(
            f"no index saved in {folder} for {root.name} yet: no member of the group has saved one (head {head})"
        )
    for index in found:
        meta = index.meta
        saved_at = dt.datetime.fromtimestamp(index.saved_at, dt.UTC).isoformat(timespec="seconds")
        behind = max(0, head - index.seq)
        if as_json:
            emit_json({
                "sidecar": index.name, "plane": meta.get("plane"), "kind": meta.get("kind"),
                "label": meta.get("label"), "property": meta.get("property"), "seq": index.seq, "head": head,
                "behind": behind, "saved_by": index.saved_by, "saved_at": saved_at,
            })  # fmt: skip
        else:
            click.echo(
                f"plane {meta.get('plane')} {meta.get('kind')} {meta.get('label')}.{meta.get('property')}: "
                f"seq {index.seq}, {behind} behind head {head}; "
                f"saved by {index.saved_by or 'unknown'} at {saved_at}"
            )
    for name, why in unreadable:
        if as_json:
            emit_json({"sidecar": name, "problem": why})
        else:
            click.echo(f"{name}: unreadable ({why}); its next owner rebuilds it from the log")


COMMANDS = [workers]
