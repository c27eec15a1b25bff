"""Every spelling of a refused IPv4 address is refused by the URL check, and the guard's verdict
on an address never depends on how it is written (the oracle: ``ipaddress`` on the plain form)."""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given
from hypothesis import strategies as st

from drsg.kernel.errors import FetchRefused
from drsg.pipeline.fetch.client import checked_url
from drsg.pipeline.fetch.guard import refusal

REFUSED_BLOCKS = ["0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12"]
REFUSED_BLOCKS += ["192.168.0.0/16", "198.18.0.0/15", "224.0.0.0/4", "240.0.0.0/4", "192.0.2.0/24"]


@st.composite
def refused_v4(draw: st.DrawFn) -> ipaddress.IPv4Address:
    net = ipaddress.IPv4Network(draw(st.sampled_from(REFUSED_BLOCKS)))
    return net[draw(st.integers(0, net.num_addresses - 1))]


def spellings(ip: ipaddress.IPv4Address) -> list[str]:
    n = int(ip)
    a, b, c, d = ip.packed
    return [
        str(ip),
        str(n),  # decimal
        hex(n),  # hex
        f"0{oct(n)[2:]}",  # octal
        ".".join(f"0{oct(x)[2:]}" if x else "0" for x in (a, b, c, d)),  # dotted octal
        ".".join(hex(x) for x in (a, b, c, d)),  # dotted hex
        f"{a}.{(b << 16) | (c << 8) | d}",  # short forms
        f"{a}.{b}.{(c << 8) | d}",
        f"[::ffff:{ip}]",  # IPv4-mapped
        f"[::{ip}]",  # IPv4-compatible
        f"[64:ff9b::{ip}]",  # NAT64
        f"[2002:{n >> 16:x}:{n & 0xFFFF:x}::1]",  # 6to4
        "".join(chr(ord(ch) + 0xFEE0) if ch.isdigit() else ch for ch in str(ip)),  # fullwidth digits
    ]


@given(refused_v4(), st.integers(1, 65535))
def test_every_spelling_of_a_refused_address_is_refused(ip: ipaddress.IPv4Address, port: int) -> None:
    assert refusal(ip) is not None
    for spelled in spellings(ip):
        with pytest.raises(FetchRefused):
            checked_url(f"http://{spelled}:{port}/")


@given(st.integers(0, 2**32 - 1))
def test_the_verdict_does_not_depend_on_the_spelling(n: int) -> None:
    ip = ipaddress.IPv4Address(n)
    expected = refusal(ip) is not None
    for spelled in spellings(ip)[:8]:  # the IPv4 spellings: the same address
        try:
            checked_url(f"http://{spelled}/")
            refused = False
        except FetchRefused:
            refused = True
        assert refused == expected, spelled
