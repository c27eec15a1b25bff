"""`drsg workers`: index workers of a Kafka log as a consumer group (drsg.workers.index_group)."""

from __future__ import annotations

import signal
import sys
import threading
from pathlib import Path

import click

from drsg.kernel.errors import UsageError
from drsg.surfaces.cli.context import Context


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
@click.pass_obj
def workers(
    obj: Context,
    index_dir: str | None,
    group: str | None,
    shards: int | None,
    save_every: float,
    session_timeout: float,
) -> None:
    """Index a Kafka log's planes as one member of a consumer group (SIGTERM/Ctrl-C: save, leave).

    \b
    Every member follows its own node's copy of the log (--db) and keeps the indexes of the planes
    in the shards the group assigns it (plane id mod the shard count), saving their sidecars in the
    folder the group shares (--index-dir). Start one per machine; add one and the group hands it
    shards; stop one (or lose it) and the others take its shards over from its last save.
    Logs are JSON lines on stderr: shards_assigned, shards_released, index_saved, index_fenced.
    """
    from drsg.workers.index_group import GroupOptions, IndexGroup

    settings = obj.settings
    if not settings["log.url"]:
        raise UsageError(
            "`drsg workers` indexes a Kafka log; give --log kafka://HOST:PORT/TOPIC "
            "(an embedded database is indexed inside `drsg serve`)"
        )
    folder = index_dir or settings["log.index_dir"]
    if not folder:
        raise UsageError("give --index-dir DIR (or [log] index_dir): the folder every worker of the group shares")
    options = GroupOptions(
        index_dir=Path(folder),
        group=group or settings["log.group"],
        shards=shards or settings["log.shards"],
        save_every=save_every,
        session_timeout=session_timeout,
        ef_search=settings["index.ef_search"],
    )
    from drsg.surfaces.server.app import route_library_logs

    fmt = obj.daemon_logs()
    route_library_logs(fmt == "json" or (fmt == "auto" and not sys.stderr.isatty()))
    stop = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        with obj.open(write=True) as db:
            from drsg.store.kafka_database import KafkaDatabase

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


COMMANDS = [workers]
