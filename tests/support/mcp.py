"""MCP sessions for tests through the MCP SDK's own client: `drsg mcp` over stdio (:func:`over_stdio`, the
digest's chat model a scripted one on loopback) and `/mcp` on a running `drsg serve` (:func:`over_http`);
:func:`call` expects a tool's answer, :func:`refused` a one-line tool error."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from tests.support.fake_openai import FakeOpenAI
from tests.support.server import clean_env, drsg_argv

#: issue 39's parity tools (tests/integration/test_mcp_parity.py calls each): traverse by hops, the
#: write tools, digest, the catalog's verbs
PARITY_TOOLS = frozenset(
    {"traverse", "write_nodes", "write_edges", "create_plane", "drop_plane", "digest"}
    | {"catalog_schema", "catalog_objects", "catalog_columns", "catalog_sql", "catalog_impact", "catalog_refs"}
)


def env_for(fake: FakeOpenAI) -> dict[str, str]:
    return {"DRSG_DIGEST_CHAT": fake.base_url, "DRSG_DIGEST_MODEL": "fake-chat", "DRSG_DIGEST_CONCURRENCY": "2"}


@asynccontextmanager
async def over_stdio(
    db: Path, fake: FakeOpenAI, workdir: Path, *, args: tuple[str, ...] = ()
) -> AsyncIterator[ClientSession]:
    """`drsg --db DB mcp ARGS…` (e.g. ``--read-only``) with the SDK's stdio client."""
    argv = drsg_argv()
    env = clean_env(**env_for(fake))
    params = StdioServerParameters(
        command=argv[0], args=[*argv[1:], "--db", str(db), "mcp", *args], env=env, cwd=workdir
    )
    with (workdir / "mcp-stdio.err").open("w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            yield session


@asynccontextmanager
async def over_http(url: str, token: str | None) -> AsyncIterator[ClientSession]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


async def call(session: ClientSession, tool: str, args: dict[str, Any]) -> Any:
    result = await session.call_tool(tool, args)
    assert not result.is_error, (tool, result.content)
    return json.loads(result.content[0].text)  # type: ignore[union-attr]


async def refused(session: ClientSession, tool: str, args: dict[str, Any]) -> str:
    result = await session.call_tool(tool, args)
    assert result.is_error, (tool, result.content)
    text: str = result.content[0].text  # type: ignore[union-attr]
    assert "Traceback" not in text and "\n" not in text
    return text
