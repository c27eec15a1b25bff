"""Running a benchmark's child process under a hard memory limit (a Linux memory cgroup).

``ru_maxrss`` counts the resident pages of a file the process has mapped — for drsg, LMDB's map —
beside its own heap. Those are page cache the kernel takes back under pressure, and on Linux 6.18
with ext4's large folios a read fault maps a whole folio (up to 2 MiB) whatever ``madvise`` says,
so a random-access import has most of its file resident while memory is free. A limit the kernel
enforces (the page cache charged to it too) says what ``ru_maxrss`` cannot: whether the job runs in
that much memory, and how fast.

The limit is a child of this process's own memory cgroup (v1 ``memory.limit_in_bytes`` or v2
``memory.max``), made for one run and removed after it; it needs root (or a delegated cgroup).
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")


@dataclass(frozen=True)
class Limited:
    """A finished run under a limit: its wall time, stdout, and the cgroup's own peak."""

    secs: float
    stdout: str
    peak_bytes: int  # the most memory (heap + page cache) ever charged to the run
    major_faults: int | None  # pages read back from disk because the limit evicted them


def _own_cgroup() -> tuple[Path, str, str] | None:
    """(folder, limit file, peak file) of this process's memory cgroup, or None without one."""
    unified = ROOT / "cgroup.controllers"  # present when v2 alone is mounted at /sys/fs/cgroup
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(","):  # v1
            return ROOT / "memory" / path.lstrip("/"), "memory.limit_in_bytes", "memory.max_usage_in_bytes"
        if controllers == "" and unified.exists() and "memory" in unified.read_text().split():
            return ROOT / path.lstrip("/"), "memory.max", "memory.peak"  # v2
    return None


def unavailable() -> str | None:
    """Why no limited run can be made here, or None when one can."""
    own = _own_cgroup()
    if own is None:
        return "no memory cgroup controller on this machine"
    if not os.access(own[0], os.W_OK):
        return f"cannot make a cgroup under {own[0]} (run as root, or delegate it)"
    return None


@contextmanager
def _child(limit_bytes: int) -> Iterator[tuple[Path, str]]:
    own = _own_cgroup()
    if own is None:
        raise RuntimeError("no memory cgroup controller on this machine")
    folder, limit_file, peak_file = own
    child = folder / f"drsg-bench-{os.getpid()}"
    child.mkdir()
    try:
        (child / limit_file).write_text(str(limit_bytes))
        yield child, peak_file
    finally:
        for _ in range(50):  # the last process leaves a moment after it exits
            try:
                child.rmdir()
                break
            except OSError:
                time.sleep(0.1)


def run(cmd: Sequence[str], limit_mib: int, cwd: Path | None = None) -> Limited:
    """Run ``cmd`` to its end inside a fresh cgroup limited to ``limit_mib``; raise on failure."""
    with _child(limit_mib << 20) as (child, peak_file):
        procs = child / "cgroup.procs"

        def enter() -> None:  # in the child, before exec: everything it maps is charged here
            procs.write_text(str(os.getpid()))

        os.sync()
        start = time.perf_counter()
        out = subprocess.run(list(cmd), capture_output=True, text=True, cwd=cwd, preexec_fn=enter)
        secs = time.perf_counter() - start
        if out.returncode != 0:
            raise SystemExit(
                f"{' '.join(cmd[:3])} … under {limit_mib} MiB failed ({out.returncode}):\n{out.stderr[-4000:]}"
            )
        peak = int((child / peak_file).read_text())
        stat = dict(line.split()[:2] for line in (child / "memory.stat").read_text().splitlines())
        faults = int(stat["pgmajfault"]) if "pgmajfault" in stat else None
        return Limited(secs, out.stdout, peak, faults)
