"""A throwaway git repository for tests of what drsg reads from a working tree."""

from __future__ import annotations

import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path


def commit_tree(root: Path, files: Mapping[str, str], tracked: Iterable[str] | None = None) -> str:
    """Write ``files`` under ``root``, make it a repository, commit ``tracked`` (default: every file);
    returns the commit's sha."""
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    git = ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run([*git, "add", *(tracked if tracked is not None else ["."])], check=True)
    subprocess.run([*git, "commit", "-qm", "one"], check=True)
    return subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()


def git(root: Path, *args: str) -> str:
    """Run ``git ARGS`` in ``root`` as a throwaway identity; returns what it printed (fails on an error)."""
    command = ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t", *args]
    return subprocess.run(command, capture_output=True, text=True, check=True).stdout
