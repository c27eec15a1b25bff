"""The Fetcher port's contract (pipeline/fetch/base.py), held by every backend.

``FetcherContract`` is the abstract suite. It runs against the aiohttp backend (a real server on
loopback, permitted by 127.0.0.1/32; names resolved by a resolver double) and against the shipped
in-memory double (``drsg.pipeline.fetch.memory``). Both must follow redirects by hand and refuse
one into private space before anything is sent there, cap bodies after inflating, share a meter,
and say what went wrong in the same words.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import socket
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from aiohttp import web
from aiohttp.abc import AbstractResolver, ResolveResult

from drsg.kernel.errors import FetchError, FetchRefused
from drsg.pipeline.fetch.base import Fetcher, Meter
from drsg.pipeline.fetch.client import Client
from drsg.pipeline.fetch.guard import networks
from drsg.pipeline.fetch.memory import MemoryFetcher, Route
from tests.support.crawl_site import serving_app

TEXT = ("Multi-head attention runs several attention heads. " * 200).encode()
#: path -> (status, headers, body); "{base}" in a Location is the site's own base URL
ROUTES: dict[str, tuple[int, dict[str, str], bytes]] = {
    "/plain": (200, {"Content-Type": "text/plain"}, TEXT),
    "/gzip": (200, {"Content-Type": "text/plain", "Content-Encoding": "gzip"}, gzip.compress(TEXT)),
    "/hop": (302, {"Location": "/plain"}, b""),
    "/hop-absolute": (301, {"Location": "{base}/plain"}, b""),
    "/to-private": (302, {"Location": "http://{private}/admin"}, b""),
    "/to-private-name": (302, {"Location": "http://inside.test/admin"}, b""),
    "/to-metadata": (307, {"Location": "http://{metadata}/latest/meta-data/"}, b""),
    "/to-file": (302, {"Location": "file:///etc/passwd"}, b""),
    "/no-location": (302, {}, b""),
    "/gone": (410, {"Content-Type": "text/plain"}, b"gone"),
    **{f"/loop{i}": (302, {"Location": f"/loop{i + 1}"}, b"") for i in range(10)},
}
#: what the placeholders stand for per backend: the real one stays on loopback (outside its permit),
#: so a broken guard could still never send a packet off this machine
LOOPBACK_TARGETS = {"private": "127.0.0.2", "metadata": "127.0.0.3", "inside": "127.0.0.4"}
MEMORY_TARGETS = {"private": "10.0.0.1", "metadata": "169.254.169.254", "inside": "10.0.0.5"}
LOOPBACK_PERMIT = networks(["127.0.0.1/32"])
DOCUMENTATION_PERMIT = networks(["192.0.2.0/24"])  # the memory site's address, permitted there


class FetcherContract:
    """A subclass provides ``made``: (a factory of fetchers given ``allow``, the site's base URL, and
    a function listing the paths requested so far)."""

    @pytest.fixture
    def made(self) -> Any:
        raise NotImplementedError("a backend's suite provides its fetchers")

    def get(self, made: Any, path: str, **kwargs: Any) -> Any:
        factory, base, _sent = made

        async def go() -> Any:
            async with factory() as fetcher:
                assert isinstance(fetcher, Fetcher)
                return await fetcher.get(base + path, **{"max_bytes": 1 << 20, **kwargs})

        return asyncio.run(go())

    def test_a_body_and_its_type(self, made: Any) -> None:
        page = self.get(made, "/plain")
        assert page.body == TEXT and page.status == 200 and page.content_type.startswith("text/plain")

    def test_gzip_is_inflated_and_the_cap_counts_inflated_bytes(self, made: Any) -> None:
        page = self.get(made, "/gzip")
        assert page.body == TEXT and page.wire_bytes < len(TEXT)
        with pytest.raises(FetchError, match="sent more than the 1000-byte limit"):
            self.get(made, "/gzip", max_bytes=1000)
        with pytest.raises(FetchError, match=f"is {len(TEXT)} bytes, over the 1000-byte limit"):
            self.get(made, "/plain", max_bytes=1000)

    def test_redirects_are_followed_by_hand(self, made: Any) -> None:
        _factory, base, _sent = made
        assert self.get(made, "/hop").url == base + "/plain"
        assert self.get(made, "/hop-absolute").body == TEXT
        with pytest.raises(FetchError, match="redirected more than 5 times"):
            self.get(made, "/loop0")
        with pytest.raises(FetchError, match="without a Location"):
            self.get(made, "/no-location")

    @pytest.mark.parametrize("path", ["/to-private", "/to-private-name", "/to-metadata", "/to-file"])
    def test_a_redirect_into_private_space_is_refused_before_it_is_sent(self, made: Any, path: str) -> None:
        _factory, _base, sent = made
        with pytest.raises(FetchRefused):
            self.get(made, path)
        assert sent()[-1] == path  # the hop was the last request: nothing went to the private address

    def test_a_gate_wraps_every_request_hops_included(self, made: Any) -> None:
        _factory, base, sent = made
        seen: list[str] = []

        @contextlib.asynccontextmanager
        async def gate(url: str) -> AsyncIterator[None]:
            seen.append(url)
            if url.endswith("/plain") and len(seen) > 2:  # the second time round: the hop is refused
                raise FetchRefused(f"the gate refuses {url}")
            yield

        assert self.get(made, "/hop", gate=gate).body == TEXT
        assert seen == [base + "/hop", base + "/plain"]
        before = len(sent())
        with pytest.raises(FetchRefused, match="the gate refuses"):
            self.get(made, "/hop", gate=gate)
        assert sent()[before:] == ["/hop"]  # the refused hop was never sent

    def test_status_other_than_200(self, made: Any) -> None:
        with pytest.raises(FetchError, match="answered HTTP 410 Gone"):
            self.get(made, "/gone")
        assert self.get(made, "/gone", any_status=True).status == 410

    def test_a_meter_is_shared(self, made: Any) -> None:
        meter = Meter(len(TEXT) + 1)
        self.get(made, "/gzip", meter=meter)
        assert meter.used == len(TEXT)
        with pytest.raises(FetchError, match="total budget ran out"):
            self.get(made, "/plain", meter=meter)

    def test_without_a_permit_the_site_is_refused(self, made: Any) -> None:
        factory, base, sent = made
        before = len(sent())

        async def go() -> None:
            async with factory(allow=()) as fetcher:
                await fetcher.get(base + "/plain", max_bytes=100)

        with pytest.raises(FetchRefused, match="allow_private"):
            asyncio.run(go())
        assert len(sent()) == before


def filled(text: str, base: str, targets: dict[str, str]) -> str:
    return text.replace("{base}", base).format(**targets) if "{" in text else text


class Names(AbstractResolver):
    """A resolver double: inside.test is a private (here: loopback, unpermitted) address."""

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        answer = LOOPBACK_TARGETS["inside"] if host == "inside.test" else "127.0.0.1"
        return [ResolveResult(hostname=host, host=answer, port=port, family=socket.AF_INET, proto=0, flags=0)]

    async def close(self) -> None:
        pass


@pytest.fixture(scope="module")
def site() -> Iterator[tuple[str, list[str]]]:
    requested: list[str] = []
    holder: dict[str, str] = {}

    async def handler(request: web.Request) -> web.Response:
        requested.append(request.path)
        status, headers, body = ROUTES.get(request.path, (404, {}, b"not here"))
        headers = {k: filled(v, holder["base"], LOOPBACK_TARGETS) for k, v in headers.items()}
        return web.Response(status=status, headers=headers, body=body)

    app = web.Application()
    app.router.add_get("/{tail:.*}", handler)
    with serving_app(app) as running:
        holder["base"] = running.url
        yield running.url, requested


class TestAiohttpClient(FetcherContract):
    @pytest.fixture
    def made(self, site: tuple[str, list[str]]) -> Any:
        base, requested = site

        def factory(allow: Any = LOOPBACK_PERMIT) -> Fetcher:
            return Client(allow, timeout=5, resolver=Names())

        return factory, base, lambda: list(requested)


class TestMemoryFetcher(FetcherContract):
    @pytest.fixture
    def made(self) -> Any:
        base = "http://site.test"
        routes = {
            base + path: Route(status, body, {k: filled(v, base, MEMORY_TARGETS) for k, v in headers.items()})
            for path, (status, headers, body) in ROUTES.items()
        }
        fetchers: list[MemoryFetcher] = []

        def factory(allow: Any = DOCUMENTATION_PERMIT) -> Fetcher:
            names = {"inside.test": [MEMORY_TARGETS["inside"]], "site.test": ["192.0.2.10"]}
            fetchers.append(MemoryFetcher(routes, allow, names=names))
            return fetchers[-1]

        def sent() -> list[str]:
            return [url.removeprefix(base) for f in fetchers for _address, url in f.sent]

        return factory, base, sent
