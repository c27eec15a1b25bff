"""Walking a source tree: drsg's floor, the project's ignore files, and an account of both.

The **floor** always stands: dotfiles and dot-directories, build and dependency directories
(``target/``, ``node_modules/``, ``dist/``, ``build/``, ``.venv/``, ``__pycache__/``, ``vendor/``
and their kin), drsg's own store and sidecars, its ``drsg.toml`` (drsg's settings, not the
project's, and it may hold API keys: never prose for a model), and a root-level ``logs/``. What the floor leaves is
the denominator of every percentage: a ``node_modules/`` of 80,000 files would make one meaningless.

Then the project's own word on what is derived, each chosen by ``--ignore-files``:

- ``gitignore`` (the default): ``.gitignore`` in every directory of the walk, the ones in the
  directories above it up to the repository's root, and ``.git/info/exclude`` — git's rules, each
  line compiled by ``pathspec`` (a deeper file overrides a shallower one, the last matching line
  wins, nothing under an ignored directory comes back; see :class:`_GitRules`).
- ``dockerignore``: the root's ``.dockerignore``, its patterns anchored at the root and each file
  matched on its own, as Docker reads them (so ``!notes/deep`` brings back a file under ``notes``).

``--tracked-only`` keeps only what git tracks (one ``git ls-files``; a tracked file with edits is
read as it stands). Every file withheld is recorded with the rule that withheld it.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pathspec

from drsg.kernel.errors import UsageError
from drsg.kernel.setting_parsers import IGNORE_FILES

#: directories the floor always skips, wherever they are: build output, dependencies, caches
#: (dot-directories — .git, .venv, .tox, .mypy_cache — go as dotfiles; so does any virtualenv)
FLOOR_DIRS = frozenset(
    {"target", "node_modules", "dist", "build", "__pycache__", "vendor", "bower_components", "site-packages", "htmlcov"}
)
#: what drsg keeps beside a database file: its lock, the index sidecars, the digest cache, an export
STORE_SIDECARS = ("-lock", ".hnsw", ".bm25", ".digest", ".jsonl")
_DRSG_SUFFIXES = (".drsg", *(".drsg" + sidecar for sidecar in STORE_SIDECARS))
#: drsg's settings file, written by `drsg init`: the floor skips it wherever it is
CONFIG_FILE = "drsg.toml"


def store_files(db: Path) -> tuple[Path, ...]:
    """A database and its sidecars: what a walk of a tree holding them leaves out, whatever their name."""
    return (db, *(db.with_name(db.name + sidecar) for sidecar in STORE_SIDECARS))


def digest_folder(db: str | os.PathLike[str]) -> Path:
    """The sidecar a digest keeps beside a database: the answer cache, previews, remembered parses."""
    path = Path(db)
    return path.with_name(path.name + ".digest")


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
class _Rule:
    source: str  # the ignore file it is written in
    text: str  # the line as written


class _GitRules:
    """Every .gitignore line that applies below one directory, as one list in git's precedence.

    Git lets a deeper file override a shallower one and, within a file, the last matching line
    win. Each line is rebased onto one coordinate root (the repository's top, or the walk's root
    outside git) — ``gen/`` in ``pkg/.gitignore`` becomes ``pkg/**/gen/`` — and the files are
    concatenated shallowest first, so "the last matching line wins" over the concatenation is
    git's rule. A line is matched against the path itself, as git does: what is under an ignored
    directory is withheld because the walk does not go in (nothing there comes back, whatever a
    later ``!`` line says), not because the line matches it. pathspec compiles each line; its
    matcher also matches a directory's contents, which would let ``!keep.log`` bring back
    ``keep.log/y.log/a`` — so the compiled expressions are held to the whole path here.
    """

    def __init__(
        self, lines: list[tuple[str, _Rule]], matchers: list[tuple[bool, Matcher] | None] | None = None
    ) -> None:
        self.lines = lines
        self.matchers = [_exact(rebased) for rebased, _ in lines] if matchers is None else matchers

    def extended(self, file: Path, source: str, base: str) -> _GitRules:
        """These rules and ``file``'s after them (the lines above are compiled once, not again per folder)."""
        lines = _lines(file)
        if not lines:
            return self
        added = [(_rebase(line, base), _Rule(source, line)) for line in lines]
        return _GitRules([*self.lines, *added], [*self.matchers, *(_exact(rebased) for rebased, _ in added)])

    def decide(self, path: str, is_dir: bool) -> _Rule | None:
        """The line that ignores ``path``, or None (no line matches it, or a ``!`` line keeps it)."""
        target = path + "/" if is_dir else path
        for (_, rule), matcher in zip(reversed(self.lines), reversed(self.matchers), strict=True):
            if matcher is not None and matcher[1](path, target):
                return rule if matcher[0] else None
        return None


Matcher = Callable[[str, str], bool]  # (path, path with a trailing slash when a directory)


def _exact(line: str) -> tuple[bool, Matcher] | None:
    """(ignores?, matcher) for one gitignore line, or None for a comment or a blank line."""
    patterns = pathspec.GitIgnoreSpec.from_lines([line]).patterns
    if not patterns or patterns[0].include is None or patterns[0].regex is None:
        return None
    include, regex = bool(patterns[0].include), patterns[0].regex
    body = line.strip().lstrip("!")
    if regex.pattern == ".":  # `*` and `**`: everything
        return include, lambda path, target: True
    if body.endswith("/**"):  # what is inside the folder, at any depth, not the folder itself
        return include, lambda path, target: regex.match(path) is not None
    whole = re.compile(regex.pattern + r"\Z")
    return include, lambda path, target: whole.match(target) is not None


def _lines(file: Path) -> list[str]:
    try:
        text = file.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    # pathspec makes no pattern of an empty line, so keeping one would shift every index after it
    return [line.rstrip("\r") for line in text.splitlines() if line.rstrip("\r")]


def _rebase(line: str, base: str) -> str:
    """A line of ``<base>/.gitignore`` as a line of the coordinate root's, by git's anchoring rules."""
    if not base or not line.strip() or line.startswith("#"):
        return line
    negate = line.startswith("!")
    body = line[1:] if negate else line
    if body.startswith("/"):
        body = f"{base}{body}"  # anchored at its file's directory
    elif "/" in body.rstrip().rstrip("/"):
        body = f"{base}/{body}"  # a slash inside anchors it too
    else:
        body = f"{base}/**/{body}"  # a bare name matches at any depth below
    return ("!" if negate else "") + body


class _DockerRules:
    """The root's .dockerignore as Docker reads it: every line anchored at the root, each file matched
    on its own (no folder is pruned, so ``!notes/deep`` brings back a file under an ignored ``notes``)."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.spec = pathspec.GitIgnoreSpec.from_lines([_anchor(line) for line in lines])

    def decide(self, path: str) -> _Rule | None:
        result = self.spec.check_file(path)
        if result.include and result.index is not None:
            return _Rule(".dockerignore", self.lines[result.index])
        return None


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


def _parent_rules(root: Path, top: Path) -> tuple[_GitRules, str]:
    """``.git/info/exclude`` and the ``.gitignore`` files from the repository's top down to the walk's
    root (its own is read by the walk), with the walk root's path below the top (the coordinates)."""
    inside = root.relative_to(top).as_posix()
    parts = [] if inside == "." else inside.split("/")
    rules = _GitRules([]).extended(top / ".git" / "info" / "exclude", ".git/info/exclude", "")
    for depth in range(len(parts)):
        folder = top.joinpath(*parts[:depth])
        rules = rules.extended(folder / ".gitignore", str(folder / ".gitignore"), "/".join(parts[:depth]))
    return rules, "/".join(parts)


def walk(
    root: Path,
    ignore_files: Iterable[str] = ("gitignore",),
    tracked_only: bool = False,
    skip: Iterable[Path] = (),
) -> Walk:
    """Walk ``root`` (a directory) in sorted order; ``skip`` names paths to leave out (the store)."""
    root = root.resolve()
    chosen = set(ignore_files)
    unknown = chosen - set(IGNORE_FILES)
    if unknown:
        raise UsageError(f"unknown ignore file {sorted(unknown)[0]!r}; choose gitignore, dockerignore, or '' for none")
    git: _GitRules | None = None
    prefix = ""
    if "gitignore" in chosen:
        top = git_root(root)
        git, prefix = _parent_rules(root, top) if top is not None else (_GitRules([]), "")
    docker = None
    if "dockerignore" in chosen and (lines := _lines(root / ".dockerignore")):
        docker = _DockerRules(lines)
    walker = _Walker(Walk(root), docker, {p.resolve() for p in skip}, _tracked(root) if tracked_only else None)
    walker.dir(root, "", prefix, git, None)
    walker.result.files.sort()
    walker.result.withheld.sort(key=lambda item: item.path)
    return walker.result


@dataclass
class _Walker:
    result: Walk
    docker: _DockerRules | None
    skipped: set[Path]
    tracked: frozenset[str] | None

    def __post_init__(self) -> None:
        self.skipped_names = frozenset(path.name for path in self.skipped)  # resolve only what could match

    def dir(self, folder: Path, relative: str, at: str, git: _GitRules | None, under: _Rule | None) -> None:
        """``at``: this folder's path in the git rules' coordinates; ``under``: the rule that withheld
        a folder above it (its files are counted as withheld, never read)."""
        if git is not None and under is None:
            git = git.extended(folder / ".gitignore", f"{relative}/.gitignore".lstrip("/"), at)
        try:
            entries = sorted(os.scandir(folder), key=lambda entry: entry.name)
        except OSError:
            return
        for entry in entries:
            path = f"{relative}/{entry.name}" if relative else entry.name
            where = f"{at}/{entry.name}" if at else entry.name
            if _floor(entry, relative) or (
                entry.name in self.skipped_names and Path(entry.path).resolve() in self.skipped
            ):
                continue
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
                is_file = entry.is_file(follow_symlinks=False)
            except OSError:
                continue
            if not (is_dir or is_file):
                continue  # symlinks, sockets, devices: a walk reads regular files only
            why = under or (git.decide(where, is_dir) if git is not None else None)
            if is_dir:
                self.dir(Path(entry.path), path, where, git, why)
                continue
            if why is None and self.docker is not None:
                why = self.docker.decide(path)
            if why is not None:
                self.result.withheld.append(Withheld(path, why.source, why.text))
            elif self.tracked is not None and path not in self.tracked:
                self.result.withheld.append(Withheld(path, TRACKED_ONLY, "not tracked by git"))
            else:
                self.result.files.append(path)


def _floor(entry: os.DirEntry[str], relative: str) -> bool:
    name = entry.name
    if name.startswith(".") or name.endswith(_DRSG_SUFFIXES) or name == CONFIG_FILE:
        return True
    try:
        if not entry.is_dir(follow_symlinks=False):
            return False
    except OSError:
        return True
    return floor_folder(Path(entry.path), relative)


def under_floor(root: Path, path: str) -> bool:
    """Whether the floor skips ``path`` (``/``-separated, below ``root``; it need not exist any more):
    it, or a folder on its way, is one the walk never reads."""
    parts = path.split("/")
    for depth, name in enumerate(parts):
        if name.startswith(".") or name.endswith(_DRSG_SUFFIXES) or name == CONFIG_FILE:
            return True
        if depth < len(parts) - 1 and floor_folder(root.joinpath(*parts[: depth + 1]), "/".join(parts[:depth])):
            return True
    return False


def floor_folder(path: Path, relative: str) -> bool:
    """Whether the floor skips the folder ``path`` (``relative``: the path of the folder holding it,
    below the walk's root; "" at the root) — what ``serve watch`` does not watch either."""
    name = path.name
    if name.startswith(".") or name.endswith(_DRSG_SUFFIXES) or name in FLOOR_DIRS or name.endswith(".egg-info"):
        return True
    if relative == "" and name == "logs":
        return True  # a root-level logs/ is drsg serve's, beside the store
    return os.path.exists(path / "pyvenv.cfg")  # a virtualenv, whatever its name (False when unreadable)


def run_git(root: Path, *args: str) -> str | None:
    """What ``git -C root ARGS`` prints, or None when it fails (no git, no commit yet, not a repository)."""
    try:
        done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.decode("utf-8", "surrogateescape") if done.returncode == 0 else None


def _tracked(root: Path) -> frozenset[str]:
    if git_root(root) is None:
        raise UsageError(f"--tracked-only reads what git tracks, but {root} is not inside a git repository")
    listed = run_git(root, "ls-files", "-z")  # paths relative to root, under it only
    if listed is None:
        raise UsageError(f"--tracked-only: `git ls-files` failed in {root}; is git installed?")
    return frozenset(item for item in listed.split("\0") if item)
