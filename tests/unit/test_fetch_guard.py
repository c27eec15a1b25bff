"""The fetch guard: the address policy (the tricky IPv6 forms included) and guarded downloads from a
real server on loopback, which must be refused unless [fetch] allow_private lets it in."""

from __future__ import annotations

import ipaddress
import socket
import threading
import time

import pytest

from drsg.kernel.errors import FetchError
from drsg.pipeline.fetch.guard import download, networks, refusal
from tests.support.static_server import serving

REFUSED = [
    "127.0.0.1",
    "127.255.0.9",
    "0.0.0.0",
    "10.1.2.3",
    "172.16.0.1",
    "192.168.1.1",
    "169.254.169.254",  # cloud metadata
    "100.64.0.1",  # CGNAT
    "224.0.0.1",
    "239.255.255.250",
    "240.0.0.1",
    "255.255.255.255",
    "192.0.2.1",
    "198.18.0.1",
    "::1",
    "::",
    "::7f00:1",  # IPv4-compatible 127.0.0.1: is_global says True
    "::ffff:127.0.0.1",  # IPv4-mapped
    "::ffff:10.0.0.1",
    "64:ff9b::7f00:1",  # NAT64 of 127.0.0.1
    "64:ff9b::808:808",  # NAT64 even of a public address: the gateway decides where it goes
    "64:ff9b:1::1",
    "2002:7f00:1::1",  # 6to4 of 127.0.0.1
    "2002:808:808::1",
    "2001:0:4136:e378:8000:63bf:3fff:fdd2",  # Teredo
    "ff02::1",
    "ff0e::1",  # global-scope multicast
    "fe80::1",
    "fe80::1%eth0",
    "fc00::1",
    "fd12:3456::1",
    "fec0::1",
    "2001:db8::1",
    "100::1",
]
ALLOWED = ["8.8.8.8", "1.1.1.1", "93.184.216.34", "2606:4700:4700::1111", "2001:4860:4860::8888", "::ffff:8.8.8.8"]


@pytest.mark.parametrize("address", REFUSED)
def test_refused_addresses(address: str) -> None:
    assert refusal(address) is not None


@pytest.mark.parametrize("address", ALLOWED)
def test_global_addresses(address: str) -> None:
    assert refusal(address) is None


def test_is_global_alone_would_let_these_through() -> None:
    """Why the policy is more than ipaddress.is_global: these pass it, and the guard refuses them."""
    passes = [
        a for a in ("::7f00:1", "64:ff9b::808:808", "2002:808:808::1", "ff0e::1") if ipaddress.ip_address(a).is_global
    ]
    assert passes and all(refusal(a) is not None for a in passes)


def test_allow_private() -> None:
    allow = networks(["127.0.0.0/8", "fd00::/8"])
    assert refusal("127.0.0.1", allow) is None
    assert refusal("::ffff:127.0.0.1", allow) is None  # judged as the IPv4 address it maps
    assert refusal("fd12::1", allow) is None
    assert refusal("10.0.0.1", allow) is not None
    assert refusal("::7f00:1", allow) is not None  # an IPv6 form is not the IPv4 network


def test_loopback_is_refused_unless_allowed() -> None:
    body = b"\0asm" + bytes(1000)
    with serving({"/p.wasm": (200, {}, body)}) as base:
        with pytest.raises(FetchError, match=r"127\.0\.0\.1 is a private, loopback.*allow_private"):
            download(f"{base}/p.wasm", max_bytes=1 << 20)
        got = download(f"{base}/p.wasm", max_bytes=1 << 20, allow_private=networks(["127.0.0.1/32"]))
        assert got.body == body and got.status == 200


def test_redirects_are_followed_by_hand_and_bounded() -> None:
    allow = networks(["127.0.0.1/32"])
    routes = {f"/r{i}": (302, {"Location": f"/r{i + 1}"}, b"") for i in range(7)}
    routes["/r7"] = (200, {}, b"end")
    routes["/to-file"] = (301, {"Location": "file:///etc/passwd"}, b"")
    with serving(routes) as base:
        assert download(f"{base}/r2", max_bytes=100, allow_private=allow).body == b"end"  # 5 redirects
        with pytest.raises(FetchError, match="redirected more than 5 times"):
            download(f"{base}/r1", max_bytes=100, allow_private=allow)
        with pytest.raises(FetchError, match="not an http"):
            download(f"{base}/to-file", max_bytes=100, allow_private=allow)
        with pytest.raises(FetchError, match="HTTP 404"):
            download(f"{base}/nothing", max_bytes=100, allow_private=allow)


def test_a_redirect_to_loopback_is_refused_at_that_hop() -> None:
    """The first hop is allowed (its own range); the next one lands on an address that is not."""
    hop = {"/hop": (302, {"Location": "http://127.0.0.2:9/x"}, b"")}
    with serving(hop) as base, pytest.raises(FetchError, match=r"127\.0\.0\.2 is a private"):
        download(f"{base}/hop", max_bytes=100, allow_private=networks(["127.0.0.1/32"]))


def test_the_size_cap() -> None:
    big = {"/big": (200, {}, bytes(5000))}
    with serving(big) as base, pytest.raises(FetchError, match="5000 bytes, over the 4096-byte limit"):
        download(f"{base}/big", max_bytes=4096, allow_private=networks(["127.0.0.1/32"]))


@pytest.mark.parametrize("url", ["file:///etc/passwd", "ftp://example.com/x", "gopher://h/", "http:///nohost"])
def test_only_http_urls(url: str) -> None:
    with pytest.raises(FetchError, match="not an http"):
        download(url, max_bytes=100)


def test_a_trickling_server_is_cut_at_the_total_timeout() -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    port = listener.getsockname()[1]

    def trickle() -> None:
        conn, _ = listener.accept()
        conn.recv(1000)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n")
        try:
            for _ in range(40):
                conn.sendall(b"x")
                time.sleep(0.05)
        except OSError:
            pass
        conn.close()

    thread = threading.Thread(target=trickle, daemon=True)
    thread.start()
    start = time.monotonic()
    with pytest.raises(FetchError, match=r"took longer than 0\.3 s"):
        download(
            f"http://127.0.0.1:{port}/", max_bytes=5000, allow_private=networks(["127.0.0.1/32"]), total_timeout=0.3
        )
    assert time.monotonic() - start < 1.5
    listener.close()
