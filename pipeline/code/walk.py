"""Walking a source tree: drsg's floor, the project's ignore files, and an account of both.

The **floor** always stands: dotfiles and dot-directories, build and dependency directories
(``target/``, ``node_modules/``, ``dist/``, ``build/``, ``.venv/``, ``__pycache__/``, ``vendor/``
and their kin), drsg's own store and sidecars, and a root-level ``logs/``. What the floor leaves is
the denominator of every percentage: a ``node_modules/`` of 80,000 files would make one meaningless.

Then the project's own word on what is derived, each chosen by ``--ignore-files``:

- ``gitignore`` (the default): ``.gitignore`` in every directory of the walk, the ones in the
  directories above it up to the repository's root, and ``.git/info/exclude`` — git's rules, through
  ``pathspec``'s gitignore-exact matcher (a deeper file overrides a shallower one, the last matching
  line of a file wins, nothing under an ignored directory comes back).
- ``dockerignore``: the root's ``.dockerignore``, its patterns anchored at the root and each file
  matched on its own, as Docker reads them (so ``!notes/deep`` brings back a file under ``notes``).

``--tracked-only`` keeps only what git tracks (one ``git ls-files``; a tracked file with edits is
read as it stands). Every file withheld is recorded with the rule that withheld it.
"""

from __future__ import annotations

import os
import subprocess
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pathspec

from drsg.kernel.errors import UsageError

#: directories the floor always skips, wherever they are: build output, dependencies, caches
#: (dot-directories — .git, .venv, .tox, .mypy_cache — go as dotfiles; so does any virtualenv)
FLOOR_DIRS = frozenset(
    {"target", "node_modules", "dist", "build", "__pycache__", "vendor", "bower_components", "site-packages", "htmlcov"}
)
_DRSG_SUFFIXES = (".drsg", ".drsg-lock", ".drsg.hnsw", ".drsg.bm25", ".drsg.digest", ".drsg.jsonl")
IGNORE_FILE_NAMES = {"gitignore": ".gitignore", "dockerignore": ".dockerignore"}


@dataclass(frozen=True)
class Withheld:
    path: str  # root-relative, `/`-separated
    source: str  # the ignore file (root-relative, or as found above the root), or "--tracked-only"
    rule: str  # the pattern as written


@dataclass
class Walk:
    """What a walk found: the files it admits, and what it withheld and why."""

    root: Path
    files: list[str] = field(default_factory=list)  # admitted, sorted
    withheld: list[Withheld] = field(default_factory=list)

    @property
    def seen(self) -> int:
        """Files the floor left: admitted plus withheld (the denominator)."""
        return len(self.files) + len(self.withheld)

    def withheld_by_source(self) -> Counter[str]:
        return Counter(item.source for item in self.withheld)

    def warning(self) -> str | None:
        """The unprompted warning when ignore rules withheld more than half of what the floor left."""
        by_rule = Counter(item.source for item in self.withheld if item.source != TRACKED_ONLY)
        withheld = sum(by_rule.values())
        if not self.seen or withheld * 2 <= self.seen:
            return None
        named = ", ".join(f"{source} ({count})" for source, count in by_rule.most_common())
        return (
            f"{withheld} of {self.seen} files were withheld by ignore rules — {named}. If that is not what "
            "you meant, `--ignore-files` chooses which of them apply."
        )


TRACKED_ONLY = "--tracked-only"


@dataclass(frozen=True)
class _Rules:
    """One ignore file's patterns, matched relative to the directory holding it.

    A file at or below the walk's root has ``base`` = its directory (root-relative, "" = the root);
    one above the root has ``prefix`` = the root's path relative to its directory."""

    base: str
    prefix: str
    source: str
    spec: pathspec.GitIgnoreSpec
    lines: tuple[str, ...]
    per_file: bool = False  # Docker's way: each file is matched on its own, no folder is pruned

    def check(self, relative: str, is_dir: bool) -> tuple[bool, str] | None:
        """(ignored?, the deciding pattern) or None when no pattern of this file matches."""
        if self.per_file and is_dir:
            return None  # a later `!` line may bring back a file under a matched folder
        if self.prefix:
            path = f"{self.prefix}/{relative}"
        elif not self.base:
            path = relative
        elif relative.startswith(self.base + "/"):
            path = relative[len(self.base) + 1 :]
        else:
            return None
        result = self.spec.check_file(path + "/" if is_dir else path)
        if result.include is None or result.index is None:
            return None
        return bool(result.include), self.lines[result.index]


def _read_rules(file: Path, source: str, base: str = "", prefix: str = "", anchored: bool = False) -> _Rules | None:
    try:
        text = file.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    lines = tuple(line.rstrip("\r") for line in text.splitlines())
    patterns = [_anchor(line) for line in lines] if anchored else list(lines)
    return _Rules(base, prefix, source, pathspec.GitIgnoreSpec.from_lines(patterns), lines, per_file=anchored)


def _anchor(line: str) -> str:
    """A .dockerignore line as a gitignore line: Docker matches every pattern from the root."""
    stripped = line.strip()
    if not stripped or stripped.startswith("#"):
        return line
    negate = stripped.startswith("!")
    body = stripped[1:] if negate else stripped
    body = body.removeprefix("./")
    if not body.startswith("/"):
        body = "/" + body
    return ("!" if negate else "") + body


def git_root(path: Path) -> Path | None:
    """The work tree holding ``path`` (the nearest parent with a ``.git``), or None."""
    for folder in (path, *path.parents):
        if (folder / ".git").exists():
            return folder
    return None


def _parent_rules(root: Path, top: Path) -> list[_Rules]:
    """``.git/info/exclude`` and the ``.gitignore`` files from the repository's root down to the walk's."""
    inside = root.relative_to(top).as_posix()
    parts = [] if inside == "." else inside.split("/")
    rules: list[_Rules] = []
    exclude = top / ".git" / "info" / "exclude"
    if exclude.is_file() and (found := _read_rules(exclude, ".git/info/exclude", prefix="/".join(parts))):
        rules.append(found)
    for depth in range(len(parts)):  # the root's own .gitignore is read by the walk itself
        folder = top.joinpath(*parts[:depth])
        ignore = folder / ".gitignore"
        if ignore.is_file() and (found := _read_rules(ignore, str(ignore), prefix="/".join(parts[depth:]))):
            rules.append(found)
    return rules


def walk(
    root: Path,
    ignore_files: Iterable[str] = ("gitignore",),
    tracked_only: bool = False,
    skip: Iterable[Path] = (),
) -> Walk:
    """Walk ``root`` (a directory) in sorted order; ``skip`` names paths to leave out (the store)."""
    root = root.resolve()
    chosen = set(ignore_files)
    unknown = chosen - set(IGNORE_FILE_NAMES)
    if unknown:
        raise UsageError(f"unknown ignore file {sorted(unknown)[0]!r}; choose gitignore, dockerignore, or '' for none")
    skipped = {p.resolve() for p in skip}
    top = git_root(root)
    rules: list[_Rules] = []
    if "gitignore" in chosen and top is not None:
        rules.extend(_parent_rules(root, top))
    if "dockerignore" in chosen and (root / ".dockerignore").is_file():
        docker = _read_rules(root / ".dockerignore", ".dockerignore", anchored=True)
        if docker is not None:
            rules.append(docker)
    tracked = _tracked(root) if tracked_only else None
    result = Walk(root)
    _walk_dir(root, "", rules, "gitignore" in chosen, skipped, tracked, None, result)
    result.files.sort()
    result.withheld.sort(key=lambda item: item.path)
    return result


def _walk_dir(
    folder: Path,
    relative: str,
    rules: list[_Rules],
    gitignore: bool,
    skipped: set[Path],
    tracked: frozenset[str] | None,
    withheld_by: Withheld | None,
    result: Walk,
) -> None:
    if gitignore and withheld_by is None:
        own = folder / ".gitignore"
        if own.is_file() and (found := _read_rules(own, f"{relative}/.gitignore".lstrip("/"), base=relative)):
            rules = [*rules, found]
    try:
        entries = sorted(os.scandir(folder), key=lambda entry: entry.name)
    except OSError:
        return
    for entry in entries:
        path = f"{relative}/{entry.name}" if relative else entry.name
        if _floor(entry, relative) or Path(entry.path).resolve() in skipped:
            continue
        try:
            is_dir = entry.is_dir(follow_symlinks=False)
            is_file = entry.is_file(follow_symlinks=False)
        except OSError:
            continue
        if not (is_dir or is_file):
            continue  # symlinks, sockets, devices: a walk reads regular files only
        why = withheld_by or _decide(rules, path, is_dir)
        if is_dir:
            _walk_dir(Path(entry.path), path, rules, gitignore, skipped, tracked, why, result)
        elif why is not None:
            result.withheld.append(Withheld(path, why.source, why.rule))
        elif tracked is not None and path not in tracked:
            result.withheld.append(Withheld(path, TRACKED_ONLY, "not tracked by git"))
        else:
            result.files.append(path)


def _decide(rules: list[_Rules], path: str, is_dir: bool) -> Withheld | None:
    """The deepest ignore file with a matching line decides (git's precedence)."""
    for found in reversed(rules):
        decided = found.check(path, is_dir)
        if decided is not None:
            ignored, rule = decided
            return Withheld(path, found.source, rule) if ignored else None
    return None


def _floor(entry: os.DirEntry[str], relative: str) -> bool:
    name = entry.name
    if name.startswith(".") or name.endswith(_DRSG_SUFFIXES):
        return True
    try:
        if not entry.is_dir(follow_symlinks=False):
            return False
    except OSError:
        return True
    if name in FLOOR_DIRS or name.endswith(".egg-info") or (relative == "" and name == "logs"):
        return True  # a root-level logs/ is drsg serve's, beside the store
    return os.path.exists(os.path.join(entry.path, "pyvenv.cfg"))  # a virtualenv, whatever its name


def _tracked(root: Path) -> frozenset[str]:
    if git_root(root) is None:
        raise UsageError(f"--tracked-only reads what git tracks, but {root} is not inside a git repository")
    try:
        listed = subprocess.run(
            ["git", "-C", str(root), "ls-files", "-z"],  # paths relative to root, under it only
            capture_output=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        raise UsageError(f"--tracked-only: `git ls-files` failed in {root} ({exc}); is git installed?") from None
    return frozenset(item.decode("utf-8", "surrogateescape") for item in listed.split(b"\0") if item)
