"""The crawler's HTTP client against a real aiohttp server on loopback (permitted): encodings,
caps, the shared byte meter, redirects, and the guard's refusals on the way."""

from __future__ import annotations

import asyncio
import gzip
import zlib
from collections.abc import Iterator

import pytest
from aiohttp import web

from drsg.kernel.errors import FetchError, FetchRefused
from drsg.pipeline.fetch.client import Client, Meter
from drsg.pipeline.fetch.guard import networks
from tests.support.crawl_site import Site, serving_app

TEXT = ("Attention is all you need. " * 400).encode()
PERMIT = networks(["127.0.0.1/32"])


def _bomb(inflated: int) -> bytes:
    """``inflated`` bytes of zeros as gzip, made in 1 MiB steps (never held inflated)."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    zeros = bytes(1 << 20)
    return b"".join(packer.compress(zeros) for _ in range(inflated >> 20)) + packer.flush()


BOMB = _bomb(256 << 20)


def _app() -> web.Application:
    raw = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    bodies = {
        "/plain": (TEXT, {}),
        "/gzip": (gzip.compress(TEXT), {"Content-Encoding": "gzip"}),
        "/deflate": (zlib.compress(TEXT), {"Content-Encoding": "deflate"}),
        "/raw-deflate": (raw.compress(TEXT) + raw.flush(), {"Content-Encoding": "deflate"}),
        "/brotli": (b"\x0b\x02\x80hello\x03", {"Content-Encoding": "br"}),
        "/bomb": (BOMB, {"Content-Encoding": "gzip"}),
        "/damaged": (b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03\xff\xff\xff\xff", {"Content-Encoding": "gzip"}),
        "/truncated": (gzip.compress(TEXT)[:-20], {"Content-Encoding": "gzip"}),
    }

    async def handler(request: web.Request) -> web.StreamResponse:
        if request.path in bodies:
            body, headers = bodies[request.path]
            return web.Response(body=body, headers={"Content-Type": "text/plain", **headers})
        if request.path.startswith("/loop/"):
            n = int(request.path.rsplit("/", 1)[1])
            raise web.HTTPFound(f"/loop/{n + 1}")
        if request.path == "/redirect-to-plain":
            raise web.HTTPMovedPermanently("/plain")
        if request.path == "/no-location":
            return web.Response(status=302)
        raise web.HTTPNotFound()

    app = web.Application()
    app.router.add_get("/{tail:.*}", handler)
    return app


@pytest.fixture(scope="module")
def site() -> Iterator[Site]:
    with serving_app(_app()) as running:
        yield running


def get(url: str, max_bytes: int = 1 << 20, meter: Meter | None = None, allow: tuple = PERMIT) -> bytes:  # type: ignore[type-arg]
    async def go() -> bytes:
        async with Client(allow, timeout=5) as client:
            return (await client.get(url, max_bytes=max_bytes, meter=meter)).body

    return asyncio.run(go())


@pytest.mark.parametrize("path", ["/plain", "/gzip", "/deflate", "/raw-deflate", "/redirect-to-plain"])
def test_bodies_are_read_and_inflated(site: Site, path: str) -> None:
    assert get(site.url + path) == TEXT


@pytest.mark.parametrize("path", ["/plain", "/gzip", "/deflate", "/raw-deflate"])
def test_the_cap_counts_inflated_bytes(site: Site, path: str) -> None:
    with pytest.raises(FetchError, match="1000-byte limit"):
        get(site.url + path, max_bytes=1000)


def test_the_meter_is_shared_and_stops_a_read(site: Site) -> None:
    meter = Meter(len(TEXT) + 10)
    assert get(site.url + "/gzip", meter=meter) == TEXT and meter.used == len(TEXT)
    with pytest.raises(FetchError, match="total budget ran out"):
        get(site.url + "/plain", meter=meter)


def test_what_is_not_read(site: Site) -> None:
    with pytest.raises(FetchError, match="Content-Encoding br, which drsg does not read"):
        get(site.url + "/brotli")
    with pytest.raises(FetchError, match="damaged gzip body"):
        get(site.url + "/damaged")
    with pytest.raises(FetchError, match="truncated gzip body"):
        get(site.url + "/truncated")
    with pytest.raises(FetchError, match="redirected more than 5 times"):
        get(site.url + "/loop/0")
    with pytest.raises(FetchError, match="without a Location"):
        get(site.url + "/no-location")
    with pytest.raises(FetchError, match="answered HTTP 404"):
        get(site.url + "/missing")


def test_without_the_permit_the_same_site_is_refused(site: Site) -> None:
    with pytest.raises(FetchRefused, match="allow_private"):
        get(site.url + "/plain", allow=())


def test_a_gzip_bomb_stops_at_the_cap_in_memory_too(site: Site) -> None:
    """256 MiB inflated from ~256 KiB sent: reading stops at the 4 MiB cap, and memory stays near it."""
    import tracemalloc

    assert len(BOMB) < 1 << 20
    tracemalloc.start()
    try:
        with pytest.raises(FetchError, match="sent more than the 4194304-byte limit"):
            get(site.url + "/bomb", max_bytes=4 << 20)
        _now, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 24 << 20, peak
