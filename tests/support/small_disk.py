"""A real small disk for the tests that fill one up: a tmpfs mounted under the test's folder (root
only; the suite runs as root, as `make test` does)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def tmpfs(parent: Path, megabytes: int) -> Iterator[Path]:
    """A folder that is a ``megabytes`` MiB tmpfs, unmounted after."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    disk = parent / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={megabytes}m", "tmpfs", str(disk)], check=True)
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)
