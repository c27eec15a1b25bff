"""The built-in Python handler: Python's own ``ast`` (compiler-grade), the same contract as a plugin.

Vocabulary (``drsg plugin show py`` prints it; upstream's py plugin, reference §6):

- Keys are dotted module paths as the import system sees them: walk up from a file while the
  directory holds an ``__init__.py``; the first one without is the import root (a loose script is
  its file stem). When the tree's root is itself a package, its name is the tree's ``label``.
- Nodes: ``Module`` (``path``, ``imports``), ``Class`` (``fields``), ``Function`` / ``Method``
  (``signature``, ``is_async``), ``Const`` (an ALL_CAPS module name) / ``Var`` (``signature`` = its
  annotation, ``value`` as written), ``TypeAlias``; all with ``file``, ``line``, ``visibility``
  (``exported`` per ``__all__``, else no leading underscore) and ``doc_comment`` when there is one.
  What the tree imports or extends from outside stands in as ``Package`` / ``Class`` with the extra
  label ``External``.
- Edges, all with ``line``: ``CONTAINS``, ``IMPORTS``, ``EXTENDS``, ``CALLS`` (decorators count),
  ``REFERENCES`` (a function used as a value). Calls carry ``_resolved_by`` (name, chain,
  self-class, super, self-attr, receiver, class, star), ``_confidence`` (high, medium) and ``_ref``
  (the callee as written).

Nothing is guessed: a call into another package or the standard library is counted, not an edge;
a method called on a receiver whose class is not known here is counted, not matched by name; a
name that two star imports define equally is left alone and counted.

``parse`` turns each file into a partial (JSON: the file's definitions, its import bindings and its
call sites as written); ``assemble`` resolves calls across all partials, so where the chunk
boundaries fell cannot change the answer (python_reading.py reads, python_assembly.py resolves).
"""

from __future__ import annotations

import hashlib
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec

from drsg.kernel.errors import PluginError
from drsg.pipeline.code.handler import Doc, Handler, Manifest, Options, Output, SourceTree, Subject
from drsg.pipeline.code.python_assembly import Assembly
from drsg.pipeline.code.python_reading import read_module

MANIFEST = Manifest("py", "1.0.0", (".py", ".pyi", ".pyw"))
VOCABULARY: dict[str, Any] = {
    "labels": ["Module", "Class", "Function", "Method", "Const", "Var", "TypeAlias", "Package", "External"],
    "edge_types": ["CONTAINS", "IMPORTS", "EXTENDS", "CALLS", "REFERENCES"],
    "properties": {
        "Module": ["path", "imports", "doc_comment"],
        "Class": ["fields"],
        "Function": ["signature", "is_async"],
        "Method": ["signature", "is_async"],
        "Const": ["signature", "value"],
        "Var": ["signature", "value"],
        "every definition": ["file", "line", "visibility", "doc_comment", "_code (include_source)"],
        "every edge": ["line"],
        "CALLS": ["_resolved_by", "_confidence", "_ref"],
    },
}
PARTIAL_FORMAT = 1
#: the handler's own source, hashed: an edited handler never reuses a parse of the one before
_CODE_HASH = hashlib.sha256(
    b"".join(
        (Path(__file__).parent / name).read_bytes()
        for name in ("python_handler.py", "python_reading.py", "python_assembly.py")
    )
).hexdigest()[:16]


class PythonHandler(Handler):
    """Reads ``.py``/``.pyi``/``.pyw`` files with ``ast`` (see the module docstring)."""

    def __init__(self) -> None:
        self._packages: weakref.WeakKeyDictionary[SourceTree, frozenset[str]] = weakref.WeakKeyDictionary()
        self._decoded: dict[bytes, list[dict[str, Any]]] = {}  # the last assemble's partials, decoded

    @property
    def manifest(self) -> Manifest:
        return MANIFEST

    @property
    def fingerprint(self) -> str:
        return f"{MANIFEST.ident}#{_CODE_HASH}"

    def parse(self, tree: SourceTree, subject: Subject, options: Options) -> bytes:
        if isinstance(subject, Doc):
            raise PluginError("the py handler reads files of a tree, not a document on its own")
        packages = self._packages.get(tree)
        if packages is None:  # one listing per tree, not one per file
            packages = self._packages[tree] = _package_dirs(tree)
        files = [read_module(tree, path, packages, _flag(options, "include_source")) for path in subject]
        return msgspec.json.encode({"format": PARTIAL_FORMAT, "files": files})

    def assemble(self, tree: SourceTree, partials: Sequence[bytes], options: Options) -> Output:
        files: list[dict[str, Any]] = []
        decoded: dict[bytes, list[dict[str, Any]]] = {}
        for partial in partials:
            records = self._decoded.get(partial)
            if records is None:
                data = msgspec.json.decode(partial)
                if data.get("format") != PARTIAL_FORMAT:
                    raise PluginError("a py partial of another format: parse and assemble must be the same version")
                records = data["files"]
            decoded[partial] = records
            files.extend(records)
        # A daemon assembles mostly the same partials fold after fold (the remembered parses hand back
        # the same bytes): keep the last assemble's decoded records. Assembly only reads them.
        self._decoded = decoded
        return Assembly(files, MANIFEST.ident).output()


def _flag(options: Options, name: str) -> bool:
    return any(key == name and value.strip().lower() in ("true", "1", "yes", "on") for key, value in options)


def _package_dirs(tree: SourceTree) -> frozenset[str]:
    """Root-relative directories holding an ``__init__.py`` ("" is the root itself)."""
    return frozenset(
        path.rpartition("/")[0] for path in tree.list("__init__.py") if path.rsplit("/", 1)[-1] == "__init__.py"
    )
