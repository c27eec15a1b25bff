"""The engine behind a connection: one Backend module per engine, imported when first used."""

from __future__ import annotations

from drsg.kernel.errors import UsageError
from drsg.pipeline.catalog.backend import STATEMENT_SECONDS, Backend
from drsg.pipeline.catalog.connections import Connection


def backend_for(conn: Connection, statement_seconds: int = STATEMENT_SECONDS) -> Backend:
    """``statement_seconds``: the time limit of each statement (``[catalog] statement_seconds``)."""
    if conn.engine == "sqlite":
        from drsg.pipeline.catalog.sqlite_backend import SqliteBackend

        return SqliteBackend(conn, statement_seconds)
    if conn.engine == "postgresql":
        from drsg.pipeline.catalog.postgres_backend import PostgresBackend

        return PostgresBackend(conn, statement_seconds)
    if conn.engine == "mysql":
        from drsg.pipeline.catalog.mysql_backend import MysqlBackend

        return MysqlBackend(conn, statement_seconds)
    raise UsageError(f"unknown engine {conn.engine!r}; use sqlite, postgresql or mysql")
