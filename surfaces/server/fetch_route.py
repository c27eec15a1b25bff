"""``POST /digest/fetch``: crawl a URL for the dashboard, streaming NDJSON (upstream's shape).

Params (query string, or a JSON object body): ``url`` (a bare ``example.com/x`` is read as https),
``topic``, ``pages``, ``depth``. Lines: ``{"progress":{"done","total","url"}}`` after each request,
then ``{"pages":[{url,title,block,score,depth,chars,size,kept}],"dropped":[{url,reason}]}`` — or
``{"error": …}``. ``[fetch]`` holds the ceilings: a request asking for more pages or depth is
refused (HTTP 400), and ``[fetch] enabled = false`` answers HTTP 403. Nothing is written: the
client digests the assembled blocks as a pasted document (``digest.run``).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from aiohttp import web

from drsg.kernel.errors import FetchError, FetchRefused, UsageError
from drsg.kernel.settings import Settings, load
from drsg.surfaces.server.state import ServerState

SETTINGS = web.AppKey("drsg_fetch_settings", Settings)


def install(app: web.Application, state: ServerState) -> None:
    app[SETTINGS] = state.config.settings or load(None, environ={})
    app.add_routes([web.post("/digest/fetch", digest_fetch)])


async def _params(request: web.Request) -> dict[str, Any]:
    params: dict[str, Any] = dict(request.query)
    if request.can_read_body and request.content_type == "application/json":
        try:
            body = await request.json()
        except ValueError:
            raise web.HTTPBadRequest(text=json.dumps({"error": "the body is not JSON"})) from None
        if not isinstance(body, dict):
            raise web.HTTPBadRequest(text=json.dumps({"error": "the body must be a JSON object"}))
        params.update(body)
    return params


def _count(params: dict[str, Any], name: str) -> int | None:
    value = params.get(name)
    if value is None or value == "":
        return None
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise UsageError(f"{name} must be a whole number, not {value!r}") from None
    if number < (1 if name == "pages" else 0):
        raise UsageError(f"{name} must be {1 if name == 'pages' else 0} or more")
    return number


def _refuse(status: int, message: str) -> web.Response:
    return web.Response(status=status, text=json.dumps({"error": message}), content_type="application/json")


async def digest_fetch(request: web.Request) -> web.StreamResponse:
    # the crawler (aiohttp's client, the keyword analyser) is loaded by the first fetch, not by serve's start
    from drsg.pipeline.fetch.crawl import budget_for, client_for, crawl

    settings = request.app[SETTINGS]
    params = await _params(request)
    url = str(params.get("url") or "").strip()
    if not url:
        return _refuse(400, "url is required, e.g. ?url=https://example.com/paper")
    if "://" not in url:
        url = f"https://{url}"  # upstream's server reads a bare host/path as https
    try:
        budget = budget_for(settings, _count(params, "pages"), _count(params, "depth"))
    except FetchRefused as exc:
        return _refuse(403, str(exc))
    except UsageError as exc:
        return _refuse(400, str(exc))
    response = web.StreamResponse(headers={"Content-Type": "application/x-ndjson", "Cache-Control": "no-store"})
    await response.prepare(request)
    lines: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()

    async def run() -> None:
        try:
            async with client_for(settings, budget) as client:
                result = await crawl(
                    url,
                    client,
                    budget,
                    str(params.get("topic") or ""),
                    lambda done, total, at: lines.put_nowait({"progress": {"done": done, "total": total, "url": at}}),
                )
            lines.put_nowait(result.to_json())
        except FetchError as exc:
            lines.put_nowait({"error": str(exc)})
        finally:
            lines.put_nowait(None)

    task = asyncio.create_task(run())
    try:
        while (line := await lines.get()) is not None:
            await response.write(json.dumps(line, ensure_ascii=False).encode() + b"\n")
    finally:
        if not task.done():  # the client went away: stop crawling for it
            task.cancel()
    await task
    await response.write_eof()
    return response
