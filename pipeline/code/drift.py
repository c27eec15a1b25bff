"""How far a working tree had drifted from the commit it names, recorded on the plane it was read into.

The walk reads the working tree, not a commit, so a plane says which commit it was read beside and
how many files differed (``git status``: modified — tracked files with edits, staged or not, or
deleted — and untracked, both counted under the walk's root only; ignored files not at all, nor
what the walk's floor never reads — dotfiles such as ``.gitignore``, drsg's ``drsg.toml`` and
store — since they cannot make the graph differ from the commit). Every
answer read from the plane then carries :func:`synced_line`. A plane that never measured (written
before this, or read outside git) says nothing: claiming "clean" for it would be an overclaim.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

SYNCED_COMMIT = "synced_commit"
SYNCED_ROOT = "synced_root"
SYNCED_MODIFIED = "synced_modified"
SYNCED_UNTRACKED = "synced_untracked"


def drift(root: Path) -> dict[str, Any]:
    """The plane properties recording ``root``'s commit and drift; empty outside git (or without git)."""
    # the walk (pathspec) loads here: every one-shot read asks for synced_line, a measure is a digest's
    from drsg.pipeline.code.walk import git_root, run_git, under_floor

    root = root.resolve()
    top = git_root(root)
    if top is None:
        return {}
    inside = root.relative_to(top).as_posix()
    prefix = "" if inside == "." else inside + "/"  # porcelain paths are the repository's, not the root's
    head = run_git(root, "rev-parse", "HEAD")
    # --no-optional-locks: a status never rewrites the index, which `serve watch` watches for commits
    status = run_git(root, "--no-optional-locks", "status", "--porcelain=v1", "-z", "--untracked-files=all", "--", ".")
    if head is None or status is None:
        return {}  # a repository without a commit yet, or git missing: nothing to name
    modified = untracked = 0
    entries = iter(status.split("\0"))
    for entry in entries:
        if len(entry) < 3:
            continue
        code = entry[:2]
        if under_floor(root, entry[3:].removeprefix(prefix)):
            pass  # not what the walk reads: it cannot make the graph differ
        elif code == "??":
            untracked += 1
        elif code != "!!":
            modified += 1
        if "R" in code or "C" in code:
            next(entries, None)  # a rename's second field is the old path
    return {
        SYNCED_COMMIT: head.strip(),
        SYNCED_ROOT: str(root),
        SYNCED_MODIFIED: modified,
        SYNCED_UNTRACKED: untracked,
    }


def synced_line(props: Mapping[str, Any]) -> str | None:
    """The line every answer from a measured plane carries; None for a plane that never measured."""
    commit = props.get(SYNCED_COMMIT)
    if not isinstance(commit, str) or not commit:
        return None
    line = f"synced: commit {commit[:12]}"
    modified, untracked = props.get(SYNCED_MODIFIED), props.get(SYNCED_UNTRACKED)
    if not isinstance(modified, int) or not isinstance(untracked, int) or not (modified or untracked):
        return line
    return (
        f"{line} — parsed from a working tree with {modified} modified and {untracked} untracked, so the graph "
        "holds what that commit does not"
    )
