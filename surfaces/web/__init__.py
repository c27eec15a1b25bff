"""The web dashboard at `/` on `drsg serve`: static files shipped in the package, no build step.

The page holds no secret: the person pastes the server's token (the JSON-RPC token), which the
page keeps in ``sessionStorage`` and sends as ``Authorization: Bearer`` on every call; the server
never sends it. Everything the page does goes through the guarded routes (`/rpc`, `/feed/…`,
`/ui/convert`), where a foreign ``Origin`` is refused, and a bearer header, which no other site's
page can make a browser send, is the CSRF protection of every write. Every value from the graph is
put in the page as text (``textContent``, canvas ``fillText``), never as markup, and a strict
Content-Security-Policy (scripts and styles from this origin only, no inline code, no frames, no
forms posting elsewhere) makes a missed spot inert.
"""

from __future__ import annotations

import asyncio
from importlib.resources import files
from typing import Any

from aiohttp import web

from drsg.kernel.errors import INVALID_PARAMS, DrsgError
from drsg.surfaces.server.rpc import error_body

STATIC_PREFIX = "/static/"
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "font-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
}
TYPES = {".html": "text/html", ".js": "text/javascript", ".css": "text/css", ".svg": "image/svg+xml"}
MAX_UPLOAD = 32 << 20


def _asset(name: str) -> tuple[bytes, str] | None:
    if "/" in name or name.startswith(".") or not any(name.endswith(ext) for ext in TYPES):
        return None
    resource = files(__name__).joinpath("static", name)
    if not resource.is_file():
        return None
    return resource.read_bytes(), TYPES[name[name.rindex(".") :]]


def _answer(name: str) -> web.Response:
    found = _asset(name)
    if found is None:
        return web.Response(status=404, text="not found", headers=SECURITY_HEADERS)
    body, kind = found
    return web.Response(body=body, content_type=kind, charset="utf-8", headers=SECURITY_HEADERS)


async def index(request: web.Request) -> web.Response:
    return _answer("index.html")


async def static(request: web.Request) -> web.Response:
    return _answer(request.match_info["name"])


async def favicon(request: web.Request) -> web.Response:
    """Browsers ask for /favicon.ico whatever the page links (the page links favicon.svg): answered,
    without a token, so no page load logs a failed request."""
    return _answer("favicon.svg")


async def convert(request: web.Request) -> web.Response:
    """An uploaded document (the raw body; its file name in ``?name=``) → its Markdown, for the
    AIgest page to preview with `digest.run`. Nothing is written."""
    from drsg.pipeline.convert import to_markdown_bytes

    name = request.query.get("name", "")
    if not name or "/" in name or "\\" in name:
        return _error(400, "give the file's name as ?name=FILE.docx (no folders)")
    data = await request.read()
    try:
        converted = await asyncio.to_thread(to_markdown_bytes, data, name)
    except DrsgError as exc:
        return _error(400, exc.message)
    return web.json_response({"name": name, "text": converted.markdown, "notes": list(converted.notes)})


def _error(status: int, message: str) -> web.Response:
    return web.Response(status=status, text=error_body(None, INVALID_PARAMS, message), content_type="application/json")


ROUTES: list[Any] = [
    web.get("/", index),
    web.get(STATIC_PREFIX + "{name}", static),
    web.get("/favicon.ico", favicon),
    web.post("/ui/convert", convert),
]


def install(app: web.Application) -> None:
    app.add_routes(ROUTES)
