"""`drsg serve watch`: the daemon that keeps a code plane true to a working tree (drsg.feed.watch)."""

from __future__ import annotations

import os
import threading
import uuid
from pathlib import Path
from typing import Any

import click

from drsg.kernel.errors import UsageError
from drsg.surfaces.cli.context import Context
from drsg.surfaces.cli.options import chat_options, embed_options, tree_options


@click.command("watch")
@click.argument("directory", required=False, default=None, type=click.Path(file_okay=False, path_type=Path))
@click.option("--dir", "dir_flag", default=None, type=click.Path(file_okay=False, path_type=Path), help="Same as DIR.")
@click.option("--plane", "-p", default=None, metavar="NAME", help="The plane to keep (default: the directory's name).")
@tree_options
@chat_options
@embed_options
@click.option(
    "--quiet-ms",
    default=50,
    show_default=True,
    type=click.IntRange(1, 60_000),
    help="A burst of changes is folded once the tree has been quiet this long.",
)
@click.option(
    "--max-wait-ms",
    default=1600,
    show_default=True,
    type=click.IntRange(1, 600_000),
    help="A steady stream of changes is folded at least this often.",
)
@click.pass_obj
def watch(obj: Context, directory: Path | None, dir_flag: Path | None, plane: str | None, **flags: Any) -> None:
    """Keep a plane true to a working tree: fold every change into it, in one commit each.

    \b
    Edits, new files, deletions, renames, commits, branch switches and rebases are noticed through
    the OS's file notifications (nothing polls), gathered until the tree is quiet, and folded: only
    what changed is written, and the plane ends as a fresh `drsg digest DIR --apply` would leave it.
    The first fold states the whole tree again, so a restart (even after kill -9) converges.
    Code is read by the handlers (`drsg plugin list`); prose goes to a chat model only when one is
    chosen (--chat/--chat-url, or [digest] chat); changed nodes are embedded only with --embed or
    [digest] embed_provider set. The same walk flags and [digest] settings as `drsg digest`.
    Runs in the foreground; logs are JSON lines on stderr (-v: each fold's accounting, -vv: notes);
    each fold names the ignore files that withheld files (`withheld_by`), and a warning says so, as
    `drsg digest` does, when they withhold most of the tree.
    SIGTERM/Ctrl-C finish the fold in progress, then stop. Runs beside `drsg serve` on one database.
    """
    from drsg.feed.watch import Watcher, WatchOptions, stop_on_signals
    from drsg.feed.watched import watching
    from drsg.pipeline.code.parsed import ParseMemo
    from drsg.pipeline.code.walk import digest_folder
    from drsg.pipeline.digest.sync import TreeSync
    from drsg.pipeline.plugins.handlers import load_handlers
    from drsg.surfaces.cli.digest import tree_options_of

    if directory is not None and dir_flag is not None and directory.resolve() != dir_flag.resolve():
        raise UsageError(f"name the directory once: DIR is {directory} but --dir is {dir_flag}")
    root = (directory or dir_flag or Path(".")).resolve()
    if not root.is_dir():
        raise UsageError(f"{root}: no such directory; name the working tree to watch")
    plane = plane or root.name
    obj.daemon_logs()
    tree = tree_options_of(obj, flags)
    handlers = load_handlers(obj.settings)
    stop = threading.Event()
    stop_on_signals(stop)
    try:
        with obj.open(write=True) as db:
            sync = TreeSync(
                db,
                root,
                plane,
                tree,
                handlers=handlers,
                memo=ParseMemo(digest_folder(obj.db_path) / "parsed"),
                ident=f"{os.getpid()}-{uuid.uuid4().hex[:12]}",
                settings=obj.settings,
                calls=_chat_calls(obj, flags),
                digest_options=_digest_options(obj),
                embedder=_embedder(obj, db, plane, flags),
            )
            options = WatchOptions(flags["quiet_ms"], flags["max_wait_ms"])
            with watching(db.path, root):  # `drsg serve` may then read this tree (grep, snippet)
                Watcher(sync, own=tree.skip, options=options, stop=stop).run()
    finally:
        for handler in handlers:
            handler.close()


def _chat_calls(obj: Context, flags: dict[str, Any]) -> Any:
    """The chat model for prose, when one is chosen (a flag, or [digest] chat set); else None."""
    from drsg.pipeline.code.walk import digest_folder
    from drsg.pipeline.llm.cache import AnswerCache
    from drsg.pipeline.llm.calls import ModelCalls

    settings = obj.settings
    chosen = flags["chat"] is not None or flags["chat_url"] is not None
    if not chosen and settings.sources["digest.chat"] == "default":
        return None
    chat = flags["chat"] if chosen else settings.text("digest.chat")
    model = flags["model"] or (None if chosen else settings.text("digest.model") or None)

    cache = AnswerCache(digest_folder(obj.db_path) / "cache")
    return ModelCalls.for_chat(chat, model, flags["chat_url"], flags["chat_key_env"], settings, cache)


def _digest_options(obj: Context) -> Any:
    from drsg.pipeline.digest.run import DigestOptions

    settings = obj.settings
    return DigestOptions(
        settings.text("digest.mode"),
        settings.integer("digest.chunk_chars"),
        settings.integer("digest.concurrency"),
        embed=False,
        link=False,
    )


def _embedder(obj: Context, db: Any, plane: str, flags: dict[str, Any]) -> Any:
    """The embedder for changed nodes when one is chosen (--embed…, or [digest] embed_provider set):
    the one rule's (:func:`query_embedder`); else none."""
    from drsg.surfaces.cli.digest import embed_flags, embedder_chosen
    from drsg.surfaces.cli.search import query_embedder

    if not embedder_chosen(obj, flags):
        return None
    return query_embedder(obj, db, plane, "embedding", embed_flags(flags), "write")
