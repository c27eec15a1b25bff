"""The Handler port: what reads a kind of source file into facts, a parser plugin or a built-in.

It is the ``drsg:preprocess@1.0.0`` contract (``preprocess.wit``) in Python terms, so a WebAssembly
plugin (``drsg.pipeline.plugins``) and a handler written here (``python_handler.py``) are driven the same
way: ``parse`` once per chunk of files, in any order and possibly at once, then ``assemble`` once with
the partials in chunk order. A handler sees the tree only through a :class:`SourceTree` (the WIT's
three host functions), never the file system itself.

What a handler returns is data to validate, never trusted: :func:`output_from_wire` checks a plugin's
answer against the contract (properties are JSON objects, keys and labels are non-empty text, the
sizes are bounded) and says in one line what broke it.
"""

from __future__ import annotations

import json
import math
import os
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from drsg.kernel.errors import PluginError

#: the property every parsed fact carries: the handler's ``name@version``, stamped by the host
GENERATED_BY = "_generated_by"
#: properties the host and the digest ledger write, never a handler: dropped from what one answers
HOST_OWNED = frozenset({"_contributed_by", "_source", "_model", "_run", "_embedded_from", "_embedded_by", "embedding"})
#: options a handler receives: its ``[plugins.<name>]`` table as string pairs, in the table's order
Options = Sequence[tuple[str, str]]


@dataclass(frozen=True)
class Manifest:
    """What a handler says of itself (``describe()``): its name, version and the extensions it claims."""

    name: str
    version: str
    extensions: tuple[str, ...]  # lowercase, with the dot: ".py"
    logo: str | None = None

    @property
    def ident(self) -> str:
        """``name@version``: every fact it produces carries this as ``_generated_by``."""
        return f"{self.name}@{self.version}"


@dataclass(frozen=True)
class Doc:
    """One document handed over whole (the WIT's ``input.document``)."""

    name: str
    data: bytes


#: the WIT's ``input`` variant: a document, or root-relative paths the handler reads through the tree
Subject = Doc | tuple[str, ...]


@dataclass
class FactNode:
    key: str
    label: str
    extra_labels: tuple[str, ...] = ()
    properties: dict[str, Any] = field(default_factory=dict)


@dataclass
class FactEdge:
    src: str
    dst: str
    type: str
    properties: dict[str, Any] = field(default_factory=dict)


@dataclass
class Report:
    facts: int = 0
    prose_chars: int = 0
    skipped: int = 0
    notes: list[str] = field(default_factory=list)


@dataclass
class Output:
    """What ``assemble`` answers: facts, prose left for the model (empty: no model call), a report."""

    nodes: list[FactNode] = field(default_factory=list)
    edges: list[FactEdge] = field(default_factory=list)
    prose: str = ""
    report: Report = field(default_factory=Report)


class SourceTree:
    """The three host functions over one walked tree: the only view of the files a handler gets.

    ``list`` answers root-relative paths (``/``-separated), sorted, of the files the walk admitted;
    ``read`` reads one of those, checked on the *resolved* path, so ``..``, an absolute path or a
    symlink cannot leave the root and a file the ignore rules withheld cannot be read either;
    ``label`` names the tree: the root directory's name, or its parent's when the root is ``src``.
    """

    def __init__(self, root: Path, files: Sequence[str], max_read: int = 64 << 20) -> None:
        self.root = root.resolve()
        self.files = tuple(sorted(files))
        self._admitted = frozenset(self.files)
        self._listed: dict[str, list[str]] = {}  # suffix -> answer: a handler may ask once per file
        self.max_read = max_read

    def list(self, suffix: str) -> list[str]:
        answer = self._listed.get(suffix)
        if answer is None:
            answer = self._listed[suffix] = [path for path in self.files if path.endswith(suffix)]
        return list(answer)

    def admits(self, path: str) -> bool:
        """Whether ``path`` is one of the walk's files (``read`` still checks where it resolves)."""
        return path in self._admitted

    def read(self, path: str) -> bytes:
        """The file's bytes; a ValueError (the WIT's error string) for anything outside the walk, and
        for a file that vanished or that the file system will not let us read."""
        if not path or "\0" in path or os.path.isabs(path) or path.startswith("\\"):
            raise ValueError(f"{path!r} is not a path relative to the tree's root")
        resolved = (self.root / path).resolve()
        if not resolved.is_relative_to(self.root):
            raise ValueError(f"{path!r} leads outside the tree")
        relative = resolved.relative_to(self.root).as_posix()
        if relative not in self._admitted:
            raise ValueError(f"{path!r} is not one of the files this digest reads")
        try:
            size = resolved.stat().st_size
            if size > self.max_read:
                raise ValueError(f"{path!r} is {size} bytes, over the {self.max_read}-byte read limit")
            return resolved.read_bytes()
        except OSError as exc:  # gone, or not ours to read: the handler hears why, as for any refusal
            raise ValueError(f"{path!r} cannot be read: {exc.strerror or exc}") from None

    def label(self) -> str | None:
        return tree_label(self.root)


def tree_label(root: Path) -> str | None:
    """What a tree is called (the WIT's ``label``): its directory's name, or the parent's when it is ``src``."""
    name = root.name
    if name == "src" and root.parent.name:
        name = root.parent.name
    return name or None


class Handler(ABC):
    """Reads files of the extensions it claims into facts (see the module docstring)."""

    #: whether ``parse`` calls may run at once in threads (a plugin: each in its own instance)
    concurrent: bool = False

    @property
    @abstractmethod
    def manifest(self) -> Manifest: ...

    @property
    def fingerprint(self) -> str:
        """What decides its answers besides the files: a remembered parse is reused only under the
        same one (``parsed.py``). A handler whose code can change under one version says more."""
        return self.manifest.ident

    @abstractmethod
    def parse(self, tree: SourceTree, subject: Subject, options: Options) -> bytes:
        """One chunk's opaque partial. Raises PluginError (or PluginBudget) when the chunk fails."""

    @abstractmethod
    def assemble(self, tree: SourceTree, partials: Sequence[bytes], options: Options) -> Output:
        """The facts of all chunks; must not depend on where the chunk boundaries fell."""

    def close(self) -> None:
        """Release what the handler holds (a compiled component); the default holds nothing."""
        return None


# ------------------------------------------------------------------------------- checking the wire

#: bounds on what one assemble may answer (a plugin returning more is refused, not truncated)
MAX_FACTS = 2_000_000
MAX_TEXT = 1 << 20  # one key, label, type or property string


def _text(value: object, what: str, name: str) -> str:
    if not isinstance(value, str) or not value or len(value) > MAX_TEXT or "\0" in value:
        raise PluginError(f"plugin {name} answered {what} {_show(value)}, which is not a non-empty line of text")
    return value


def _show(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def properties_from_json(text: str, what: str, name: str) -> dict[str, Any]:
    """A fact's ``properties``: a JSON object with finite numbers, or a PluginError saying what it is."""

    def refuse_constant(token: str) -> Any:
        raise ValueError(f"{token} is not JSON")

    try:
        value = json.loads(text, parse_constant=refuse_constant)
    except (ValueError, RecursionError) as exc:
        raise PluginError(f"plugin {name} answered {what} properties that are not JSON ({exc})") from None
    if not isinstance(value, dict):
        raise PluginError(f"plugin {name} answered {what} properties {_show(value)}, which is not a JSON object")
    for key, item in value.items():
        if isinstance(item, float) and not math.isfinite(item):
            raise PluginError(f"plugin {name} answered {what} property {key!r} = {item}, which is not finite")
    return value


def output_from_wire(raw: Mapping[str, Any], name: str) -> Output:
    """A plugin's ``output`` record (WIT field names, properties as JSON text), checked and parsed."""
    nodes_raw, edges_raw = raw.get("nodes", ()), raw.get("edges", ())
    if len(nodes_raw) + len(edges_raw) > MAX_FACTS:
        raise PluginError(f"plugin {name} answered {len(nodes_raw) + len(edges_raw)} facts, over {MAX_FACTS}")
    nodes = []
    for node in nodes_raw:
        key = _text(node["key"], "a node key", name)
        nodes.append(
            FactNode(
                key,
                _text(node["label"], f"node {key!r} a label", name),
                tuple(_text(extra, f"node {key!r} an extra label", name) for extra in node["extra-labels"]),
                properties_from_json(node["properties"], f"node {key!r}", name),
            )
        )
    edges = []
    for edge in edges_raw:
        src, dst = _text(edge["src"], "an edge source", name), _text(edge["dst"], "an edge target", name)
        kind = _text(edge["type"], f"edge {src!r}->{dst!r} a type", name)
        edges.append(FactEdge(src, dst, kind, properties_from_json(edge["properties"], f"edge {src!r}-{kind}->", name)))
    report = raw["report"]
    prose = raw.get("prose", "")
    if not isinstance(prose, str):
        raise PluginError(f"plugin {name} answered prose that is not text")
    return Output(
        nodes,
        edges,
        prose,
        Report(int(report["facts"]), int(report["prose-chars"]), int(report["skipped"]), list(report["notes"])),
    )
