"""The catalog's verbs as MCP tools, and its compact digest as a resource and a prompt.

`catalog_schema`, `catalog_objects`, `catalog_columns`, `catalog_sql`, `catalog_impact` and
`catalog_refs` run the JSON-RPC methods of the same names (surfaces/server/catalog_method.py: the
`drsg catalog …` verbs over the catalog's plane; `sql` against the live database, masked). They are
prefixed: upstream's `impact` is the code verb. The compact digest (`drsg catalog digest`) is the
resource ``drsg://catalog/{connection}/digest`` (each connection's listed at start, the template for
one added later) and the prompt `catalog_digest`, so a model can have the schema before its first call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcp.server.mcpserver.exceptions import ResourceError, ToolError

from drsg.surfaces.mcp.toolkit import Tools

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

DIGEST_URI = "drsg://catalog/{connection}/digest"


def _connections(tools: Tools) -> list[str]:
    """The connections `drsg catalog add` made, by name (none: an empty list, never an error)."""
    from drsg.pipeline.catalog.connections import Connections

    try:
        return sorted(Connections(tools.state.db.path).load())
    except Exception:  # an unreadable connections file is catalog_list's error to tell, not start-up's
        return []


def register(server: MCPServer[Any], tools: Tools) -> None:
    """Add the catalog tools, the digest resources and the digest prompt to ``server``."""

    @server.tool(structured_output=False)
    async def catalog_schema(table: str | None = None, connection: str | None = None, as_of: int | None = None) -> str:
        """A live database's catalog as drsg indexed it (or one `table`): columns with types, keys and
        comments, foreign keys, indexes, what each view reads. Sensitive columns are marked."""
        return await tools.call("catalog.schema", {"connection": connection, "table": table, "as_of": as_of})

    @server.tool(structured_output=False)
    async def catalog_objects(connection: str | None = None, as_of: int | None = None) -> str:
        """The catalog's tables and views: kind, column count, comment, row estimate."""
        return await tools.call("catalog.objects", {"connection": connection, "as_of": as_of})

    @server.tool(structured_output=False)
    async def catalog_columns(table: str, connection: str | None = None, as_of: int | None = None) -> str:
        """One table's columns: type, type class, nullability, keys, comment, a small enum sample."""
        return await tools.call("catalog.columns", {"connection": connection, "table": table, "as_of": as_of})

    @server.tool(structured_output=False)
    async def catalog_sql(sql: str, connection: str | None = None, limit: int | None = None) -> str:
        """Run one SELECT against the live database: allowed only when safe (one SELECT over the
        schema's tables and columns, allow-listed functions); sensitive columns [REDACTED]; rows and
        time limited. Prefer `find` for a value by words."""
        return await tools.call("catalog.sql", {"connection": connection, "sql": sql, "limit": limit})

    @server.tool(structured_output=False)
    async def catalog_impact(table: str, column: str | None = None, connection: str | None = None) -> str:
        """What depends on a table (or one `column`): foreign keys into it, views reading it, its indexes."""
        return await tools.call("catalog.impact", {"connection": connection, "table": table, "column": column})

    @server.tool(structured_output=False)
    async def catalog_refs(table: str, connection: str | None = None) -> str:
        """What a table or view refers to: the tables its foreign keys name, the tables a view reads."""
        return await tools.call("catalog.refs", {"connection": connection, "table": table})

    async def digest_of(connection: str | None) -> str:
        text: str = await tools.run("catalog.digest", {"connection": connection} if connection else {})
        return text

    async def digest_resource(connection: str) -> str:
        try:
            return await digest_of(connection)
        except ToolError as exc:  # a resource's error is the SDK's ResourceError, one line as a tool's
            raise ResourceError(str(exc)) from None

    description = "The compact catalog of a live database: one line per table (columns, keys, comments)."
    server.resource(DIGEST_URI, name="catalog_digest", description=description, mime_type="text/plain")(digest_resource)
    for name in _connections(tools):  # listed, so a client sees them before any call

        async def listed(name: str = name) -> str:
            return await digest_resource(name)

        uri = DIGEST_URI.replace("{connection}", name)
        server.add_resource(_function_resource(listed, uri, f"catalog_digest_{name}", description))

    @server.prompt(name="catalog_digest", description="Start with a live database's schema in the context.")
    async def catalog_digest_prompt(connection: str | None = None) -> str:
        """The catalog's compact digest with how to ask for values."""
        try:
            text = await digest_of(connection)
        except ToolError as exc:
            raise ValueError(str(exc)) from None
        return (
            "This is the schema of a live database drsg keeps a catalog of, one line per table:\n\n"
            f"{text}\n\nTo read values use the `find` tool (entity and fields in plain words) or `catalog_sql` "
            "(one SELECT); catalog_columns, catalog_impact and catalog_refs tell more about one table."
        )


def _function_resource(fn: Any, uri: str, name: str, description: str) -> Any:
    from mcp.server.mcpserver.resources import FunctionResource

    return FunctionResource.from_function(fn=fn, uri=uri, name=name, description=description, mime_type="text/plain")
