"""The engine behind a connection: one Backend module per engine, imported when first used."""

from __future__ import annotations

from drsg.kernel.errors import UsageError
from drsg.pipeline.catalog.backend import Backend
from drsg.pipeline.catalog.connections import Connection


def backend_for(conn: Connection) -> Backend:
    if conn.engine == "sqlite":
        from drsg.pipeline.catalog.sqlite_backend import SqliteBackend

        return SqliteBackend(conn)
    if conn.engine == "postgresql":
        from drsg.pipeline.catalog.postgres_backend import PostgresBackend

        return PostgresBackend(conn)
    if conn.engine == "mysql":
        from drsg.pipeline.catalog.mysql_backend import MysqlBackend

        return MysqlBackend(conn)
    raise UsageError(f"unknown engine {conn.engine!r}; use sqlite, postgresql or mysql")
