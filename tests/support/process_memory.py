"""How much memory another process holds, from /proc (Linux)."""

from __future__ import annotations

from pathlib import Path


def memory_kb(pid: int) -> dict[str, int]:
    """``VmRSS``, ``RssAnon`` (heap and stacks) and ``RssFile`` (mapped files) of ``pid``, in KiB."""
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "RssAnon", "RssFile"):
            out[name] = int(value.split()[0])
    return out
