"""``grep`` and ``snippet``: a code plane's tree read from disk, where the plane says it was read.

The tree is the plane's ``synced_root`` (``drsg digest`` records it for a tree inside git), else the
one directory the plane was digested from (its ``_digest:<root>`` property). Only the files the plane
holds symbols of are read, each checked to lie inside that root and to be one the digest's walk reads
(``readable``: no dotfile, no store, no virtualenv — a plane's ``file`` property is data, and data
never chooses a file to open). ``snippet`` prefers the source a handler stored (``_code``).

A server passes ``allowed``: the directories its operator named (``[server] code_roots``, the trees
``serve watch`` follows). There the root itself is data any writer may set, so it is read only when it
resolves (symlinks followed) inside one of them; ``None`` (the CLI, MCP over stdio: a local user who
can read the files anyway) reads wherever the plane says.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from drsg.kernel.errors import UsageError
from drsg.kernel.values import Json
from drsg.workers.code_verbs import CodePlane, Symbol, symbol_of

GREP_DEFAULT, GREP_CAP = 50, 200  # upstream's max_results default and cap
SNIPPET_LINES = 40
MAX_LINE_CHARS = 300  # a matching line is cut here: it is a receipt, not the file
SYNCED_ROOT = "synced_root"
DIGEST_PREFIX = "_digest:"


@dataclass(frozen=True)
class GrepHit:
    """A line holding the pattern, and the last definition that starts at or above it in its file."""

    file: str
    line: int
    text: str
    symbol: str | None

    @property
    def at(self) -> str:
        return f"{self.file}:{self.line}"

    def to_json(self) -> dict[str, Json]:
        return {"at": self.at, "text": self.text, "in": self.symbol}


@dataclass(frozen=True)
class Grep:
    pattern: str
    hits: list[GrepHit]
    files: int  # files searched
    truncated: bool  # max_results stopped the search
    synced: str | None = None

    def to_json(self) -> dict[str, Json]:
        hits: list[Json] = [hit.to_json() for hit in self.hits]
        return {
            "pattern": self.pattern,
            "files": self.files,
            "truncated": self.truncated,
            "hits": hits,
            "synced": self.synced,
        }


@dataclass(frozen=True)
class Snippet:
    """A symbol's source: ``source`` "stored" (the handler kept it) or "file" (read from the tree)."""

    symbol: Symbol
    source: str
    start: int | None
    text: str
    synced: str | None = None

    def to_json(self) -> dict[str, Json]:
        return {
            **self.symbol.to_json(),
            "source": self.source,
            "start": self.start,
            "text": self.text,
            "synced": self.synced,
        }


#: the directories a server lets grep and snippet read under; None: no restriction (a local process)
Allowed = Sequence[Path] | None


def allows(allowed: Allowed, root: str) -> bool:
    """Whether ``root`` lies inside one of ``allowed``, both resolved (a symlink is judged by its target)."""
    if allowed is None:
        return True
    try:
        path = Path(root).resolve()
    except (OSError, ValueError, RuntimeError):  # a NUL byte, a symlink loop: no directory to allow
        return False
    return any(path.is_relative_to(Path(top).resolve()) for top in allowed)


def tree_root(code: CodePlane, allowed: Allowed = None) -> Path:
    """The directory the plane was read from (see the module docstring); a UsageError when none is here,
    or when it lies outside ``allowed`` (judged before it is looked at: nothing about it is told)."""
    props = code.plane.props
    named = props.get(SYNCED_ROOT)
    roots = (
        [named]
        if isinstance(named, str)
        else [k.removeprefix(DIGEST_PREFIX) for k in props if k.startswith(DIGEST_PREFIX)]
    )
    permitted = [root for root in roots if allows(allowed, root)]
    if len(permitted) < len(roots):
        refused = next(root for root in roots if root not in permitted)
        shown = refused if refused.isprintable() else repr(refused)  # data: kept to one line
        raise UsageError(
            f"plane {code.plane.name!r} was read from {shown}, which this server may not read; add it to "
            "[server] code_roots (DRSG_SERVER_CODE_ROOTS) to allow grep and snippet there"
        )
    found = [Path(root) for root in roots if Path(root).is_dir()]
    if len(found) != 1:
        which = "its tree is not on this machine" if roots else "it records no tree it was read from"
        raise UsageError(
            f"plane {code.plane.name!r} cannot be read from disk: {which}; "
            f"re-read the tree here with `drsg digest DIR --plane {code.plane.name} --apply`"
        )
    return found[0].resolve()


#: whether a file (``/``-separated, below the root) is one to read: the walk's rule, given by the API
Readable = Callable[[Path, str], bool]


def _inside(root: Path, file: str, readable: Readable) -> Path | None:
    try:
        path = (root / file).resolve()
    except (OSError, ValueError, RuntimeError):  # a NUL byte, a symlink loop: no file to read
        return None
    if not path.is_relative_to(root) or not path.is_file():
        return None
    return path if readable(root, path.relative_to(root).as_posix()) else None


def _definitions(code: CodePlane) -> dict[str, tuple[list[int], list[str]]]:
    """Per file the plane holds symbols of: their lines in order and their keys."""
    per_file: dict[str, list[tuple[int, str]]] = {}
    for node in code.snap.nodes(code.plane.id):
        symbol = symbol_of(node)
        if symbol.file is not None:
            per_file.setdefault(symbol.file, []).append((symbol.line or 0, symbol.key))
    out: dict[str, tuple[list[int], list[str]]] = {}
    for file, defs in per_file.items():
        defs.sort()
        out[file] = ([line for line, _ in defs], [key for _, key in defs])
    return out


def grep(
    code: CodePlane,
    pattern: str,
    readable: Readable,
    ignore_case: bool = False,
    max_results: int = GREP_DEFAULT,
    allowed: Allowed = None,
) -> Grep:
    """Lines holding ``pattern`` (literally) in the files of the plane, in file then line order."""
    if not pattern:
        raise UsageError("give grep a non-empty pattern (a literal string, not a regular expression)")
    if not 1 <= max_results <= GREP_CAP:
        raise UsageError(f"max_results must be 1 to {GREP_CAP}, not {max_results}")
    root = tree_root(code, allowed)
    needle = pattern.casefold() if ignore_case else pattern
    hits: list[GrepHit] = []
    files = 0
    for file, (lines, keys) in sorted(_definitions(code).items()):
        path = _inside(root, file, readable)
        if path is None:
            continue
        files += 1
        with path.open(encoding="utf-8", errors="replace") as handle:
            for number, text in enumerate(handle, 1):
                if needle not in (text.casefold() if ignore_case else text):
                    continue
                if len(hits) == max_results:
                    return Grep(pattern, hits, files, True)
                above = bisect_right(lines, number) - 1
                hits.append(GrepHit(file, number, text.strip()[:MAX_LINE_CHARS], keys[above] if above >= 0 else None))
    return Grep(pattern, hits, files, False)


def snippet(
    code: CodePlane, name: str, readable: Readable, lines: int = SNIPPET_LINES, allowed: Allowed = None
) -> Snippet:
    """``name``'s source: the stored ``_code``, else ``lines`` lines of its file from its line."""
    if not 1 <= lines <= 10 * SNIPPET_LINES:
        raise UsageError(f"lines must be 1 to {10 * SNIPPET_LINES}, not {lines}")
    node = code.resolve(name)
    symbol = symbol_of(node)
    stored = node.props.get("_code")
    if isinstance(stored, str):
        return Snippet(symbol, "stored", symbol.line, "\n".join(stored.splitlines()[:lines]))
    if symbol.file is None:
        raise UsageError(f"{symbol.key!r} is defined outside the tree read into plane {code.plane.name!r}: no source")
    path = _inside(tree_root(code, allowed), symbol.file, readable)
    if path is None:
        raise UsageError(
            f"{symbol.file} is not a file of the tree plane {code.plane.name!r} was read from (any more); "
            "re-digest the tree to refresh the plane"
        )
    start = symbol.line or 1
    with path.open(encoding="utf-8", errors="replace") as handle:
        text = [line.rstrip("\n") for number, line in enumerate(handle, 1) if start <= number < start + lines]
    return Snippet(symbol, "file", start, "\n".join(text))
