"""The SSRF suite: every target is refused by the fetch guard before a byte is sent.

It runs inside a network namespace of its own that has only loopback (``unshare -rn``), so even a
broken guard cannot reach a real private or public address: a bypass fails as "network
unreachable", which is not the guard's FetchRefused and so fails the test. Collected in the normal
namespace, this module is one test that re-runs it inside the namespace and checks the count.

Every target names port P, where listening sockets on every IPv4 and IPv6 loopback address wait:
after each test nothing may be waiting in their accept queues. The positive controls show that
check can fail: through a permit the same listener does see the connection.
"""

from __future__ import annotations

import asyncio
import os
import re
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.abc import AbstractResolver, ResolveResult

from drsg.kernel.errors import FetchError, FetchRefused
from drsg.pipeline.fetch import base as base_module
from drsg.pipeline.fetch.client import Client, GuardedResolver
from drsg.pipeline.fetch.guard import networks

IN_NAMESPACE = os.environ.get("DRSG_TEST_NETNS") == "1"
MIN_TARGETS = 60


if not IN_NAMESPACE:

    def test_the_suite_runs_in_a_loopback_only_namespace() -> None:
        command = (
            "ip link set lo up && exec env DRSG_TEST_NETNS=1 "
            f"{sys.executable} -m pytest {__file__} -q -p no:cacheprovider"
        )
        ran = subprocess.run(
            ["unshare", "-rn", "sh", "-c", command],
            capture_output=True,
            text=True,
            cwd=Path(__file__).resolve().parents[2],
            timeout=240,
        )
        assert ran.returncode == 0, ran.stdout[-4000:] + ran.stderr[-2000:]
        passed = re.search(r"(\d+) passed", ran.stdout)
        assert passed and int(passed.group(1)) >= MIN_TARGETS, ran.stdout[-2000:]
        assert "failed" not in ran.stdout and "skipped" not in ran.stdout


else:

    def test_this_namespace_has_only_loopback() -> None:
        assert [name for _index, name in socket.if_nameindex()] == ["lo"]

    @pytest.fixture(scope="module")
    def port() -> Iterator[int]:
        """A port with listeners on 0.0.0.0 and [::] (every loopback address of either family)."""
        v4 = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        v4.bind(("0.0.0.0", 0))
        number = v4.getsockname()[1]
        v6 = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
        v6.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        v6.bind(("::", number))
        for sock in (v4, v6):
            sock.listen(64)
            sock.setblocking(False)
        _LISTENERS[:] = [v4, v6]
        yield number
        v4.close()
        v6.close()

    _LISTENERS: list[socket.socket] = []

    def connections() -> int:
        """How many connections reached the listeners since the last call (they are closed)."""
        seen = 0
        for sock in _LISTENERS:
            while True:
                try:
                    peer, _ = sock.accept()
                except BlockingIOError:
                    break
                peer.close()
                seen += 1
        return seen

    def refused(url: str, **client: Any) -> FetchRefused:
        async def go() -> None:
            async with Client(timeout=2.0, **client) as c:
                await c.get(url, max_bytes=1 << 16)

        with pytest.raises(FetchRefused) as caught:
            asyncio.run(go())
        assert connections() == 0, f"{url}: a connection reached a listener"
        return caught.value

    IPV4_FORMS = [
        "127.0.0.1",
        "127.1",  # short forms
        "127.0.1",
        "2130706433",  # decimal
        "0x7f000001",  # hex
        "0x7f.0.0.1",
        "0x7f.1",
        "0177.0.0.1",  # octal
        "0177.0.0.01",
        "017700000001",
        "127.000.000.001",
        "127.255.255.254",
        "0",
        "0.0.0.0",
        "0x0",
        "10.0.0.1",
        "10.255.255.255",
        "172.16.0.1",
        "172.31.255.255",
        "192.168.0.1",
        "169.254.169.254",  # cloud metadata
        "2852039166",  # the metadata address, decimal
        "0xa9fea9fe",  # and hex
        "169.254.170.2",
        "100.64.0.1",  # CGNAT
        "100.127.255.255",
        "192.0.0.1",
        "192.0.2.1",  # documentation
        "198.51.100.1",
        "203.0.113.1",
        "198.18.0.1",  # benchmarking
        "198.19.255.255",
        "192.88.99.1",
        "224.0.0.1",  # multicast
        "239.255.255.250",
        "240.0.0.1",  # reserved
        "255.255.255.255",
    ]
    IPV6_FORMS = [
        "[::1]",
        "[0:0:0:0:0:0:0:1]",
        "[::]",
        "[::ffff:127.0.0.1]",  # IPv4-mapped
        "[::ffff:7f00:1]",
        "[::ffff:169.254.169.254]",
        "[::ffff:0.0.0.0]",
        "[::127.0.0.1]",  # IPv4-compatible
        "[::7f00:1]",
        "[64:ff9b::127.0.0.1]",  # NAT64
        "[64:ff9b::7f00:1]",
        "[64:ff9b::a9fe:a9fe]",
        "[2002:7f00:1::]",  # 6to4
        "[2002:a9fe:a9fe::1]",
        "[2001:0:4136:e378:8000:63bf:80ff:fffe]",  # Teredo (client 127.0.0.1, inverted)
        "[fe80::1%25lo]",  # zone ids
        "[::1%25lo]",
        "[fe80::1]",
        "[fc00::1]",
        "[fd00::1]",
        "[fec0::1]",
        "[ff02::1]",
        "[2001:db8::1]",
    ]
    TRICKS = [
        "http://user@127.0.0.1:{p}/",
        "http://user:secret@localhost:{p}/",
        "http://example.com@127.0.0.1:{p}/",
        "http://127.0.0.1:{p}\\@example.com/",  # backslash
        "http://example.com\\@127.0.0.1:{p}/",
        "http://127.0.0.1:{p}#@example.com/",
        "http://127.0.0.1:{p}?@example.com/",
        "http://localhost:{p}/",
        "http://LOCALHOST:{p}/",
        "http://localhost.:{p}/",
        "http://127.0.0.1.:{p}/",  # a trailing dot
        "http://0x7f.0x0.0x0.0x1.:{p}/",
        "http://ⓛⓞⓒⓐⓛⓗⓞⓢⓣ:{p}/",  # IDN look-alikes
        "http://locaⅼhost:{p}/",  # U+217C, SMALL ROMAN NUMERAL FIFTY
        "http://app.ⓛⓞⓒⓐⓛⓗⓞⓢⓣ:{p}/",
        "http://app.localhost:{p}/",  # RFC 6761: every *.localhost is loopback
        "http://１２７.０.０.１:{p}/",  # fullwidth digits
        "http://127。0。0。1:{p}/",  # ideographic full stops
        "file:///etc/passwd",
        "ftp://127.0.0.1:{p}/",
        "gopher://127.0.0.1:{p}/_",
        "dict://127.0.0.1:{p}/",
        "data:text/html,hi",
        "javascript:alert(1)",
        "http:///nohost",
    ]

    @pytest.mark.parametrize("host", IPV4_FORMS + IPV6_FORMS)
    def test_address_forms_are_refused(host: str, port: int) -> None:
        refused(f"http://{host}:{port}/")

    @pytest.mark.parametrize("template", TRICKS)
    def test_url_tricks_are_refused(template: str, port: int) -> None:
        refused(template.format(p=port))

    class Answers(AbstractResolver):
        """A resolver test double: each name answers the addresses listed, the next list per lookup."""

        def __init__(self, table: dict[str, list[list[str]]]) -> None:
            self.table = table
            self.lookups: dict[str, int] = {}

        async def resolve(
            self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
        ) -> list[ResolveResult]:
            n = self.lookups.get(host, 0)
            self.lookups[host] = n + 1
            answers = self.table[host]
            return [_result(host, a, port) for a in answers[min(n, len(answers) - 1)]]

        async def close(self) -> None:
            pass

    def _result(host: str, address: str, port: int) -> ResolveResult:
        family = socket.AF_INET6 if ":" in address else socket.AF_INET
        return ResolveResult(hostname=host, host=address, port=port, family=family, proto=0, flags=0)

    NAMES = {
        "metadata.test": [["169.254.169.254"]],
        "inside.test": [["10.0.0.5"]],
        "loop.test": [["127.0.0.1"]],
        "v6loop.test": [["::1"]],
        "mapped.test": [["::ffff:127.0.0.1"]],
        "nat64.test": [["64:ff9b::7f00:1"]],
        "cgnat.test": [["100.64.0.9"]],
        "allbad.test": [["127.0.0.1", "::1", "10.1.1.1"]],
    }

    @pytest.mark.parametrize("name", sorted(NAMES))
    def test_names_that_resolve_to_refused_addresses(name: str, port: int) -> None:
        refused(f"http://{name}:{port}/", resolver=Answers(NAMES))

    def test_rebinding_resolver_is_checked_on_the_answer_connected_to(port: int) -> None:
        """A pre-check sees a public answer; the lookup the connection uses gets loopback: refused."""
        answers = Answers({"rebind.test": [["93.184.216.34"], ["127.0.0.1"]]})

        async def precheck() -> list[ResolveResult]:
            return await GuardedResolver((), answers).resolve("rebind.test", port)

        assert asyncio.run(precheck())[0]["host"] == "93.184.216.34"
        refused(f"http://rebind.test:{port}/", resolver=answers)
        assert answers.lookups["rebind.test"] == 2

    def test_mixed_answers_keep_only_the_permitted_ones() -> None:
        answers = Answers({"mixed.test": [["127.0.0.1", "93.184.216.34", "::1"]]})
        kept = asyncio.run(GuardedResolver((), answers).resolve("mixed.test", 80))
        assert [a["host"] for a in kept] == ["93.184.216.34"]

    @pytest.mark.parametrize("host", ["127.0.0.1", "[::1]", "[::ffff:127.0.0.1]", "loop.test", "v6loop.test"])
    def test_the_socket_check_alone_refuses(host: str, port: int, monkeypatch: pytest.MonkeyPatch) -> None:
        """With the URL check and the resolver's filter both disabled, the socket factory still refuses."""
        monkeypatch.setattr(base_module, "checked_url", lambda url, allow=(): url)

        async def unfiltered(self: GuardedResolver, host: str, port: int = 0, family: Any = 0) -> Any:
            return await self._inner.resolve(host, port, family)

        monkeypatch.setattr(GuardedResolver, "resolve", unfiltered)
        error = refused(f"http://{host}:{port}/", resolver=Answers(NAMES))
        assert "refused to connect to" in str(error)

    @pytest.fixture(scope="module")
    def site(port: int) -> Iterator[str]:
        """A permitted site on 127.0.0.1 whose redirects lead into private space."""
        targets = {
            "/to-127-0-0-2": f"http://127.0.0.2:{port}/",
            "/to-v6": f"http://[::1]:{port}/",
            "/to-decimal": f"http://2130706434:{port}/",
            "/to-mapped": f"http://[::ffff:127.0.0.2]:{port}/",
            "/to-metadata": "http://169.254.169.254/latest/meta-data/",
            "/to-file": "file:///etc/passwd",
            "/twice": "/to-127-0-0-2",
        }
        app = web.Application()
        for path, location in targets.items():
            app.router.add_get(path, _redirect(location))
        app.router.add_get("/ok", _fine)
        app.router.add_get("/links", _links(port))
        loop = asyncio.new_event_loop()
        runner = web.AppRunner(app)
        loop.run_until_complete(runner.setup())
        tcp = web.TCPSite(runner, "127.0.0.1", 0)
        loop.run_until_complete(tcp.start())
        thread = threading.Thread(target=loop.run_forever, daemon=True)
        thread.start()
        server = tcp._server
        assert server is not None and server.sockets
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)

    def _redirect(location: str) -> Any:
        async def handler(_request: web.Request) -> web.Response:
            raise web.HTTPFound(location)

        return handler

    async def _fine(_request: web.Request) -> web.Response:
        return web.Response(text="fine")

    PRIVATE_LINKS = [
        "http://127.0.0.2:{p}/attention",
        "http://[::1]:{p}/attention",
        "http://2130706434:{p}/attention",
        "http://[::ffff:127.0.0.3]:{p}/attention",
        "http://10.0.0.1/attention",
        "http://169.254.169.254/attention",
        "http://localhost:{p}/attention",
    ]

    def _links(port: int) -> Any:
        async def handler(_request: web.Request) -> web.Response:
            anchors = "".join(f'<li><a href="{u.format(p=port)}">attention</a></li>' for u in PRIVATE_LINKS)
            body = f"<html><body><main><h1>Attention</h1><p>Attention.</p><ul>{anchors}</ul></main></body></html>"
            return web.Response(text=body, content_type="text/html")

        return handler

    SITE_PERMIT = networks(["127.0.0.1/32"])

    @pytest.mark.parametrize(
        "path", ["/to-127-0-0-2", "/to-v6", "/to-decimal", "/to-mapped", "/to-metadata", "/to-file", "/twice"]
    )
    def test_redirects_into_private_space_are_refused(site: str, path: str) -> None:
        refused(site + path, allow=SITE_PERMIT)

    def test_the_crawler_refuses_every_private_link_it_would_follow(site: str, port: int) -> None:
        from drsg.pipeline.fetch.crawl import Budget, crawl

        async def go() -> Any:
            async with Client(SITE_PERMIT, timeout=2.0) as client:
                return await crawl(site + "/links", client, Budget(pages=20, spacing=0.0), "attention")

        result = asyncio.run(go())
        assert [p.url for p in result.pages] == [site + "/links"]
        assert len(result.dropped) == len(PRIVATE_LINKS)
        assert all("allow_private" in d.reason for d in result.dropped), result.dropped
        assert connections() == 0

    def test_positive_control_through_the_permit(site: str, port: int) -> None:
        async def go() -> bytes:
            async with Client(SITE_PERMIT) as c:
                return (await c.get(site + "/ok", max_bytes=100)).body

        assert asyncio.run(go()) == b"fine"

        async def listener() -> None:  # permitted, the bare listener is reached (it never answers)
            async with Client(networks(["127.0.0.0/8"]), timeout=0.5) as c:
                await c.get(f"http://127.0.0.2:{port}/", max_bytes=100)

        with pytest.raises(FetchError) as caught:
            asyncio.run(listener())
        assert not isinstance(caught.value, FetchRefused)
        assert connections() == 1

    def test_a_bypass_here_would_fail_as_unreachable(port: int) -> None:
        """What a guard bug would meet: no route off this machine (so no packet can leave it)."""
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        with pytest.raises(OSError) as caught:
            sock.connect(("93.184.216.34", 80))
        sock.close()
        assert caught.value.errno in (101, 113)  # ENETUNREACH, EHOSTUNREACH
