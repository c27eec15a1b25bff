"""``Plane.find`` on a catalog plane: a request answered with one SELECT against the live database.

A catalog plane (``catalog_<name>``) is what ``drsg catalog index NAME`` wrote for a connection; the
connection (its DSN and password reference) is in the database's connections file. The answer is
one of drsg.pipeline.catalog.answer's three types: ``Found``, ``Ambiguous`` or ``MissingPredicate``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from drsg.kernel.errors import UsageError
from drsg.models.providers import EmbedderChoice
from drsg.pipeline.catalog.answer import FindAnswer
from drsg.pipeline.catalog.connections import Connection, Connections

if TYPE_CHECKING:
    from drsg.api.host import Host, HostedPlane


def connection_of(plane: HostedPlane) -> Connection:
    """The catalog connection whose plane this is; a UsageError naming the fix when it is none's."""
    for conn in Connections(plane.db.path).load().values():
        if conn.plane == plane.name:
            return conn
    raise UsageError(
        f"plane {plane.name!r} is no catalog's; `drsg catalog add NAME DSN` then `drsg catalog index NAME` "
        f"writes one (plane catalog_NAME)"
    )


def find(plane: HostedPlane, request: Mapping[str, Any], embed: EmbedderChoice | None) -> FindAnswer:
    return find_for(plane.db, connection_of(plane), request, embed)


def find_for(db: Host, conn: Connection, request: Mapping[str, Any], embed: EmbedderChoice | None) -> FindAnswer:
    """:meth:`Plane.find` for a connection a caller already holds (a server's request names one):
    NotFound saying how to index it when its catalog plane has not been written."""
    from drsg.pipeline.catalog import service
    from drsg.pipeline.catalog.backends import backend_for
    from drsg.pipeline.catalog.connections import sensitive_names
    from drsg.pipeline.catalog.find import find_answer
    from drsg.pipeline.catalog.semantic import VECTOR, similar_in
    from drsg.pipeline.embedder_choice import optional_embedder

    settings = db.settings
    catalog = service.load(db.store, conn)
    embedder = optional_embedder(
        db.store,
        conn.plane,
        VECTOR,
        settings,
        named=embed,
        configured=db.configured_embedder,
        purpose="query",
        cache=db.embedders,
    )
    if embedder is None and embed is not None and embed.names_one:
        raise UsageError(
            f"plane {conn.plane!r} holds no description vectors; index them first: "
            f"`drsg catalog index {conn.name} --embed {embed.name or 'local'}`"
        )
    similar = similar_in(db.store, conn.plane, catalog, embedder)
    backend = backend_for(conn, settings.integer("catalog.statement_seconds"))
    names = sensitive_names(conn, settings)
    # as given: check_request refuses what is no JSON object with the message a user reads
    return find_answer(catalog, backend, request, settings.integer("catalog.row_limit"), similar, sensitive=names)
