"""Reading a walked tree: each file to the first handler claiming it, the rest as prose.

A handler's files go one per ``parse`` call (upstream's ``CHUNK_FILES = 1``; a handler that says it
is safe to run at once gets a few threads), then one ``assemble`` with the partials in file order.
The host stamps every fact with the handler's verified ``name@version`` (``_generated_by``), so a
handler cannot speak for another; a key two handlers claim stays with the first and is reported.

What no handler claims is prose for the model: a document the converters read becomes Markdown, other
UTF-8 text a fenced block (over 256 KiB: skipped with a note), anything else is skipped and counted.
``--code-only`` leaves the unclaimed files out altogether.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from drsg.kernel.errors import ConversionError, UsageError
from drsg.pipeline.code.handler import (
    GENERATED_BY,
    HOST_OWNED,
    FactEdge,
    FactNode,
    Handler,
    Options,
    Output,
    SourceTree,
)
from drsg.pipeline.code.parsed import ParseMemo
from drsg.pipeline.code.walk import Walk

MAX_PLAIN_TEXT = 256 << 10  # unclaimed text over this is skipped: a generated file, not prose

Progress = Callable[[str, int, int], None]  # (phase, done, total)


@dataclass
class HandlerResult:
    handler: Handler
    files: list[str]
    output: Output


@dataclass
class Reading:
    """One tree read: facts per handler, the prose left for the model, and the account of every file."""

    walk: Walk
    results: list[HandlerResult] = field(default_factory=list)
    prose: list[tuple[str, str]] = field(default_factory=list)  # (path, Markdown), in path order
    read_by: dict[str, str] = field(default_factory=dict)  # path -> handler ident, or "prose"
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, why)
    not_claimed: list[str] = field(default_factory=list)  # left out by --code-only
    notes: list[str] = field(default_factory=list)

    @property
    def facts(self) -> int:
        return sum(len(r.output.nodes) + len(r.output.edges) for r in self.results)


def route(
    files: Sequence[str], handlers: Sequence[Handler], forced: Handler | None = None
) -> tuple[dict[str, list[str]], list[str]]:
    """Files per handler name (routing order) and the files no handler claims.

    Routing is by lowercase extension, the first handler claiming it winning. A forced handler
    (``--handler``) takes every file instead, but for documents the converters read (Markdown, PDF,
    …; plain text and extensionless files go to the handler): those stay prose, as a parser of code
    has nothing to say about them."""
    from drsg.pipeline.convert.detect import by_extension

    claimed: dict[str, list[str]] = {h.manifest.name: [] for h in ([forced] if forced else handlers)}
    unclaimed: list[str] = []
    owner: dict[str, str] = {}
    for handler in handlers:
        for extension in handler.manifest.extensions:
            owner.setdefault(extension.lower(), handler.manifest.name)
    for path in files:
        if forced is not None:
            name = None if by_extension(path) not in (None, "text") else forced.manifest.name
        else:
            name = owner.get(_extension(path))
        if name is None:
            unclaimed.append(path)
        else:
            claimed[name].append(path)
    return claimed, unclaimed


def pick_handler(name: str, handlers: Sequence[Handler]) -> Handler:
    for handler in handlers:
        if handler.manifest.name == name:
            return handler
    known = ", ".join(h.manifest.name for h in handlers) or "none"
    raise UsageError(f"no handler named {name!r}; the known handlers are: {known} (`drsg plugin list`)")


def _extension(path: str) -> str:
    name = path.rsplit("/", 1)[-1]
    return os.path.splitext(name)[1].lower()


def read_tree(
    walk: Walk,
    handlers: Sequence[Handler],
    *,
    forced: str | None = None,
    code_only: bool = False,
    options: Mapping[str, Options] | None = None,
    progress: Progress | None = None,
    memo: ParseMemo | None = None,
    only: str | None = None,
) -> Reading:
    """Route and read every admitted file of ``walk`` (see the module docstring); ``memo`` reuses
    the parses of files whose inputs did not change (``parsed.py``). ``only``: the one file to read,
    the rest of the walk its handler's context (what it may list and read)."""
    chosen = pick_handler(forced, handlers) if forced is not None else None
    tree = SourceTree(walk.root, walk.files)
    claimed, unclaimed = route([only] if only is not None else walk.files, handlers, chosen)
    reading = Reading(walk)
    by_name = {h.manifest.name: h for h in handlers}
    owner: dict[str, str] = {}
    twice: list[str] = []
    total = sum(len(files) for files in claimed.values())
    done = 0
    for name, files in claimed.items():
        if not files:
            continue
        handler = by_name[name]
        ident = handler.manifest.ident

        def tick(count: int, base: int = done) -> None:
            if progress is not None:
                progress("parsing", base + count, total)

        output = run_handler(handler, tree, files, (options or {}).get(name, ()), tick, memo)
        done += len(files)
        reading.notes.extend(f"{ident}: {note}" for note in _normalise(output, ident))
        kept = []
        for node in output.nodes:
            if node.key in owner:
                twice.append(f"{node.key} ({owner[node.key]}, then {ident})")
                continue
            owner[node.key] = ident
            kept.append(node)
        output.nodes = kept
        reading.results.append(HandlerResult(handler, files, output))
        reading.read_by.update(dict.fromkeys(files, ident))
        reading.notes.extend(f"{ident}: {note}" for note in output.report.notes)
        if output.prose:
            reading.prose.append((f"{ident} prose", output.prose))
    if twice:
        reading.notes.append(f"key claimed twice, the first handler's kept: {', '.join(twice[:5])}")
    if code_only:
        reading.not_claimed = unclaimed
    else:
        _read_prose(walk.root, unclaimed, reading)
    return reading


def run_handler(
    handler: Handler,
    tree: SourceTree,
    files: Sequence[str],
    options: Options,
    tick: Callable[[int], None] | None = None,
    memo: ParseMemo | None = None,
) -> Output:
    """One ``parse`` per file (a few at once for a handler that allows it), then one ``assemble``."""
    workers = min(4, os.cpu_count() or 1) if handler.concurrent else 1

    def parse(path: str) -> bytes:
        if memo is not None:
            return memo.parse(handler, tree, (path,), options)
        return handler.parse(tree, (path,), options)

    partials: list[bytes] = []
    if workers == 1:
        for index, path in enumerate(files, 1):
            partials.append(parse(path))
            if tick is not None:
                tick(index)
    else:
        with ThreadPoolExecutor(workers, thread_name_prefix=f"parse-{handler.manifest.name}") as pool:
            for index, partial in enumerate(pool.map(parse, files), 1):
                partials.append(partial)
                if tick is not None:
                    tick(index)
    return handler.assemble(tree, partials, options)


def _normalise(output: Output, ident: str) -> list[str]:
    """Make ``output`` one statement per fact, in the host's terms; returns notes on what it changed.

    A key or an (src, type, dst) stated twice keeps its first statement (a graph fact is one
    record, so a second would silently overwrite the first); properties the host and the ledger
    own (HOST_OWNED) are dropped, as a handler cannot claim provenance; every fact gets the
    handler's ``_generated_by``."""
    notes: list[str] = []
    seen_keys: set[str] = set()
    nodes = []
    for node in output.nodes:
        if node.key not in seen_keys:
            seen_keys.add(node.key)
            nodes.append(node)
    seen_edges: set[tuple[str, str, str]] = set()
    edges = []
    for edge in output.edges:
        triple = (edge.src, edge.type, edge.dst)
        if triple not in seen_edges:
            seen_edges.add(triple)
            edges.append(edge)
    if len(nodes) < len(output.nodes) or len(edges) < len(output.edges):
        notes.append(
            f"{len(output.nodes) - len(nodes)} node(s) and {len(output.edges) - len(edges)} edge(s) stated twice: "
            "the first statement of each kept"
        )
    owned = 0
    facts: list[FactNode | FactEdge] = [*nodes, *edges]
    for fact in facts:
        for name in HOST_OWNED.intersection(fact.properties):
            del fact.properties[name]
            owned += 1
        fact.properties[GENERATED_BY] = ident
    if owned:
        what = "property" if owned == 1 else "properties"
        notes.append(f"{owned} {what} drsg owns (provenance, embeddings) dropped from the facts")
    output.nodes, output.edges = nodes, edges
    return notes


def _read_prose(root: Path, files: Sequence[str], reading: Reading) -> None:
    from drsg.pipeline.convert import to_markdown
    from drsg.pipeline.convert.detect import by_extension

    for path in files:
        file = root / path
        text: str | None
        try:
            converted = to_markdown(file)
            text = converted.markdown
            reading.notes.extend(f"{path}: {note}" for note in converted.notes)
        except ConversionError as exc:
            text = None if by_extension(path) is not None else _plain_text(file)  # a document that failed stays failed
            if text is None:
                reading.skipped.append((path, _why_unread(file, str(exc))))
                continue
        if text.strip():
            reading.prose.append((path, text))
            reading.read_by[path] = "prose"
        else:
            reading.skipped.append((path, "no text"))


def _plain_text(file: Path) -> str | None:
    """An unclaimed file as a fenced block, when it is UTF-8 text small enough to be prose."""
    try:
        if file.stat().st_size > MAX_PLAIN_TEXT:
            return None
        data = file.read_bytes()
    except OSError:
        return None
    if b"\0" in data:
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if not text.strip():
        return None
    language = _extension(file.name).lstrip(".")
    fence = "````" if "```" in text else "```"
    return f"{fence}{language}\n{text.rstrip()}\n{fence}"


def _why_unread(file: Path, conversion: str) -> str:
    try:
        size = file.stat().st_size
    except OSError:
        return "unreadable"
    if size > MAX_PLAIN_TEXT:
        return f"over {MAX_PLAIN_TEXT >> 10} KiB"
    return "binary" if "unsupported format" in conversion else conversion.split(": ", 1)[-1]
