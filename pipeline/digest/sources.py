"""Reading what to digest: one file as Markdown prose, a directory tree as facts and prose, or a URL
crawled (``drsg.pipeline.fetch.crawl``) into one document of its pages.

A file is converted to Markdown (``drsg.pipeline.convert``). A directory is walked
(``drsg.pipeline.code.walk``: drsg's floor, then the ignore files chosen) and read
(``drsg.pipeline.code.read``): each file a handler claims is parsed into facts, and every other
file a converter (or plain UTF-8) reads joins the prose behind a ``<!-- drsg:source <path> -->``
paragraph, so no chunk mixes two files. A source's name — what provenance and the contribution
ledger call it — is its canonical absolute path, so the same document is the same source from any
working directory.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from drsg.kernel.errors import UsageError
from drsg.kernel.settings import Settings
from drsg.pipeline.code.handler import Handler
from drsg.pipeline.code.parsed import ParseMemo
from drsg.pipeline.code.read import Progress, Reading
from drsg.pipeline.convert.base import source_marker

if TYPE_CHECKING:
    from drsg.pipeline.fetch.crawl import Budget, Crawl
    from drsg.pipeline.fetch.crawl import Progress as PageProgress


@dataclass
class Document:
    name: str  # canonical path
    text: str
    notes: list[str] = field(default_factory=list)
    files: int = 0
    reading: Reading | None = None  # a directory's: the parsed facts and the account of every file
    plane_props: dict[str, Any] = field(default_factory=dict)  # a directory's drift, set on the plane

    def facts_digest(self) -> str:
        """What the parsers said, as a hash: it decides a digest as much as the prose does."""
        if self.reading is None:
            return ""
        digest = hashlib.sha256()
        for result in self.reading.results:
            for node in result.output.nodes:
                digest.update(
                    json.dumps([node.key, node.label, node.extra_labels, node.properties], sort_keys=True).encode()
                )
            for edge in result.output.edges:
                digest.update(json.dumps([edge.src, edge.type, edge.dst, edge.properties], sort_keys=True).encode())
        return digest.hexdigest()


@dataclass(frozen=True)
class TreeOptions:
    """How a directory is read (``--ignore-files``, ``--tracked-only``, ``--code-only``, ``--handler``)."""

    ignore_files: tuple[str, ...] = ("gitignore",)
    tracked_only: bool = False
    code_only: bool = False
    handler: str | None = None
    skip: tuple[Path, ...] = ()  # the database and its sidecars when they sit inside the tree

    @classmethod
    def of(cls, settings: Settings, db: str | Path, handler: str | None = None) -> TreeOptions:
        """How ``[digest]`` says a tree is read into the database ``db`` (its files left out of the walk)."""
        from drsg.pipeline.code.walk import store_files

        return cls(
            ignore_files=settings.strings("digest.ignore_files"),
            tracked_only=settings.flag("digest.tracked_only"),
            code_only=settings.flag("digest.code_only"),
            handler=handler,
            skip=store_files(Path(db)),
        )


def source_name(path: str) -> str:
    if path.startswith(("http://", "https://")):
        return path
    return str(Path(path).expanduser().resolve())


def read_source(
    path: str,
    tree: TreeOptions | None = None,
    settings: Settings | None = None,
    progress: Progress | None = None,
    memo: ParseMemo | None = None,
) -> Document:
    from drsg.pipeline.convert import to_markdown

    if path.startswith(("http://", "https://")):
        raise UsageError(f"{path} is a URL: it is crawled (drsg.pipeline.digest.sources.read_url), not read as a file")
    root = Path(path).expanduser()
    if not root.exists():
        raise UsageError(f"{path}: no such file or directory; check the path")
    name = source_name(path)
    if root.is_file():
        if maybe_code(root):  # a file a handler claims is parsed as a tree of one file
            doc = read_tree_source(root.parent, name, tree or TreeOptions(), settings, progress, memo, only=root.name)
            if doc.reading is not None and doc.reading.read_by:
                return doc
        converted = to_markdown(root)
        return Document(name, converted.markdown, [f"{root.name}: {n}" for n in converted.notes], 1)
    return read_tree_source(root, name, tree or TreeOptions(), settings, progress, memo)


def maybe_code(file: Path) -> bool:
    """Whether no converter reads ``file`` as a document (Markdown, PDF, …): a handler may claim it."""
    from drsg.pipeline.convert.detect import by_extension

    return by_extension(file.name) in (None, "text")


def read_tree_source(
    root: Path,
    name: str,
    options: TreeOptions,
    settings: Settings | None,
    progress: Progress | None,
    memo: ParseMemo | None = None,
    handlers: Sequence[Handler] | None = None,
    only: str | None = None,
) -> Document:
    """A directory as a Document. ``handlers`` given (a daemon that keeps them loaded) stay open;
    else the installed and built-in ones are loaded for this read and closed after it. ``only``: the
    one file of ``root`` to read, named by the user (read whatever the ignore rules say), the rest of
    the walk its context — so its keys are those a digest of ``root`` gives it. A file no handler
    claims is left unread; no drift is recorded (the file is not the tree)."""
    # loaded here, not at the top: a file's digest needs none of them, and the plugins need wasmtime
    from drsg.pipeline.code.drift import drift
    from drsg.pipeline.code.read import read_tree
    from drsg.pipeline.code.walk import walk
    from drsg.pipeline.plugins.handlers import load_handlers
    from drsg.pipeline.plugins.host import plugin_options

    found = walk(root, options.ignore_files, options.tracked_only, options.skip)
    if only is not None and only not in found.files:  # named by the user: admitted whatever the rules say
        found.withheld = [item for item in found.withheld if item.path != only]
        found.files = sorted([*found.files, only])
    loaded = load_handlers(settings) if handlers is None else list(handlers)
    try:
        reading = read_tree(
            found,
            loaded,
            forced=options.handler,
            code_only=options.code_only or only is not None,
            options={h.manifest.name: plugin_options(settings, h.manifest.name) for h in loaded},
            progress=progress,
            memo=memo,
            only=only,
        )
    finally:
        if handlers is None:
            for handler in loaded:
                handler.close()
    parts = [f"{source_marker(path)}\n\n{text}" for path, text in reading.prose]
    measured = drift(found.root) if only is None else {}
    doc = Document(name, "\n\n".join(parts), list(reading.notes), len(reading.read_by), reading, measured)
    if reading.skipped:
        doc.notes.append(_skipped_note(reading.skipped))
    return doc


def _skipped_note(skipped: Iterable[tuple[str, str]]) -> str:
    items = [f"{path} ({why})" for path, why in skipped]
    return f"{len(items)} file(s) skipped: " + "; ".join(items[:5]) + (" …" if len(items) > 5 else "")


def read_url(
    root: str, settings: Settings, budget: Budget, topic: str = "", progress: PageProgress | None = None
) -> tuple[Document, Crawl]:
    """``root`` crawled into one Document that digests as a pasted one (its name: the root URL)."""
    from drsg.pipeline.fetch.crawl import client_for, crawl  # aiohttp: loaded only when a URL is read

    async def run() -> Crawl:
        async with client_for(settings, budget) as client:
            return await crawl(root, client, budget, topic, progress)

    result = asyncio.run(run())
    notes = [f"crawl: read {len(result.kept)} page(s) of {result.candidates + 1} seen, {result.requests} request(s)"]
    return Document(root, result.document(), notes, len(result.kept)), result
