"""The machine's TCP sockets as the kernel reports them, for tests that wait on bytes in flight."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path


def tcp_sockets() -> Iterator[tuple[int, int, int, int]]:
    """``(local port, remote port, bytes queued to send, bytes received unread)`` of each TCP socket
    on this machine (/proc/net/tcp, tcp6)."""
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            tx, rx = fields[4].split(":")
            yield int(fields[1].rsplit(":", 1)[1], 16), int(fields[2].rsplit(":", 1)[1], 16), int(tx, 16), int(rx, 16)
