"""What every command shares: settings, opening the database, printing, and error handling."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from drsg.api.database import EmbeddedDatabase
from drsg.kernel import settings as settings_mod
from drsg.kernel.errors import DrsgError
from drsg.store.database import Database

if TYPE_CHECKING:
    from drsg.api.kafka import KafkaDatabase

    ApiDatabase = EmbeddedDatabase | KafkaDatabase  # what `open` gives: the store's, with drsg.api's calls


#: when this process's `drsg` command began (``time.monotonic()``; main() sets it, None when the
#: command tree is called in process): a Kafka node's wait for its broker counts from it, so a
#: refusal that says "within 5 s" arrives within 5 s of the command starting
began: float | None = None


@dataclass
class Context:
    db_path: str
    config: str | None
    verbose: int
    settings: settings_mod.Settings
    _db: Database | None = field(default=None, repr=False)

    def say_synced(self, db: Database, plane: str, as_json: bool) -> None:
        """A plane read out of a source tree says which commit and how far the tree had drifted:
        first on the answer, or on stderr beside a JSON answer (which stays one JSON document)."""
        from drsg.surfaces.drift import synced_of

        line = synced_of(db, plane)
        if line is not None:
            click.echo(line, err=as_json)

    def daemon_logs(self) -> str:
        """Set up a daemon's logs (`serve`, `serve watch`): JSON lines unless [logging] format says
        otherwise, `info` unless [logging] level or -v/-vv say otherwise. Returns the format."""
        from drsg.kernel import logs

        sources = self.settings.sources
        fmt = "json" if sources["logging.format"] == "default" else self.settings.text("logging.format")
        level = self.settings.text("logging.level") if sources["logging.level"] != "default" else "info"
        if self.verbose:
            level = "debug" if self.verbose > 1 else "info"
        logs.configure(level, fmt)
        return str(fmt)

    @contextmanager
    def open(self, *, write: bool) -> Iterator[ApiDatabase]:
        """The database; read commands never create it. A write command that created the file
        and then failed removes it again, so a failed command leaves nothing behind."""
        path = Path(self.db_path)
        existed = path.exists()
        map_size, max_map_size = self.settings.integer("store.map_size"), self.settings.integer("store.max_map_size")
        db: ApiDatabase
        if self.settings.text("log.url"):  # a Kafka log: --db is this node's copy of it, made when missing
            from drsg.api.kafka import KafkaDatabase

            db = KafkaDatabase(
                path,
                self.settings.text("log.url"),
                self.settings,
                began=began,
                map_size=map_size,
                max_map_size=max_map_size,
            )
        else:
            group_max = self.settings.integer("store.group_max")
            db = EmbeddedDatabase(
                path,
                self.settings,
                create=write,
                readonly=not write,
                group_max=group_max,
                map_size=map_size,
                max_map_size=max_map_size,
            )
        db.origin = {"via": "cli"}  # what `drsg log` shows made the commits written through the API
        try:
            yield db
        except BaseException:
            db.close()
            if write and not existed:
                for leftover in (path, Path(f"{path}-lock")):
                    leftover.unlink(missing_ok=True)
            raise
        db.close()


def emit_json(obj: Any, *, pretty: bool = False, default: Callable[[Any], Any] | None = None) -> None:
    indent, separators = (2, None) if pretty else (None, (",", ":"))
    click.echo(json.dumps(obj, ensure_ascii=False, indent=indent, separators=separators, default=default))


def fail(error: DrsgError) -> None:
    """Print a one-line error and exit with the error's code."""
    click.echo(f"error: {error.message}", err=True)
    sys.exit(error.exit_code)
